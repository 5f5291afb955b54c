package raster

import (
	"math"
	"math/rand/v2"
)

// Uniform is the source of the uniform draws [RandomResizedCropBox] makes (*rand.Rand
// satisfies it).
type Uniform interface {
	Float64() float64
	IntN(n int) int
}

var _ Uniform = (*rand.Rand)(nil)

// RandomResizedCropBox draws torchvision's RandomResizedCrop box (x0, y0, w, h) on a W×H image:
// up to 10 tries of area W·H·U(scale[0], scale[1]) and aspect ratio w/h = exp(U(log ratio[0],
// log ratio[1])), sides rounded half to even (Python's round); the first box that fits is placed
// uniformly (y0 drawn before x0, as torchvision). When none fits, the largest centred box whose
// aspect ratio is clamped into ratio. torchvision's defaults are scale (0.08, 1) and ratio
// (3/4, 4/3).
func RandomResizedCropBox(r Uniform, W, H int, scale, ratio [2]float64) (x0, y0, w, h int) {
	area := float64(W * H)
	l0, l1 := math.Log(ratio[0]), math.Log(ratio[1])
	for try := 0; try < 10; try++ {
		ta := area * (scale[0] + r.Float64()*(scale[1]-scale[0]))
		ar := math.Exp(l0 + r.Float64()*(l1-l0))
		w = int(math.RoundToEven(math.Sqrt(ta * ar)))
		h = int(math.RoundToEven(math.Sqrt(ta / ar)))
		if w > 0 && w <= W && h > 0 && h <= H {
			y0 = r.IntN(H - h + 1)
			x0 = r.IntN(W - w + 1)
			return x0, y0, w, h
		}
	}
	in := float64(W) / float64(H)
	switch {
	case in < ratio[0]:
		w, h = W, int(math.RoundToEven(float64(W)/ratio[0]))
	case in > ratio[1]:
		w, h = int(math.RoundToEven(float64(H)*ratio[1])), H
	default:
		w, h = W, H
	}
	return (W - w) / 2, (H - h) / 2, w, h
}

// RandomResizedCrop is torchvision's RandomResizedCrop(size, scale, ratio) followed by
// RandomHorizontalFlip(½) on img: the box of [RandomResizedCropBox], resized to size×size with
// [Resize], then mirrored when a further draw r.Float64() < ½. It returns the view and whether
// it was flipped.
func RandomResizedCrop(r Uniform, img *RGB, size int, scale, ratio [2]float64) (*RGB, bool) {
	x0, y0, w, h := RandomResizedCropBox(r, img.W, img.H, scale, ratio)
	out := Resize(Crop(img, x0, y0, w, h), size, size)
	flip := r.Float64() < 0.5
	if flip {
		FlipH(out)
	}
	return out, flip
}
