package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestFailedRecordsAreStoredSkippedAndExcluded: a runner's *RunFailure leaves a record marked
// failed (with the step); a resume skips it, RetryFailed runs it again and the retry's record
// replaces it; Select and GroupBy never return it, and a claim verdict counts it as excluded even
// when it carries the metric.
func TestFailedRecordsAreStoredSkippedAndExcluded(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	store := sweep.NewStore(t.TempDir())
	var calls atomic.Int64
	good := fakeRunner(&calls)
	bad := plan.Runs[4].Hash
	diverging := true
	runner := func(ctx context.Context, r sweep.RunSpec, p func(string)) (*sweep.Outcome, error) {
		if r.Hash == bad && diverging {
			calls.Add(1)
			return nil, &sweep.RunFailure{Step: 7, Err: errors.New("train: diverged at step 7: loss is NaN")}
		}
		return good(ctx, r, p)
	}
	opt := sweep.SweepOptions{Scale: "small", ExecOptions: sweep.ExecOptions{Runner: runner, Store: store, WorkDir: t.TempDir(), Workers: 2}}
	_, sum, err := sweep.RunSweep(bg(), s, opt)
	if err == nil || !strings.Contains(err.Error(), "stored as failed") || sum.StoredFailed != 1 || len(sum.Failed) != 1 || sum.Ran != 11 {
		t.Fatalf("first sweep: %v, %+v", err, sum)
	}
	recs, _, _ := store.Load()
	if len(recs) != 12 {
		t.Fatalf("%d records, want 12 (one failed)", len(recs))
	}
	var f *sweep.Record
	for i := range recs {
		if recs[i].Failed != "" {
			f = &recs[i]
		}
	}
	if f == nil || f.Hash != bad || f.FailedStep != 7 || !strings.Contains(f.Failed, "diverged at step 7") || len(f.Metrics) != 0 {
		t.Fatalf("failed record %+v", f)
	}
	if n := len(sweep.Select(recs, "small", nil)); n != 11 {
		t.Errorf("Select returned %d records, want the 11 that finished", n)
	}
	n := 0
	for _, g := range sweep.GroupBy(recs, []string{"loss.name"}) {
		n += len(g.Records)
	}
	if n != 11 {
		t.Errorf("GroupBy grouped %d records, want 11", n)
	}

	calls.Store(0)
	if _, sum, err = sweep.RunSweep(bg(), s, opt); err != nil || calls.Load() != 0 || sum.Skipped != 12 || sum.SkippedFailed != 1 {
		t.Fatalf("resume: %v, %d calls, %+v", err, calls.Load(), sum)
	}
	diverging = false
	opt.RetryFailed = true
	if _, sum, err = sweep.RunSweep(bg(), s, opt); err != nil || calls.Load() != 1 || sum.Ran != 1 || sum.Skipped != 11 {
		t.Fatalf("retry: %v, %d calls, %+v", err, calls.Load(), sum)
	}
	checkStoreComplete(t, store, plan) // the retry's record replaced the failed one
}

func TestVerdictCountsFailedRecords(t *testing.T) {
	recs := join(armRecs("B", 10, 10, 10, 10), armRecs("T", 12, 13, 14))
	f := claimRec("T", nil, 3, 100, false)
	f.Failed, f.FailedStep = "train: diverged at step 3", 3
	recs = append(recs, f)
	v, err := EvaluateClaim(better("higher"), nil, recs, ClaimOptions{IncludeDirty: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Seeds) != 3 || v.ExcludedFailed != 1 || v.Excluded != 0 || v.Arms[1].Mean != 13 {
		t.Fatalf("seeds %v, excluded failed %d dirty %d, arms %+v", v.Seeds, v.ExcludedFailed, v.Excluded, v.Arms)
	}
	if eff, err := CompareSettings(recs, "arm", "B", "T", "m", false); err != nil || len(eff.Seeds) != 3 {
		t.Fatalf("CompareSettings used the failed record: %+v, %v", eff, err)
	}
}

// TestNonFiniteMetricStoredAsFailed: a run whose outcome has a NaN or infinite metric (the
// uncertainty under a noise level of 1e300) is stored as failed, naming the metrics, and the
// sweep fails; before, the record was stored with the NaN and the sweep exited 0.
func TestNonFiniteMetricStoredAsFailed(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, _ := s.Resolve("small")
	store := sweep.NewStore(t.TempDir())
	var calls atomic.Int64
	good := fakeRunner(&calls)
	bad := plan.Runs[2].Hash
	runner := func(ctx context.Context, r sweep.RunSpec, p func(string)) (*sweep.Outcome, error) {
		out, err := good(ctx, r, p)
		if r.Hash == bad {
			out.Metrics["unc/norm_test_noise_1e+300"] = math.NaN()
			out.Metrics["unc/norm_test_noise_1e+200"] = math.Inf(1)
		}
		return out, err
	}
	opt := sweep.SweepOptions{Scale: "small", ExecOptions: sweep.ExecOptions{Runner: runner, Store: store, WorkDir: t.TempDir(), Workers: 1}}
	_, sum, err := sweep.RunSweep(bg(), s, opt)
	if err == nil || sum.StoredFailed != 1 || !strings.Contains(err.Error(), "non-finite metrics: unc/norm_test_noise_1e+200 = +Inf, unc/norm_test_noise_1e+300 = NaN") {
		t.Fatalf("sweep: %v, %+v", err, sum)
	}
	recs, _, _ := store.Load()
	for _, r := range recs {
		if r.Hash == bad && (r.Failed == "" || len(r.Metrics) != 0) {
			t.Errorf("record of the NaN run: failed %q, metrics %v", r.Failed, r.Metrics)
		}
	}
}

// TestStoreRefusesEditedConfig: a record whose config no longer hashes to its hash (edited by
// hand) is reported as unreadable, naming the file, line, field and both hashes, and is not
// loaded; before, it was accepted as the stored run of its hash.
func TestStoreRefusesEditedConfig(t *testing.T) {
	st := sweep.NewStore(t.TempDir())
	cfg := map[string]any{"loss": map[string]any{"name": "rsk", "margin": 0.5}, "seed": 0}
	h, _ := sweep.Hash(cfg)
	for _, m := range []float64{0.5, 0.2} {
		c := sweep.Clone(cfg)
		c["loss"].(map[string]any)["margin"] = m // the second record: margin edited after the run
		if err := st.Append(&sweep.Record{Hash: h, Scale: "small", Config: c, Metrics: sweep.Metrics{"R@1": m}}); err != nil {
			t.Fatal(err)
		}
	}
	edited, _ := sweep.Hash(map[string]any{"loss": map[string]any{"name": "rsk", "margin": 0.2}, "seed": 0})
	recs, rep, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`small.jsonl:2: record %s: field "config" does not match field "hash" (its config hashes to %s; edited by hand?)`, h, edited)
	if len(recs) != 1 || recs[0].Metrics["R@1"] != 0.5 || len(rep.Bad) != 1 || !strings.Contains(rep.Bad[0], want) {
		t.Errorf("%d records, bad %q; want 1 record and %q", len(recs), rep.Bad, want)
	}
}
