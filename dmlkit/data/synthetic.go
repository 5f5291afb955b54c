package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Points is a set of labelled real vectors: X is row-major [N, D], Labels[i] the class of row i.
// The synthetic generators return Points; they are deterministic given their Seed.
type Points struct {
	Name   string
	N, D   int
	X      []float64
	Labels []int32
}

// Row returns point i as a sub-slice of X.
func (p *Points) Row(i int) []float64 { return p.X[i*p.D : (i+1)*p.D] }

// Float32 returns X converted to float32 (a new slice), the layout GoMLX tensors take.
func (p *Points) Float32() []float32 {
	out := make([]float32, len(p.X))
	for i, v := range p.X {
		out[i] = float32(v)
	}
	return out
}

// newRand returns the generator all of package data uses for a seed (PCG, so streams are
// identical across platforms and Go versions).
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// Dist is a one-dimensional distribution for per-class parameters.
//
//	Kind "const":     always A
//	Kind "uniform":   uniform on [A, B)
//	Kind "lognormal": exp(A + B·N(0,1)) (A = log-median, B = log-std)
//	Kind "gamma":     Gamma(shape A, scale B) (Marsaglia–Tsang; A > 0)
type Dist struct {
	Kind string
	A, B float64
}

// Sample draws one value.
func (d Dist) Sample(r *rand.Rand) (float64, error) {
	switch d.Kind {
	case "", "const":
		return d.A, nil
	case "uniform":
		return d.A + (d.B-d.A)*r.Float64(), nil
	case "lognormal":
		return math.Exp(d.A + d.B*r.NormFloat64()), nil
	case "gamma":
		if d.A <= 0 || d.B <= 0 {
			return 0, fmt.Errorf("data: gamma distribution needs shape, scale > 0, got %g, %g", d.A, d.B)
		}
		return gammaSample(r, d.A) * d.B, nil
	}
	return 0, fmt.Errorf("data: unknown distribution kind %q (const, uniform, lognormal, gamma)", d.Kind)
}

