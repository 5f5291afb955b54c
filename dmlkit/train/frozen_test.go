package train

import (
	"bytes"
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

// runWatchingCache is runCountingFeatures that also returns the warnings the run reported.
func runWatchingCache(t *testing.T, cfg Config) (*Result, int, []string) {
	t.Helper()
	computed := 0
	var warned []string
	res, err := Run(context.Background(), cfg, t.TempDir(), func(p Progress) {
		switch p.Phase {
		case "features":
			computed = p.Step
		case "warning":
			warned = append(warned, p.Message)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return res, computed, warned
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
// sampler) computes no feature; a corrupt part file is reported naming it, and its features are
// computed again.
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
	if err := os.WriteFile(parts[0], []byte("DMLKFC2\n\x04\x00\x00\x00\x09"), 0o644); err != nil {
		t.Fatal(err)
	}
	var warned []string
	computed := 0
	for _, c := range []Config{cfg, c2} {
		_, n, w := runWatchingCache(t, c)
		computed += n
		warned = append(warned, w...)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], parts[0]) || !strings.Contains(warned[0], "not a feature-cache part") {
		t.Errorf("a corrupt cache part gave warnings %q, want one naming %s", warned, parts[0])
	}
	if computed != 16*8+10*6 {
		t.Errorf("%d features computed after a part was damaged, want its %d", computed, 16*8+10*6)
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

// TestFeatureCacheChecksum (issue 43): one flipped bit in a cached value (the exponent's lowest
// bit, 6.0 → 24.0) is caught by the part's checksum: the run reports the part, computes its
// features again and ends exactly as the run that computed them first, and the rewritten part
// is the original one byte for byte. Today's reader reused the damaged value.
func TestFeatureCacheChecksum(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(FeatureCacheEnv, cache)
	cfg := frozenConfig()
	cfg.Model.FreezeBackbone = true
	cfg.Epochs = 1
	first, n, _ := runWatchingCache(t, cfg)
	if n != 16*8+10*6 {
		t.Fatalf("first run computed %d features, want %d", n, 16*8+10*6)
	}
	parts, _ := filepath.Glob(filepath.Join(cache, "*", "part-*.bin"))
	if len(parts) != 1 {
		t.Fatalf("%d cache parts, want 1: %v", len(parts), parts)
	}
	orig, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	// The last test image's first value: header (8 + 8 bytes), 188 digests, then 188·F floats.
	const images = 16*8 + 10*6
	f := (len(orig) - 16 - images*32 - 32) / (images * 4)
	at := 16 + images*32 + (images-1)*f*4
	bad := append([]byte(nil), orig...)
	bad[at+3] ^= 0x01 // the exponent's lowest bit: ×4 or ÷4
	if err := os.WriteFile(parts[0], bad, 0o644); err != nil {
		t.Fatal(err)
	}
	again, n, warned := runWatchingCache(t, cfg)
	if len(warned) != 1 || !strings.Contains(warned[0], parts[0]) || !strings.Contains(warned[0], "checksum mismatch") {
		t.Errorf("warnings %q, want one naming %s and its checksum", warned, parts[0])
	}
	if n != images {
		t.Errorf("%d features computed after the part was damaged, want its %d", n, images)
	}
	assertSameRun(t, first, again)
	for _, k := range []string{"test/MAP@R", "test/R@1"} {
		if first.Metrics[k] != again.Metrics[k] {
			t.Errorf("%s %v after the rebuild, %v before", k, again.Metrics[k], first.Metrics[k])
		}
	}
	if b, err := os.ReadFile(parts[0]); err != nil || !bytes.Equal(b, orig) {
		t.Errorf("the rebuilt part differs from the original (%v)", err)
	}
}

// TestFeatureCacheCodeFingerprint: features cached by another build of the feature code (another
// featureCode) are not reused, and a part of the older layout without a checksum is not trusted.
func TestFeatureCacheCodeFingerprint(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(FeatureCacheEnv, cache)
	cfg := frozenConfig()
	cfg.Model.FreezeBackbone = true
	cfg.Epochs = 1
	const images = 16*8 + 10*6
	if _, n, _ := runWatchingCache(t, cfg); n != images {
		t.Fatalf("first run computed %d features, want %d", n, images)
	}
	k1, err := backboneKey(&cfg, 12, 12, 1)
	if err != nil {
		t.Fatal(err)
	}
	saved := featureCode
	t.Cleanup(func() { featureCode = saved })
	featureCode = func() string { return "another build of the feature code" }
	k2, err := backboneKey(&cfg, 12, 12, 1)
	if err != nil {
		t.Fatal(err)
	}
	if k1 == k2 {
		t.Fatalf("backbone key %s does not change with the code fingerprint", k1)
	}
	if _, n, _ := runWatchingCache(t, cfg); n != images {
		t.Errorf("under another code fingerprint %d features computed, want all %d", n, images)
	}
	// An old-layout part (no checksum) in the key's directory: a miss, reported and removed.
	featureCode = saved
	parts, _ := filepath.Glob(filepath.Join(cache, k1[:24], "part-*.bin"))
	if len(parts) != 1 {
		t.Fatalf("%d parts under key %s, want 1", len(parts), k1[:24])
	}
	b, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	old := append([]byte("DMLKFC1\n"), b[len(featureCacheMagic):len(b)-32]...)
	if err := os.WriteFile(parts[0], old, 0o644); err != nil {
		t.Fatal(err)
	}
	_, n, warned := runWatchingCache(t, cfg)
	if n != images || len(warned) != 1 || !strings.Contains(warned[0], "without a checksum") {
		t.Errorf("an old-layout part: %d computed (want %d), warnings %q", n, images, warned)
	}
}
