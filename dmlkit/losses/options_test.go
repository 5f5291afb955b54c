package losses_test

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
)

// TestInvalidOptionsAreErrors: out-of-range hyperparameters (a negative margin or scale, a cosine
// margin outside [-1, 1]) and non-finite ones are errors from losses.New naming the loss and the
// field — before, `--set margin=-5` built a triplet loss; the boundary values are still accepted.
func TestInvalidOptionsAreErrors(t *testing.T) {
	for _, tc := range []struct {
		loss  string
		set   map[string]any
		field string // "" = accepted
	}{
		{"triplet", map[string]any{"margin": "-5"}, "margin -5"},
		{"triplet", map[string]any{"margin": "0"}, ""},
		{"triplet", map[string]any{"margin": "NaN"}, "margin = NaN"},
		{"centroidtriplet", map[string]any{"margin": -0.1}, "margin -0.1"},
		{"contrastive", map[string]any{"neg_margin": -0.5}, "neg_margin -0.5"},
		{"contrastive", map[string]any{"distance": "cosine", "pos_margin": 1.5}, "pos_margin 1.5"},
		{"contrastive", map[string]any{"distance": "cosine", "pos_margin": 1, "neg_margin": -1}, ""},
		{"proxyanchor", map[string]any{"margin": -0.1}, "margin = -0.1"},
		{"proxyanchor", map[string]any{"alpha": 0}, "alpha = 0"},
		{"multisimilarity", map[string]any{"beta": -50}, "beta -50"},
		{"multisimilarity", map[string]any{"epsilon": -0.1}, "epsilon = -0.1"},
		{"margin", map[string]any{"margin": -0.2}, "margin = -0.2"},
		{"arcface", map[string]any{"margin": -0.5}, "margin = -0.5"},
		{"cosface", map[string]any{"margin": -0.35}, "margin = -0.35"},
		{"circle", map[string]any{"m": -0.25}, "m = -0.25"},
		{"blackboxap", map[string]any{"margin": -0.1}, "margin = -0.1"},
		{"softtriple", map[string]any{"la": 0}, "la = 0"},
		{"softtriple", map[string]any{"margin": -0.01}, "margin = -0.01"},
		{"idml", map[string]any{"scale": 0}, "scale 0"},
		{"tcm", map[string]any{"pos_margin": "+Inf"}, "pos_margin = +Inf"},
		{"rsk", map[string]any{"simix_alpha": -1}, ""}, // negative: drawn at random (documented)
		{"combo", map[string]any{"expr": "smoothap+triplet(margin=-5)"}, "margin -5"},
	} {
		_, err := losses.New(tc.loss, tc.set)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s %v: %v", tc.loss, tc.set, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), tc.loss) {
			t.Errorf("%s %v: got %v; want an error naming %s and %q", tc.loss, tc.set, err, tc.loss, tc.field)
		}
	}
}
