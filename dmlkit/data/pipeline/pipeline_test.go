package pipeline

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// bruteResize is an independent, unoptimised float64 version of the antialiased triangle
// filter: out(x, y) = Σ_ij k_x(i) k_y(j) in(i, j) / (Σ k_x)(Σ k_y) with
// k(i) = max(0, 1 − |i + 0.5 − c|/f), c = (o + 0.5)·in/out, f = max(in/out, 1).
func bruteResize(img *RGB, w, h int) []float64 {
	k := func(o, in, out, i int) float64 {
		s := float64(in) / float64(out)
		f := math.Max(s, 1)
		c := (float64(o) + 0.5) * s
		return math.Max(0, 1-math.Abs(float64(i)+0.5-c)/f)
	}
	out := make([]float64, w*h*3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			var sx, sy float64
			for i := 0; i < img.W; i++ {
				sx += k(x, img.W, w, i)
			}
			for j := 0; j < img.H; j++ {
				sy += k(y, img.H, h, j)
			}
			for c := 0; c < 3; c++ {
				var acc float64
				for j := 0; j < img.H; j++ {
					for i := 0; i < img.W; i++ {
						acc += k(x, img.W, w, i) * k(y, img.H, h, j) * float64(img.Pix[(j*img.W+i)*3+c])
					}
				}
				out[(y*w+x)*3+c] = acc / (sx * sy)
			}
		}
	}
	return out
}

func testImage(w, h int) *RGB {
	im := NewRGB(w, h)
	for i := range im.Pix {
		im.Pix[i] = uint8((i*7919 + i*i) % 251)
	}
	return im
}

// TestResizeMatchesBruteForce: the separable float32 resize equals the 2-D float64 filter to
// within rounding (the result is rounded to uint8, so |diff| ≤ 0.5 + float32 error; we allow 0.51).
func TestResizeMatchesBruteForce(t *testing.T) {
	im := testImage(23, 17)
	for _, sz := range [][2]int{{7, 5}, {11, 17}, {23, 9}, {40, 30}, {5, 40}} {
		got := Resize(im, sz[0], sz[1])
		want := bruteResize(im, sz[0], sz[1])
		for i, v := range want {
			if math.Abs(float64(got.Pix[i])-v) > 0.51 {
				t.Fatalf("%v: pixel %d = %d, want %.3f", sz, i, got.Pix[i], v)
			}
		}
	}
	// Hand check, 4 → 2 in x (scale 2, support 2): output 0 has centre 1 and taps i = 0, 1, 2
	// with k = 0.75, 0.75, 0.25 → weights 3/7, 3/7, 1/7. Row [0, 70, 140, 210] gives
	// (0·3 + 70·3 + 140·1)/7 = 350/7 = 50.
	row := &RGB{W: 4, H: 1, Pix: []uint8{0, 0, 0, 70, 70, 70, 140, 140, 140, 210, 210, 210}}
	if got := Resize(row, 2, 1).Pix[0]; got != 50 {
		t.Errorf("hand case: %d, want 50", got)
	}
	c := NewRGB(9, 7)
	for i := range c.Pix {
		c.Pix[i] = 77
	}
	for _, p := range Resize(c, 4, 13).Pix {
		if p != 77 {
			t.Fatal("constant image not preserved")
		}
	}
}

func TestResizeShortAndCrop(t *testing.T) {
	r := ResizeShort(testImage(500, 375), 256)
	if r.H != 256 || r.W != 341 { // int(256·500/375) = int(341.33) = 341
		t.Errorf("ResizeShort: %dx%d, want 341x256", r.W, r.H)
	}
	im := NewRGB(5, 4)
	for y := 0; y < 4; y++ {
		for x := 0; x < 5; x++ {
			p := (y*5 + x) * 3
			im.Pix[p], im.Pix[p+1], im.Pix[p+2] = uint8(10*x), uint8(10*y), 255
		}
	}
	dst := make([]float32, 2*2*3)
	mean, std := [3]float32{0, 0, 0.5}, [3]float32{1, 1, 0.5}
	CropNormalize(dst, im, 2, 1, 2, true, mean, std)
	// Crop x ∈ {2, 3}, y ∈ {1, 2}, mirrored: out (0,0) is input (3, 1): R = 30/255, G = 10/255,
	// B = (1 − 0.5)/0.5 = 1.
	want := []float32{30. / 255, 10. / 255, 1, 20. / 255, 10. / 255, 1, 30. / 255, 20. / 255, 1, 20. / 255, 20. / 255, 1}
	for i := range want {
		if math.Abs(float64(dst[i]-want[i])) > 1e-6 {
			t.Fatalf("crop: got %v, want %v", dst, want)
		}
	}
}

