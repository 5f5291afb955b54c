package train

import (
	"context"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// frozenConfig is testConfig with a BatchNorm-free backbone, so that the backbone computes the
// same function in training and in inference mode.
func frozenConfig() Config {
	cfg := testConfig()
	cfg.Model.Norm = "none"
	cfg.Eval.Every = 0
	return cfg
}

// TestFreezeBackboneEqualsZeroBackboneRate checks the frozen-backbone regime against a second
// route to the same training: the full model with the backbone's learning rate multiplied by 0
// (its weights never move, so every step sees the same features) must give the same losses and
// test metrics as the head trained on cached features. Initialisation is keyed by variable
// path, so both runs start from the same head. Tolerance 1e-6 (relative): the cached features
// come from batches of 64 and the other run's from batches of 16, which could round differently
// (here they agree to the bit; features scaled by 1.001 already move the loss by 4e-5).
func TestFreezeBackboneEqualsZeroBackboneRate(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	frozen := frozenConfig()
	frozen.Model.FreezeBackbone = true
	zero := frozenConfig()
	zero.Optimizer.Groups = []GroupConfig{{Match: "/backbone/", LRMul: 0}}
	a, computed := runCountingFeatures(t, frozen)
	b, _ := runCountingFeatures(t, zero)
	// synth-test: 16 × 8 training and 10 × 6 test images, all distinct.
	if computed != 16*8+10*6 {
		t.Errorf("features computed for %d images, want %d", computed, 16*8+10*6)
	}
	assertSameRun(t, a, b)
	// The run directory keeps the configuration as written (the frozen backbone, not "features").
	dir := t.TempDir()
	if _, err := Run(context.Background(), frozen, dir, nil); err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(filepath.Join(dir, "config.resolved.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "freeze_backbone: true") || !strings.Contains(string(y), "backbone: cnn") {
		t.Errorf("config.resolved.yaml does not keep the frozen cnn backbone:\n%s", y)
	}
}

// runCountingFeatures runs cfg in a fresh directory and returns its result and the number of
// images whose frozen-backbone features it computed (0: all cached, or no frozen backbone).
func runCountingFeatures(t *testing.T, cfg Config) (*Result, int) {
	t.Helper()
	computed := 0
	res, err := Run(context.Background(), cfg, t.TempDir(), func(p Progress) {
		if p.Phase == "features" {
			computed = p.Step
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, computed
}

// assertSameRun fails unless the frozen run a and the backbone-rate-0 run b took the same number of
// steps to the same final loss (relative 1e-6) and test R@1 and MAP@R (absolute 1e-6).
func assertSameRun(t *testing.T, a, b *Result) {
	t.Helper()
	if a.Steps != b.Steps || a.Steps == 0 {
		t.Fatalf("steps %d vs %d", a.Steps, b.Steps)
	}
	if d := math.Abs(a.FinalLoss - b.FinalLoss); d > 1e-6*math.Abs(b.FinalLoss) {
		t.Errorf("final loss %.7f (frozen) vs %.7f (backbone rate 0)", a.FinalLoss, b.FinalLoss)
	}
	for _, k := range []string{"test/R@1", "test/MAP@R"} {
		if d := math.Abs(a.Metrics[k] - b.Metrics[k]); d > 1e-6 {
			t.Errorf("%s %.5f (frozen) vs %.5f (backbone rate 0)", k, a.Metrics[k], b.Metrics[k])
		}
	}
}

// TestFeatureCacheReuse: a second run with another seed (so another validation split and
// sampler) computes no feature; a corrupt part file is an error naming it.
func TestFeatureCacheReuse(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(FeatureCacheEnv, cache)
	cfg := frozenConfig()
	cfg.Model.FreezeBackbone = true
	cfg.Epochs = 1
	count := func(c Config) int {
		_, n := runCountingFeatures(t, c)
		return n
	}
	if n := count(cfg); n != 16*8+10*6 {
		t.Fatalf("first run computed %d features, want %d", n, 16*8+10*6)
	}
	c2 := cfg
	c2.Seed = 3 // another random backbone: a new key, all computed again
	c2.Data.ValClasses = 0.25
	if n := count(c2); n != 16*8+10*6 {
		t.Errorf("another seed's random backbone computed %d features, want all %d", n, 16*8+10*6)
	}
	c3 := c2
	c3.Loss.Name = "triplet" // the head and loss change, the backbone does not
	c3.Data.ValClasses = 0.5
	if n := count(c3); n != 0 {
		t.Errorf("the same backbone computed %d features again, want 0", n)
	}
	parts, _ := filepath.Glob(filepath.Join(cache, "*", "part-*.bin"))
	if len(parts) != 2 {
		t.Fatalf("%d cache parts, want 2 (one per backbone key): %v", len(parts), parts)
	}
	if err := os.WriteFile(parts[0], []byte("DMLKFC1\n\x04\x00\x00\x00\x09"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err1 := Run(context.Background(), cfg, t.TempDir(), nil)
	_, err2 := Run(context.Background(), c2, t.TempDir(), nil)
	if (err1 == nil || !strings.Contains(err1.Error(), parts[0])) && (err2 == nil || !strings.Contains(err2.Error(), parts[0])) {
		t.Errorf("a corrupt cache part gave %v / %v, want an error naming %s", err1, err2, parts[0])
	}
}

func TestFreezeBackboneValidation(t *testing.T) {
	cfg := testConfig()
	cfg.Model.FreezeBackbone = true
	cfg.Model.InitHead = true
	cfg.Model.InitFrom = "x"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model.freeze_backbone") {
		t.Errorf("init_head with a frozen backbone: %v, want an error naming model.freeze_backbone", err)
	}
	cfg = testConfig()
	cfg.Model.InputSize = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "model.input_size") {
		t.Errorf("input_size -1: %v, want an error naming model.input_size", err)
	}
}

// TestFreezeBackboneRefusesAugmentation: augmented training views change every epoch, so a frozen
// backbone's features of them cannot be cached: the run stops, naming the option.
func TestFreezeBackboneRefusesAugmentation(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	root := t.TempDir()
	for k, c := range "abcd" {
		for i := 0; i < 4; i++ {
			writeFolderPNG(t, filepath.Join(root, string(c), string(rune('0'+i))+".png"), 12, color.NRGBA{uint8(50 * k), uint8(60 * i), 128, 255})
		}
	}
	cfg := frozenConfig()
	cfg.Data = DataConfig{Name: "imagefolder", Options: map[string]any{"root": root, "size": 12, "augment": "flip"}}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 8, M: 4}
	cfg.Model.FreezeBackbone = true
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "data.options.augment") {
		t.Errorf("frozen backbone with augmentation: %v, want an error naming data.options.augment", err)
	}
}

// TestBackboneKeyIgnoresInapplicableSettings: the small CNN's settings (block widths, norm,
// pooling) do not change a MobileNet's key, but do change the small CNN's; the weights file's
// content does.
func TestBackboneKeyIgnoresInapplicableSettings(t *testing.T) {
	dir := t.TempDir()
	w := filepath.Join(dir, "m.tflite")
	if err := os.WriteFile(w, []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := func(mut func(c *Config)) string {
		cfg := testConfig()
		mut(&cfg)
		k, err := backboneKey(&cfg, 28, 28, 1)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	mobile := func(c *Config) { c.Model.Backbone, c.Model.Pretrained = "mobilenet_v2", w }
	a := key(mobile)
	b := key(func(c *Config) {
		mobile(c)
		c.Model.Pool, c.Model.GeMP, c.Model.Norm, c.Model.Channels = "gem", 3, "none", []int{16, 32, 64}
	})
	if a != b {
		t.Error("a MobileNet's key depends on the small CNN's pool, norm or widths")
	}
	if key(func(c *Config) {}) == key(func(c *Config) { c.Model.Pool = "gem" }) {
		t.Error("the small CNN's key ignores its pooling")
	}
	if err := os.WriteFile(w, []byte("other weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	if key(mobile) == a {
		t.Error("the key ignores the weights file's content")
	}
}
