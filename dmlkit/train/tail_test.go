package train

import (
	"context"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// coralV2 is the uint8 ImageNet MobileNetV2 of ../shared/weights/coral beside the repository,
// relative to this package's directory.
const coralV2 = "../../../shared/weights/coral/mobilenet_v2_1.0_224_quant.tflite"

// tailConfig is frozenConfig with the ImageNet MobileNetV2 (the 12 px synthetic images enlarged
// to 48 px: the cut maps of the last 1–3 blocks are then [2, 2, 160]; at 32 px the last map is
// 1×1 and nearly all of the 1280 features of these binary images are 0, which leaves zero
// embeddings) and the last n blocks trainable (n = 0: none, for freeze_backbone). Skips the
// test when ../shared is absent.
func tailConfig(t *testing.T, n int) Config {
	t.Helper()
	if _, err := os.Stat(coralV2); err != nil {
		t.Skipf("no ../shared/weights/coral: %v", err)
	}
	cfg := frozenConfig()
	cfg.Model.Backbone, cfg.Model.Pretrained, cfg.Model.InputSize = "mobilenet_v2", coralV2, 48
	cfg.Model.TrainableTail = n
	return cfg
}

// cachedSplit loads cfg's data and replaces it by the cached maps of its trainable tail (or the
// features of its frozen backbone), as Run does.
func cachedSplit(t *testing.T, cfg *Config) (raw, cached *sets) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	raw, err := loadData(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cached, err = freezeBackbone(context.Background(), cfg, backend.MustShared(), raw, nil)
	if err != nil {
		t.Fatal(err)
	}
	return raw, cached
}

// TestTrainableTailEqualsFullNetwork: the embedding of a batch through the cached maps and the
// trainable tail ([models.Config.TailOnly]) equals the full network's on the images (resized
// 12 → 48 px in the graph), with the same weights (one store), for the last 1 and 2 blocks:
// the same float32 operations on the same values, up to the rounding of the prefix's
// matrix products, which ran in extraction batches of 64 for the cache and in one batch of 16
// here (measured 1.1e-6; tolerance 1e-5 absolute on unit-length embeddings). The cached maps
// have the shape the file's padding rule gives (48 → 24, 12, 6, 3, 2 px).
func TestTrainableTailEqualsFullNetwork(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	for _, n := range []int{1, 2} {
		cfg := tailConfig(t, n)
		raw, cached := cachedSplit(t, &cfg)
		if h, w, c := cached.test.Dims(); h != 2 || w != 2 || c != 160 {
			t.Errorf("tail %d: cached maps %d×%d×%d, want 2×2×160", n, h, w, c)
		}
		const b = 16
		idx := make([]int, b)
		for i := range idx {
			idx[i] = 3 * i
		}
		h, w, c := raw.test.Dims()
		pix := make([]float32, b*h*w*c)
		raw.test.Fill(idx, pix)
		ch, cw, cc := cached.test.Dims()
		maps := make([]float32, b*ch*cw*cc)
		cached.test.Fill(idx, maps)

		store := model.NewStore()
		models.SetInitSeed(store, cfg.Seed)
		if err := initModel(store, cfg.Model); err != nil {
			t.Fatal(err)
		}
		embed := func(mc models.Config, x *tensors.Tensor) []float32 {
			ex, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
				return models.Build(scope.At(modelScope), mc, x, models.Mode{}).Emb
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ex.Call(x)
			if err != nil {
				t.Fatal(err)
			}
			return tensors.MustCopyFlatData[float32](out[0])
		}
		full := embed(cfg.Model, tensors.FromFlatDataAndDimensions(pix, b, h, w, c))
		tail := embed(cfg.Model.TailOnly(), tensors.FromFlatDataAndDimensions(maps, b, ch, cw, cc))
		if len(full) != b*cfg.Model.Dim || len(tail) != len(full) {
			t.Fatalf("tail %d: embeddings of %d and %d values, want %d", n, len(full), len(tail), b*cfg.Model.Dim)
		}
		worst := 0.0
		for i := range full {
			worst = max(worst, math.Abs(float64(full[i]-tail[i])))
		}
		t.Logf("tail %d: max |full − cached+tail| = %.3g", n, worst)
		if worst > 1e-5 {
			t.Errorf("tail %d: the embedding through the cached maps differs from the full network's by %g", n, worst)
		}
	}
}

// TestTrainableTailZeroRateEqualsFrozen: the last block trainable at learning rate × 0 (optimizer
// group "/backbone/") is the frozen backbone: the tail's weights never move, so the head sees the
// same features at every step and must take the same steps to the same loss and metrics. The
// features reach the head by two routes — the whole backbone in extraction batches of 64, or
// the cached maps through the tail in training batches of 16 — which agree to the bit here
// (the Go backend's row-wise kernels), so the comparison is exact.
func TestTrainableTailZeroRateEqualsFrozen(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	frozen := tailConfig(t, 0)
	frozen.Model.FreezeBackbone = true
	tail := tailConfig(t, 1)
	tail.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0}}
	a, _ := runCountingFeatures(t, frozen)
	b, _ := runCountingFeatures(t, tail)
	assertSameRun(t, a, b)
	if a.FinalLoss != b.FinalLoss || a.Metrics["test/MAP@R"] != b.Metrics["test/MAP@R"] {
		t.Errorf("not bit-identical: loss %v vs %v, MAP@R %v vs %v", a.FinalLoss, b.FinalLoss, a.Metrics["test/MAP@R"], b.Metrics["test/MAP@R"])
	}
	ea, _ := os.ReadFile(filepath.Join(a.OutDir, "test_embeddings.npy"))
	eb, _ := os.ReadFile(filepath.Join(b.OutDir, "test_embeddings.npy"))
	if len(ea) == 0 || string(ea) != string(eb) {
		t.Error("the test embeddings of the frozen run and the tail at rate 0 differ")
	}
}