func writePNG(t *testing.T, path string, w, h int) {
	im := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			im.Set(x, y, color.NRGBA{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var b bytes.Buffer
	png.Encode(&b, im)
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeAndCache(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i := 0; i < 6; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		writePNG(t, p, 40+i, 30)
		paths = append(paths, p)
	}
	im, err := DecodeFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if p := (7*im.W + 5) * 3; im.Pix[p] != 5 || im.Pix[p+1] != 7 || im.Pix[p+2] != 12 {
		t.Errorf("decoded pixel (5,7) = %v", im.Pix[p:p+3])
	}
	c, err := BuildCache(paths, []int32{0, 1, 2, 3, 4, 5}, 20, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, im := range c.Images {
		if im.H != 20 || im.W != int(20*float64(40+i)/30) {
			t.Errorf("image %d cached at %dx%d", i, im.W, im.H)
		}
	}
	bad := append(append([]string{}, paths...), filepath.Join(dir, "missing.png"))
	if _, err := BuildCache(bad, nil, 20, 2, nil); err == nil {
		t.Error("missing file accepted")
	}
	os.WriteFile(paths[2], []byte("\x89PNG\r\n\x1a\nbroken"), 0o644)
	if _, err := BuildCache(paths, nil, 20, 2, nil); err == nil {
		t.Error("broken PNG accepted")
	}
}

// TestLoader: every index appears once per epoch in order; output is identical for 1 and 4
// workers; train crops vary with the epoch; at most Queue batches are prepared ahead.
func TestLoader(t *testing.T) {
	c := &Cache{Short: 12}
	for i := 0; i < 23; i++ {
		c.Images = append(c.Images, testImage(12+i%3, 12))
		c.Labels = append(c.Labels, int32(i%5))
	}
	run := func(workers, epoch int, train bool) ([]*Batch, *Loader) {
		l, err := NewLoader(c, Config{Crop: 8, BatchSize: 5, Train: train, Workers: workers, Queue: 2, Seed: 1, Std: [3]float32{1, 1, 1}}, nil, epoch)
		if err != nil {
			t.Fatal(err)
		}
		var out []*Batch
		for b := l.Next(); b != nil; b = l.Next() {
			out = append(out, b)
		}
		l.Close()
		return out, l
	}
	a, l := run(1, 0, true)
	b, l4 := run(4, 0, true)
	if len(a) != 5 || len(a[4].Index) != 3 || !reflect.DeepEqual(a, b) {
		t.Fatalf("%d batches; 1 vs 4 workers equal: %v", len(a), reflect.DeepEqual(a, b))
	}
	if l.maxAhead > 2 || l4.maxAhead > 2 {
		t.Errorf("prepared %d / %d batches ahead, queue is 2", l.maxAhead, l4.maxAhead)
	}
	seen := 0
	for k, bt := range a {
		for j, i := range bt.Index {
			if i != seen || bt.Labels[j] != int32(i%5) {
				t.Fatalf("batch %d: index %d label %d, want %d", k, i, bt.Labels[j], seen)
			}
			seen++
		}
	}
	e1, _ := run(2, 1, true)
	if reflect.DeepEqual(a[0].X, e1[0].X) {
		t.Error("train crops identical across epochs")
	}
	v0, _ := run(2, 0, false)
	v1, _ := run(1, 1, false)
	if !reflect.DeepEqual(v0, v1) {
		t.Error("evaluation (centre-crop) batches differ across epochs")
	}
	// Early Close must not hang.
	l2, _ := NewLoader(c, Config{Crop: 8, BatchSize: 1, Workers: 2, Queue: 1}, nil, 0)
	l2.Next()
	l2.Close()
	if _, err := NewLoader(c, Config{Crop: 13, BatchSize: 2}, nil, 0); err == nil {
		t.Error("crop larger than the images accepted")
	}
}

// TestLoadImages: a 40×30 PNG becomes a 10×10 centre crop of its 13×10 resize.
func TestLoadImages(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.png")
	writePNG(t, p, 40, 30)
	f := &data.Files{Name: "x", Paths: []string{p, p}, Labels: []int32{3, 1}, ClassNames: map[int32]string{3: "three"}}
	im, err := LoadImages(f, 10, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if im.N != 2 || im.H != 10 || im.C != 3 || im.Labels[0] != 3 || im.ClassNames[3] != "three" {
		t.Fatalf("%+v", im)
	}
	dec, _ := DecodeFile(p)
	r := ResizeShort(dec, 10) // 13×10; centre crop starts at x = 1
	if r.W != 13 || !bytes.Equal(im.Image(0)[:30], r.Pix[3:33]) {
		t.Errorf("crop row 0 = %v, want %v", im.Image(0)[:30], r.Pix[3:33])
	}
}
