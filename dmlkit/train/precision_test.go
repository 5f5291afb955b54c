package train

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// shortRun trains cfg for steps optimiser steps on its sampler's batches (sampler seed 1, epochs
// repeated as needed, the constant learning rate optimizer.lr) and returns the loss of every step
// and the final trainable variables by path.
func shortRun(t *testing.T, cfg Config, steps int) ([]float64, map[string][]float32) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	split, err := loadData(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := split.train
	h, w, c := tr.Dims()
	store := model.NewStore()
	eng, err := newEngine(&cfg, backend.MustShared(), store, len(classesOf(tr)), h, w, c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSampler(cfg.Sampler, 1, tr.Labels(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for ep := 0; len(losses) < steps; ep++ {
		for _, idx := range s.Epoch(ep) {
			if len(losses) == steps {
				break
			}
			pix := make([]float32, len(idx)*h*w*c)
			tr.Fill(idx, pix)
			labels := make([]int64, len(idx))
			for i, j := range idx {
				labels[i] = int64(tr.Labels()[j])
			}
			loss, err := eng.trainStep(pix, len(idx), labels, 1, cfg.Optimizer.LR, len(losses))
			if err != nil {
				t.Fatal(err)
			}
			losses = append(losses, loss)
		}
	}
	params := map[string][]float32{}
	for _, v := range eng.trainableVars() {
		params[v.Path()] = tensors.MustCopyFlatData[float32](v.MustValue())
	}
	return losses, params
}

// TestPrecisionRunTracksFP32 trains the tiny test CNN (contrastive loss, Adam at 3e-3) for 16
// steps in fp32, bf16 and fp16 — directly with training-mode BN, directly with frozen BN, and in
// multistage chunks of 6 (frozen BN: multistage's two passes agree only then) — and compares each
// half-precision run with the fp32 run of the same path: every step's loss, and the parameter
// drift ‖θ_half − θ_fp32‖ / ‖θ_fp32 − θ_0‖ (the distance between the final parameters against
// the distance the fp32 run travelled).
//
// Tolerances. One bf16 step's loss is within ≈ 0.5 % of fp32's (the models package measures
// ≈ 0.4 % embedding error for this CNN); over 16 Adam steps the trajectories drift apart. Measured
// here (losses ≈ 0.7–1.1): worst loss difference 0.005 / 0.038 / 0.029 and drift 2.4 / 7.1 / 6.6 %
// for bf16 (training BN / frozen BN / multistage), 0.0005 / 0.014 / 0.008 and 0.9 / 3.1 / 3.2 % for
// fp16 — the frozen-BN network, whose activations are not normalised, drifts more. The bounds,
// 0.08 and 20 % for bf16, 0.03 and 8 % for fp16, hold that with room and still fail when a
// gradient is lost or wrongly scaled (the drift is then O(100 %)). Every half-precision run must
// differ from fp32 (drift > 1e-5), or it did not run in half precision.
func TestPrecisionRunTracksFP32(t *testing.T) {
	const steps = 16
	for _, path := range []struct {
		chunk  int
		frozen bool
	}{{0, false}, {0, true}, {6, true}} { // multistage's two passes agree only with frozen BN
		chunk := path.chunk
		base := testConfig()
		base.Multistage.Chunk = chunk
		base.Model.FrozenBN = path.frozen
		l32, p32 := shortRun(t, base, steps)
		init := initialParams(t, base)
		for _, tc := range []struct {
			p                 Precision
			lossTol, driftTol float64
		}{{PrecisionBF16, 0.08, 0.2}, {PrecisionFP16, 0.03, 0.08}} {
			cfg := base
			cfg.Precision = tc.p
			l, p := shortRun(t, cfg, steps)
			worst := 0.0
			for i := range l {
				worst = math.Max(worst, math.Abs(l[i]-l32[i]))
			}
			var d, travel float64
			for path, v := range p32 {
				for k := range v {
					d += math.Pow(float64(p[path][k]-v[k]), 2)
					travel += math.Pow(float64(v[k]-init[path][k]), 2)
				}
			}
			drift := math.Sqrt(d / travel)
			t.Logf("chunk %d frozen %v %s: worst loss difference %.3g (fp32 loss %.3g → %.3g), parameter drift %.3g", chunk, path.frozen, tc.p, worst, l32[0], l32[steps-1], drift)
			if worst > tc.lossTol || math.IsNaN(worst) {
				t.Errorf("chunk %d frozen %v %s: loss differs from fp32 by up to %.3g, want ≤ %g", chunk, path.frozen, tc.p, worst, tc.lossTol)
			}
			if !(drift > 1e-5 && drift <= tc.driftTol) {
				t.Errorf("chunk %d frozen %v %s: parameter drift %.3g, want in (1e-5, %g]", chunk, path.frozen, tc.p, drift, tc.driftTol)
			}
		}
	}
}

// initialParams returns cfg's initial trainable variables by path (a fresh engine on cfg).
func initialParams(t *testing.T, cfg Config) map[string][]float32 {
	t.Helper()
	eng, _, pix, labels := firstBatch(t, &cfg, 1)
	// Build a graph so every variable exists, without updating anything.
	if _, err := eng.grads.Call(eng.imageTensor(pix, len(labels)), tensors.FromFlatDataAndDimensions(labels, len(labels))); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for _, v := range eng.trainableVars() {
		out[v.Path()] = tensors.MustCopyFlatData[float32](v.MustValue())
	}
	return out
}

// TestFP16LossScale: with the loss weighted by 1e-5 the float16 backprop underflows without loss
// scaling (loss_scale 1) — its gradients are mostly lost — and tracks float32 again with the
// default scale of 1024. Relative gradient errors ‖g − g_fp32‖/‖g_fp32‖ measured: 1.65 unscaled,
// 0.0036 with scale 1024 (0.0034 is fp16's error on the unweighted loss, where scaling changes
// nothing). Bounds: unscaled > 0.3, scaled < 0.02.
func TestFP16LossScale(t *testing.T) {
	grads := func(p Precision, scale float64) []float32 {
		cfg := testConfig()
		cfg.Loss = LossConfig{Terms: []LossTerm{{Name: "contrastive", Weight: 1e-5}}}
		cfg.Precision, cfg.LossScale = p, scale
		eng, _, pix, labels := firstBatch(t, &cfg, 1)
		out, err := eng.grads.Call(eng.imageTensor(pix, len(labels)), tensors.FromFlatDataAndDimensions(labels, len(labels)))
		if err != nil {
			t.Fatal(err)
		}
		var g []float32
		for _, o := range out[1:] {
			g = append(g, tensors.MustCopyFlatData[float32](o)...)
		}
		return g
	}
	g32 := grads(PrecisionFP32, 0)
	rel := func(g []float32) float64 {
		var d, n float64
		for i := range g {
			d += math.Pow(float64(g[i]-g32[i]), 2)
			n += math.Pow(float64(g32[i]), 2)
		}
		return math.Sqrt(d / n)
	}
	unscaled, scaled := rel(grads(PrecisionFP16, 1)), rel(grads(PrecisionFP16, 0))
	t.Logf("fp16 gradient error: unscaled %.3g, scale %d %.3g", unscaled, DefaultLossScale, scaled)
	if !(unscaled > 0.3) || !(scaled < 0.02) {
		t.Errorf("fp16 gradient error: unscaled %.3g (want > 0.3), scaled %.3g (want < 0.02)", unscaled, scaled)
	}
}

// TestPrecisionConfig checks the validation of precision and loss_scale, that --set style keys
// reach them, and that a configuration without them resolves to YAML without them (so the
// resolved configurations and hashes of existing runs do not change).
func TestPrecisionConfig(t *testing.T) {
	cfg := testConfig()
	if y, err := cfg.YAML(); err != nil || strings.Contains(string(y), "precision") || strings.Contains(string(y), "loss_scale") {
		t.Errorf("default configuration's YAML mentions precision or loss_scale (err %v):\n%s", err, y)
	}
	if err := cfg.Apply(map[string]any{"precision": "fp16", "loss_scale": 512}); err != nil || cfg.Precision != PrecisionFP16 || cfg.LossScale != 512 {
		t.Errorf("Apply precision fp16, loss_scale 512: %v, got %q, %g", err, cfg.Precision, cfg.LossScale)
	}
	for _, tc := range []struct {
		p       Precision
		scale   float64
		wantErr string
	}{
		{"", 0, ""},
		{PrecisionFP32, 0, ""},
		{PrecisionBF16, 0, ""},
		{PrecisionFP16, 0, ""},
		{PrecisionFP16, 128, ""},
		{"fp8", 0, "precision: \"fp8\""},
		{PrecisionBF16, 128, "loss_scale: 128: only with precision fp16"},
		{PrecisionFP16, -1, "loss_scale: -1"},
		{PrecisionFP16, math.Inf(1), "loss_scale: +Inf"},
	} {
		cfg := testConfig()
		cfg.Precision, cfg.LossScale = tc.p, tc.scale
		err := cfg.Validate()
		if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("precision %q, loss_scale %g: error %v, want %q", tc.p, tc.scale, err, tc.wantErr)
		}
	}
}
