package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// Degradation is a deterministic test-time corruption of images: seed 002 §4.5 says the
// uncertainty embedding is larger for ambiguous images, and degraded test images are a graded
// form of ambiguity (the trainer reports their mean ‖u‖: train.EvalConfig.Degrade).
//
// Kinds:
//   - "noise": additive Gaussian noise of standard deviation Level, in the units of the images as
//     the model sees them (dmlkit's image sets give pixels in [0, 1]); not clipped. Each image
//     gets its own draw, seeded by (seed, image index), so a degraded test set is the same in
//     every run and on every resume.
//   - "blur": a Gaussian blur of standard deviation Level pixels, separable, each channel on its
//     own, the kernel cut at radius ⌈3·Level⌉ and renormalised, borders replicated (the nearest
//     edge pixel stands in for the outside). Deterministic.
type Degradation struct {
	Kind  string  `yaml:"kind" json:"kind" doc:"noise (additive Gaussian, σ = level) or blur (Gaussian, σ = level pixels)"`
	Level float64 `yaml:"level" json:"level" doc:"σ of the noise (image units) or of the blur kernel (pixels); > 0"`
}

// Validate checks the kind and the level; errors name the field.
func (d Degradation) Validate() error {
	if d.Kind != "noise" && d.Kind != "blur" {
		return fmt.Errorf("kind: %q: want noise or blur", d.Kind)
	}
	if !(d.Level > 0) || math.IsInf(d.Level, 0) {
		return fmt.Errorf("level: %v: want a finite value > 0", d.Level)
	}
	if d.Kind == "blur" && d.Level > 64 {
		return fmt.Errorf("level: %v: a blur σ above 64 pixels is not supported", d.Level)
	}
	return nil
}

// Key is the degradation's name in metric keys: kind, "_", level in the shortest form ("noise_0.2",
// "blur_1").
func (d Degradation) Key() string {
	return d.Kind + "_" + strconv.FormatFloat(d.Level, 'g', -1, 64)
}

// Apply degrades one image img [h, w, c] (row-major, channels last) in place; index is the image's
// index in its set and seeds the noise together with seed.
func (d Degradation) Apply(img []float32, h, w, c int, index int, seed uint64) {
	switch d.Kind {
	case "noise":
		AddGaussianNoise(img, d.Level, seed, uint64(index))
	case "blur":
		GaussianBlur(img, h, w, c, d.Level)
	default:
		panic(fmt.Sprintf("data: degradation kind %q: want noise or blur", d.Kind))
	}
}

// AddGaussianNoise adds N(0, sigma²) to every value of x, drawn from a PCG stream seeded by
// (seed, stream).
func AddGaussianNoise(x []float32, sigma float64, seed, stream uint64) {
	r := rand.New(rand.NewPCG(seed, stream))
	for i := range x {
		x[i] += float32(sigma * r.NormFloat64())
	}
}

// GaussianKernel returns the normalised 1-D Gaussian weights exp(−k²/(2σ²)) / Σ for
// k = −R…R, R = ⌈3σ⌉ (at least 1).
func GaussianKernel(sigma float64) []float64 {
	r := max(int(math.Ceil(3*sigma)), 1)
	k := make([]float64, 2*r+1)
	var sum float64
	for i := range k {
		x := float64(i - r)
		k[i] = math.Exp(-x * x / (2 * sigma * sigma))
		sum += k[i]
	}
	for i := range k {
		k[i] /= sum
	}
	return k
}

// GaussianBlur blurs img [h, w, c] in place with [GaussianKernel](sigma) along the rows and then
// the columns, each channel on its own, replicating the border pixels.
func GaussianBlur(img []float32, h, w, c int, sigma float64) {
	k := GaussianKernel(sigma)
	r := len(k) / 2
	tmp := make([]float64, len(img))
	clamp := func(v, n int) int { return min(max(v, 0), n-1) }
	for y := range h {
		for x := range w {
			for ch := range c {
				var s float64
				for j, kv := range k {
					s += kv * float64(img[(y*w+clamp(x+j-r, w))*c+ch])
				}
				tmp[(y*w+x)*c+ch] = s
			}
		}
	}
	for y := range h {
		for x := range w {
			for ch := range c {
				var s float64
				for j, kv := range k {
					s += kv * tmp[(clamp(y+j-r, h)*w+x)*c+ch]
				}
				img[(y*w+x)*c+ch] = float32(s)
			}
		}
	}
}

// Degraded returns s with its inputs degraded by d as Fill writes them (the test set of
// eval.degrade); the noise of input i is seeded by (seed, i), so it does not depend on the batch
// the input is embedded in.
func Degraded(s Set, d Degradation, seed uint64) Set { return degradedSet{Set: s, d: d, seed: seed} }

// degradedSet is the set [Degraded] returns.
type degradedSet struct {
	Set
	d    Degradation
	seed uint64
}

func (s degradedSet) Fill(idx []int, dst []float32) {
	s.Set.Fill(idx, dst)
	h, w, c := s.Dims()
	sz := h * w * c
	for k, i := range idx {
		s.d.Apply(dst[k*sz:(k+1)*sz], h, w, c, i, s.seed)
	}
}
