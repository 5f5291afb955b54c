package train

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// TestDegradedUncertainty: eval.degrade embeds the test set once per degradation after training
// and reports the mean ‖u‖ of the uncertainty embeddings. A blur of σ = 1e−3 changes no pixel (its
// off-centre weights are e^{−1/(2·10⁻⁶)} = 0 in float64), so its mean must equal the mean row norm
// of test_uncertainty.npy, recomputed here from the file (float32 embeddings, float64 sums:
// 1e−6 relative); noise of σ = 0.5 on [0, 1] images must move it, and a second run must give the
// same values (the noise is seeded by the run's seed and the image index, not the batch).
func TestDegradedUncertainty(t *testing.T) {
	cfg := testConfig()
	cfg.Epochs = 1
	cfg.Eval.Every = 0
	cfg.Model.DualHead = true
	cfg.Loss = LossConfig{Name: "idml", Set: map[string]any{"base": "contrastive"}}
	cfg.Eval.Degrade = []data.Degradation{{Kind: "blur", Level: 1e-3}, {Kind: "noise", Level: 0.5}, {Kind: "blur", Level: 1}}
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.UncDegraded) != 3 {
		t.Fatalf("UncDegraded %+v: want 3 entries", res.UncDegraded)
	}
	for i, u := range res.UncDegraded {
		if u.Degradation != cfg.Eval.Degrade[i] || !(u.MeanNorm > 0) || math.IsInf(u.MeanNorm, 0) {
			t.Errorf("entry %d: %+v, want %+v with a finite norm > 0", i, u, cfg.Eval.Degrade[i])
		}
	}
	unc, shape, err := npy.ReadFloat32(filepath.Join(dir, TestUncertaintyFile))
	if err != nil {
		t.Fatal(err)
	}
	var clean float64
	for i := range shape[0] {
		var s float64
		for _, v := range unc[i*shape[1] : (i+1)*shape[1]] {
			s += float64(v) * float64(v)
		}
		clean += math.Sqrt(s)
	}
	clean /= float64(shape[0])
	if got := res.UncDegraded[0].MeanNorm; math.Abs(got-clean) > 1e-6*clean {
		t.Errorf("blur σ = 1e-3: mean ‖u‖ %.9g, want the clean test set's %.9g", got, clean)
	}
	if got := res.UncDegraded[1].MeanNorm; math.Abs(got-clean) < 1e-4*clean {
		t.Errorf("noise σ = 0.5: mean ‖u‖ %.9g equals the clean %.9g: the images were not degraded", got, clean)
	}
	res2, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.UncDegraded {
		if res2.UncDegraded[i] != res.UncDegraded[i] {
			t.Errorf("rerun entry %d: %+v, first run %+v", i, res2.UncDegraded[i], res.UncDegraded[i])
		}
	}
}

func TestDegradeConfig(t *testing.T) {
	base := testConfig()
	base.Model.DualHead = true
	base.Loss = LossConfig{Name: "idml", Set: map[string]any{"base": "contrastive"}}
	y, err := base.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "degrade") {
		t.Errorf("a configuration without eval.degrade resolves with it (its hash would change):\n%s", y)
	}
	for _, c := range []struct {
		name string
		set  func(*Config)
		err  string
	}{
		{"ok", func(c *Config) {
			c.Eval.Degrade = []data.Degradation{{Kind: "noise", Level: 0.1}, {Kind: "blur", Level: 0.1}}
		}, ""},
		{"bad kind", func(c *Config) { c.Eval.Degrade = []data.Degradation{{Kind: "jpeg", Level: 1}} }, "eval.degrade[0].kind"},
		{"zero level", func(c *Config) { c.Eval.Degrade = []data.Degradation{{Kind: "noise", Level: 0.1}, {Kind: "blur"}} }, "eval.degrade[1].level"},
		{"twice", func(c *Config) {
			c.Eval.Degrade = []data.Degradation{{Kind: "noise", Level: 0.1}, {Kind: "noise", Level: 0.1}}
		}, "noise_0.1 is listed twice"},
		{"no dual head", func(c *Config) {
			c.Model.DualHead = false
			c.Loss = LossConfig{Name: "contrastive"}
			c.Eval.Degrade = []data.Degradation{{Kind: "noise", Level: 0.1}}
		}, "needs model.dual_head"},
	} {
		cfg := base
		c.set(&cfg)
		err := cfg.Validate()
		if c.err == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
		}
	}
}
