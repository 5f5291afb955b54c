package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// refSpec: a pre-training point, a fine-tuning point that starts from the pre-training run of its
// own seed, and one that starts from seed 0's run whatever its seed.
const refSpec = `
paper: toy
base: {loss: {name: a}, data: {classes: [0, 10]}}
sweep:
  list:
    - {name: pre, data.classes: [10, 20]}
    - {name: fine, model.init_from: "run:pre"}
    - {name: fixed, model.init_from: "run:name=pre seed=0", seeds: [1]}
  seeds: [0, 1]
`

// preHash is the hash of the pre-training run of seed, from its configuration written out by hand.
func preHash(t *testing.T, seed int) string {
	t.Helper()
	h, err := Hash(map[string]any{"loss": map[string]any{"name": "a"}, "data": map[string]any{"classes": []any{10, 20}}, "name": "pre", "seed": seed})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// fineHash is the hash of a run of point name (fine or fixed) at seed that starts from the run src.
func fineHash(t *testing.T, name string, seed int, src string) string {
	t.Helper()
	h, err := Hash(map[string]any{"loss": map[string]any{"name": "a"}, "data": map[string]any{"classes": []any{0, 10}}, "name": name,
		"model": map[string]any{"init_from": "run:" + src}, "seed": seed})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func planSummary(p *Plan) string {
	var parts []string
	for _, r := range p.Runs {
		parts = append(parts, fmt.Sprintf("%d:%s", r.Index, r.Hash))
	}
	return strings.Join(parts, " ")
}

// TestRunRefPendingUntilSourceStored: with nothing stored, the two pre-training runs (indices 0, 1)
// are planned and the three runs that start from them (indices 2, 3, 4) wait, one pending entry
// each; with seed 0's pre-training run stored, fine seed 0 (index 2) and fixed seed 1 (index 4, from
// seed 0) are planned with model.init_from = "run:<hash of that run>", and fine seed 1 still waits.
// A source stored as failed keeps its dependants waiting and says so.
func TestRunRefPendingUntilSourceStored(t *testing.T) {
	s := mustParse(t, refSpec)
	pre0, pre1 := preHash(t, 0), preHash(t, 1)
	p, err := s.Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := planSummary(p), "0:"+pre0+" 1:"+pre1; got != want {
		t.Fatalf("runs %s, want %s", got, want)
	}
	if len(p.Pending) != 3 || p.Pending[0].Point != "model.init_from=run:pre name=fine seed=0" || !strings.HasSuffix(p.Pending[2].Point, "name=fixed seed=1") ||
		!strings.Contains(p.Pending[0].Reason, pre0) || !strings.Contains(p.Pending[2].Reason, pre0) || !strings.Contains(p.Pending[1].Reason, pre1) {
		t.Fatalf("pending %+v", p.Pending)
	}

	rec := Record{Hash: pre0, Scale: "", Seed: 0, Metrics: Metrics{"R@1": 0.5}}
	p, err = s.PlanWith("", []Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0:%s 1:%s 2:%s 4:%s", pre0, pre1, fineHash(t, "fine", 0, pre0), fineHash(t, "fixed", 1, pre0))
	if got := planSummary(p); got != want {
		t.Errorf("runs %s, want %s", got, want)
	}
	if v, _ := Get(p.Runs[2].Config, "model.init_from"); v != "run:"+pre0 {
		t.Errorf("fine seed 0: model.init_from %v, want run:%s", v, pre0)
	}
	if v := p.Runs[2].Params["model.init_from"]; v != "run:pre" {
		t.Errorf("fine seed 0: swept value %v, want the selector as written", v)
	}
	if len(p.Pending) != 1 || p.Pending[0].Point != "model.init_from=run:pre name=fine seed=1" {
		t.Errorf("pending %+v", p.Pending)
	}

	rec.Failed = "diverged"
	p, err = s.PlanWith("", []Record{rec})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 2 || len(p.Pending) != 3 || !strings.Contains(p.Pending[0].Reason, "stored as failed: diverged") {
		t.Errorf("failed source: %s, pending %+v", planSummary(p), p.Pending)
	}
}

// TestRunRefSelectorErrors: a selector that matches nothing, matches two runs, lacks a source of
// the run's seed or is empty is refused, naming the field, the selector and the run.
func TestRunRefSelectorErrors(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{`{name: fine, model.init_from: "run:nothing"}`, `run model.init_from=run:nothing name=fine seed=0: field "model.init_from": "run:nothing" matches no run of a sweep point with seed 0`},
		{`{name: fine, model.init_from: "run:loss.name=a"}`, `"run:loss.name=a" is ambiguous: it matches 2 runs (name=pre opt.lr=0.1 seed=0; name=pre opt.lr=0.2 seed=0)`},
		{`{name: fine, model.init_from: "run:pre", seeds: [0, 2]}`, `name=fine seed=2: field "model.init_from": "run:pre" matches no run of a sweep point with seed 2`},
		{`{name: fine, model.init_from: "run:  "}`, `field "model.init_from": "run:  ": empty selector`},
		{`{name: fine, model.init_from: "run:=x"}`, `field "model.init_from": "run:=x": term "=x"`},
	} {
		y := "paper: toy\nbase: {loss: {name: a}}\nsweep:\n  list:\n    - {name: pre, opt.lr: 0.1}\n    - {name: pre, opt.lr: 0.2, seeds: [1]}\n    - " + c.spec + "\n  seeds: [0]\n"
		if strings.Contains(c.want, "ambiguous") {
			y = strings.Replace(y, "seeds: [1]", "seeds: [0]", 1)
		}
		_, err := mustParse(t, y).PlanWith("", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.spec, err, c.want)
		}
	}
}

// TestRunRefHeldRunsValidated: a run waiting for its source is checked by the validator with the
// others, so a bad value fails the plan before anything trains.
func TestRunRefHeldRunsValidated(t *testing.T) {
	s := mustParse(t, strings.Replace(refSpec, `{name: fine, model.init_from: "run:pre"}`, `{name: fine, loss.name: bad, model.init_from: "run:pre"}`, 1))
	p, err := s.Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	err = p.Validate(func(cfg map[string]any) error {
		if v, _ := Get(cfg, "loss.name"); v == "bad" {
			return fmt.Errorf("field %q: unknown value %q", "loss.name", v)
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), `run loss.name=bad model.init_from=run:pre name=fine seed=0: field "loss.name"`) {
		t.Errorf("error %v", err)
	}
}

// TestRunRefTuningStepWaitsForAllItsRuns: a tuning step whose runs start from the pre-training run
// of their seed selects nothing while some of its runs wait for their source, even when every
// planned run of the step is stored.
func TestRunRefTuningStepWaitsForAllItsRuns(t *testing.T) {
	s := mustParse(t, `
paper: toy
base: {loss: {name: a}}
tune:
  - name: lr
    point: {data.val: 0.1, model.init_from: "run:pre"}
    grid: {opt.lr: [0.1, 0.3]}
    seeds: [0, 1]
    select: {metric: val/acc}
sweep:
  list:
    - {name: pre}
    - {name: ft, tuned: lr, seeds: [0]}
  seeds: [0, 1]
`)
	recs := []Record{{Hash: preHash0NoData(t), Seed: 0, Metrics: Metrics{"R@1": 0.5}}}
	p, err := s.PlanWith("", recs)
	if err != nil {
		t.Fatal(err)
	}
	var tuneRuns int
	for _, r := range p.Runs {
		if r.Tune == "lr" {
			tuneRuns++
			recs = append(recs, Record{Hash: r.Hash, Seed: r.Seed, Config: r.Config, Metrics: Metrics{"val/acc": toyAcc(r.Config)}})
		}
	}
	if tuneRuns != 2 {
		t.Fatalf("%d tuning runs planned, want 2 (seed 0's)", tuneRuns)
	}
	p, err = s.PlanWith("", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Selections(p, recs) {
		if st.Values != nil || st.Want != 4 || st.Runs != 2 {
			t.Errorf("selection with seed 1's runs waiting: %+v", st)
		}
	}
	if len(p.Pending) != 3 { // two tuning runs of seed 1, and ft waiting for the selection
		t.Errorf("pending %+v", p.Pending)
	}
}

func preHash0NoData(t *testing.T) string {
	h, err := Hash(map[string]any{"loss": map[string]any{"name": "a"}, "name": "pre", "seed": 0})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRunRefSweepStartsFromSourceRun runs refSpec plus a second-generation point (from fine) with
// a runner that writes 10·seed + 1 as the "weights" of a pre-training run and, for a run that
// starts from another, reads its source's weights from the directory it is given and adds 100:
// fine seed s must report 10·s + 1, fixed 1, and the chain (from fine) 100 + 10·s + 1. The runner
// gets the absolute directory RunDir(workdir, "", <source hash>); the records keep run:<hash>,
// and two sweeps in different working directories store the same hashes.
func TestRunRefSweepStartsFromSourceRun(t *testing.T) {
	s := mustParse(t, strings.Replace(refSpec, "  seeds: [0, 1]", "    - {name: chain, model.init_from: \"run:fine\"}\n  seeds: [0, 1]", 1))
	var mu sync.Mutex
	seen := map[string]string{} // hash → the init_from the runner saw
	runner := func(ctx context.Context, r RunSpec, progress func(string)) (*Outcome, error) {
		w := float64(10*r.Seed + 1)
		if v, ok := Get(r.Config, "model.init_from"); ok {
			dir := v.(string)
			mu.Lock()
			seen[r.Hash] = dir
			mu.Unlock()
			b, err := os.ReadFile(filepath.Join(dir, "weights"))
			if err != nil {
				return nil, err
			}
			if w, err = strconv.ParseFloat(string(b), 64); err != nil {
				return nil, err
			}
			if n, _ := Get(r.Config, "name"); n == "chain" {
				w += 100
			}
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "weights"), []byte(strconv.FormatFloat(w, 'g', -1, 64)), 0o644); err != nil {
			return nil, err
		}
		return &Outcome{Metrics: map[string]float64{"init": w}}, nil
	}
	var hashes [2][]string
	for i := range 2 {
		tmp := t.TempDir()
		work := filepath.Join(tmp, "runs")
		st := NewStore(filepath.Join(tmp, "results"))
		_, sum, err := RunSweep(context.Background(), s, SweepOptions{ExecOptions: ExecOptions{Runner: runner, Store: st, WorkDir: work, Workers: 2}})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Ran != 7 || len(sum.Pending) != 0 {
			t.Fatalf("ran %d, pending %+v; want 7 runs, none pending", sum.Ran, sum.Pending)
		}
		recs, _, err := st.Load()
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]string{}
		for _, r := range recs {
			name, _ := Get(r.Config, "name")
			byName[fmt.Sprint(name, r.Seed)] = r.Hash
			hashes[i] = append(hashes[i], r.Hash)
		}
		for _, r := range recs {
			name, _ := Get(r.Config, "name")
			var want float64
			var src string
			switch name {
			case "pre":
				want = float64(10*r.Seed + 1)
			case "fine":
				want, src = float64(10*r.Seed+1), preHash(t, int(r.Seed))
			case "fixed":
				want, src = 1, preHash(t, 0)
			case "chain":
				want, src = float64(100+10*r.Seed+1), byName[fmt.Sprint("fine", r.Seed)]
			}
			if r.Metrics["init"] != want {
				t.Errorf("%v seed %d: init %g, want %g", name, r.Seed, r.Metrics["init"], want)
			}
			if src == "" {
				continue
			}
			if v, _ := Get(r.Config, "model.init_from"); v != "run:"+src {
				t.Errorf("%v seed %d: stored model.init_from %v, want run:%s", name, r.Seed, v, src)
			}
			abs, _ := filepath.Abs(RunDir(work, "", src))
			if seen[r.Hash] != abs {
				t.Errorf("%v seed %d: runner got %q, want %q", name, r.Seed, seen[r.Hash], abs)
			}
		}
	}
	if fmt.Sprint(sortedCopy(hashes[0])) != fmt.Sprint(sortedCopy(hashes[1])) {
		t.Errorf("hashes differ between working directories:\n%v\n%v", hashes[0], hashes[1])
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestRunRefMissingSourceDirectory: a stored source whose run directory is not on this machine
// fails the dependent run (no record: it runs again once the directory is there), naming the field
// and the directory.
func TestRunRefMissingSourceDirectory(t *testing.T) {
	s := mustParse(t, refSpec)
	tmp := t.TempDir()
	st := NewStore(filepath.Join(tmp, "results"))
	pre := map[string]any{"loss": map[string]any{"name": "a"}, "data": map[string]any{"classes": []any{10, 20}}, "name": "pre", "seed": 0}
	if err := st.Append(&Record{Hash: preHash(t, 0), Seed: 0, Config: pre, Metrics: Metrics{"R@1": 0.5}}); err != nil {
		t.Fatal(err)
	}
	recs, _, _ := st.Load()
	p, err := s.PlanWith("", recs)
	if err != nil {
		t.Fatal(err)
	}
	runs := Filter(p.Runs, map[string][]string{"name": {"fine"}})
	if len(runs) != 1 {
		t.Fatalf("%d fine runs planned, want 1", len(runs))
	}
	runner := func(ctx context.Context, r RunSpec, progress func(string)) (*Outcome, error) {
		return &Outcome{Metrics: map[string]float64{"R@1": 1}}, nil
	}
	sum, err := Execute(context.Background(), p, runs, ExecOptions{Runner: runner, Store: st, WorkDir: filepath.Join(tmp, "runs")})
	want := fmt.Sprintf(`field "model.init_from": run:%s: the source run's directory %s does not exist here`, preHash(t, 0), filepath.Join(tmp, "runs", "default", preHash(t, 0)))
	if err == nil || sum.Ran != 0 || !strings.Contains(sum.Failed[0], want) {
		t.Errorf("error %v, summary %+v; want %q", err, sum, want)
	}
}

// TestRunRefCycle: runs whose "run:" references name each other (directly, or a → b → c → a)
// can never start: planning is an error naming the runs, fields and selectors of the cycle;
// before, they stayed pending for ever and the sweep exited 0 "waiting" for them. A chain without
// a cycle still waits.
func TestRunRefCycle(t *testing.T) {
	for _, c := range []struct{ list, want string }{
		{`[{name: a, model.init_from: "run:b"}, {name: b, model.init_from: "run:a"}]`,
			`scale "": runs wait for each other through "run:" references and can never start: model.init_from=run:a name=b seed=0: model.init_from "run:a" → model.init_from=run:b name=a seed=0: model.init_from "run:b" → model.init_from=run:a name=b seed=0`},
		{`[{name: a, model.init_from: "run:c"}, {name: b, model.init_from: "run:a"}, {name: c, model.init_from: "run:b"}]`,
			`can never start: model.init_from=run:a name=b seed=0: model.init_from "run:a" → model.init_from=run:c name=a seed=0: model.init_from "run:c" → model.init_from=run:b name=c seed=0: model.init_from "run:b" → model.init_from=run:a name=b seed=0`},
		{`[{name: a}, {name: b, model.init_from: "run:a"}, {name: c, model.init_from: "run:b"}]`, ""},
	} {
		p, err := mustParse(t, "paper: toy\nbase: {loss: {name: a}}\nsweep:\n  list: "+c.list+"\n  seeds: [0]\n").PlanWith("", nil)
		switch {
		case c.want == "" && (err != nil || len(p.Pending) != 2):
			t.Errorf("%s: error %v, pending %v: want 2 pending", c.list, err, p)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v\nwant: %s", c.list, err, c.want)
		}
	}
}