// TestTrainableTailStep: one optimiser step on the cached maps moves the tail's weights (here
// the last block's expansion and the final 1×1 convolution to 1280 channels) and the head's;
// the store holds no variable of the fixed prefix (they stay in the cache's extraction).
// The tail's gradients themselves are checked against finite differences in
// models.TestTFLiteTailGradients.
func TestTrainableTailStep(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	cfg := tailConfig(t, 1)
	cfg.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0.5}}
	_, split := cachedSplit(t, &cfg)
	store := model.NewStore()
	rc := cfg
	rc.Model = trainedModel(cfg)
	if err := initModel(store, rc.Model); err != nil {
		t.Fatal(err)
	}
	h, w, c := split.train.Dims()
	eng, err := newEngine(&rc, backend.MustShared(), store, len(classesOf(split.train)), h, w, c)
	if err != nil {
		t.Fatal(err)
	}
	var backbone []string
	for v := range store.IterVariables() {
		if strings.HasPrefix(v.Path(), "/model/backbone/") {
			backbone = append(backbone, v.Path())
		}
	}
	slices.Sort(backbone)
	// Tail 1 of the uint8 file: ops 58–60 (expanded_conv_16) and 61 (Conv_1), weights and biases.
	if len(backbone) != 8 || !strings.HasPrefix(backbone[0], "/model/backbone/058_MobilenetV2_expanded_conv_16_expand/") ||
		!strings.HasPrefix(backbone[7], "/model/backbone/061_MobilenetV2_Conv_1/") {
		t.Fatalf("backbone variables %v, want the 8 of ops 58–61", backbone)
	}
	watch := []string{"/model/backbone/058_MobilenetV2_expanded_conv_16_expand/weights", "/model/backbone/061_MobilenetV2_Conv_1/biases"}
	before := map[string][]float32{}
	value := func(p string) []float32 {
		v := store.GetVariable(p)
		if v == nil {
			t.Fatalf("no variable %s", p)
		}
		x, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](x)
	}
	for _, p := range watch {
		before[p] = value(p)
	}
	s, err := NewSampler(cfg.Sampler, cfg.Seed, split.train.Labels(), nil)
	if err != nil {
		t.Fatal(err)
	}
	idx := s.Epoch(0)[0]
	pix := make([]float32, len(idx)*h*w*c)
	split.train.Fill(idx, pix)
	labels := make([]int64, len(idx))
	for i, j := range idx {
		labels[i] = int64(split.train.Labels()[j])
	}
	loss, err := eng.trainStep(pix, len(idx), labels, 1, cfg.Optimizer.LR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(loss) || loss <= 0 {
		t.Errorf("loss %g", loss)
	}
	for _, p := range watch {
		after, changed := value(p), 0
		for i := range after {
			if after[i] != before[p][i] {
				changed++
			}
		}
		t.Logf("%s: %d of %d values changed", p, changed, len(after))
		if changed == 0 {
			t.Errorf("%s did not change in a step with lr_mul 0.5", p)
		}
	}
}

