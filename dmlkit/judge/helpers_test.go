// Test helpers copied from package sweep's tests (spec_test.go, sweep_test.go) and package report's (verdict_test.go, layout_test.go): a package's tests cannot call another package's.

package judge

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// crossReference reports whether a problem of [RawTexts] is the name of one of the paper's figures,
// tables or tuning steps (a caption may point the reader to "table tune_margins").
func crossReference(s *sweep.Spec, problem string) bool {
	for _, f := range s.Figures {
		if strings.HasSuffix(problem, fmt.Sprintf("%q", f.Name)) {
			return true
		}
	}
	for _, t := range s.AllTables() {
		if strings.HasSuffix(problem, fmt.Sprintf("%q", t.Name)) {
			return true
		}
	}
	return false
}

const specYAML = `
paper: toy
description: a toy sweep
base:
  data: {name: omniglot, limit_classes: 0}
  loss: {name: contrastive, margin: 0.5}
  train: {epochs: 10, lr: 0.001}
scales:
  smoke: {train.epochs: 1, data: {limit_classes: 20}, seeds: [7]}
  small: {train.epochs: 3}
  full:  {data.name: inat, grid: {loss.name: [rsk]}}
sweep:
  grid: {loss.name: [contrastive, rsk], loss.margin: [0.2, 0.5]}
  seeds: [0, 1, 2]
  seed_key: train.seed
reference:
  - {match: {loss.name: rsk}, metric: R@1, value: 70.5, source: "seed 003 Table 1, CUB row"}
tables:
  - {name: main, rows: [loss.name, loss.margin], metrics: [R@1], factor: 100}
figures:
  - {name: curve, kind: line, series: [val_r1], group: [loss.name]}
`

func mustParse(t *testing.T, y string) *sweep.Spec {
	t.Helper()
	s, err := sweep.Parse([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bg() context.Context { return context.Background() }

// fakeMetrics is a deterministic function of the configuration, so that a stored record can be
// checked against the configuration it claims to come from.
func fakeMetrics(cfg map[string]any) map[string]float64 {
	m, _ := sweep.Get(cfg, "loss.margin")
	seed, _ := sweep.Get(cfg, "train.seed")
	name, _ := sweep.Get(cfg, "loss.name")
	mf, _ := sweep.Numeric(m)
	sf, _ := sweep.Numeric(seed)
	r1 := 0.5 + mf/10 + sf/100
	if name == "rsk" {
		r1 += 0.05
	}
	return map[string]float64{"R@1": r1}
}

func fakeRunner(calls *atomic.Int64) sweep.Runner {
	return func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		calls.Add(1)
		// A restarted run must find a clean directory.
		if ents, _ := os.ReadDir(r.Dir); len(ents) != 0 {
			return nil, fmt.Errorf("run directory %s not clean: %d entries", r.Dir, len(ents))
		}
		if err := os.WriteFile(filepath.Join(r.Dir, "checkpoint"), []byte("partial"), 0o644); err != nil {
			return nil, err
		}
		progress("epoch 1/1")
		return &sweep.Outcome{Metrics: fakeMetrics(r.Config), Series: map[string][]float64{"val_r1": {0.1, 0.2}}}, nil
	}
}

// checkStoreComplete asserts the store holds exactly one correct record per run of the plan.
func checkStoreComplete(t *testing.T, st *sweep.Store, plan *sweep.Plan) {
	t.Helper()
	recs, rep, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Duplicates) > 0 {
		t.Errorf("duplicates in store: %v", rep.Duplicates)
	}
	want := map[string]sweep.Run{}
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
		if h, _ := sweep.Hash(rec.Config); h != rec.Hash {
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

// claimRec is a record of one arm and seed; env marks it dirty when dirty is true.
func claimRec(arm string, x any, seed int64, metric float64, dirty bool) sweep.Record {
	cfg := map[string]any{"arm": arm, "seed": seed}
	if x != nil {
		cfg["x"] = x
	}
	r := sweep.Record{Hash: arm + sweep.FormatValue(x) + sweep.FormatValue(seed), Scale: "small", Seed: seed, Config: cfg, Metrics: sweep.Metrics{"m": metric}}
	if dirty {
		r.Env = map[string]any{"git_dirty": true}
	}
	return r
}

// armRecs returns records of arm with the given per-seed values (seed i gets vals[i]).
func armRecs(arm string, vals ...float64) []sweep.Record {
	var out []sweep.Record
	for i, v := range vals {
		out = append(out, claimRec(arm, nil, int64(i), v, false))
	}
	return out
}

func arm(name string) *Arm { return &Arm{Label: name, Where: map[string]any{"arm": name}} }

func better(dir string) ClaimSpec {
	return ClaimSpec{ID: "c", Paper: "p", Source: "Table 1", Kind: KindBetter, Metric: "m", Direction: dir, Base: arm("B"), Treatment: arm("T")}
}

func join(rs ...[]sweep.Record) []sweep.Record {
	var out []sweep.Record
	for _, r := range rs {
		out = append(out, r...)
	}
	return out
}
