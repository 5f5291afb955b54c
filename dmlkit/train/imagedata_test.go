package train

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/jpeg"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// The trainer's side of the full-scale image datasets of dmlkit/data/prepare: their names
// validate as data.name, and their errors and sets reach train.Run. The fixture writers of package
// prepare live in its _test files and cannot be imported, so the CUB layout is written again here.

// fixtureJPEG encodes a w×h JPEG with smooth random colours (seeded by v).
func fixtureJPEG(t *testing.T, path string, w, h, v int) {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(v), 3))
	im := image.NewRGBA(image.Rect(0, 0, w, h))
	a, b, c := r.IntN(200), r.IntN(200), r.IntN(200)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			p := (y*w + x) * 4
			im.Pix[p], im.Pix[p+1], im.Pix[p+2], im.Pix[p+3] = uint8(a+2*x), uint8(b+3*y), uint8(c+x+y), 255
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, im, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	writeFixture(t, path, buf.Bytes())
}

func writeFixture(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeLines(t *testing.T, path string, lines ...string) {
	writeFixture(t, path, []byte(strings.Join(lines, "\n")+"\n"))
}

// cubTree writes CUB_200_2011-layout files under root: per class `per` images of 24×20; the
// first half of each class's images is marked as train in train_test_split.txt.
func cubTree(t *testing.T, root string, classes []int, per int) {
	var im, lab, sp []string
	id := 0
	for _, c := range classes {
		for k := 0; k < per; k++ {
			id++
			rel := fmt.Sprintf("%03d.Bird/img_%d.jpg", c, id)
			fixtureJPEG(t, filepath.Join(root, "images", rel), 24, 20, id)
			im = append(im, fmt.Sprintf("%d %s", id, rel))
			lab = append(lab, fmt.Sprintf("%d %d", id, c))
			tr := 0
			if k < per/2 {
				tr = 1
			}
			sp = append(sp, fmt.Sprintf("%d %d", id, tr))
		}
	}
	writeLines(t, filepath.Join(root, "images.txt"), im...)
	writeLines(t, filepath.Join(root, "image_class_labels.txt"), lab...)
	writeLines(t, filepath.Join(root, "train_test_split.txt"), sp...)
}

// TestImageDatasetsRegistered: the benchmark names are trainer datasets and a config naming them
// validates without the data being present.
func TestImageDatasetsRegistered(t *testing.T) {
	names := prepare.Datasets()
	for _, n := range []string{"cub", "cars", "sop", "inat", "inshop", "market1501", "vehicleid"} {
		if !slices.Contains(names, n) {
			t.Errorf("%s not in Datasets() = %v", n, names)
		}
		c := testConfig()
		c.Data.Name = n
		if err := c.Validate(); err != nil {
			t.Errorf("config with data.name %s: %v", n, err)
		}
	}
}

// TestImageDatasetRunErrors: a missing root names the path and data.options.root through
// train.Run, and data.corrupt is refused for on-demand datasets.
func TestImageDatasetRunErrors(t *testing.T) {
	cub := t.TempDir()
	cubTree(t, cub, []int{1, 101}, 2)
	missing := filepath.Join(t.TempDir(), "no", "CUB_200_2011")
	// Through train.Run: the error reaches the caller.
	cfg := testConfig()
	cfg.Data = DataConfig{Name: "cub", Options: map[string]any{"root": missing}}
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "data.options.root") {
		t.Errorf("Run with a missing root: %v", err)
	}
	// data.corrupt does not apply to on-demand datasets.
	cfg.Data = DataConfig{Name: "cub", Options: map[string]any{"root": cub}, Corrupt: CorruptConfig{LabelNoise: 0.1}}
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "data.corrupt") {
		t.Errorf("corruption of cub: %v", err)
	}
}

// TestImageDatasetTrainRun trains 2 steps of the small CNN on a CUB-layout fixture through
// train.Run, with a validation split (so the training batches pass through the class subset),
// and checks the run directory: the test embeddings are [N, dim] and the test labels are the
// renumbered test classes.
func TestImageDatasetTrainRun(t *testing.T) {
	root := t.TempDir()
	cubTree(t, root, []int{1, 2, 3, 4, 101, 102, 103}, 4)
	cfg := testConfig()
	cfg.Data = DataConfig{Name: "cub", Options: map[string]any{"root": root, "size": 16, "resize": 18, "workers": 2}, ValClasses: 0.25}
	cfg.Model.Channels = []int{4}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 8, M: 4}
	cfg.Epochs, cfg.Steps = 0, 2
	out := t.TempDir()
	res, err := Run(context.Background(), cfg, out, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || math.IsNaN(res.FinalLoss) {
		t.Errorf("%d steps, final loss %v", res.Steps, res.FinalLoss)
	}
	for _, f := range []string{"config.resolved.yaml", "env.json", "metrics.jsonl", "test_embeddings.npy", "test_labels.npy"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, ok := res.Metrics["val/R@1"]; !ok {
		t.Errorf("no validation metrics: %v", res.Metrics)
	}
	emb, shape, err := npy.ReadFloat32(filepath.Join(out, "test_embeddings.npy"))
	if err != nil {
		t.Fatal(err)
	}
	labels, _, err := npy.ReadInt64(filepath.Join(out, "test_labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(shape, []int{12, cfg.Model.Dim}) || len(emb) != 12*cfg.Model.Dim {
		t.Errorf("test embeddings %v", shape)
	}
	if want := []int64{4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6}; !slices.Equal(labels, want) {
		t.Errorf("test labels %v, want %v", labels, want)
	}
}
