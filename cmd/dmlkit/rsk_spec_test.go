package main

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// rskSpecPath is reproductions/rsk/spec.yaml seen from this package's directory.
var rskSpecPath = filepath.Join("..", "..", "reproductions", "rsk", "spec.yaml")

// fakeValue is a number in [0.3, 0.7) drawn from a run's hash and the metric's name, so a
// synthetic store has distinct, reproducible values.
func fakeValue(hash, metric string) float64 {
	sum := sha256.Sum256([]byte(hash + "/" + metric))
	return 0.3 + 0.4*float64(binary.BigEndian.Uint32(sum[:4]))/(1<<32)
}

// simulateSweep resolves the whole plan of a scale as a sweep would, without training: every
// planned run gets a synthetic record (R@1, mAP, val/R@1 from fakeValue), round after round, until
// no point is pending (tuning steps select from their synthetic runs; runs that start from another
// run are planned once it is stored). It returns the final plan and the records.
func simulateSweep(t *testing.T, s *sweep.Spec, scale string) (*sweep.Plan, []sweep.Record) {
	t.Helper()
	var recs []sweep.Record
	stored := map[string]bool{}
	for range 10 {
		p, err := s.PlanWith(scale, recs)
		if err != nil {
			t.Fatalf("%s: %v", scale, err)
		}
		added := 0
		for _, r := range p.Runs {
			if stored[r.Hash] {
				continue
			}
			stored[r.Hash] = true
			added++
			m := sweep.Metrics{}
			for _, k := range []string{"R@1", "mAP", "val/R@1"} {
				m[k] = fakeValue(r.Hash, k)
			}
			recs = append(recs, sweep.Record{Hash: r.Hash, Paper: s.Paper, Scale: scale, Seed: r.Seed, Params: r.Params, Config: r.Config, Metrics: m})
		}
		if added == 0 {
			if len(p.Pending) > 0 {
				t.Fatalf("%s: %d points still pending with every planned run stored, first: %s (%s)", scale, len(p.Pending), p.Pending[0].Point, p.Pending[0].Reason)
			}
			return p, recs
		}
	}
	t.Fatalf("%s: the plan did not settle in 10 rounds", scale)
	return nil, nil
}

