package report

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// tuneSpec: a learning-rate step ("lr", three values, seed 0) on a validation split, a margin
// step that runs at the selected learning rate, and three sweep points: one tuned on lr, one on
// both, one untuned.
const tuneSpec = `
paper: toy
base: {opt: {lr: 1}, loss: {name: a}}
tune:
  - name: lr
    point: {data.val: 0.1}
    grid: {opt.lr: [0.1, 0.3, 1.0]}
    select: {metric: val/acc}
    group: lr
  - name: margin
    point: {data.val: 0.1, loss.name: b, tuned: lr}
    grid: {loss.m: [1, 2]}
    select: {metric: val/acc}
sweep:
  list:
    - {loss.name: a, tuned: lr}
    - {loss.name: b, tuned: [lr, margin]}
    - {loss.name: c}
  seeds: [0, 1]
`

// toyAcc is the validation accuracy of a configuration: best at lr 0.3, then at margin 2.
func toyAcc(cfg map[string]any) float64 {
	lr, _ := sweep.Get(cfg, "opt.lr")
	m, _ := sweep.Get(cfg, "loss.m")
	l, _ := sweep.Numeric(lr)
	mf, _ := sweep.Numeric(m)
	return 1 - (l-0.3)*(l-0.3) + mf/10
}

func tuneRecords(p *sweep.Plan, tune string, n int) []sweep.Record {
	var out []sweep.Record
	for _, r := range p.Runs {
		if r.Tune == tune && len(out) < n {
			out = append(out, sweep.Record{Hash: r.Hash, Scale: p.Scale, Seed: r.Seed, Config: r.Config, Metrics: sweep.Metrics{"val/acc": toyAcc(r.Config)}})
		}
	}
	return out
}

