package train

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestMixup: originals come first with {y, −1}; mixed image i is λ·x_i + (1−λ)·x_π(i) with label
// set {y_i, y_π(i)}; over many draws λ ~ Beta(1, 1) has mean 1/2 and variance 1/12.
func TestMixup(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, size = 6, 3
	pix := make([]float32, n*size)
	for i := range pix {
		pix[i] = float32(i)
	}
	labels := []int64{0, 0, 1, 1, 2, 3}
	out, sets, lam := Mixup(r, 1, pix, labels, size)
	if len(out) != 2*n*size || len(sets) != 4*n {
		t.Fatalf("sizes %d, %d", len(out), len(sets))
	}
	for i := 0; i < n; i++ {
		if sets[2*i] != labels[i] || sets[2*i+1] != -1 {
			t.Fatalf("original %d has set %v", i, sets[2*i:2*i+2])
		}
		// Find the partner: the original j with out = λ x_i + (1−λ) x_j.
		found := false
		for j := 0; j < n; j++ {
			ok := true
			for k := 0; k < size; k++ {
				want := lam*float64(pix[i*size+k]) + (1-lam)*float64(pix[j*size+k])
				ok = ok && math.Abs(float64(out[(n+i)*size+k])-want) < 1e-4
			}
			if ok {
				found = true
				a, b := sets[2*(n+i)], sets[2*(n+i)+1]
				if a != labels[i] || (labels[j] != labels[i] && b != labels[j]) || (labels[j] == labels[i] && b != -1) {
					t.Errorf("mixed %d (partner %d) has set {%d, %d}", i, j, a, b)
				}
			}
		}
		if !found {
			t.Errorf("mixed %d is not λ·x_i + (1−λ)·x_j for any j", i)
		}
	}
	var s, s2 float64
	const m = 20000
	for i := 0; i < m; i++ {
		x := betaSample(r, 1)
		s += x
		s2 += x * x
	}
	mean, v := s/m, s2/m-(s/m)*(s/m)
	// Standard errors: 0.29/√m ≈ 0.002 for the mean, ≈ 0.0006 for the variance.
	if math.Abs(mean-0.5) > 0.01 || math.Abs(v-1.0/12) > 0.004 {
		t.Errorf("Beta(1,1) sample mean %.4f var %.4f, want 0.5, 0.0833", mean, v)
	}
}

