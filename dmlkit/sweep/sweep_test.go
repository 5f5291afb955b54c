package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

type contextT = context.Context

func bg() context.Context { return context.Background() }

// fakeMetrics is a deterministic function of the configuration, so that a stored record can be
// checked against the configuration it claims to come from.
func fakeMetrics(cfg map[string]any) map[string]float64 {
	m, _ := Get(cfg, "loss.margin")
	seed, _ := Get(cfg, "train.seed")
	name, _ := Get(cfg, "loss.name")
	mf, _ := Numeric(m)
	sf, _ := Numeric(seed)
	r1 := 0.5 + mf/10 + sf/100
	if name == "rsk" {
		r1 += 0.05
	}
	return map[string]float64{"R@1": r1}
}

func fakeRunner(calls *atomic.Int64) Runner {
	return func(ctx context.Context, r RunSpec, progress func(string)) (*Outcome, error) {
		calls.Add(1)
		// A restarted run must find a clean directory.
		if ents, _ := os.ReadDir(r.Dir); len(ents) != 0 {
			return nil, fmt.Errorf("run directory %s not clean: %d entries", r.Dir, len(ents))
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "checkpoint"), []byte("partial"), 0o644); err != nil {
			return nil, err
		}
		progress("epoch 1/1")
		return &Outcome{Metrics: fakeMetrics(r.Config), Series: map[string][]float64{"val_r1": {0.1, 0.2}}}, nil
	}
}

// checkStoreComplete asserts the store holds exactly one correct record per run of the plan.
func checkStoreComplete(t *testing.T, st *Store, plan *Plan) {
	t.Helper()
	recs, rep, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Duplicates) > 0 {
		t.Errorf("duplicates in store: %v", rep.Duplicates)
	}
	want := map[string]Run{}
	for _, r := range plan.Runs {
		want[r.Hash] = r
	}
	seen := map[string]int{}
	for _, rec := range recs {
		seen[rec.Hash]++
		r, ok := want[rec.Hash]
		if !ok {
			t.Errorf("record %s is not in the plan", rec.Hash)
			continue
		}
		if h, _ := Hash(rec.Config); h != rec.Hash {
			t.Errorf("record %s: config hashes to %s", rec.Hash, h)
		}
		if got, exp := rec.Metrics["R@1"], fakeMetrics(r.Config)["R@1"]; math.Abs(got-exp) > 1e-15 {
			t.Errorf("record %s: R@1 %v, want %v", rec.Hash, got, exp)
		}
		if rec.Seed != r.Seed || rec.Scale != plan.Scale || rec.Paper != plan.Spec.Paper {
			t.Errorf("record %s: seed/scale/paper %d/%s/%s", rec.Hash, rec.Seed, rec.Scale, rec.Paper)
		}
	}
	for h := range want {
		if seen[h] != 1 {
			t.Errorf("run %s (%s) stored %d times", h, want[h].Label(), seen[h])
		}
	}
}

