package train

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

func init() {
	// An out-of-distribution pool of a different size (24×24), resized to the 12×12 training images.
	RegisterDataset("synth-pool", func(opts map[string]any) (*data.Split, error) {
		return &data.Split{Train: synthImages(9, 4, 10, 24, 0), Test: synthImages(10, 2, 2, 24, 0)}, nil
	})
}

// TestCorruptionHarness: data.corrupt changes exactly round(frac·N) training samples (synth-test
// has 16 classes × 8 = 128 images: label noise 0.25 → 32, image noise 0.125 → 16), limited data
// keeps the first classes, all recorded in corruption.json; the same seed gives the same record.
func TestCorruptionHarness(t *testing.T) {
	cfg := testConfig()
	cfg.Epochs, cfg.Steps = 1, 2
	cfg.Data.MaxTrainClasses = 16 // all of them: nothing recorded for limited data
	cfg.Data.Corrupt = CorruptConfig{LabelNoise: 0.25, ImageNoise: 0.125, ImagePool: "synth-pool", Seed: 5}
	ctx := context.Background()
	dirA, dirB := t.TempDir(), t.TempDir()
	for _, d := range []string{dirA, dirB} {
		if _, err := Run(ctx, cfg, d, nil); err != nil {
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
	for j := range recs[0].Indices {
		if recs[0].OldLabels[j] == recs[0].NewLabels[j] {
			t.Errorf("label noise kept label %d at index %d", recs[0].OldLabels[j], recs[0].Indices[j])
		}
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
}
