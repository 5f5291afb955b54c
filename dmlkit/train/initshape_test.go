package train

import (
	"context"
	"strings"
	"testing"
)

// TestInitFromShapeMismatch: model.init_from from a run of another shape is an error naming the
// variable, both shapes and model.init_from — for model.dim with model.init_head (before: the run
// silently trained the source's 8-d head while its config said 16) and for model.channels (before:
// "total requested size … doesn't match" from deep in the graph).
func TestInitFromShapeMismatch(t *testing.T) {
	src := testConfig() // channels [4, 8], dim 8
	src.Steps = 1
	dir := t.TempDir()
	if _, err := Run(context.Background(), src, dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want []string
	}{
		{"dim 16, init_head", func(c *Config) { c.Model.Dim, c.Model.InitHead = 16, true },
			[]string{"model.init_from " + dir, "/model/head/", "[8 8]", "[8 16]"}},
		{"channels [4, 6]", func(c *Config) { c.Model.Channels = []int{4, 6} },
			[]string{"model.init_from " + dir, "/model/backbone/", "8]", "6]"}},
	} {
		cfg := testConfig()
		cfg.Steps = 1
		cfg.Model.InitFrom = dir
		tc.mod(&cfg)
		_, err := Run(context.Background(), cfg, t.TempDir(), nil)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", tc.name, firstLine(err.Error()), w)
			}
		}
	}
	// The same shapes still initialise from the run.
	cfg := testConfig()
	cfg.Steps = 1
	cfg.Model.InitFrom, cfg.Model.InitHead = dir, true
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err != nil {
		t.Errorf("same shapes: %v", err)
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// TestVerifyFARBelowOneOverNegatives: an explicit eval.verify.fars entry below 1/negatives (or
// 1/hard_negatives) is refused naming the entry, the count and the count it needs; before, its
// TAR was left out of the record without a word. At 1/negatives exactly it is accepted.
func TestVerifyFARBelowOneOverNegatives(t *testing.T) {
	for _, tc := range []struct {
		v    VerifyProtocol
		want string
	}{
		{VerifyProtocol{Negatives: 10000, FARs: []float64{1e-2, 1e-4}}, ""},
		{VerifyProtocol{Negatives: 2000, FARs: []float64{1e-2, 1e-4}}, "eval.verify.fars[1]: 0.0001 is below 1/eval.verify.negatives (1/2000): the TAR at it cannot be resolved; raise negatives to ≥ 10000"},
		{VerifyProtocol{Negatives: 10000, HardNegatives: 500, FARs: []float64{1e-3}}, "eval.verify.fars[0]: 0.001 is below 1/eval.verify.hard_negatives (1/500)"},
		{VerifyProtocol{Negatives: 2000}, ""}, // the default FARs: the unreachable ones are documented as left out
	} {
		c := testConfig()
		c.Eval.Verify = tc.v
		err := c.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.v, err, tc.want)
		}
	}
}
