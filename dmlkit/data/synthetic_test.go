package data

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSphereGaussians checks the closed forms: points are unit vectors; with σ = 0 every point
// is its centre; for D = 512 the mean cosine to the centre is ≈ 1/√(1+σ²) (the fluctuation of
// ‖z‖²/D is O(1/√D) ≈ 0.06·σ², so a 0.01 tolerance for σ = 0.5 is about 3 std of the mean over 200
// points and far below the 0.04 gap to σ = 0.6).
func TestSphereGaussians(t *testing.T) {
	p, sig, err := SphereGaussians(SphereConfig{Classes: 3, PerClass: 200, Dim: 512, Spread: Dist{"const", 0.5, 0}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 600 || len(sig) != 3 || sig[1] != 0.5 {
		t.Fatalf("N=%d spreads %v", p.N, sig)
	}
	// Estimate each centre as the normalised class mean (for σ = 0.5, D = 512 the mean of 200
	// noise vectors has norm ≈ 0.5/√200 ≈ 0.035, so the estimate is within ~0.001 in cosine).
	for c := 0; c < 3; c++ {
		mu := make([]float64, p.D)
		for i := c * 200; i < (c+1)*200; i++ {
			x := p.Row(i)
			var n float64
			for j, v := range x {
				mu[j] += v
				n += v * v
			}
			if math.Abs(n-1) > 1e-12 {
				t.Fatalf("point %d has norm² %g", i, n)
			}
		}
		normalize(mu)
		var cos float64
		for i := c * 200; i < (c+1)*200; i++ {
			for j, v := range p.Row(i) {
				cos += v * mu[j]
			}
		}
		cos /= 200
		want := 1 / math.Sqrt(1+0.25)
		if math.Abs(cos-want) > 0.01 {
			t.Errorf("class %d: mean cosine to centre %.4f, want %.4f", c, cos, want)
		}
	}
	z, _, _ := SphereGaussians(SphereConfig{Classes: 2, PerClass: 3, Dim: 4, Seed: 1})
	for i := 1; i < 3; i++ {
		for j := 0; j < 4; j++ {
			if z.Row(i)[j] != z.Row(0)[j] {
				t.Fatal("σ = 0 points differ from their centre")
			}
		}
	}
	// Determinism and per-class spread draws.
	a, sa, _ := SphereGaussians(SphereConfig{Classes: 4, PerClass: 2, Dim: 8, Spread: Dist{"uniform", 0.1, 0.9}, Seed: 3})
	b, sb, _ := SphereGaussians(SphereConfig{Classes: 4, PerClass: 2, Dim: 8, Spread: Dist{"uniform", 0.1, 0.9}, Seed: 3})
	for i := range a.X {
		if a.X[i] != b.X[i] {
			t.Fatal("same seed, different points")
		}
	}
	for c, s := range sa {
		if s != sb[c] || s < 0.1 || s >= 0.9 {
			t.Fatalf("spreads %v", sa)
		}
	}
	if _, _, err := SphereGaussians(SphereConfig{Classes: 1, PerClass: 1, Dim: 1}); err == nil {
		t.Error("Dim 1 accepted")
	}
	if _, _, err := SphereGaussians(SphereConfig{Classes: 1, PerClass: 1, Dim: 3, Spread: Dist{Kind: "cauchy"}}); err == nil {
		t.Error("unknown distribution accepted")
	}
}

// TestDistMoments checks sample means against closed forms (n = 20000; tolerances ≈ 4 std errors).
func TestDistMoments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		d         Dist
		mean, tol float64
	}{
		{Dist{"uniform", 1, 3}, 2, 4 * (2 / math.Sqrt(12)) / math.Sqrt(20000)},
		{Dist{"gamma", 2, 0.5}, 1, 4 * math.Sqrt(2*0.25) / math.Sqrt(20000)},     // mean kθ, var kθ²
		{Dist{"gamma", 0.5, 2}, 1, 4 * math.Sqrt(0.5*4) / math.Sqrt(20000)},      // shape < 1 path
		{Dist{"lognormal", 0, 0.5}, math.Exp(0.125), 4 * 0.6 / math.Sqrt(20000)}, // e^{σ²/2}; std ≈ 0.6
	} {
		var s float64
		for i := 0; i < 20000; i++ {
			v, err := c.d.Sample(r)
			if err != nil {
				t.Fatal(err)
			}
			s += v
		}
		if m := s / 20000; math.Abs(m-c.mean) > c.tol {
			t.Errorf("%+v: mean %.4f, want %.4f±%.4f", c.d, m, c.mean, c.tol)
		}
	}
}

// TestToySets checks geometry: circle radii, blob centres, moon shapes and spiral radii.
func TestToySets(t *testing.T) {
	p, err := ConcentricCircles(CirclesConfig{PerClass: 100, Noise: 0, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if p.N != 500 || p.D != 2 {
		t.Fatalf("circles N=%d", p.N)
	}
	for i := 0; i < p.N; i++ {
		r := math.Hypot(p.X[2*i], p.X[2*i+1])
		if math.Abs(r-float64(p.Labels[i]+1)) > 1e-12 {
			t.Fatalf("point %d (class %d) at radius %g", i, p.Labels[i], r)
		}
	}
	b, _ := Blobs2D(4, 500, 10, 0.1, 2)
	for c := 0; c < 4; c++ { // class mean within 4·σ/√n = 0.018 of the centre
		var mx, my float64
		for i := c * 500; i < (c+1)*500; i++ {
			mx += b.X[2*i] / 500
			my += b.X[2*i+1] / 500
		}
		cx, cy := 10*math.Cos(math.Pi/2*float64(c)), 10*math.Sin(math.Pi/2*float64(c))
		if math.Hypot(mx-cx, my-cy) > 0.018 {
			t.Errorf("blob %d mean (%.3f,%.3f), want (%.1f,%.1f)", c, mx, my, cx, cy)
		}
	}
	m, _ := TwoMoons(50, 0, 3)
	for i := 0; i < m.N; i++ {
		x, y := m.X[2*i], m.X[2*i+1]
		cx, cy := 0.0, 0.0
		if m.Labels[i] == 1 {
			cx, cy = 1, 0.5
		}
		// class 0 is the upper half circle about (0,0), class 1 the lower one about (1, 0.5).
		if math.Abs(math.Hypot(x-cx, y-cy)-1) > 1e-12 || (y-cy)*float64(1-2*m.Labels[i]) < -1e-12 {
			t.Fatalf("moon point %d (class %d) at (%g,%g)", i, m.Labels[i], x, y)
		}
	}
	s, _ := Spirals(3, 100, 1.5, 0, 4)
	if s.N != 300 {
		t.Fatal(s.N)
	}
	for i := 0; i < s.N; i++ {
		if r := math.Hypot(s.X[2*i], s.X[2*i+1]); r >= 1 {
			t.Fatalf("spiral radius %g ≥ 1", r)
		}
	}
}
