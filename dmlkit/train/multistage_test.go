package train

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// multistageVsDirect runs stages 1–3 of cfg on the first batch of its sampler and returns the
// multistage and direct losses and, over all trainable variables, the largest |multistage −
// direct| gradient entry and the largest direct gradient entry.
func multistageVsDirect(t *testing.T, cfg Config) (msLoss, directLoss, worst, scale float64) {
	t.Helper()
	eng, store, pix, labels := firstBatch(t, &cfg, 1)
	n := len(labels)
	y := tensors.FromFlatDataAndDimensions(labels, n)
	out, err := eng.grads.Call(eng.imageTensor(pix, n), y)
	if err != nil {
		t.Fatal(err)
	}
	direct := out[1:]
	msLoss, err = eng.multistageAccumulate(pix, n, y)
	if err != nil {
		t.Fatal(err)
	}
	vars := eng.trainableVars()
	if len(vars) != len(direct) || len(vars) < 6 {
		t.Fatalf("%d trainable variables, %d direct gradients", len(vars), len(direct))
	}
	for i, v := range vars {
		acc := store.GetVariable("/" + accScope + "/" + model.EscapeScopeName(v.Path()))
		if acc == nil {
			t.Fatalf("no accumulator for %s", v.Path())
		}
		a := tensors.MustCopyFlatData[float32](acc.MustValue())
		d := tensors.MustCopyFlatData[float32](direct[i])
		for k := range a {
			worst = math.Max(worst, math.Abs(float64(a[k]-d[k])))
			scale = math.Max(scale, math.Abs(float64(d[k])))
		}
	}
	if cfg.Multistage.LossBlock > 0 && eng.blocks == nil {
		t.Fatal("the blockwise loss stage did not run")
	}
	return msLoss, scalarValue(out[0]), worst, scale
}

// TestMultistageBlockwiseGradient: multistage backprop with the blockwise loss stage (blocks of 5
// anchors over a batch of 16: 5, 5, 5, 1, so the last block holds a single anchor; chunks of 6)
// gives the direct full-batch parameter gradient to 1e-5 (absolute, or relative to the largest
// entry when that exceeds 1) for every blockwise loss. The random sampler draws 16 of 16 classes ×
// 8 images, so the batch has classes of one sample (anchors without positives) and uneven sizes.
// Both sides are float32 and differ only in summation order (per block, per chunk): 4e-8 to
// 2.4e-6 here, the same as with the whole-batch loss stage (2.0e-6 for contrastive, whose error
// comes from the chunked stage 3). A block that dropped its reference-row gradient or normalised
// by its own counts is off by > 1e-3.
func TestMultistageBlockwiseGradient(t *testing.T) {
	cases := []struct {
		name string
		loss LossConfig
	}{
		{"contrastive", LossConfig{Name: "contrastive"}},
		{"tcm", LossConfig{Name: "tcm", Set: map[string]any{"pos_margin": 0.95, "neg_margin": 0.2}}},
		{"smoothap", LossConfig{Name: "smoothap", Set: map[string]any{"tau": 0.1}}},
		{"rsk", LossConfig{Name: "rsk", Set: map[string]any{"tau2": 0.1, "k": "1,2,4"}}},
		{"rsk+tcm terms", LossConfig{Terms: []LossTerm{
			{Name: "rsk", Weight: 1, Set: map[string]any{"tau2": 0.1, "k": "1,2,4"}},
			{Name: "tcm", Weight: 0.5, Set: map[string]any{"pos_margin": 0.95, "neg_margin": 0.2}},
		}}},
		{"combo", LossConfig{Name: "combo", Set: map[string]any{"expr": "smoothap(tau=0.1) + 0.3*contrastive(distance=cosine, neg_margin=0.2)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Loss = tc.loss
			cfg.Model.FrozenBN = true
			cfg.Model.Projector = []int{6}
			cfg.Sampler = SamplerConfig{Name: "random", BatchSize: 16}
			cfg.Multistage = MultistageConfig{Chunk: 6, LossBlock: 5}
			ms, direct, worst, scale := multistageVsDirect(t, cfg)
			if scale == 0 || ms == 0 {
				t.Fatalf("degenerate: loss %g, direct gradient scale %g", ms, scale)
			}
			if d := math.Abs(ms - direct); d > 1e-5*math.Max(1, math.Abs(direct)) {
				t.Errorf("blockwise multistage loss %.8g vs direct %.8g", ms, direct)
			}
			if worst > 1e-5*math.Max(1, scale) {
				t.Errorf("max |blockwise multistage − direct| gradient = %.3g (scale %.3g)", worst, scale)
			}
			t.Logf("loss %.6g, max gradient error %.2g (scale %.2g)", ms, worst, scale)
		})
	}
}

// TestMultistageLossBlockConfig: loss_block is validated against the multistage setting and the
// loss, with errors naming the field and the reason.
func TestMultistageLossBlockConfig(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string // "" = valid
	}{
		{func(c *Config) { c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4} }, ""},
		{func(c *Config) { c.Multistage = MultistageConfig{Chunk: 4, LossBlock: -1} }, "multistage.loss_block: -1"},
		{func(c *Config) { c.Multistage = MultistageConfig{LossBlock: 4} }, "multistage.chunk > 0"},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4} // SiMix decomposes over anchors too
			c.Loss = LossConfig{Name: "rsk", Set: map[string]any{"simix": true}}
		}, ""},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4}
			c.Loss = LossConfig{Terms: []LossTerm{{Name: "rsk", Weight: 1}, {Name: "proxyanchor", Weight: 1}}}
		}, "loss.terms[1]: loss proxyanchor does not decompose"},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4} // whole-batch stage: any loss
			c.Loss = LossConfig{Name: "rsk", Set: map[string]any{"simix": true}}
		}, ""},
	}
	for i, tc := range cases {
		cfg := testConfig()
		cfg.Model.FrozenBN = true
		tc.mod(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: unexpected error %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: error %v, want one containing %q", i, err, tc.want)
		}
	}
}

// TestMultistageBlockwiseRun: a short run with the blockwise loss stage (RS@k, the loss of
// seed 003's Algorithm 1) trains and moves the loss.
func TestMultistageBlockwiseRun(t *testing.T) {
	cfg := testConfig()
	cfg.Loss = LossConfig{Name: "rsk", Set: map[string]any{"k": "1,2,4", "max_class_size": 4}}
	cfg.Model.FrozenBN = true
	cfg.Multistage = MultistageConfig{Chunk: 6, LossBlock: 6}
	cfg.Epochs, cfg.Steps = 0, 3
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 || math.IsNaN(res.FinalLoss) || res.FinalLoss <= 0 {
		t.Fatalf("steps %d, loss %v", res.Steps, res.FinalLoss)
	}
}
