package raster

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scripted is a Uniform that returns queued values, so a test fixes the box it expects.
type scripted struct {
	floats []float64
	ints   []int
}

func (s *scripted) Float64() float64 { v := s.floats[0]; s.floats = s.floats[1:]; return v }
func (s *scripted) IntN(n int) int {
	v := s.ints[0]
	s.ints = s.ints[1:]
	if v >= n {
		panic("scripted IntN out of range")
	}
	return v
}

// gradient is a W×H image whose pixel (x, y) is (4x+1, 4y+11, 2x+2y+1): linear in x and y, so a
// symmetric resampling filter returns the linear function at the filter's centre.
func gradient(W, H int) *RGB {
	im := NewRGB(W, H)
	for y := 0; y < H; y++ {
		for x := 0; x < W; x++ {
			p := (y*W + x) * 3
			im.Pix[p], im.Pix[p+1], im.Pix[p+2] = uint8(4*x+1), uint8(4*y+11), uint8(2*x+2*y+1)
		}
	}
	return im
}

// TestRandomResizedCropPixels fixes the draws: scale [0.25, 0.25] and ratio [1, 1] on a 40×40
// image give a 20×20 box (area 400 = ¼·1600); IntN places it at y0 = 5, x0 = 7 (y first, as
// torchvision). Resized to 10×10 (downscale 2), output pixel u is the triangle filter centred
// between source pixels 2u and 2u+1 of the box, with weights ⅛, ⅜, ⅜, ⅛ on pixels 2u−1 … 2u+2:
// symmetric, so on the gradient it gives the value at x = x0 + 2u + ½: R = 4(x0+2u+½)+1 =
// 4x0+8u+3, G = 4y0+8v+13, B = 2x0+4u+2y0+4v+3 — integers, so the rounded output is exact.
// Border pixels (u or v = 0 or 9) have clipped, renormalised taps and are left out. A last draw
// below ½ mirrors the view: pixel u of the flipped view is pixel 9−u of the unflipped one.
func TestRandomResizedCropPixels(t *testing.T) {
	img := gradient(40, 40)
	for _, tc := range []struct {
		flipDraw float64
		flip     bool
	}{{0.7, false}, {0.2, true}} {
		r := &scripted{floats: []float64{0.3, 0.6, tc.flipDraw}, ints: []int{5, 7}}
		view, flip := RandomResizedCrop(r, img, 10, [2]float64{0.25, 0.25}, [2]float64{1, 1})
		if flip != tc.flip || view.W != 10 || view.H != 10 {
			t.Fatalf("flip draw %v: %dx%d flipped %v, want 10x10 flipped %v", tc.flipDraw, view.W, view.H, flip, tc.flip)
		}
		const x0, y0 = 7, 5
		for v := 1; v < 9; v++ {
			for u := 1; u < 9; u++ {
				src := u
				if tc.flip {
					src = 9 - u
				}
				want := [3]int{4*x0 + 8*src + 3, 4*y0 + 8*v + 13, 2*x0 + 4*src + 2*y0 + 4*v + 3}
				p := (v*10 + u) * 3
				for c := 0; c < 3; c++ {
					if int(view.Pix[p+c]) != want[c] {
						t.Fatalf("flip %v: pixel (%d, %d) channel %d = %d, want %d", tc.flip, u, v, c, view.Pix[p+c], want[c])
					}
				}
			}
		}
	}
}

