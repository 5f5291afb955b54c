package train

import (
	"strings"
	"testing"
)

// TestIDMLUncDimMustMatchModel: the idml loss splits [B, dim + unc] where loss.set.unc_dim says
// (0 = halves); the model's uncertainty head width (model.unc_dim, 0 = dim) must agree, or the split
// would silently move (8 + 3 = 11 columns split in halves would be 5.5 + 5.5).
func TestIDMLUncDimMustMatchModel(t *testing.T) {
	for _, c := range []struct {
		name           string
		modelUnc, loss int
		err            string
	}{
		{"both default", 0, 0, ""},
		{"matched", 3, 3, ""},
		{"loss told the model's dim", 0, 8, ""},
		{"loss not told", 3, 0, "loss.set.unc_dim: 0, but the model's uncertainty head has width 3"},
		{"different", 3, 4, "loss.set.unc_dim: 4"},
	} {
		cfg := testConfig()
		cfg.Model.DualHead, cfg.Model.UncDim = true, c.modelUnc
		cfg.Loss = LossConfig{Name: "idml", Set: map[string]any{"base": "contrastive", "unc_dim": c.loss}}
		err := cfg.Validate()
		if c.err == "" && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.err)
		}
	}
	cfg := testConfig()
	cfg.Model.UncDim = 3
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model.unc_dim") {
		t.Errorf("unc_dim without dual_head: %v", err)
	}
}
