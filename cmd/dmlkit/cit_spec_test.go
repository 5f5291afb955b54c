package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// citSpecPath is reproductions/cit/spec.yaml seen from this package's directory.
var citSpecPath = filepath.Join("..", "..", "reproductions", "cit", "spec.yaml")

// TestCITSpecPlans: the smoke scale is 2 runs; the small scale without stored runs is the 132
// learning-rate tuning runs (6 per loss, CIT configuration or margin row, equal budget) with every other point pending on them; every
// full-scale run is a valid trainer configuration (the paper's protocol, ready for a GPU).
func TestCITSpecPlans(t *testing.T) {
	s := mustLoadSpec(t, citSpecPath)
	for _, c := range []struct {
		scale   string
		runs    int
		pending bool
	}{{"smoke", 2, false}, {"small", 132, true}, {"full", 12, false}} {
		p, err := s.Plan(c.scale)
		if err != nil {
			t.Fatalf("%s: %v", c.scale, err)
		}
		if len(p.Runs) != c.runs || (len(p.Pending) > 0) != c.pending {
			t.Errorf("%s: %d runs, %d pending; want %d runs, pending %v", c.scale, len(p.Runs), len(p.Pending), c.runs, c.pending)
		}
		for _, r := range p.Runs {
			if err := reproduce.ValidateTrainConfig(r.Config); err != nil {
				t.Errorf("%s run %s: %v", c.scale, r.Label(), err)
			}
		}
	}
}

// TestCITPaperNumbers spot-checks paper.yaml against the seed text, read by hand: Table 1's
// Triplet m = 0.05 CNN row (R@1 95.75, mAP 89.26), Table 3's γ = 0.1 ViT In-shop mAP (76.64) and
// Table 7's CT m = 0.5 ViT SV (48.71; its columns are R@1, mAP, mINP, SV, NMI).
func TestCITPaperNumbers(t *testing.T) {
	s := mustLoadSpec(t, citSpecPath)
	for _, c := range []struct {
		metric string
		value  float64
		frags  []string
	}{
		{"reid/CMC@1", 95.75, []string{"Table 1", "Triplet", "0.05", "CNN"}},
		{"reid/mAP", 89.26, []string{"Table 1", "Triplet", "0.05", "CNN"}},
		{"mAP", 76.64, []string{"Table 3", "0.1", "ViT", "In-shop"}},
		{"SV", 48.71, []string{"Table 7", "CT", "0.5", "ViT"}},
	} {
		var hits []sweep.Reference
		for _, r := range s.Reference {
			if r.Metric != c.metric || r.Value != c.value {
				continue
			}
			ok := true
			for _, f := range c.frags {
				ok = ok && strings.Contains(r.Source, f)
			}
			if ok {
				hits = append(hits, r)
			}
		}
		if len(hits) == 0 {
			t.Errorf("no reference %s = %g with %v", c.metric, c.value, c.frags)
		}
	}
}

// TestCITSmokeEndToEnd runs the smoke scale (CIT and triplet, 30 Omniglot test characters) through
// `dmlkit run` and checks the protocol metrics against counts worked out by hand: 30 characters ×
// C(20, 2) = 5,700 positive pairs, 2,000 negatives of each kind, 30 × 4 = 120 re-id queries; the step
// log every 5 of 20 steps with L = L_e at γ = 1; then the spec's tables and figures render.
func TestCITSmokeEndToEnd(t *testing.T) {
	tmp, recs := runSmokeSweep(t, citSpecPath, 2)
	results := filepath.Join(tmp, "results")
	seen := map[string]bool{}
	for _, rec := range recs {
		loss := rec.Config["loss"].(map[string]any)["name"].(string)
		seen[loss] = true
		m := rec.Metrics
		for k, want := range map[string]float64{"verify/n_pos": 5700, "verify/n_neg": 2000, "verify_hard/n_neg": 2000, "reid/n_queries": 120, "verify/fa@FAR=1e-3": 2} {
			if m[k] != want {
				t.Errorf("%s: %s = %g, want %g", loss, k, m[k], want)
			}
		}
		for _, k := range []string{"R@1", "R@5", "R@10", "mAP", "NMI", "reid/CMC@1", "reid/mAP", "reid/mINP", "verify/AUC", "verify_hard/AUC", "verify/Acc(10-fold)"} {
			if v, ok := m[k]; !ok || !(v >= 0 && v <= 1) {
				t.Errorf("%s: %s = %v (present %v), want a fraction", loss, k, v, ok)
			}
		}
		steps := rec.Series["steplog/step"]
		if len(steps) != 4 || steps[0] != 5 || steps[3] != 20 {
			t.Errorf("%s: steplog/step = %v, want [5 10 15 20]", loss, steps)
		}
		if loss == "cit" {
			l, le := rec.Series["steplog/loss"], rec.Series["steplog/L_e"]
			if len(l) != 4 || len(le) != 4 || len(rec.Series["steplog/hard_triplets"]) != 4 {
				t.Fatalf("cit step log: loss %v, L_e %v, hard %v", l, le, rec.Series["steplog/hard_triplets"])
			}
			for i := range l {
				if math.Abs(l[i]-le[i]) > 1e-6*math.Max(1, math.Abs(l[i])) {
					t.Errorf("cit step %g: loss %g ≠ L_e %g at γ = 1", steps[i], l[i], le[i])
				}
			}
		}
	}
	if !seen["cit"] || !seen["triplet"] {
		t.Fatalf("records of %v, want cit and triplet", seen)
	}
	if code, _, stderr := runCLI("tables", citSpecPath, "--scale", "smoke", "--results", results, "--out", filepath.Join(tmp, "tables")); code != 0 {
		t.Fatalf("tables: code %d: %s", code, stderr)
	}
	code, _, stderr := runCLI("figures", citSpecPath, "--scale", "smoke", "--results", results, "--out", filepath.Join(tmp, "figures"), "--formats", "png")
	if code != 0 {
		t.Fatalf("figures: code %d: %s", code, stderr)
	}
}

// TestCITStoredResultsMatchSpec: the committed small-scale store is exactly the spec's plan,
// resolved from the store itself, clean, none failed (checkStoredResultsMatchSpec).
func TestCITStoredResultsMatchSpec(t *testing.T) {
	checkStoredResultsMatchSpec(t, mustLoadSpec(t, citSpecPath), citSpecPath, true)
}
