package demo

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// TestDemoRawPixelsR1 checks the demo's raw-pixel R@1 against a brute-force leave-one-out cosine
// 1-NN computed here, independently of the metrics engine, on the first 600 unseen-digit images.
func TestDemoRawPixelsR1(t *testing.T) {
	const n = 600
	rep, err := Run(context.Background(), Options{MaxTest: n, FitSamples: 2000, PCADim: 16, TrainSteps: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.TestImages != n || len(rep.Rows) != 2 {
		t.Fatalf("report: %d test images, %d rows", rep.TestImages, len(rep.Rows))
	}
	full, err := datasets.MNIST("")
	if err != nil {
		t.Fatal(err)
	}
	te := data.OpenSet(full, data.DigitsLow).Test
	d := te.H * te.W
	hits := 0
	for i := 0; i < n; i++ {
		best, bestJ := math.Inf(-1), -1
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			var ab, aa, bb float64
			for p := 0; p < d; p++ {
				a, b := float64(te.Pix[i*d+p]), float64(te.Pix[j*d+p])
				ab += a * b
				aa += a * a
				bb += b * b
			}
			if s := ab / math.Sqrt(aa*bb); s > best {
				best, bestJ = s, j
			}
		}
		if te.Labels[bestJ] == te.Labels[i] {
			hits++
		}
	}
	want := float64(hits) / n
	if got := rep.Rows[0].Metrics["R@1"]; math.Abs(got-want) > 1e-12 {
		t.Fatalf("raw-pixel R@1 = %v, brute force %v", got, want)
	}
	for _, c := range rep.TestClasses {
		if c < 5 {
			t.Fatalf("test classes %v include a training digit", rep.TestClasses)
		}
	}
	if pcaR1 := rep.Rows[1].Metrics["R@1"]; pcaR1 < 0.5 {
		t.Fatalf("PCA-16 R@1 = %v: a 16-d PCA of MNIST should retrieve far above chance (0.2)", pcaR1)
	}
}

// TestDemoTrainedRow trains the demo CNN for a few steps and checks that the reported metrics are
// those of the embeddings the trainer saved, recomputed here with the metrics engine, and that
// the evaluation used only the unseen digits 5–9.
func TestDemoTrainedRow(t *testing.T) {
	dir := t.TempDir()
	rep, err := Run(context.Background(), Options{MaxTest: 200, FitSamples: 500, PCADim: 8, TrainSteps: 10, RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 3 {
		t.Fatalf("%d rows, want raw, PCA and trained", len(rep.Rows))
	}
	emb, shape, err := npy.ReadFloat32(filepath.Join(dir, "test_embeddings.npy"))
	if err != nil {
		t.Fatal(err)
	}
	labels, _, err := npy.ReadInt64(filepath.Join(dir, "test_labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if shape[0] != 4861 || shape[1] != 64 {
		t.Fatalf("test embeddings %v, want [4861 64] (MNIST test digits 5-9, 64-d)", shape)
	}
	for _, l := range labels {
		if l < 5 {
			t.Fatalf("test label %d: a training digit leaked into the evaluation set", l)
		}
	}
	want, err := metrics.Retrieval(emb, shape[0], shape[1], labels, metrics.Options{K: []int{1, 2, 4, 8}})
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Rows[2].Metrics
	for _, k := range []string{"R@1", "R@8", "MAP@R"} {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("%s: report %v, recomputed from saved embeddings %v", k, got[k], want[k])
		}
	}
}
