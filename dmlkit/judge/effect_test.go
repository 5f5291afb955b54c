package judge

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

func effectRecords() []sweep.Record {
	mk := func(expr string, seed int64, opis, r1 float64) sweep.Record {
		return sweep.Record{Seed: seed, Params: map[string]any{"loss.set.expr": expr},
			Config:  map[string]any{"loss": map[string]any{"set": map[string]any{"expr": expr}}, "seed": seed},
			Metrics: sweep.Metrics{"OPIS": opis, "R@1": r1}}
	}
	return []sweep.Record{
		mk("sap", 0, 0.010, 0.70), mk("sap", 1, 0.012, 0.72), mk("sap", 2, 0.011, 0.71),
		mk("sap+tcm", 0, 0.008, 0.71), mk("sap+tcm", 1, 0.013, 0.72), mk("sap+tcm", 2, 0.009, 0.70),
		mk("sap+tcm", 3, 0.001, 0.99), // no baseline for seed 3: not paired
	}
}

func TestCompareSettingsHandWorked(t *testing.T) {
	// Paired seeds 0, 1, 2. OPIS differences: −0.002, +0.001, −0.002 → mean −0.001,
	// sample std sqrt(((−0.001)² + 0.002² + (−0.001)²)/2) = sqrt(3e-6) ≈ 1.732e-3; lower is better:
	// 2 of 3 improved. Base mean 0.011, treated 0.010 → relative change −1/11.
	e, err := CompareSettings(effectRecords(), "loss.set.expr", "sap", "sap+tcm", "OPIS", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Seeds) != 3 || e.Improved != 2 {
		t.Fatalf("seeds %v improved %d, want [0 1 2] and 2", e.Seeds, e.Improved)
	}
	for _, c := range []struct{ got, want float64 }{
		{e.Diff.Mean, -0.001}, {e.Diff.Std, math.Sqrt(3e-6)}, {e.Base.Mean, 0.011}, {e.Treated.Mean, 0.010},
		{e.RelativeChange(), -1.0 / 11},
	} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("got %v, want %v (effect %+v)", c.got, c.want, e)
		}
	}
	// R@1 differences: +0.01, 0, −0.01 → mean 0; higher is better: 1 of 3 improved.
	e, err = CompareSettings(effectRecords(), "loss.set.expr", "sap", "sap+tcm", "R@1", false)
	if err != nil || e.Improved != 1 || math.Abs(e.Diff.Mean) > 1e-12 {
		t.Fatalf("R@1 effect %+v, %v", e, err)
	}
}

func TestCompareSettingsErrors(t *testing.T) {
	recs := effectRecords()
	if _, err := CompareSettings(recs, "loss.set.expr", "sap", "rsk", "OPIS", true); err == nil || !strings.Contains(err.Error(), "no seed") {
		t.Errorf("unpaired: %v", err)
	}
	recs = append(recs, recs[0])
	if _, err := CompareSettings(recs, "loss.set.expr", "sap", "sap+tcm", "OPIS", true); err == nil || !strings.Contains(err.Error(), "several records with seed 0") {
		t.Errorf("duplicate seed: %v", err)
	}
}
