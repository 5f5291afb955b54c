package plots

import "math"

// Circular statistics and kernel density estimates of directions, for [Embedding2D].
//
// For angles θ_1..θ_n (radians) the mean resultant vector is (C̄, S̄) = (mean cos θ_i, mean sin θ_i);
// its length R̄ ∈ [0, 1] measures concentration (1: all equal, 0: e.g. spread evenly), its angle
// atan2(S̄, C̄) is the mean direction, and the circular standard deviation is sqrt(−2 ln R̄) (Mardia &
// Jupp 2000, §2.3.1), the σ of the wrapped normal distribution with that R̄ (+Inf when R̄ = 0).

// ClassSpread summarises the 2-D points of one class.
type ClassSpread struct {
	Label     float64    // the class label
	N         int        // points of the class (points at the origin included)
	Mean      [2]float64 // centroid of the points (for unit vectors: the mean resultant vector)
	Radius    float64    // mean distance of the points from the origin (1 on the unit circle)
	Direction float64    // mean direction of the points' angles, radians in (−π, π]; the arrow's angle
	R         float64    // mean resultant length R̄ of the points' directions, in [0, 1]
	CircStd   float64    // circular standard deviation sqrt(−2 ln R̄), radians (+Inf when R̄ = 0)
	Bandwidth float64    // the wrapped-Gaussian KDE bandwidth of the angles ([CircularBandwidth]), radians
}

// CircularStats returns the mean direction (radians, in (−π, π]), the mean resultant length R̄ and
// the circular standard deviation sqrt(−2 ln R̄) of the angles. With no angles all three are NaN.
func CircularStats(angles []float64) (dir, rbar, std float64) {
	if len(angles) == 0 {
		return math.NaN(), math.NaN(), math.NaN()
	}
	var c, s float64
	for _, a := range angles {
		c += math.Cos(a)
		s += math.Sin(a)
	}
	c /= float64(len(angles))
	s /= float64(len(angles))
	rbar = math.Min(math.Hypot(c, s), 1) // rounding may exceed 1 by an ulp
	return math.Atan2(s, c), rbar, CircStd(rbar)
}

// CircStd is the circular standard deviation sqrt(−2 ln R̄) of a mean resultant length R̄.
func CircStd(rbar float64) float64 {
	if rbar <= 0 {
		return math.Inf(1)
	}
	return math.Sqrt(-2 * math.Log(math.Min(rbar, 1)))
}

// Spread computes the [ClassSpread] of the points (x[i], y[i]): the centroid, the mean radius, and
// the circular statistics of the points' angles atan2(y, x). Points at the origin have no
// direction and count only in N, Mean and Radius. The bandwidth is [CircularBandwidth] of the angles.
func Spread(label float64, x, y []float64) ClassSpread {
	cs := ClassSpread{Label: label, N: len(x)}
	var angles []float64
	for i := range x {
		cs.Mean[0] += x[i]
		cs.Mean[1] += y[i]
		r := math.Hypot(x[i], y[i])
		cs.Radius += r
		if r > 0 {
			angles = append(angles, math.Atan2(y[i], x[i]))
		}
	}
	if n := float64(len(x)); n > 0 {
		cs.Mean[0] /= n
		cs.Mean[1] /= n
		cs.Radius /= n
	}
	cs.Direction, cs.R, cs.CircStd = CircularStats(angles)
	cs.Bandwidth = CircularBandwidth(angles)
	return cs
}

// Bandwidth limits of [CircularBandwidth], radians: below MinBandwidth a grid of a few hundred
// angles cannot resolve the kernel; above MaxBandwidth the estimate is flat anyway.
const (
	MinBandwidth = 0.01
	MaxBandwidth = math.Pi
)

