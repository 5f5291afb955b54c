package train

import (
	"context"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
)

// gradientImages is a one-image set of side n whose pixel (x, y) is (4x+1, 4y+11, 2x+2y+1).
func gradientImages(n int) *data.Images {
	s := &data.Images{Name: "gradient", N: 1, H: n, W: n, C: 3, Pix: make([]uint8, n*n*3), Labels: []int32{0}}
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			p := (y*n + x) * 3
			s.Pix[p], s.Pix[p+1], s.Pix[p+2] = uint8(4*x+1), uint8(4*y+11), uint8(2*x+2*y+1)
		}
	}
	return s
}

// TestAugmentedImagesFlip: Fill gives the stored pixels /255; over 16 epochs the flip view is
// either the stored image or its mirror (pixel x from stored W−1−x), both occur, and a view is a
// function of (seed, epoch, image) only.
func TestAugmentedImagesFlip(t *testing.T) {
	const n = 6
	s, err := NewAugmentedImages(gradientImages(n), AugmentOptions{Augment: "flip"}, 5)
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]float32, n*n*3)
	s.Fill([]int{0}, plain)
	for i, p := range s.Pix {
		if math.Abs(float64(plain[i])-float64(p)/255) > 1e-7 { // float32 rounding of p/255 ≤ 6e-8
			t.Fatalf("Fill value %d = %v, want %v", i, plain[i], float32(p)/255)
		}
	}
	flips := map[bool]int{}
	for e := 0; e < 16; e++ {
		v := make([]float32, n*n*3)
		if err := s.FillEpoch(e, []int{0}, nil, v); err != nil {
			t.Fatal(err)
		}
		again := make([]float32, n*n*3)
		s.FillEpoch(e, []int{0}, nil, again)
		if !reflect.DeepEqual(v, again) {
			t.Fatalf("epoch %d: two views differ", e)
		}
		flip := v[0] != plain[0]
		flips[flip]++
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				sx := x
				if flip {
					sx = n - 1 - x
				}
				for c := 0; c < 3; c++ {
					if v[(y*n+x)*3+c] != plain[(y*n+sx)*3+c] {
						t.Fatalf("epoch %d (flip %v): pixel (%d, %d, %d) = %v, want stored (%d, %d)", e, flip, x, y, c, v[(y*n+x)*3+c], sx, y)
					}
				}
			}
		}
	}
	if flips[true] == 0 || flips[false] == 0 {
		t.Errorf("flips over 16 epochs: %v", flips)
	}
}