// TestTrainableTailCache: a second run reads the cut maps from disk (no prefix evaluated); the
// cache key differs between the last 1 and 2 blocks (another directory, all maps computed
// again) and from the frozen backbone's; a tail longer than the file's 16 blocks, a non-mobilenet
// backbone, augmentation and freeze_backbone with it are refused, naming the field.
func TestTrainableTailCache(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(FeatureCacheEnv, cache)
	all := 16*8 + 10*6 // synth-test: 16 × 8 training and 10 × 6 test images, all distinct
	one := tailConfig(t, 1)
	one.Epochs = 1
	if _, n := runCountingFeatures(t, one); n != all {
		t.Fatalf("first run computed %d maps, want %d", n, all)
	}
	again := one
	again.Seed, again.Data.ValClasses = 3, 0.25 // another split and sampler, the same backbone
	if _, n := runCountingFeatures(t, again); n != 0 {
		t.Errorf("the second run computed %d maps, want 0 (all cached)", n)
	}
	two := one
	two.Model.TrainableTail = 2
	if _, n := runCountingFeatures(t, two); n != all {
		t.Errorf("tail 2 computed %d maps, want all %d (another key)", n, all)
	}
	keys := map[string]int{}
	for _, n := range []int{0, 1, 2} {
		cfg := tailConfig(t, n)
		k, err := backboneKey(&cfg, 12, 12, 1)
		if err != nil {
			t.Fatal(err)
		}
		keys[k] = n
	}
	if len(keys) != 3 {
		t.Errorf("backbone keys of tail 0 (frozen), 1 and 2: %d distinct, want 3", len(keys))
	}
	dirs, _ := filepath.Glob(filepath.Join(cache, "*"))
	if len(dirs) != 2 {
		t.Errorf("%d cache directories, want 2 (tail 1 and tail 2): %v", len(dirs), dirs)
	}

	long := tailConfig(t, 17)
	if _, err := Run(context.Background(), long, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "model.trainable_tail: 17: want 1 to 16") {
		t.Errorf("tail 17: %v, want an error naming model.trainable_tail and the 16 blocks", err)
	}
	cnn := frozenConfig()
	cnn.Model.TrainableTail = 1
	if err := cnn.Validate(); err == nil || !strings.Contains(err.Error(), "model.trainable_tail") {
		t.Errorf("trainable_tail with the small CNN: %v, want an error naming model.trainable_tail", err)
	}
	both := tailConfig(t, 1)
	both.Model.FreezeBackbone = true
	if err := both.Validate(); err == nil || !strings.Contains(err.Error(), "model.trainable_tail") {
		t.Errorf("trainable_tail with freeze_backbone: %v, want an error naming model.trainable_tail", err)
	}
}