// CircularBandwidth is the wrapped-Gaussian kernel bandwidth of the angles by Silverman's
// normal-reference rule h = 1.06 σ n^(−1/5), with σ the circular standard deviation
// sqrt(−2 ln R̄) (exact for wrapped-normal data), clamped to [MinBandwidth, MaxBandwidth].
// With no angles it is MaxBandwidth.
func CircularBandwidth(angles []float64) float64 {
	if len(angles) == 0 {
		return MaxBandwidth
	}
	_, _, std := CircularStats(angles)
	h := 1.06 * std * math.Pow(float64(len(angles)), -0.2)
	return math.Max(MinBandwidth, math.Min(MaxBandwidth, h))
}

// WrappedKDE evaluates at each angle of at the wrapped-Gaussian kernel density estimate
//
//	f(θ) = 1/n Σ_i Σ_k φ_h(θ − θ_i + 2πk),   φ_h the N(0, h²) density,
//
// a density on the circle (∫_0^2π f = 1). The sum over wraps k is truncated at |θ − θ_i + 2πk| > 9h, which drops a
// mass of 2Φ(−9) ≈ 2.3e-19 per kernel.
// It panics on a bandwidth that is not positive.
func WrappedKDE(angles []float64, h float64, at []float64) []float64 {
	if !(h > 0) {
		panic("plots: WrappedKDE: bandwidth must be positive")
	}
	out := make([]float64, len(at))
	if len(angles) == 0 {
		return out
	}
	const cut = 9.0 // kernel support in bandwidths
	norm := 1 / (float64(len(angles)) * h * math.Sqrt(2*math.Pi))
	kmax := int(math.Ceil(cut*h/(2*math.Pi))) + 1
	for j, t := range at {
		var sum float64
		for _, a := range angles {
			d := math.Remainder(t-a, 2*math.Pi) // in [−π, π]
			for k := -kmax; k <= kmax; k++ {
				u := (d + 2*math.Pi*float64(k)) / h
				if u > cut || u < -cut {
					continue
				}
				sum += math.Exp(-0.5 * u * u)
			}
		}
		out[j] = sum * norm
	}
	return out
}

// KDE2D evaluates a 2-D Gaussian product-kernel density estimate of the points on the cell centres
// of an n × n grid over [lo, hi]², with Scott's rule bandwidths h_d = σ_d N^(−1/6) per coordinate
// (σ_d the sample standard deviation, floored at 1e-3·(hi − lo)). z[r][c] is the density at
// x = lo + (c+½)Δ, y = lo + (r+½)Δ, Δ = (hi − lo)/n; the density integrates to 1 over the plane.
func KDE2D(x, y []float64, lo, hi float64, n int) [][]float64 {
	z := make([][]float64, n)
	for r := range z {
		z[r] = make([]float64, n)
	}
	if len(x) == 0 {
		return z
	}
	floor := 1e-3 * (hi - lo)
	hx := math.Max(sampleStd(x), floor) * math.Pow(float64(len(x)), -1.0/6)
	hy := math.Max(sampleStd(y), floor) * math.Pow(float64(len(y)), -1.0/6)
	d := (hi - lo) / float64(n)
	kx := make([]float64, n)
	ky := make([]float64, n)
	norm := 1 / (float64(len(x)) * 2 * math.Pi * hx * hy)
	for i := range x {
		for c := range kx {
			u := (lo + (float64(c)+0.5)*d - x[i]) / hx
			kx[c] = math.Exp(-0.5 * u * u)
		}
		for r := range ky {
			u := (lo + (float64(r)+0.5)*d - y[i]) / hy
			ky[r] = math.Exp(-0.5 * u * u)
		}
		for r, wy := range ky {
			if wy < 1e-12 {
				continue
			}
			row := z[r]
			for c, wx := range kx {
				row[c] += wy * wx
			}
		}
	}
	for r := range z {
		for c := range z[r] {
			z[r][c] *= norm
		}
	}
	return z
}

func sampleStd(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	var m float64
	for _, e := range v {
		m += e
	}
	m /= float64(len(v))
	var ss float64
	for _, e := range v {
		ss += (e - m) * (e - m)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}