// TestAugmentedImagesRandomResizedCrop, on a 12-px gradient:
//   - scale [1, 1] and ratio [1, 1] force the whole image, resized to itself: the view is the
//     stored image or its mirror;
//   - scale [0.25, 0.25] and ratio [1, 1] force a 6×6 box at some (x0, y0), magnified 2× by the
//     bilinear filter: output u samples the box at u/2 − ¼ (centre (u+½)/2 in pixel units, pixel
//     centres at i+½), so on the gradient the interior (1 ≤ u, v ≤ 10; the border has clipped
//     taps) is R = 4x0 + 2u, G = 4y0 + 2v + 10, B = 2x0 + 2y0 + u + v, with x0, y0 ∈ [0, 6] read
//     off pixel (1, 1) (u → 11 − u when mirrored).
func TestAugmentedImagesRandomResizedCrop(t *testing.T) {
	const n = 12
	img := gradientImages(n)
	whole, err := NewAugmentedImages(img, AugmentOptions{Augment: "random_resized_crop", Scale: []float64{1, 1}, Ratio: []float64{1, 1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	for e := 0; e < 4; e++ {
		v := make([]float32, n*n*3)
		whole.FillEpoch(e, []int{0}, nil, v)
		flip := v[0] > v[3] // R increases along a row unless mirrored
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				sx := x
				if flip {
					sx = n - 1 - x
				}
				if got, want := float64(v[(y*n+x)*3]), float64(img.Pix[(y*n+sx)*3])/255; math.Abs(got-want) > 1e-7 { // float32 rounding
					t.Fatalf("whole-image crop, epoch %d: R(%d, %d) = %v, want %v", e, x, y, got, want)
				}
			}
		}
	}
	quarter, err := NewAugmentedImages(img, AugmentOptions{Augment: "random_resized_crop", Scale: []float64{0.25, 0.25}, Ratio: []float64{1, 1}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	boxes := map[[2]int]bool{}
	for e := 0; e < 8; e++ {
		v := make([]float32, n*n*3)
		quarter.FillEpoch(e, []int{0}, nil, v)
		px := func(u, y, c int) int { return int(math.Round(float64(v[(y*n+u)*3+c]) * 255)) }
		flip := px(2, 1, 0) < px(1, 1, 0)
		at := func(u int) int {
			if flip {
				return n - 1 - u
			}
			return u
		}
		x0 := (px(at(1), 1, 0) - 2) / 4
		y0 := (px(at(1), 1, 1) - 2 - 10) / 4
		if x0 < 0 || x0 > 6 || y0 < 0 || y0 > 6 {
			t.Fatalf("epoch %d: box at (%d, %d), outside [0, 6]²", e, x0, y0)
		}
		boxes[[2]int{x0, y0}] = true
		for y := 1; y <= 10; y++ {
			for u := 1; u <= 10; u++ {
				want := [3]int{4*x0 + 2*u, 4*y0 + 2*y + 10, 2*x0 + 2*y0 + u + y}
				for c := 0; c < 3; c++ {
					if got := px(at(u), y, c); got != want[c] {
						t.Fatalf("epoch %d (box (%d, %d), flip %v): output (%d, %d) channel %d = %d, want %d", e, x0, y0, flip, at(u), y, c, got, want[c])
					}
				}
			}
		}
	}
	if len(boxes) < 2 {
		t.Errorf("8 epochs drew %d distinct boxes", len(boxes))
	}
}

// writeFolderPNG writes a w×w PNG of one colour.
func writeFolderPNG(t *testing.T, path string, w int, c color.NRGBA) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o755)
	im := image.NewNRGBA(image.Rect(0, 0, w, w))
	for y := 0; y < w; y++ {
		for x := 0; x < w; x++ {
			im.Set(x, y, c)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	png.Encode(f, im)
}

// TestImageFolderTrainRun trains 2 steps of the small CNN on a class-folder fixture (six classes:
// the sorted rule trains on a, b, c and tests on d, e, f; 4 images each, resized 20 → 12 px) with
// the random-resized-crop augmentation and a validation class, through train.Run.
func TestImageFolderTrainRun(t *testing.T) {
	root := t.TempDir()
	for k, c := range "abcdef" {
		for i := 0; i < 4; i++ {
			writeFolderPNG(t, filepath.Join(root, string(c), string(rune('0'+i))+".png"), 20, color.NRGBA{uint8(40 * k), uint8(60 * i), 128, 255})
		}
	}
	cfg := testConfig()
	cfg.Data = DataConfig{Name: "imagefolder", ValClasses: 0.3,
		Options: map[string]any{"root": root, "size": 12, "augment": "random_resized_crop", "scale": []any{0.5, 1.0}}}
	cfg.Model.Channels = []int{4}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 8, M: 4}
	cfg.Epochs, cfg.Steps = 0, 2
	sets, err := loadData(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	aug, ok := sets.train.(*AugmentedImages)
	if !ok || aug.Options().Augment != "random_resized_crop" || !reflect.DeepEqual(aug.Options().Scale, []float64{0.5, 1}) {
		t.Fatalf("training set %T, want *AugmentedImages with scale [0.5 1]", sets.train)
	}
	if _, ok := sets.test.(ImageSet); !ok || sets.test.Len() != 12 || aug.Len() != 8 || sets.val.Len() != 4 {
		t.Errorf("test %T with %d images (want ImageSet, 12), train %d (want 8), val %d (want 4)", sets.test, sets.test.Len(), aug.Len(), sets.val.Len())
	}
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 2 || math.IsNaN(res.FinalLoss) {
		t.Errorf("%d steps, final loss %v", res.Steps, res.FinalLoss)
	}
}

// TestAugmentOptionErrors: augmentation keys are errors naming the option when their value is
// bad, and unknown to datasets that do not take them (omniglot refuses the key before loading).
func TestAugmentOptionErrors(t *testing.T) {
	root := t.TempDir()
	for _, c := range "ab" {
		writeFolderPNG(t, filepath.Join(root, string(c), "0.png"), 4, color.NRGBA{1, 2, 3, 255})
	}
	for _, tc := range []struct {
		name string
		opts map[string]any
		want string
	}{
		{"imagefolder", map[string]any{"root": root, "augment": "random_crop"}, "data.options.augment: random_crop"},
		{"imagefolder", map[string]any{"root": root, "augment": "jitter"}, `data.options.augment: "jitter"`},
		{"imagefolder", map[string]any{"root": root, "augment": "flip", "scale": []any{0.5, 1.0}}, "only with augment random_resized_crop"},
		{"imagefolder", map[string]any{"root": root, "augment": "random_resized_crop", "ratio": []any{2.0, 1.0}}, "data.options.ratio"},
		{"imagefolder", map[string]any{"size": 8}, "data.options.root: not set"},
		{"omniglot", map[string]any{"augment": "flip"}, "augment"},
	} {
		cfg := testConfig()
		cfg.Data = DataConfig{Name: tc.name, Options: tc.opts}
		_, err := loadData(&cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: %v, want an error containing %q", tc.name, tc.opts, err, tc.want)
		}
	}
}

// TestCIFAR10Dataset loads data.name cifar10 from ../shared (skipped without it) at 48 px, 2
// images per class: the README's split (labels 0–4 train, 5–9 test) with class names, and the
// flip augmentation on the training set only.
func TestCIFAR10Dataset(t *testing.T) {
	if _, err := datasets.FindCIFAR10(""); err != nil {
		t.Skipf("CIFAR-10 not available: %v", err)
	}
	cfg := testConfig()
	cfg.Data = DataConfig{Name: "cifar10", Options: map[string]any{"size": 48, "per_class": 2, "augment": "flip"}}
	sets, err := loadData(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, ok := sets.train.(*AugmentedImages)
	if !ok {
		t.Fatalf("training set %T, want *AugmentedImages", sets.train)
	}
	te := sets.test.(ImageSet)
	if h, w, c := tr.Dims(); h != 48 || w != 48 || c != 3 || tr.Len() != 10 || te.Len() != 10 {
		t.Fatalf("train %d images of %d×%d×%d, test %d", tr.Len(), h, w, c, te.Len())
	}
	if !reflect.DeepEqual(tr.Labels(), []int32{0, 0, 1, 1, 2, 2, 3, 3, 4, 4}) || !reflect.DeepEqual(te.Labels(), []int32{5, 5, 6, 6, 7, 7, 8, 8, 9, 9}) {
		t.Errorf("labels %v / %v", tr.Labels(), te.Labels())
	}
	if tr.ClassNames[0] != "airplane" || te.ClassNames[9] != "truck" {
		t.Errorf("class names %v", tr.ClassNames)
	}
}