// TestTrainableTailRefusesAugmentation: as with a frozen backbone, augmented training views
// change every epoch, so the maps in front of the tail cannot be cached: the run stops, naming
// both fields.
func TestTrainableTailRefusesAugmentation(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	root := t.TempDir()
	for k, c := range "abcd" {
		for i := 0; i < 4; i++ {
			writeFolderPNG(t, filepath.Join(root, string(c), string(rune('0'+i))+".png"), 12, color.NRGBA{uint8(50 * k), uint8(60 * i), 128, 255})
		}
	}
	cfg := tailConfig(t, 1)
	cfg.Data = DataConfig{Name: "imagefolder", Options: map[string]any{"root": root, "size": 12, "augment": "flip"}}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 8, M: 4}
	_, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err == nil || !strings.Contains(err.Error(), "data.options.augment") || !strings.Contains(err.Error(), "model.trainable_tail") {
		t.Errorf("trainable tail with augmentation: %v, want an error naming data.options.augment and model.trainable_tail", err)
	}
}

// TestTrainableTailResume: a trainable-tail run interrupted after 5 of its 16 steps and resumed
// (its cut maps read back from the cache) ends with the uninterrupted run's test embeddings, bit
// for bit; config.resolved.yaml keeps model.trainable_tail; and the run's checkpoint initialises
// the whole network through model.init_from (tail from the run, prefix from the file).
func TestTrainableTailResume(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	cfg := tailConfig(t, 2)
	cfg.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0.1}}
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	a, err := Run(ctx, cfg, dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := RunWithOptions(ctx, cfg, dirB, Options{StopAfter: 5}); err != nil || !r.Interrupted || r.Steps != 5 {
		t.Fatalf("interrupted run: %+v, %v", r, err)
	}
	computed := 0
	b, err := RunWithOptions(ctx, cfg, dirB, Options{Resume: true, Progress: func(p Progress) {
		if p.Phase == "features" {
			computed = p.Step
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if computed != 0 {
		t.Errorf("the resumed session computed %d maps, want 0 (cached)", computed)
	}
	if a.Steps != 16 || b.Steps != a.Steps || b.FinalLoss != a.FinalLoss {
		t.Errorf("resumed: %d steps, loss %v; uninterrupted: %d steps, loss %v", b.Steps, b.FinalLoss, a.Steps, a.FinalLoss)
	}
	ea, _ := os.ReadFile(filepath.Join(dirA, "test_embeddings.npy"))
	eb, _ := os.ReadFile(filepath.Join(dirB, "test_embeddings.npy"))
	if len(ea) == 0 || string(ea) != string(eb) {
		t.Error("the resumed run's test embeddings differ from the uninterrupted run's")
	}
	y, err := os.ReadFile(filepath.Join(dirA, "config.resolved.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "trainable_tail: 2") || !strings.Contains(string(y), "input_size: 48") {
		t.Errorf("config.resolved.yaml does not keep the configuration as written:\n%s", y)
	}

	// The run's checkpoint initialises the whole network (model.init_from): the tail's
	// variables come from the run (trained, so unlike the file's), the prefix's from the file.
	value := func(s *model.Store, p string) []float32 {
		v := s.GetVariable(p)
		if v == nil {
			t.Fatalf("no variable %s", p)
		}
		x, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float32](x)
	}
	file, run := model.NewStore(), model.NewStore()
	full := tailConfig(t, 0)
	if err := initModel(file, full.Model); err != nil {
		t.Fatal(err)
	}
	full.Model.InitFrom = dirA
	if err := initModel(run, full.Model); err != nil {
		t.Fatal(err)
	}
	const tailVar, prefixVar = "/model/backbone/061_MobilenetV2_Conv_1/weights", "/model/backbone/050_MobilenetV2_expanded_conv_14_expand/weights"
	if slices.Equal(value(run, tailVar), value(file, tailVar)) {
		t.Errorf("init_from the tail run left %s as the file has it", tailVar)
	}
	if !slices.Equal(value(run, prefixVar), value(file, prefixVar)) {
		t.Errorf("init_from the tail run changed the prefix's %s", prefixVar)
	}
}
