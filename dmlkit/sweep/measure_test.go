package sweep

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
)

// measuringRunner is fakeRunner's metrics plus, when asked for MeasureTrain, a training R@1 of
// R@1 − 0.1 and an initial one of 0.05 (values a test can work out by hand), and a loss trace.
// drift, when set, returns a test R@1 off by 1e-12 for the hash it names: a rerun that does not
// reproduce its record.
func measuringRunner(calls *atomic.Int64, drift string) Runner {
	return func(ctx context.Context, r RunSpec, progress func(string)) (*Outcome, error) {
		calls.Add(1)
		m := fakeMetrics(r.Config)
		if r.Hash == drift {
			m["R@1"] += 1e-12
		}
		out := &Outcome{Metrics: m, Series: map[string][]float64{}}
		if r.Measures(MeasureTrain) {
			out.Metrics[TrainMetric] = m["R@1"] - 0.1
			out.Metrics["init/"+TrainMetric] = 0.05
			out.Metrics["time/step_ms"] = 99 // timings are not compared
			out.Series["trace/loss"] = []float64{2, 1.5, 1}
		}
		return out, nil
	}
}

func TestRemeasureAddsVerifiedMeasurements(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, err := s.Resolve("small")
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	var calls atomic.Int64
	if _, err := Execute(bg(), plan, plan.Runs, ExecOptions{Runner: fakeRunner(&calls), Store: store, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	// A record that stored a diagnostic the runner no longer computes: unchecked, not a failure.
	recs[0].Metrics["fig1/old"] = 3
	drift := recs[1].Hash
	calls.Store(0)
	env := map[string]any{"git_commit": "abc", "git_dirty": false}
	sum, err := Remeasure(bg(), plan, recs, RemeasureOptions{Measure: []string{MeasureTrain},
		ExecOptions: ExecOptions{Runner: measuringRunner(&calls, drift), Store: store, WorkDir: t.TempDir(), Workers: 2, Env: env}})
	if err == nil || !strings.Contains(err.Error(), "R@1: stored") || len(sum.Failed) != 1 || sum.Ran != len(recs)-1 {
		t.Fatalf("remeasure: err %v, summary %+v", err, sum)
	}
	if !strings.Contains(sum.Failed[0], drift) {
		t.Errorf("the failed rerun is not the drifting one: %v", sum.Failed)
	}
	got, rep, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) || len(rep.Orphans) != 0 {
		t.Fatalf("%d records (want %d), orphans %v", len(got), len(recs), rep.Orphans)
	}
	for _, r := range got {
		want := fakeMetrics(r.Config)["R@1"]
		if r.Hash == drift {
			if r.HasMeasure(MeasureTrain) || len(r.Measured) != 0 {
				t.Errorf("the drifting record gained a measurement: %v", r.Metrics)
			}
			continue
		}
		if !r.HasMeasure(MeasureTrain) || len(r.Measured) != 1 {
			t.Fatalf("record %s not measured: %v", r.Hash, r.Metrics)
		}
		if r.Metrics["R@1"] != want || r.Metrics[TrainMetric] != want-0.1 || r.Metrics["init/"+TrainMetric] != 0.05 {
			t.Errorf("record %s: metrics %v", r.Hash, r.Metrics)
		}
		if _, ok := r.Metrics["time/step_ms"]; ok {
			t.Errorf("record %s gained a timing from the rerun", r.Hash)
		}
		if len(r.Series["trace/loss"]) != 3 || r.Dirty() {
			t.Errorf("record %s: trace %v, dirty %v", r.Hash, r.Series["trace/loss"], r.Dirty())
		}
		m := r.Measured[0]
		if m.Env["git_commit"] != "abc" || len(m.Verified) != 1 || m.Verified[0] != "R@1" {
			t.Errorf("record %s: measurement provenance %+v", r.Hash, m)
		}
	}
	// Resume: only the drifting record is tried again; the others are measured.
	calls.Store(0)
	sum, _ = Remeasure(bg(), plan, got, RemeasureOptions{Measure: []string{MeasureTrain},
		ExecOptions: ExecOptions{Runner: measuringRunner(&calls, drift), Store: store, WorkDir: t.TempDir(), Env: env}})
	if calls.Load() != 1 || sum.Skipped != len(recs)-1 {
		t.Errorf("resume: %d runner calls, summary %+v", calls.Load(), sum)
	}
	// A measurement from a dirty tree makes its record dirty (left out of verdicts).
	if err := store.AppendMeasurement(&Measurement{Hash: drift, Scale: "small", Seed: got[1].Seed, Measure: []string{MeasureTrain},
		Metrics: Metrics{TrainMetric: 0.3}, Env: map[string]any{"git_dirty": true}}); err != nil {
		t.Fatal(err)
	}
	got, _, _ = store.Load()
	for _, r := range got {
		if r.Hash == drift && (!r.Dirty() || r.Metrics[TrainMetric] != 0.3) {
			t.Errorf("dirty measurement: dirty %v, train R@1 %v", r.Dirty(), r.Metrics[TrainMetric])
		}
	}
}

func TestRemeasureRefusesUnknownMeasure(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	var calls atomic.Int64
	_, err := Remeasure(bg(), plan, nil, RemeasureOptions{Measure: []string{"trian"},
		ExecOptions: ExecOptions{Runner: measuringRunner(&calls, ""), Store: NewStore(t.TempDir())}})
	if err == nil || !strings.Contains(err.Error(), `"trian"`) {
		t.Errorf("err %v", err)
	}
}
