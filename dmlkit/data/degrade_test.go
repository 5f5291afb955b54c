package data

import (
	"math"
	"slices"
	"testing"
)

func TestGaussianBlurImpulseIsTheKernelProduct(t *testing.T) {
	// A unit impulse far from the borders spreads into the outer product of the 1-D kernel:
	// out(y, x) = k[y−y0+R]·k[x−x0+R] with k_i = exp(−i²/(2σ²)) / Σ_j exp(−j²/(2σ²)) (closed form,
	// written out here, not taken from GaussianKernel). float32 storage: tolerance 1e−7.
	const h, w, sigma = 15, 17, 1.0
	const y0, x0 = 7, 8
	img := make([]float32, h*w*2)
	img[(y0*w+x0)*2+1] = 1 // channel 1 only
	GaussianBlur(img, h, w, 2, sigma)
	var z float64
	for i := -3; i <= 3; i++ {
		z += math.Exp(-float64(i*i) / 2)
	}
	for y := range h {
		for x := range w {
			want := 0.0
			if dy, dx := y-y0, x-x0; dy*dy <= 9 && dx*dx <= 9 {
				want = math.Exp(-float64(dy*dy)/2) * math.Exp(-float64(dx*dx)/2) / (z * z)
			}
			if got := float64(img[(y*w+x)*2+1]); math.Abs(got-want) > 1e-7 {
				t.Fatalf("(%d, %d): %g, want %g", y, x, got, want)
			}
			if img[(y*w+x)*2] != 0 {
				t.Fatalf("channel 0 at (%d, %d) = %g: the blur mixed channels", y, x, img[(y*w+x)*2])
			}
		}
	}
}

func TestGaussianBlurKeepsConstantsAndBorders(t *testing.T) {
	// Replicated borders and a normalised kernel keep a constant image (also at the corners), and
	// a left-right step at the border: the column next to a border sees the replicated edge.
	img := make([]float32, 5*6)
	for i := range img {
		img[i] = 0.25
	}
	GaussianBlur(img, 5, 6, 1, 2)
	for i, v := range img {
		if math.Abs(float64(v)-0.25) > 1e-7 {
			t.Fatalf("pixel %d: %g, want 0.25", i, v)
		}
	}
	// Step: columns 0-2 are 0, 3-5 are 1, σ = 0.5 (R = 2, k ∝ e^{-8}, e^{-2}, 1, e^{-2}, e^{-8}).
	// Column 0 sees columns −2…2 = 0, 0, 0, 0, 0 (replicated) → 0; column 2 sees 0, 0, 0, 1, 1.
	for i := range img {
		img[i] = float32(0)
		if i%6 >= 3 {
			img[i] = 1
		}
	}
	GaussianBlur(img, 5, 6, 1, 0.5)
	e2, e8 := math.Exp(-2), math.Exp(-8)
	z := 1 + 2*e2 + 2*e8
	want2 := (e2 + e8) / z
	for y := range 5 {
		if img[y*6] != 0 || math.Abs(float64(img[y*6+2])-want2) > 1e-7 || math.Abs(float64(img[y*6+5])-1) > 1e-7 {
			t.Fatalf("row %d: %v, want column 0 = 0, column 2 = %g, column 5 = 1", y, img[y*6:y*6+6], want2)
		}
	}
}

func TestAddGaussianNoiseIsSeededAndHasItsSigma(t *testing.T) {
	const n, sigma = 40000, 0.3
	a, b, c := make([]float32, n), make([]float32, n), make([]float32, n)
	AddGaussianNoise(a, sigma, 7, 1)
	AddGaussianNoise(b, sigma, 7, 1)
	AddGaussianNoise(c, sigma, 7, 2)
	if !slices.Equal(a, b) {
		t.Fatal("the same (seed, stream) gave different noise")
	}
	if slices.Equal(a, c) {
		t.Fatal("another stream gave the same noise")
	}
	var s, s2 float64
	for _, v := range a {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	mean := s / n
	std := math.Sqrt(s2/n - mean*mean)
	// Standard errors: mean σ/√n = 0.0015, std σ/√(2n) = 0.0011; 5 of each.
	if math.Abs(mean) > 0.0075 || math.Abs(std-sigma) > 0.0055 {
		t.Errorf("mean %g, std %g: want 0 and %g", mean, std, sigma)
	}
}

func TestDegradationValidateAndKey(t *testing.T) {
	for _, tc := range []struct {
		d      Degradation
		ok     bool
		key    string
		reason string
	}{
		{Degradation{"noise", 0.2}, true, "noise_0.2", ""},
		{Degradation{"blur", 1}, true, "blur_1", ""},
		{Degradation{"blur", 0}, false, "", "level 0"},
		{Degradation{"noise", math.NaN()}, false, "", "NaN level"},
		{Degradation{"jpeg", 1}, false, "", "unknown kind"},
		{Degradation{"blur", 100}, false, "", "σ > 64"},
	} {
		err := tc.d.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("%+v (%s): error %v, want ok %v", tc.d, tc.reason, err, tc.ok)
		}
		if tc.ok && tc.d.Key() != tc.key {
			t.Errorf("%+v: key %q, want %q", tc.d, tc.d.Key(), tc.key)
		}
	}
}