func TestResumeAfterFailuresAndCancellation(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, err := s.Resolve("small")
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	work := t.TempDir()

	// 1. A runner that panics on its 3rd call and fails on its 6th; 2 workers.
	var calls atomic.Int64
	good := fakeRunner(&calls)
	var n atomic.Int64
	flaky := func(ctx context.Context, r RunSpec, p func(string)) (*Outcome, error) {
		switch n.Add(1) {
		case 3:
			_ = os.WriteFile(filepath.Join(r.Dir, "junk"), []byte("half-written"), 0o644)
			panic("simulated crash")
		case 6:
			return nil, errors.New("simulated failure")
		}
		return good(ctx, r, p)
	}
	sum, err := Execute(bg(), plan, plan.Runs, ExecOptions{Runner: flaky, Store: store, WorkDir: work, Workers: 2})
	if err == nil || len(sum.Failed) != 2 || sum.Ran != 10 {
		t.Fatalf("first pass: err %v, summary %+v", err, sum)
	}
	if !strings.Contains(err.Error(), "2 of 12 runs failed") {
		t.Errorf("first pass error: %v", err)
	}

	// 2. Cancel after 0 further runs: a cancelled execution stores nothing new.
	ctx, cancel := context.WithCancel(bg())
	cancel()
	sum, err = Execute(ctx, plan, plan.Runs, ExecOptions{Runner: good, Store: store, WorkDir: work})
	if !errors.Is(err, context.Canceled) || sum.Ran != 0 || sum.Skipped != 10 {
		t.Fatalf("cancelled pass: err %v, summary %+v", err, sum)
	}

	// 3. Resume: exactly the 2 failed runs execute, in clean directories.
	calls.Store(0)
	var events []string
	var mu sync.Mutex
	sum, err = Execute(bg(), plan, plan.Runs, ExecOptions{Runner: good, Store: store, WorkDir: work, Workers: 3,
		Progress: func(e Event) { mu.Lock(); events = append(events, e.Kind); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 2 || sum.Skipped != 10 || calls.Load() != 2 {
		t.Fatalf("resume: summary %+v, %d runner calls", sum, calls.Load())
	}
	if c := strings.Count(strings.Join(events, " "), "skip"); c != 10 {
		t.Errorf("resume reported %d skips", c)
	}
	checkStoreComplete(t, store, plan)

	// 4. Running again does nothing.
	calls.Store(0)
	sum, err = Execute(bg(), plan, plan.Runs, ExecOptions{Runner: good, Store: store, WorkDir: work})
	if err != nil || sum.Ran != 0 || calls.Load() != 0 {
		t.Fatalf("third pass: err %v, summary %+v, %d calls", err, sum, calls.Load())
	}
}

func TestResumeAfterTornRecord(t *testing.T) {
	// A process killed in the middle of writing a record leaves a partial last line. That run
	// counts as not done; the next append must not glue its record onto the torn line.
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("smoke")
	store := NewStore(t.TempDir())
	var calls atomic.Int64
	if _, err := Execute(bg(), plan, plan.Runs[:2], ExecOptions{Runner: fakeRunner(&calls), Store: store, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(store.File("smoke"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, `{"hash":"%s","paper":"toy","scale":"smoke","metrics":{"R@1":0.`, plan.Runs[2].Hash)
	f.Close()
	calls.Store(0)
	if _, err := Execute(bg(), plan, plan.Runs, ExecOptions{Runner: fakeRunner(&calls), Store: store, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Errorf("resume ran %d runs, want 2 (the torn one and the never-started one)", calls.Load())
	}
	_, rep, _ := store.Load()
	if len(rep.Bad) != 1 || !strings.Contains(rep.Bad[0], "smoke.jsonl:3:") {
		t.Errorf("bad lines reported: %v", rep.Bad)
	}
	checkStoreComplete(t, store, plan)
}

// TestKillHelper is not a test by itself: TestResumeAfterProcessKill runs the test binary with
// DMLKIT_KILL_HELPER set, and this function then runs a sweep whose 4th run kills the process.
func TestKillHelper(t *testing.T) {
	dir := os.Getenv("DMLKIT_KILL_HELPER")
	if dir == "" {
		t.Skip("helper process for TestResumeAfterProcessKill")
	}
	s := mustParse(t, specYAML)
	var calls atomic.Int64
	good := fakeRunner(&calls)
	var n atomic.Int64
	killer := func(ctx context.Context, r RunSpec, p func(string)) (*Outcome, error) {
		if n.Add(1) == 4 {
			_ = os.WriteFile(filepath.Join(r.Dir, "checkpoint"), []byte("half"), 0o644)
			os.Exit(3) // killed mid-run: no deferred code, no record
		}
		return good(ctx, r, p)
	}
	_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{Runner: killer,
		Store: NewStore(filepath.Join(dir, "results")), WorkDir: filepath.Join(dir, "work")}})
	t.Fatalf("the sweep was not killed: %v", err)
}

func TestResumeAfterProcessKill(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DMLKIT_KILL_HELPER="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("helper: err %v, output:\n%s", err, out)
	}
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	store := NewStore(filepath.Join(dir, "results"))
	recs, _, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 {
		t.Fatalf("killed sweep stored %d records, want 3", len(recs))
	}
	var calls atomic.Int64
	_, sum, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{Runner: fakeRunner(&calls),
		Store: store, WorkDir: filepath.Join(dir, "work")}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Skipped != 3 || sum.Ran != 9 || calls.Load() != 9 {
		t.Fatalf("resume: %+v, %d calls", sum, calls.Load())
	}
	checkStoreComplete(t, store, plan)
}

func TestShardsInParallelCoverPlanOnce(t *testing.T) {
	// N shard processes (goroutines here) share one store; together they store every run once.
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	store := NewStore(t.TempDir())
	var calls atomic.Int64
	for _, n := range []int{1, 5, 12, 20} {
		store = NewStore(t.TempDir())
		calls.Store(0)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, _, errs[i] = RunSweep(bg(), s, SweepOptions{Scale: "small", Index: i, Of: n,
					ExecOptions: ExecOptions{Runner: fakeRunner(&calls), Store: NewStore(store.Dir), WorkDir: t.TempDir(), Workers: 2}})
			}(i)
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("n=%d shard %d: %v", n, i, err)
			}
		}
		if calls.Load() != 12 {
			t.Errorf("n=%d: %d runner calls, want 12", n, calls.Load())
		}
		checkStoreComplete(t, store, plan)
	}
}

func TestNoRunnerRegistered(t *testing.T) {
	if _, err := RegisteredRunner(); !errors.Is(err, ErrNoRunner) || !strings.Contains(err.Error(), "no runner registered") {
		t.Fatalf("RegisteredRunner() error = %v", err)
	}
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("smoke")
	if _, err := Execute(bg(), plan, plan.Runs, ExecOptions{Store: NewStore(t.TempDir())}); !errors.Is(err, ErrNoRunner) {
		t.Fatalf("Execute without runner: %v", err)
	}
}

func TestOnlyMatchingNothingIsAnError(t *testing.T) {
	s := mustParse(t, specYAML)
	var calls atomic.Int64
	_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", Only: map[string][]string{"loss.nam": {"rsk"}},
		ExecOptions: ExecOptions{Runner: fakeRunner(&calls), Store: NewStore(t.TempDir()), WorkDir: t.TempDir()}})
	if err == nil || !strings.Contains(err.Error(), "matches none of the 12 runs") || calls.Load() != 0 {
		t.Fatalf("err %v, %d calls", err, calls.Load())
	}
}