func TestTunePlanWith(t *testing.T) {
	s := mustParse(t, tuneSpec)
	// Nothing stored: the lr step's 3 runs and the untuned point's 2; both tuned points and the
	// margin step (which needs lr) wait. Indices count the waiting runs: lr 0–2, margin's
	// placeholder 3–4, point a 5–6, point b 7–8, point c 9–10.
	p, err := s.PlanWith("", nil)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for _, r := range p.Runs {
		idx = append(idx, r.Index)
	}
	if got := fmt.Sprint(idx); got != "[0 1 2 9 10]" || len(p.Pending) != 3 {
		t.Fatalf("runs at %s, pending %+v", got, p.Pending)
	}
	if p.Pending[0].Point != "tuning step margin" || p.Pending[1].Point != "loss.name=a" || fmt.Sprint(p.Pending[2].Waits) != "[lr margin]" {
		t.Errorf("pending %+v", p.Pending)
	}
	// Two of the three lr runs stored: an incomplete grid selects nothing.
	if p2, _ := s.PlanWith("", tuneRecords(p, "lr", 2)); len(p2.Runs) != 5 {
		t.Errorf("incomplete grid: %d runs", len(p2.Runs))
	}
	// The whole lr grid: lr 0.3 is selected (accuracy 1 against 0.96 and 0.51); point a gets it
	// (Params show it), the margin step runs at it, point b still waits for margin.
	recs := tuneRecords(p, "lr", 3)
	p, err = s.PlanWith("", recs)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]sweep.Run{}
	for _, r := range p.Runs {
		byLabel[r.Label()] = r
	}
	a, ok := byLabel["loss.name=a opt.lr=0.3 seed=1"]
	if !ok || a.Index != 6 {
		t.Fatalf("point a: %+v (runs %v)", a, keysOf(byLabel))
	}
	if m, ok := byLabel["data.val=0.1 loss.m=2 loss.name=b opt.lr=0.3 seed=0"]; !ok || m.Tune != "margin" || m.Index != 4 {
		t.Errorf("margin step at the tuned lr: %+v", m)
	}
	if len(p.Pending) != 1 || p.Pending[0].Point != "loss.name=b opt.lr=0.3" {
		t.Errorf("pending %+v", p.Pending)
	}
	// Then the margin grid: margin 2 is selected and point b gets both selections.
	p, _ = s.PlanWith("", append(recs, tuneRecords(p, "margin", 2)...))
	if len(p.Pending) != 0 || len(p.Runs) != 3+2+2+2+2 {
		t.Fatalf("all resolved: %d runs, pending %+v", len(p.Runs), p.Pending)
	}
	found := false
	for _, r := range p.Runs {
		if r.Label() == "loss.m=2 loss.name=b opt.lr=0.3 seed=0" && r.Index == 7 {
			found = true
		}
	}
	if !found {
		t.Errorf("point b with both selections missing")
	}
	// The selection table of each step marks the chosen row.
	tabs := s.TuneTables()
	if len(tabs) != 2 || tabs[0].Name != "tune_lr" || tabs[0].Select.Metric != "val/acc" {
		t.Fatalf("tune tables %+v", tabs)
	}
	tab := mustBuildTable(t, tabs[0], recs, nil)
	if tab.Selected == nil || sweep.FormatValue(tab.Selected.Values) != "[0.3]" {
		t.Errorf("tune_lr selects %+v", tab.Selected)
	}
	// With the margin step's runs stored too (trained at lr 0.3 on the same split), the lr table
	// still holds the lr step's 3 runs, one per rate: the margin runs set loss.m, which the lr
	// step's runs do not (they joined the 0.3 row before, as 3 seeds). The margin table holds its 2.
	all := append(append([]sweep.Record{}, recs...), tuneRecords(p, "margin", 2)...)
	if w := tabs[0].Where; w["loss.m"] != nil || !hasKey(w, "loss.m") {
		t.Errorf("tune_lr where %v: want loss.m: null", w)
	}
	if n := len(sweep.Select(all, "", tabs[0].Where)); n != 3 {
		t.Errorf("tune_lr selects %d records, want the lr step's 3", n)
	}
	if n := len(sweep.Select(all, "", tabs[1].Where)); n != 2 {
		t.Errorf("tune_margin selects %d records, want the margin step's 2", n)
	}
	// A run of the same configuration as an lr-step run at another seed (another step or point
	// may train it) is not one of the step's runs: the table keeps the step's seeds only.
	other := recs[0]
	other.Seed, other.Hash = 7, "other-seed"
	other.Config = sweep.Clone(other.Config)
	if err := sweep.SetPath(other.Config, "seed", int64(7)); err != nil {
		t.Fatal(err)
	}
	if n := len(sweep.Select(append(all, other), "", tabs[0].Where)); n != 3 {
		t.Errorf("tune_lr with a seed-7 twin selects %d records, want the step's 3", n)
	}
	// A sweep point on the same split with a key no step sets (TCM's margin-grid baseline, with
	// eval.opis) matches the where; TableRecords keeps the step's own runs (by hash) only.
	extra := recs[1]
	extra.Hash = "baseline"
	extra.Config = sweep.Clone(extra.Config)
	if err := sweep.SetPath(extra.Config, "eval.opis", true); err != nil {
		t.Fatal(err)
	}
	withExtra := append(append([]sweep.Record{}, all...), extra)
	if n := len(sweep.Select(withExtra, "", tabs[0].Where)); n != 4 {
		t.Errorf("the where selects %d records, want 4 (the step's 3 and the baseline)", n)
	}
	if got := s.TableRecords(tabs[0], "", withExtra); len(got) != 3 || slices.ContainsFunc(got, func(r sweep.Record) bool { return r.Hash == "baseline" }) {
		t.Errorf("TableRecords: %d records, want the step's 3 without the baseline", len(got))
	}
}

func keysOf[V any](m map[string]V) []string { return sweep.SortedKeys(m) }

