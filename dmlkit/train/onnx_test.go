package train

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// onnxFixture is the ONNX backbone fixture of dmlkit/models (a torchvision-style mini ResNet
// exported by PyTorch 1.13, 3 input channels, [B, 8] features).
const onnxFixture = "../models/testdata/onnx_backbone.onnx"

// onnxRunConfig is the tiny synthetic run (testConfig: 12×12 grey images, 16 classes, batches of
// 4 classes × 4, contrastive loss, Adam 3e-3) with backbone onnx; the grey images are repeated to
// the network's three channels. 4 epochs (30 steps).
func onnxRunConfig() Config {
	cfg := testConfig()
	cfg.Model.Backbone = "onnx"
	cfg.Model.Pretrained = onnxFixture
	cfg.Model.Channels = nil
	cfg.Epochs = 4
	cfg.Checkpoint.Keep = 1
	return cfg
}

// runONNXStore runs cfg in a temporary directory and returns the per-step losses and the store
// of the final checkpoint.
func runONNXStore(t *testing.T, cfg Config) ([]float64, *model.Store) {
	t.Helper()
	dir := t.TempDir()
	_, ls := runLosses(t, cfg, dir, Options{})
	ck, err := LatestCheckpoint(dir)
	if err != nil || ck == "" {
		t.Fatalf("no checkpoint in %s: %v", dir, err)
	}
	store := model.NewStore()
	if _, err := loadCheckpoint(ck, store); err != nil {
		t.Fatal(err)
	}
	return ls, store
}

// backboneVsFile compares the /model/backbone/ONNX/ variables of store with the initializers of
// the ONNX file (read independently of onnx-gomlx, [models.ReadONNXWeights]); it returns how many
// differ, and fails on a variable the file lacks or an initializer without a variable.
func backboneVsFile(t *testing.T, store *model.Store) (changed, trainable, total int) {
	t.Helper()
	w, err := models.ReadONNXWeights(onnxFixture)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range w {
		v := store.GetVariable("/model/backbone/ONNX/" + name)
		if v == nil {
			t.Errorf("initializer %s has no variable", name)
			continue
		}
		total++
		if v.Trainable {
			trainable++
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		got := tensors.MustCopyFlatData[float32](val)
		for i := range got {
			if got[i] != want.Data[i] {
				changed++
				break
			}
		}
	}
	return changed, trainable, total
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// TestONNXBackboneTrains: a 30-step training run with the ONNX backbone lowers the loss (mean of
// the last 8 steps below the mean of the first 8; the batches differ, so single steps are
// noisy); afterwards exactly the 18 trainable tensors (6 convolution weights, 6 BN scales and 6
// biases) differ from the file and the 12 running statistics do not (frozen BN). With
// optimizer.groups {match: /backbone/, lr_mul: 0} no backbone tensor changes.
func TestONNXBackboneTrains(t *testing.T) {
	cfg := onnxRunConfig()
	ls, store := runONNXStore(t, cfg)
	if len(ls) < 24 {
		t.Fatalf("%d steps, want ≥ 24", len(ls))
	}
	first, last := mean(ls[:8]), mean(ls[len(ls)-8:])
	t.Logf("loss: first 8 steps %.4f, last 8 %.4f (step 1 %.4f, step %d %.4f)", first, last, ls[0], len(ls), ls[len(ls)-1])
	if !(last < first) {
		t.Errorf("the loss did not fall: first 8 steps %.4f, last 8 %.4f", first, last)
	}
	changed, trainable, total := backboneVsFile(t, store)
	if total != 30 || trainable != 18 || changed != 18 {
		t.Errorf("backbone: %d tensors (want 30), %d trainable (want 18), %d changed by training (want 18)", total, trainable, changed)
	}

	cfg.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0}}
	cfg.Epochs = 1
	_, store = runONNXStore(t, cfg)
	if changed, _, total := backboneVsFile(t, store); total != 30 || changed != 0 {
		t.Errorf("frozen backbone (lr_mul 0): %d of %d tensors changed", changed, total)
	}
}

// TestONNXBackboneFrozen: model.freeze_backbone with backbone onnx (head trained on cached
// features) gives the losses and test metrics of the full model with the backbone's learning
// rate 0 (the ONNX BatchNorms always use their statistics, so training and inference mode compute
// the same features; tolerance 1e-6 relative, as TestFreezeBackboneEqualsZeroBackboneRate). The
// cache key holds model.onnx_output: naming layer1's output computes the features of all
// 16·8 + 10·6 images again instead of reusing those of the graph output.
func TestONNXBackboneFrozen(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	frozen := onnxRunConfig()
	frozen.Model.FreezeBackbone = true
	frozen.Eval.Every = 0
	zero := onnxRunConfig()
	zero.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0}}
	zero.Eval.Every = 0
	run := func(cfg Config) (*Result, int) { return runCountingFeatures(t, cfg) }
	a, n := run(frozen)
	b, _ := run(zero)
	if n != 16*8+10*6 {
		t.Errorf("features computed for %d images, want %d", n, 16*8+10*6)
	}
	assertSameRun(t, a, b)
	if _, n := run(frozen); n != 0 {
		t.Errorf("the same frozen run computed %d features again, want 0 (cached)", n)
	}
	frozen.Model.ONNXOutput = "/layer1/layer1.0/relu_1/Relu_output_0"
	if _, n := run(frozen); n != 16*8+10*6 {
		t.Errorf("with onnx_output the frozen run computed %d features, want %d (a new cache key)", n, 16*8+10*6)
	}
}