// gammaSample draws Gamma(shape a, scale 1) by Marsaglia and Tsang (2000), with the a < 1 boost.
func gammaSample(r *rand.Rand, a float64) float64 {
	if a < 1 {
		return gammaSample(r, a+1) * math.Pow(r.Float64(), 1/a)
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
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// SphereConfig configures [SphereGaussians].
type SphereConfig struct {
	Classes  int  // number of classes K
	PerClass int  // points per class
	Dim      int  // embedding dimension D (≥ 2)
	Spread   Dist // per-class spread σ_c, drawn once per class
	Seed     uint64
}

// SphereGaussians draws K class centres μ_c uniformly on the unit sphere S^{D−1} and, for each
// class, a spread σ_c ~ cfg.Spread; point i of class c is x = (μ_c + σ_c·z/√D)/‖μ_c + σ_c·z/√D‖
// with z ~ N(0, I_D). Scaling z by 1/√D makes σ_c dimension-free: ‖σ_c z/√D‖ ≈ σ_c, so for
// large D the cosine between a point and its centre concentrates at 1/√(1+σ_c²). Classes with
// different σ_c have different intra-class distance distributions, which is what threshold-
// consistency (OPIS / TCM, seed 000) studies need. Returns the points (class-major order) and σ.
func SphereGaussians(cfg SphereConfig) (*Points, []float64, error) {
	if cfg.Classes < 1 || cfg.PerClass < 1 || cfg.Dim < 2 {
		return nil, nil, fmt.Errorf("data: SphereGaussians: need Classes ≥ 1, PerClass ≥ 1, Dim ≥ 2, got %d, %d, %d", cfg.Classes, cfg.PerClass, cfg.Dim)
	}
	r := newRand(cfg.Seed)
	d := cfg.Dim
	p := &Points{Name: "sphere-gaussians", N: cfg.Classes * cfg.PerClass, D: d}
	p.X = make([]float64, p.N*d)
	p.Labels = make([]int32, p.N)
	spreads := make([]float64, cfg.Classes)
	mu := make([]float64, d)
	scale := 1 / math.Sqrt(float64(d))
	for c := 0; c < cfg.Classes; c++ {
		gaussUnit(r, mu)
		s, err := cfg.Spread.Sample(r)
		if err != nil {
			return nil, nil, err
		}
		if s < 0 || math.IsNaN(s) {
			return nil, nil, fmt.Errorf("data: SphereGaussians: class %d drew spread %g; spreads must be ≥ 0", c, s)
		}
		spreads[c] = s
		for k := 0; k < cfg.PerClass; k++ {
			i := c*cfg.PerClass + k
			x := p.Row(i)
			for j := range x {
				x[j] = mu[j] + s*scale*r.NormFloat64()
			}
			normalize(x)
			p.Labels[i] = int32(c)
		}
	}
	return p, spreads, nil
}

// gaussUnit fills v with a uniform direction on the unit sphere.
func gaussUnit(r *rand.Rand, v []float64) {
	for {
		for j := range v {
			v[j] = r.NormFloat64()
		}
		if normalize(v) > 1e-12 {
			return
		}
	}
}

func normalize(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	n := math.Sqrt(s)
	if n > 0 {
		for j := range v {
			v[j] /= n
		}
	}
	return n
}

// CirclesConfig configures [ConcentricCircles].
type CirclesConfig struct {
	Classes  int     // number of circles (seed 004 Fig. 11 uses 5); 0 means 5
	PerClass int     // points per circle
	Noise    float64 // std of the radial Gaussian noise
	Seed     uint64
}

// ConcentricCircles returns the 2-D data of seed 004 Fig. 11: class c lies on the circle of
// radius c+1 (c = 0..K−1) at a uniform random angle, with radius perturbed by N(0, Noise²).
// Label noise for the figure's "increasingly noisy data" is applied with [LabelNoise].
func ConcentricCircles(cfg CirclesConfig) (*Points, error) {
	k := cfg.Classes
	if k == 0 {
		k = 5
	}
	if k < 1 || cfg.PerClass < 1 || cfg.Noise < 0 {
		return nil, fmt.Errorf("data: ConcentricCircles: need Classes ≥ 1, PerClass ≥ 1, Noise ≥ 0, got %d, %d, %g", k, cfg.PerClass, cfg.Noise)
	}
	r := newRand(cfg.Seed)
	p := &Points{Name: "circles", N: k * cfg.PerClass, D: 2, X: make([]float64, 2*k*cfg.PerClass), Labels: make([]int32, k*cfg.PerClass)}
	for c := 0; c < k; c++ {
		for j := 0; j < cfg.PerClass; j++ {
			i := c*cfg.PerClass + j
			th := 2 * math.Pi * r.Float64()
			rad := float64(c+1) + cfg.Noise*r.NormFloat64()
			p.X[2*i], p.X[2*i+1] = rad*math.Cos(th), rad*math.Sin(th)
			p.Labels[i] = int32(c)
		}
	}
	return p, nil
}

// Blobs2D returns K isotropic Gaussian blobs in the plane with std sigma, centred at
// radius·(cos 2πc/K, sin 2πc/K), perClass points each.
func Blobs2D(k, perClass int, radius, sigma float64, seed uint64) (*Points, error) {
	if k < 1 || perClass < 1 || sigma < 0 {
		return nil, fmt.Errorf("data: Blobs2D: need k ≥ 1, perClass ≥ 1, sigma ≥ 0, got %d, %d, %g", k, perClass, sigma)
	}
	r := newRand(seed)
	p := &Points{Name: "blobs2d", N: k * perClass, D: 2, X: make([]float64, 2*k*perClass), Labels: make([]int32, k*perClass)}
	for c := 0; c < k; c++ {
		cx, cy := radius*math.Cos(2*math.Pi*float64(c)/float64(k)), radius*math.Sin(2*math.Pi*float64(c)/float64(k))
		for j := 0; j < perClass; j++ {
			i := c*perClass + j
			p.X[2*i], p.X[2*i+1] = cx+sigma*r.NormFloat64(), cy+sigma*r.NormFloat64()
			p.Labels[i] = int32(c)
		}
	}
	return p, nil
}

// TwoMoons returns the two interleaving half circles (as in scikit-learn's make_moons):
// class 0 at (cos t, sin t), class 1 at (1 − cos t, 0.5 − sin t), t uniform on [0, π], plus
// N(0, noise²) on each coordinate.
func TwoMoons(perClass int, noise float64, seed uint64) (*Points, error) {
	if perClass < 1 || noise < 0 {
		return nil, fmt.Errorf("data: TwoMoons: need perClass ≥ 1, noise ≥ 0, got %d, %g", perClass, noise)
	}
	r := newRand(seed)
	p := &Points{Name: "moons", N: 2 * perClass, D: 2, X: make([]float64, 4*perClass), Labels: make([]int32, 2*perClass)}
	for i := 0; i < p.N; i++ {
		t := math.Pi * r.Float64()
		x, y := math.Cos(t), math.Sin(t)
		if i >= perClass {
			x, y = 1-x, 0.5-y
			p.Labels[i] = 1
		}
		p.X[2*i], p.X[2*i+1] = x+noise*r.NormFloat64(), y+noise*r.NormFloat64()
	}
	return p, nil
}

// Spirals returns K interleaved Archimedean spiral arms: arm c at parameter t ∈ [0, 1) is
// t·(cos(2π(turns·t + c/K)), sin(…)), plus N(0, noise²) on each coordinate.
func Spirals(k, perClass int, turns, noise float64, seed uint64) (*Points, error) {
	if k < 1 || perClass < 1 || noise < 0 {
		return nil, fmt.Errorf("data: Spirals: need k ≥ 1, perClass ≥ 1, noise ≥ 0, got %d, %d, %g", k, perClass, noise)
	}
	r := newRand(seed)
	p := &Points{Name: "spirals", N: k * perClass, D: 2, X: make([]float64, 2*k*perClass), Labels: make([]int32, k*perClass)}
	for c := 0; c < k; c++ {
		for j := 0; j < perClass; j++ {
			i := c*perClass + j
			t := r.Float64()
			a := 2 * math.Pi * (turns*t + float64(c)/float64(k))
			p.X[2*i], p.X[2*i+1] = t*math.Cos(a)+noise*r.NormFloat64(), t*math.Sin(a)+noise*r.NormFloat64()
			p.Labels[i] = int32(c)
		}
	}
	return p, nil
}
