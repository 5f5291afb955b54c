package train

// Batch mixing of the training loop (mixup.enabled): Mixup, CutMix and their slot weights.

import (
	"math"
	"math/rand/v2"
)

// betaSample draws from Beta(a, a) as X/(X+Y) with X, Y ~ Gamma(a, 1).
func betaSample(r *rand.Rand, a float64) float64 {
	x, y := gammaSample(r, a), gammaSample(r, a)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaSample draws from Gamma(a, 1) (Marsaglia & Tsang 2000; a < 1 via the a+1 boost).
func gammaSample(r *rand.Rand, a float64) float64 {
	if a < 1 {
		u := r.Float64()
		return gammaSample(r, a+1) * math.Pow(u, 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Mixup mixes a batch with a permutation of itself (IDML, seed 002): the output holds the n
// originals followed by n mixed images x̃_i = λx_i + (1−λ)x_π(i) with one λ ~ Beta(α, α) per
// batch, and label sets [2n, 2]: {y_i, −1} for originals, {y_i, y_π(i)} for mixed samples
// (a mixed sample is a positive of both classes). pix is [n, size] float32.
func Mixup(r *rand.Rand, alpha float64, pix []float32, labels []int64, size int) ([]float32, []int64, float64) {
	n := len(labels)
	lam := betaSample(r, alpha)
	perm := r.Perm(n)
	out := make([]float32, 2*n*size)
	copy(out, pix)
	sets := make([]int64, 4*n)
	for i := 0; i < n; i++ {
		a, b := pix[i*size:(i+1)*size], pix[perm[i]*size:(perm[i]+1)*size]
		d := out[(n+i)*size : (n+i+1)*size]
		for k := range d {
			d[k] = float32(lam)*a[k] + float32(1-lam)*b[k]
		}
		sets[2*i], sets[2*i+1] = labels[i], -1
		sets[2*(n+i)], sets[2*(n+i)+1] = labels[i], labels[perm[i]]
		if labels[perm[i]] == labels[i] {
			sets[2*(n+i)+1] = -1
		}
	}
	return out, sets, lam
}

// CutMix is [Mixup] with Yun et al.'s (2019) box instead of the pixel blend: the n mixed images
// are x_i with one box replaced by the same box of x_π(i). One λ ~ Beta(α, α) per batch; the box
// (the same for the whole batch, as the official code) has sides ⌊H·sqrt(1 − λ)⌋ × ⌊W·sqrt(1 − λ)⌋
// around a centre drawn uniformly over the image, clipped at the borders. It returns the images
// ([2n, h·w·c], pix is [n, h, w, c] row-major), the label sets [2n, 2] as Mixup's, and the
// realised λ' = 1 − box area / (H·W), the weight of y_i (1 − λ' that of y_π(i)).
func CutMix(r *rand.Rand, alpha float64, pix []float32, labels []int64, h, w, c int) ([]float32, []int64, float64) {
	n := len(labels)
	size := h * w * c
	lam := betaSample(r, alpha)
	perm := r.Perm(n)
	cut := math.Sqrt(1 - lam)
	ch, cw := int(float64(h)*cut), int(float64(w)*cut)
	cy, cx := r.IntN(h), r.IntN(w)
	y0, y1 := max(cy-ch/2, 0), min(cy+ch/2, h)
	x0, x1 := max(cx-cw/2, 0), min(cx+cw/2, w)
	out := make([]float32, 2*n*size)
	copy(out, pix)
	sets := make([]int64, 4*n)
	for i := 0; i < n; i++ {
		d := out[(n+i)*size : (n+i+1)*size]
		copy(d, pix[i*size:(i+1)*size])
		b := pix[perm[i]*size : (perm[i]+1)*size]
		for y := y0; y < y1; y++ {
			copy(d[(y*w+x0)*c:(y*w+x1)*c], b[(y*w+x0)*c:(y*w+x1)*c])
		}
		sets[2*i], sets[2*i+1] = labels[i], -1
		sets[2*(n+i)], sets[2*(n+i)+1] = labels[i], labels[perm[i]]
		if labels[perm[i]] == labels[i] {
			sets[2*(n+i)+1] = -1
		}
	}
	return out, sets, 1 - float64((y1-y0)*(x1-x0))/float64(h*w)
}

// MixWeights returns the [2n, 2] slot weights of the label sets Mixup and CutMix return for a
// batch of n originals mixed with weight lam: (1, 0) for an original, (λ, 1 − λ) for a mixed image,
// and (1, 0) for a mix of two images of one class (its set holds the class once).
func MixWeights(sets []int64, lam float64) []float32 {
	wts := make([]float32, len(sets))
	n := len(sets) / 4
	for i := 0; i < 2*n; i++ {
		switch {
		case i < n || sets[2*i+1] < 0:
			wts[2*i] = 1
		default:
			wts[2*i], wts[2*i+1] = float32(lam), float32(1-lam)
		}
	}
	return wts
}