// TestMixupRun: a training run with mixup (label sets reach the loss) completes.
func TestMixupRun(t *testing.T) {
	cfg := testConfig()
	cfg.Mixup = MixupConfig{Enabled: true, Alpha: 1}
	cfg.Epochs, cfg.Steps = 0, 3
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestEarlyStop: with a learning rate of 1e-12 the validation metric cannot change, so with
// patience 1 the second evaluation (step 2) stops the run.
func TestEarlyStop(t *testing.T) {
	cfg := testConfig()
	cfg.Optimizer.LR = 1e-12
	cfg.Data.ValClasses = 0.25
	cfg.Eval.EverySteps, cfg.Eval.Patience = 1, 1
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !res.StoppedEarly || res.Steps != 2 {
		t.Fatalf("stopped early %v at step %d, want true at 2", res.StoppedEarly, res.Steps)
	}
	if _, ok := res.Metrics["val/R@1"]; !ok {
		t.Errorf("no validation metrics: %v", res.Metrics)
	}
}

// TestFeatureMode: features extracted by the backbone once and cached as .npy train a linear
// head (backbone "features"); the cached features equal the backbone output of the head-run's
// input, so the head sees the same inputs; training moves test R@1 off its initial value.
func TestFeatureMode(t *testing.T) {
	cfg := testConfig()
	dir := t.TempDir()
	if err := ExtractFeatures(cfg, "", dir); err != nil {
		t.Fatal(err)
	}
	tr, err := prepare.ReadFeatures(filepath.Join(dir, "train_features.npy"), filepath.Join(dir, "train_labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 128 || tr.F != 8 {
		t.Fatalf("train features %d×%d, want 128×8 (16 classes × 8, last block width 8)", tr.N, tr.F)
	}
	hc := testConfig()
	hc.Data = DataConfig{Name: "npy-features", Options: map[string]any{"dir": dir}}
	hc.Model.Backbone = "features"
	hc.Model.Head = "mlp"
	hc.Model.Dim = 8
	hc.Model.LayerNorm = true
	hc.Model.Projector = []int{16}
	hc.Eval.Initial = true
	res, err := Run(context.Background(), hc, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 16 || len(res.History) != 3 {
		t.Fatalf("steps %d, evaluations %d", res.Steps, len(res.History))
	}
	if a, b := res.History[0].Metrics["test/MAP@R"], res.History[2].Metrics["test/MAP@R"]; a == b {
		t.Errorf("test MAP@R did not move: %g → %g", a, b)
	}
	// Image dataset with a feature backbone is refused with a field-naming error.
	bad := testConfig()
	bad.Model.Backbone = "features"
	if _, err := Run(context.Background(), bad, t.TempDir(), nil); err == nil {
		t.Error("features backbone on an image dataset accepted")
	}
}

// TestHierarchicalGeMRun: the hierarchical sampler (coarse labels from the synthetic set), GeM
// pooling, SGD with a step schedule and warm-up, clipping and a frozen first block run end to
// end and the frozen block does not move.
func TestHierarchicalGeMRun(t *testing.T) {
	cfg := testConfig()
	cfg.Sampler = SamplerConfig{Name: "hierarchical", BatchSize: 16, M: 2, CoarsePerBatch: 2}
	cfg.Model.Pool = "gem"
	cfg.Optimizer = OptimizerConfig{Name: "sgd", LR: 0.05, Momentum: 0.9, WeightDecay: 1e-4, ClipValue: 1,
		Groups: []GroupConfig{{Match: "/backbone/block_0/", LRMul: 0}}}
	cfg.Schedule = ScheduleConfig{Name: "step", StepSize: 1, Gamma: 0.5, Warmup: 0.5}
	dir := t.TempDir()
	if _, err := Run(context.Background(), cfg, dir, nil); err != nil {
		t.Fatal(err)
	}
	ck, _ := LatestCheckpoint(dir)
	store := model.NewStore()
	if _, err := loadCheckpoint(ck, store); err != nil {
		t.Fatal(err)
	}
	fresh := model.NewStore()
	models.SetInitSeed(fresh, cfg.Seed)
	for _, p := range []struct {
		path   string
		frozen bool
	}{{"/model/backbone/block_0/conv/weights", true}, {"/model/backbone/block_1/conv/weights", false}} {
		got := tensors.MustCopyFlatData[float32](store.GetVariable(p.path).MustValue())
		scope, name := model.SplitPath(p.path)
		init := tensors.MustCopyFlatData[float32](models.Param(fresh.Scope(scope), name, store.GetVariable(p.path).Shape().Dimensions, models.HeNormal).MustValue())
		same := true
		for i := range got {
			same = same && got[i] == init[i]
		}
		if same != p.frozen {
			t.Errorf("%s: unchanged = %v, want %v", p.path, same, p.frozen)
		}
	}
}

// TestIDMLDualHeadRun: the IDML dual head feeds concat(semantic, uncertainty) to the idml loss
// (proxy-based: proxies get lr ×100 as in the authors' code) with mixup label sets, AdamW and
// gradient clipping at 10, frozen BN.
func TestIDMLDualHeadRun(t *testing.T) {
	cfg := testConfig()
	cfg.Model.DualHead = true
	cfg.Model.FrozenBN = true
	cfg.Loss = LossConfig{Name: "idml"}
	cfg.Mixup = MixupConfig{Enabled: true, Alpha: 1}
	cfg.Optimizer = OptimizerConfig{Name: "adamw", LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-4, ClipValue: 10,
		Groups: []GroupConfig{{Match: "/loss/", LRMul: 100}}}
	cfg.Epochs, cfg.Steps = 0, 3
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 {
		t.Fatalf("%d steps", res.Steps)
	}
	ck, _ := LatestCheckpoint(dir)
	store := model.NewStore()
	if _, err := loadCheckpoint(ck, store); err != nil {
		t.Fatal(err)
	}
	if store.GetVariable("/loss/proxies") == nil || store.GetVariable("/model/unc/weights") == nil {
		t.Error("no proxies or uncertainty head in the checkpoint")
	}
}

// TestRSKSiMixMultistageRun: the RS@k loss with embedding-level SiMix (seed 003) trains through
// multistage backprop (chunks of 6 over batches of 16, frozen BN), as in the paper's setting.
func TestRSKSiMixMultistageRun(t *testing.T) {
	cfg := testConfig()
	cfg.Loss = LossConfig{Name: "rsk", Set: map[string]any{"simix": true, "simix_alpha": 0.5, "k": []any{1, 2, 4}}}
	cfg.Model.FrozenBN = true
	cfg.Multistage.Chunk = 6
	cfg.Epochs, cfg.Steps = 0, 3
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 || math.IsNaN(res.FinalLoss) || res.FinalLoss <= 0 {
		t.Fatalf("steps %d, loss %v", res.Steps, res.FinalLoss)
	}
}