func hasKey(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func TestTuneSpecErrors(t *testing.T) {
	cases := []struct{ name, from, to, want string }{
		{"test metric", "select: {metric: val/acc}\n    group: lr", "select: {metric: acc}\n    group: lr", "validation metrics"},
		{"unknown step", "tuned: [lr, margin]", "tuned: [lr, nope]", `no tuning step named "nope"`},
		{"cycle", "point: {data.val: 0.1}", "point: {data.val: 0.1, tuned: margin}", "cycle"},
		{"budget", "select: {metric: val/acc}\nsweep", "select: {metric: val/acc}\n    group: lr\nsweep", "same tuning budget"},
		{"one value", "grid: {loss.m: [1, 2]}", "grid: {loss.m: [1]}", "at least 2 values"},
	}
	for _, c := range cases {
		y := strings.Replace(tuneSpec, c.from, c.to, 1)
		if y == tuneSpec {
			t.Fatalf("%s: replacement %q not found", c.name, c.from)
		}
		if _, err := sweep.Parse([]byte(y), "spec.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
}

// TestRunSweepRunsTuningFirst: one RunSweep call runs the lr step, then the margin step at the
// selected lr, then every point — each configuration once — and leaves nothing pending.
func TestRunSweepRunsTuningFirst(t *testing.T) {
	s := mustParse(t, strings.Replace(tuneSpec, "paper: toy", "paper: toy\nscales: {small: {}}", 1))
	var calls atomic.Int64
	runner := func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		calls.Add(1)
		return &sweep.Outcome{Metrics: map[string]float64{"val/acc": toyAcc(r.Config)}}, nil
	}
	st := sweep.NewStore(t.TempDir())
	opt := sweep.SweepOptions{Scale: "small", ExecOptions: sweep.ExecOptions{Runner: runner, Store: st, WorkDir: t.TempDir(), Workers: 2}}
	plan, sum, err := sweep.RunSweep(context.Background(), s, opt)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 11 || sum.Ran != 11 || len(sum.Pending) != 0 || len(plan.Runs) != 11 {
		t.Fatalf("calls %d, summary %+v, plan %d runs", calls.Load(), sum, len(plan.Runs))
	}
	recs, _, _ := st.Load()
	for _, r := range recs {
		if n, _ := sweep.Get(r.Config, "loss.name"); n == "b" && r.Config["data"] == nil {
			if lr, _ := sweep.Get(r.Config, "opt.lr"); sweep.FormatValue(lr) != "0.3" {
				t.Errorf("point b trained at lr %v", lr)
			}
		}
	}
	// Again: everything is stored, nothing runs.
	if _, sum, _ = sweep.RunSweep(context.Background(), s, opt); sum.Ran != 0 || calls.Load() != 11 {
		t.Errorf("second sweep ran %d", sum.Ran)
	}
}

// TestHighlightTuneAndXSeries: a heatmap outlines the cell its tuning step selected (an error
// while the step's grid is incomplete), and a line figure takes its x values from a series.
func TestHighlightTuneAndXSeries(t *testing.T) {
	y := strings.Replace(tuneSpec, "paper: toy", "paper: toy\nscales: {small: {}}", 1) + `
figures:
  - {name: lr, kind: heatmap, x: opt.lr, y: data.val, metric: val/acc, highlight_tune: lr, where: {data.val: 0.1, loss.name: a}}
`
	s := mustParse(t, y)
	p, err := s.PlanWith("small", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := tuneRecords(p, "lr", 2)
	if _, err := s.TuneSelection("lr", "small", recs); err == nil || !strings.Contains(err.Error(), "2 of 3 runs stored") {
		t.Errorf("incomplete grid: %v", err)
	}
	res := RenderFigures(nil, s, recs, "small", t.TempDir(), plots.DefaultStyle(), "svg")
	if res[0].Err == nil || !strings.Contains(res[0].Err.Error(), "highlight_tune") {
		t.Errorf("incomplete grid: figure err %v", res[0].Err)
	}
	recs = tuneRecords(p, "lr", 3)
	if h, err := s.TuneSelection("lr", "small", recs); err != nil || fmt.Sprint(h) != "map[opt.lr:0.3]" {
		t.Errorf("selection %v, %v", h, err)
	}
	if res := RenderFigures(nil, s, recs, "small", t.TempDir(), plots.DefaultStyle(), "svg"); res[0].Err != nil {
		t.Errorf("complete grid: %v", res[0].Err)
	}
	// x_series: the evaluations' x values come from the series, which must match in length.
	f := sweep.FigureSpec{Name: "c", Kind: "line", Series: []string{"curve/r1"}, XSeries: "curve/epoch"}
	rec := sweep.Record{Seed: 0, Config: map[string]any{}, Series: sweep.Series{"curve/r1": {0.1, 0.2, 0.3}, "curve/epoch": {0.5, 1, 1.5}}}
	if _, err := BuildFigure(f, []sweep.Record{rec}, plots.DefaultStyle()); err != nil {
		t.Errorf("x_series: %v", err)
	}
	// Two seeds whose runs have 3 and 2 evaluations (the second's last step fell on an evaluation
	// step): the mean runs over 2, and x comes from the run of that length.
	short := sweep.Record{Seed: 1, Config: map[string]any{}, Series: sweep.Series{"curve/r1": {0.3, 0.4}, "curve/epoch": {0.6, 1.2}}}
	if _, err := BuildFigure(f, []sweep.Record{rec, short}, plots.DefaultStyle()); err != nil {
		t.Errorf("x_series with runs of 3 and 2 evaluations: %v", err)
	}
	rec.Series["curve/epoch"] = []float64{1, 2}
	if _, err := BuildFigure(f, []sweep.Record{rec}, plots.DefaultStyle()); err == nil || !strings.Contains(err.Error(), "has 2 values for 3 evaluations") {
		t.Errorf("x_series length mismatch: %v", err)
	}
}

// TestRunSweepFailureDoesNotBlockTunedPoints: a point that fails (here loss c, both seeds) does not
// stop the rounds: the points waiting for the tuning steps still run, and the failure is
// reported at the end.
func TestRunSweepFailureDoesNotBlockTunedPoints(t *testing.T) {
	s := mustParse(t, strings.Replace(tuneSpec, "paper: toy", "paper: toy\nscales: {small: {}}", 1))
	var calls atomic.Int64
	runner := func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		calls.Add(1)
		if n, _ := sweep.Get(r.Config, "loss.name"); n == "c" {
			return nil, fmt.Errorf("missing data")
		}
		return &sweep.Outcome{Metrics: map[string]float64{"val/acc": toyAcc(r.Config)}}, nil
	}
	st := sweep.NewStore(t.TempDir())
	_, sum, err := sweep.RunSweep(context.Background(), s, sweep.SweepOptions{Scale: "small", ExecOptions: sweep.ExecOptions{Runner: runner, Store: st, WorkDir: t.TempDir(), Workers: 2}})
	if err == nil || !strings.Contains(err.Error(), "2 of") {
		t.Errorf("err %v, want the 2 failures reported", err)
	}
	if calls.Load() != 11 || sum.Ran != 9 || len(sum.Failed) != 2 || len(sum.Pending) != 0 {
		t.Errorf("calls %d, ran %d, failed %d, pending %d; want 11, 9, 2, 0", calls.Load(), sum.Ran, len(sum.Failed), len(sum.Pending))
	}
}

// TestShardsWaitForOtherShardsTuning: the shards of one sweep, started together with
// WaitPending, run every run of the plan once — also the points that take a selection whose
// tuning runs are in other shards (without waiting, a shard with no tuning run ends first and
// its share of those points never runs); when a tuning run fails nothing can resolve, and every
// shard returns with the points pending instead of waiting forever.
func TestShardsWaitForOtherShardsTuning(t *testing.T) {
	s := mustParse(t, strings.Replace(tuneSpec, "paper: toy", "paper: toy\nscales: {small: {}}", 1))
	sweep := func(wait bool, fail string) (ran int, pending []int, stored int) {
		runner := func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
			if _, tuning := sweep.Get(r.Config, "data.val"); tuning {
				time.Sleep(150 * time.Millisecond) // the tuning runs finish last
			}
			if lr, _ := sweep.Get(r.Config, "opt.lr"); fail != "" && sweep.FormatValue(lr) == fail {
				return nil, fmt.Errorf("failed run")
			}
			return &sweep.Outcome{Metrics: map[string]float64{"val/acc": toyAcc(r.Config)}}, nil
		}
		st := sweep.NewStore(t.TempDir())
		const of = 3
		sums := make([]*sweep.Summary, of)
		var wg sync.WaitGroup
		for i := range of {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, sums[i], _ = sweep.RunSweep(context.Background(), s, sweep.SweepOptions{Scale: "small", Index: i, Of: of,
					WaitPending: wait, PendingPoll: 20 * time.Millisecond,
					ExecOptions: sweep.ExecOptions{Runner: runner, Store: st, WorkDir: t.TempDir(), Workers: 1}})
			}()
		}
		wg.Wait()
		for _, sum := range sums {
			ran += sum.Ran
			pending = append(pending, len(sum.Pending))
		}
		recs, _, _ := st.Load()
		return ran, pending, len(recs)
	}
	// 3 lr runs, 2 margin runs, points a, b, c × 2 seeds: 11 runs.
	if ran, pending, stored := sweep(true, ""); ran != 11 || stored != 11 || fmt.Sprint(pending) != "[0 0 0]" {
		t.Errorf("WaitPending: ran %d, stored %d, pending per shard %v; want 11, 11, [0 0 0]", ran, stored, pending)
	}
	if ran, _, stored := sweep(false, ""); ran == 11 || stored == 11 {
		t.Errorf("without WaitPending all 11 runs ran (%d, %d stored): the test's timing does not exercise the wait", ran, stored)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// lr 1 fails (the lr-1.0 tuning run and c's 2 runs, at the base lr 1): the lr step never
		// selects, points a and b (and the margin step) stay pending; lr 0.1 and 0.3 are stored.
		if ran, pending, stored := sweep(true, "1"); ran != 2 || stored != 2 || pending[0]+pending[1]+pending[2] == 0 {
			t.Errorf("failed tuning run: ran %d, stored %d, pending %v; want 2, 2 and points pending", ran, stored, pending)
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("shards still waiting 20 s after a tuning run failed")
	}
}

// TestTuningStepsShareAConfiguration: a margin grid at the selected rate meets each margin's own
// rate grid in one configuration; it is planned once, both steps read its record, and the margin
// step needs no run of its own once the rate grids are stored.
func TestTuningStepsShareAConfiguration(t *testing.T) {
	s := mustParse(t, `
paper: toy
base: {opt: {lr: 1}, loss: {name: b, m: 1}}
tune:
  - {name: lr, point: {data.val: 0.1}, grid: {opt.lr: [0.1, 0.3, 1.0]}, select: {metric: val/acc}}
  - {name: lr-m2, point: {data.val: 0.1, loss.m: 2}, grid: {opt.lr: [0.1, 0.3, 1.0]}, select: {metric: val/acc}}
  - {name: margin, point: {data.val: 0.1, tuned: lr}, grid: {loss.m: [1, 2]}, select: {metric: val/acc}}
sweep:
  list:
    - {loss.m: 2, tuned: lr-m2}
    - {loss.name: c, tuned: [lr, margin]}
  seeds: [0]
`)
	p, err := s.PlanWith("", nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := append(tuneRecords(p, "lr", 3), tuneRecords(p, "lr-m2", 3)...)
	if len(recs) != 6 {
		t.Fatalf("%d tuning records, want 6", len(recs))
	}
	p, err = s.PlanWith("", recs)
	if err != nil {
		t.Fatal(err)
	}
	// 3 + 3 rate runs, the margin step's two points among them (lr 0.3 at m 1 and at m 2), the two
	// points.
	if len(p.Runs) != 8 || len(p.Pending) != 0 {
		t.Fatalf("%d runs, %d pending; want 8, 0", len(p.Runs), len(p.Pending))
	}
	var shared []string
	for _, r := range p.Runs {
		if r.InTune("margin") {
			shared = append(shared, r.Tune+":"+r.Label())
		}
	}
	if fmt.Sprint(shared) != "[lr:data.val=0.1 opt.lr=0.3 seed=0 lr-m2:data.val=0.1 loss.m=2 opt.lr=0.3 seed=0]" {
		t.Errorf("margin step's runs: %v", shared)
	}
	for _, st := range s.Selections(p, recs) {
		if st.Name == "margin" && (st.Runs != 2 || fmt.Sprint(st.Values) != "map[loss.m:2]") {
			t.Errorf("margin selection: %+v", st)
		}
	}
}
