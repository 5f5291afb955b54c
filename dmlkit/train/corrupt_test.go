package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
)

func init() {
	// An out-of-distribution pool of a different size (24×24), resized to the 12×12 training images.
	prepare.RegisterDataset("synth-pool", func(opts map[string]any) (*data.Split, error) {
		return &data.Split{Train: synthImages(9, 4, 10, 24, 0), Test: synthImages(10, 2, 2, 24, 0)}, nil
	})
}

// TestCorruptionHarness: data.corrupt chooses exactly round(frac·N) training samples (synth-test
// has 16 classes × 8 = 128 images: label noise 0.25 → 32, image noise 0.125 → 16), limited data
// keeps the first classes, all recorded in corruption.json; the same seed gives the same record.
// The realised corruption (Result.Corruption and the records' changed counts) equals a recount
// against the clean training labels: the paper's draw (from all 16 classes) lets about 1/16 of
// the 32 chosen labels stay, label_noise_other none; 16 of 128 images are replaced.
func TestCorruptionHarness(t *testing.T) {
	cfg := testConfig()
	cfg.Epochs, cfg.Steps = 1, 2
	cfg.Data.MaxTrainClasses = 16 // all of them: nothing recorded for limited data
	cfg.Data.Corrupt = CorruptConfig{LabelNoise: 0.25, ImageNoise: 0.125, ImagePool: "synth-pool", Seed: 5}
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	var res *Result
	for _, d := range []string{dirA, dirB} {
		var err error
		if res, err = Run(ctx, cfg, d, nil); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := data.LoadCorruptions(filepath.Join(dirA, data.CorruptionFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Kind != "label-noise" || len(recs[0].Indices) != 32 ||
		recs[1].Kind != "image-noise" || len(recs[1].Indices) != 16 || recs[1].Pool == "" {
		t.Fatalf("records %+v", recs)
	}
	// Recount against the clean training labels (same loader, no corruption).
	clean := cfg
	clean.Data.Corrupt = CorruptConfig{}
	cs, err := loadData(&clean)
	if err != nil {
		t.Fatal(err)
	}
	recount := func(c Config) (int, *sets) {
		t.Helper()
		s, err := loadData(&c)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for i, l := range s.train.Labels() {
			if l != cs.train.Labels()[i] {
				n++
			}
		}
		return n, s
	}
	changed, _ := recount(cfg)
	if changed == 32 || changed < 32-12 {
		t.Errorf("%d of 32 chosen labels changed: the paper's draw keeps about 32/16 = 2 by chance", changed)
	}
	want := data.Realised{LabelChanged: changed, LabelChangedFrac: float64(changed) / 128, ImagesReplaced: 16, ImagesReplacedFrac: 0.125}
	if res.Corruption == nil || *res.Corruption != want || recs[0].Changed != changed || recs[0].N != 128 || recs[1].Changed != 16 {
		t.Errorf("realised %+v, records changed %d and %d; want %+v", res.Corruption, recs[0].Changed, recs[1].Changed, want)
	}
	other := cfg
	other.Data.Corrupt.LabelNoiseOther = true
	if n, s := recount(other); n != 32 || s.corruptions[0].Changed != 32 || !s.corruptions[0].Other {
		t.Errorf("label_noise_other: %d of 32 labels changed, want all", n)
	}
	a, _ := os.ReadFile(filepath.Join(dirA, data.CorruptionFile))
	b, _ := os.ReadFile(filepath.Join(dirB, data.CorruptionFile))
	if !bytes.Equal(a, b) {
		t.Error("same seed, different corruption records")
	}

	cfg.Data.Corrupt = CorruptConfig{}
	cfg.Data.MaxTrainClasses = 5
	dirC := t.TempDir()
	if _, err := Run(ctx, cfg, dirC, nil); err != nil {
		t.Fatal(err)
	}
	recs, err = data.LoadCorruptions(filepath.Join(dirC, data.CorruptionFile))
	if err != nil || len(recs) != 1 || recs[0].Kind != "limited-classes" || recs[0].Kept != 40 {
		t.Fatalf("limited data: %v %+v (want 5 classes × 8 = 40 images kept)", err, recs)
	}

	// data.class_fraction 0.3 of 16 classes keeps ⌈4.8⌉ = 5 (40 images), recorded with its fraction.
	frac := testConfig()
	frac.Data.ClassFraction = 0.3
	fs, err := loadData(&frac)
	if err != nil {
		t.Fatal(err)
	}
	if len(classesOf(fs.train)) != 5 || fs.train.Len() != 40 || len(fs.corruptions) != 1 || fs.corruptions[0].Fraction != 0.3 {
		t.Errorf("class_fraction 0.3: %d classes, %d images, records %+v", len(classesOf(fs.train)), fs.train.Len(), fs.corruptions)
	}
}

func TestCorruptionConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		c    CorruptConfig
		want string
	}{
		{CorruptConfig{LabelNoise: 1.5}, "data.corrupt.label_noise"},
		{CorruptConfig{ImageNoise: 0.1}, "data.corrupt.image_pool"},
		{CorruptConfig{ImageNoise: 0.1, ImagePool: "nosuch"}, `unknown image dataset "nosuch"`},
	} {
		cfg := testConfig()
		cfg.Data.Corrupt = tc.c
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.c, err, tc.want)
		}
	}
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Data.ClassFraction = 1.5 }, "data.class_fraction"},
		{func(c *Config) { c.Data.ClassFraction = -0.5 }, "data.class_fraction"},
		{func(c *Config) { c.Data.ClassFraction, c.Data.MaxTrainClasses = 0.5, 3 }, "data.class_fraction"},
		{func(c *Config) { c.Eval.Rerank.K = 1 }, "eval.rerank"},
		{func(c *Config) { c.Eval.Rerank = RerankProtocol{K: 4, Beta: 1.5} }, "eval.rerank"},
		{func(c *Config) { c.Eval.Rerank = RerankProtocol{K: 4, Eps: -1} }, "eval.rerank"},
		{func(c *Config) { c.Eval.Rerank = RerankProtocol{MoreK: []int{8}} }, "eval.rerank"},
		{func(c *Config) { c.Eval.Rerank = RerankProtocol{K: 4, MoreK: []int{1}} }, "eval.rerank.more_k[0]"},
	} {
		cfg := testConfig()
		tc.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	ok := testConfig()
	ok.Data.ClassFraction = 1
	ok.Eval.Rerank = RerankProtocol{K: 16, MoreK: []int{32}}
	ok.Eval.Hierarchical = true
	if err := ok.Validate(); err != nil || ok.Eval.Rerank.BetaOrDefault() != 0.1 {
		t.Errorf("valid config: %v (beta %g)", err, ok.Eval.Rerank.BetaOrDefault())
	}
}