// groupCounts counts a plan's runs per group: the tuning step's name for tuning runs ("tune"),
// else the config field "name".
func groupCounts(p *sweep.Plan) string {
	n := map[string]int{}
	for _, r := range p.Runs {
		g := "tune"
		if r.Tune == "" {
			v, _ := sweep.Get(r.Config, "name")
			g = fmt.Sprint(v)
		}
		n[g]++
	}
	var parts []string
	for _, k := range sortedMapKeys(n) {
		parts = append(parts, fmt.Sprintf("%s %d", k, n[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedMapKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestRSKSpecPlans counts the runs of each scale, before anything is stored and once every round
// of the sweep is stored (simulateSweep), against the counts worked out from spec.yaml by hand:
//
//	smoke  3 runs and the fine-tuning pending on its pre-training; 4 in all.
//	small  the 60 tuning runs (10 methods × 6 rates) and lr-check (RS@k at a fixed 8e-3, 5 seeds) first, every other point pending; in all 239:
//	       fig9 38 (RS@k 5+3+3+5+3+3 over 48…1,960, SiMix 5+3+3+5 over 48…392), table4 30 (6 × 5 seeds),
//	       rank 21 (7 × 3: six losses and RS@k at 60 epochs), fig8 18 (6 × 3), table3 15, table2 9, pretrain 12 (4 sources × 3),
//	       init-* 30 (5 starts × 2 losses × 3), lr-check 5, scale 1.
//	full   the 40 tuning runs of the *-full steps; in all 82: table4 9, fig9 8, fig8 6, table3 5, table2 3,
//	       rank 6, pretrain 1, init-imagenet 2, init-inat 2.
//
// Every run is a valid trainer configuration; each fine-tuning starts from the pre-training run of
// its seed and source (found here by the source's configuration, not through the selector).
func TestRSKSpecPlans(t *testing.T) {
	s := mustLoadSpec(t, rskSpecPath)
	for _, c := range []struct {
		scale         string
		runs, pending int
		total         int
		groups        string
	}{
		{"smoke", 3, 1, 4, "fig9 1, init-bg24 1, pretrain 1, table4 1"},
		{"small", 77, -1, 261, "fig8 18, fig9 38, init-bg200 6, init-bg866 6, init-fashion-mnist 6, init-mnist 6, init-none 6, lr-check 5, pretrain 12, rank 21, scale 1, table2 9, table3 15, table4 30, table4-qir 10, tune 72"},
		{"full", 40, -1, 82, "fig8 6, fig9 8, init-imagenet 2, init-inat 2, pretrain 1, rank 6, table2 3, table3 5, table4 9, tune 40"},
	} {
		p, err := s.Plan(c.scale)
		if err != nil {
			t.Fatalf("%s: %v", c.scale, err)
		}
		if len(p.Runs) != c.runs || (c.pending >= 0 && len(p.Pending) != c.pending) || (c.pending < 0 && len(p.Pending) == 0) {
			t.Errorf("%s before any run: %d runs, %d pending; want %d runs, pending %d", c.scale, len(p.Runs), len(p.Pending), c.runs, c.pending)
		}
		final, _ := simulateSweep(t, s, c.scale)
		if len(final.Runs) != c.total || groupCounts(final) != c.groups {
			t.Errorf("%s: %d runs (%s); want %d (%s)", c.scale, len(final.Runs), groupCounts(final), c.total, c.groups)
		}
		byCfg := map[string]sweep.Run{} // pre-training runs by source and seed
		for _, r := range final.Runs {
			if err := reproduce.ValidateTrainConfig(r.Config); err != nil {
				t.Errorf("%s run %s: %v", c.scale, r.Label(), err)
			}
			if n, _ := sweep.Get(r.Config, "name"); n == "pretrain" {
				d, _ := sweep.Get(r.Config, "data.name")
				tc, _ := sweep.Get(r.Config, "data.train_classes")
				byCfg[fmt.Sprintf("%v %s seed %d", d, sweep.FormatValue(tc), r.Seed)] = r
			}
		}
		src := map[string]string{"init-bg866": "omniglot [98,964]", "init-bg200": "omniglot [98,298]", "init-mnist": "mnist null",
			"init-fashion-mnist": "fashion-mnist null", "init-bg24": "omniglot [24,48]", "init-inat": "inat null"}
		for _, r := range final.Runs {
			n, _ := sweep.Get(r.Config, "name")
			v, has := sweep.Get(r.Config, "model.init_from")
			key, want := src[fmt.Sprint(n)]
			if !want {
				if has {
					t.Errorf("%s run %s starts from %v", c.scale, r.Label(), v)
				}
				continue
			}
			pre, ok := byCfg[fmt.Sprintf("%s seed %d", key, r.Seed)]
			if !ok || v != "run:"+pre.Hash {
				t.Errorf("%s run %s: model.init_from %v, want run:<hash of the %s pre-training, seed %d> (%v)", c.scale, r.Label(), v, key, r.Seed, ok)
			}
		}
	}
}

// TestRSKClaimsMatchSpec: claims.yaml parses into its 34 claims, and on a synthetic store of the
// small scale's whole plan (simulateSweep) every claim finds its arms unambiguously (at most one
// record per seed and arm) with the seeds the spec gives them — 5 for Table 4's claims (C1, C2 on
// both sets, C3's rank) and for C2's batch contrast (48 and 392 have 5 seeds in both arms), 3 for
// the rest (every value of a trend or argmax sweep has seeds 0-2).
func TestRSKClaimsMatchSpec(t *testing.T) {
	s := mustLoadSpec(t, rskSpecPath)
	cs, err := judge.LoadClaims(filepath.Join(filepath.Dir(rskSpecPath), "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 44 { // 34 from scratch, 10 in the pretrained regime (frozen 7, fine-tuned c1f, c2f, c3f)
		t.Errorf("%d claims, want 44", len(cs.Claims))
	}
	five := map[string]bool{"c1-omni98": true, "c1-omnifull": true, "c2-simix-omni98": true, "c2-simix-omnifull": true,
		"c2-simix-small-batch": true, "c3-rank": true}
	_, recs := simulateSweep(t, s, "small")
	for _, c := range cs.Claims {
		if c.Scale == "pretrained" { // another scale's runs (TestPretrainedClaimsMatchSpecs)
			continue
		}
		v, err := judge.EvaluateClaim(c, cs, recs, judge.ClaimOptions{Scale: "small"})
		if err != nil {
			t.Errorf("%s: %v", c.ID, err)
			continue
		}
		want := 3
		if five[c.ID] {
			want = 5
		}
		if len(v.Seeds) != want { // seeds 3 and 4 of Table 4's RS@k or of batch 48 / 392 may stay unpaired
			t.Errorf("%s: %d paired seeds %v (unpaired %v); want %d", c.ID, len(v.Seeds), v.Seeds, v.Unpaired, want)
		}
		for _, a := range v.Arms {
			if a.N != want {
				t.Errorf("%s: arm %q has n = %d, want %d", c.ID, a.Label, a.N, want)
			}
		}
	}
}

// TestRSKSmokeEndToEnd runs the smoke scale through `dmlkit run` (4 runs: RS@k + SiMix; RS@k in
// multistage chunks of 32 with a blockwise loss stage; a pre-training on characters 24-47; the
// fine-tuning on characters 0-23 that starts from it, head included). The sweep plans the
// fine-tuning only after its source is stored, with model.init_from = run:<the pre-training's
// hash>; and because it takes the whole embedding network, its step-0 evaluation on the same 30 test
// characters must reproduce the pre-training's final test metrics exactly (R@1 and MAP@R): the
// fine-tuned run's initial weights are the source checkpoint's final weights.
func TestRSKSmokeEndToEnd(t *testing.T) {
	tmp, recs := runSmokeSweep(t, rskSpecPath, 4)
	byName := map[string]sweep.Record{}
	for _, r := range recs {
		n, _ := sweep.Get(r.Config, "name")
		byName[fmt.Sprint(n)] = r
		if v := r.Metrics["R@1"]; !(v >= 0 && v <= 1) {
			t.Errorf("%v: R@1 = %v, want a fraction", n, v)
		}
	}
	pre, fine := byName["pretrain"], byName["init-bg24"]
	if v, _ := sweep.Get(fine.Config, "model.init_from"); v != "run:"+pre.Hash {
		t.Fatalf("init-bg24: stored model.init_from %v, want run:%s", v, pre.Hash)
	}
	for _, k := range []string{"R@1", "MAP@R"} {
		curve := fine.Series["curve/test/"+k]
		if len(curve) != 2 || curve[0] != pre.Metrics[k] {
			t.Errorf("init-bg24: curve/test/%s = %v, want its first point = the pre-training's final %s %v", k, curve, k, pre.Metrics[k])
		}
		// init/<metric> (the step-0 evaluation as a scalar, Table 5's init row) is that same number.
		if got := fine.Metrics["init/"+k]; got != pre.Metrics[k] {
			t.Errorf("init-bg24: init/%s = %v, want the pre-training's final %s %v", k, got, k, pre.Metrics[k])
		}
	}
	if _, ok := pre.Metrics["init/R@1"]; ok {
		t.Error("pretrain (no eval.initial) has init/R@1")
	}
	// Every record carries its cost: the first (compiling) step's time and the run's peak memory.
	for _, r := range recs {
		if r.Metrics["time/first_step_ms"] <= 0 || r.Metrics["mem/peak_rss_mb"] <= 0 || r.Metrics["mem/concurrent_runs"] < 1 {
			t.Errorf("%s: time/first_step_ms %v, mem/peak_rss_mb %v, mem/concurrent_runs %v; want > 0, > 0, ≥ 1", r.Hash,
				r.Metrics["time/first_step_ms"], r.Metrics["mem/peak_rss_mb"], r.Metrics["mem/concurrent_runs"])
		}
	}
	if code, _, stderr := runCLI("tables", rskSpecPath, "--scale", "smoke", "--results", filepath.Join(tmp, "results"), "--out", filepath.Join(tmp, "tables")); code != 0 {
		t.Fatalf("tables: code %d: %s", code, stderr)
	}
}

// TestRSKStoredResultsMatchSpec: the committed small-scale store is exactly the spec's plan — every
// run stored once, nothing stored that the spec does not plan, no tuning point pending — each
// record from a clean tree, none failed (checkStoredResultsMatchSpec).
func TestRSKStoredResultsMatchSpec(t *testing.T) {
	checkStoredResultsMatchSpec(t, mustLoadSpec(t, rskSpecPath), rskSpecPath, true)
}