// TestFlipAndCrop: FlipH mirrors every row (pixel x goes to W−1−x, channels kept) and flipping
// twice restores the image; Crop copies the box.
func TestFlipAndCrop(t *testing.T) {
	img := gradient(5, 3)
	f := &RGB{W: 5, H: 3, Pix: append([]uint8(nil), img.Pix...)}
	FlipH(f)
	for y := 0; y < 3; y++ {
		for x := 0; x < 5; x++ {
			for c := 0; c < 3; c++ {
				if got, want := f.Pix[(y*5+x)*3+c], img.Pix[(y*5+4-x)*3+c]; got != want {
					t.Fatalf("flipped (%d, %d, %d) = %d, want %d", x, y, c, got, want)
				}
			}
		}
	}
	FlipH(f)
	for i := range f.Pix {
		if f.Pix[i] != img.Pix[i] {
			t.Fatal("flipping twice changed the image")
		}
	}
	c := Crop(img, 2, 1, 3, 2)
	// (0, 0) of the crop is (2, 1): R = 4·2+1 = 9, G = 4·1+11 = 15, B = 2·2+2·1+1 = 7.
	if c.W != 3 || c.H != 2 || c.Pix[0] != 9 || c.Pix[1] != 15 || c.Pix[2] != 7 {
		t.Errorf("crop %dx%d starts %v, want 3x2 starting [9 15 7]", c.W, c.H, c.Pix[:3])
	}
}

// TestRandomResizedCropBoxDistribution draws 20,000 boxes with torchvision's defaults on the
// sizes CIFAR-10 is used at (32, 96) and one non-square image. Every box lies inside the image;
// a box drawn (not the fallback) has an area fraction in [0.08, 1] and an aspect ratio in
// [3/4, 4/3] up to the rounding of each side to an integer (±½ pixel, so the bounds are
// widened by that much); the fallback (whole image for these in-range aspect ratios) is rare
// (< 5 %: a try fails only when a side exceeds the image, about 25 % of tries for a square
// image, and ten tries all fail with probability ≈ 0.25¹⁰). The draws cover the range: the
// smallest area fraction seen is below 0.1 and the largest above 0.9, and the mean log aspect
// ratio is within 0.02 of 0 (the log-uniform draw on a symmetric range has mean 0; 20,000
// draws of a variable of sd ≈ 0.17 give a standard error 0.0012) on the square images, where
// the rejection of boxes too large is symmetric in w and h; on the 48×40 image wide boxes fit
// more often, and the mean (0.023 with this seed) is not checked.
func TestRandomResizedCropBoxDistribution(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	scale, ratio := [2]float64{0.08, 1}, [2]float64{3.0 / 4, 4.0 / 3}
	for _, sz := range [][2]int{{32, 32}, {96, 96}, {48, 40}} {
		W, H := sz[0], sz[1]
		const n = 20000
		fallback := 0
		minA, maxA, sumLog := 1.0, 0.0, 0.0
		for i := 0; i < n; i++ {
			x0, y0, w, h := RandomResizedCropBox(r, W, H, scale, ratio)
			if x0 < 0 || y0 < 0 || w < 1 || h < 1 || x0+w > W || y0+h > H {
				t.Fatalf("%dx%d: box (%d, %d, %d, %d) outside the image", W, H, x0, y0, w, h)
			}
			if w == W && h == H {
				fallback++
				continue
			}
			fw, fh := float64(w), float64(h)
			lo, hi := (fw-0.5)*(fh-0.5)/float64(W*H), (fw+0.5)*(fh+0.5)/float64(W*H)
			if hi < scale[0] || lo > scale[1] || (fw+0.5)/(fh-0.5) < ratio[0] || (fw-0.5)/(fh+0.5) > ratio[1] {
				t.Fatalf("%dx%d: box %dx%d: area fraction in [%.3f, %.3f], aspect %.3f", W, H, w, h, lo, hi, fw/fh)
			}
			a := fw * fh / float64(W*H)
			minA, maxA = math.Min(minA, a), math.Max(maxA, a)
			sumLog += math.Log(fw / fh)
		}
		if fallback > n/20 {
			t.Errorf("%dx%d: %d fallbacks of %d", W, H, fallback, n)
		}
		if minA > 0.1 || maxA < 0.9 {
			t.Errorf("%dx%d: area fractions span [%.3f, %.3f], want below 0.1 to above 0.9", W, H, minA, maxA)
		}
		if m := sumLog / float64(n-fallback); W == H && math.Abs(m) > 0.02 {
			t.Errorf("%dx%d: mean log aspect ratio %.4f, want ≈ 0", W, H, m)
		}
	}
}
