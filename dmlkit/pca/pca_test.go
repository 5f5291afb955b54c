package pca

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Points spread along (1, 1)/√2 with standard deviation 3 and along (1, −1)/√2 with standard
// deviation 0.5: the first component must be ±(1,1)/√2 (sign fixed positive), with variance ≈ 9,
// the second (1,−1)/√2 up to sign (largest-magnitude coordinate positive), variance ≈ 0.25.
func TestFitRecoversAxes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 20000
	x := make([]float32, 2*n)
	for i := 0; i < n; i++ {
		a, b := 3*r.NormFloat64(), 0.5*r.NormFloat64()
		x[2*i] = float32(5 + (a+b)/math.Sqrt2)
		x[2*i+1] = float32(-2 + (a-b)/math.Sqrt2)
	}
	m, err := Fit(x, n, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	s := 1 / math.Sqrt2
	// Sampling error of a variance estimate with n=20000: relative sd ≈ √(2/n) = 1%; allow 4%.
	if math.Abs(m.Variance[0]-9)/9 > 0.04 || math.Abs(m.Variance[1]-0.25)/0.25 > 0.04 {
		t.Errorf("variances %v, want ≈ [9, 0.25]", m.Variance)
	}
	if math.Abs(m.Components[0]-s) > 0.01 || math.Abs(m.Components[1]-s) > 0.01 {
		t.Errorf("first component %v, want (%.3f, %.3f)", m.Components[:2], s, s)
	}
	if math.Abs(math.Abs(m.Components[2])-s) > 0.01 || math.Abs(m.Components[2]+m.Components[3]) > 0.02 {
		t.Errorf("second component %v, want ±(%.3f, %.3f)", m.Components[2:], s, -s)
	}
	if math.Abs(m.Mean[0]-5) > 0.05 || math.Abs(m.Mean[1]+2) > 0.05 {
		t.Errorf("mean %v, want ≈ (5, −2)", m.Mean)
	}
	// Transform of the mean is the origin; of mean + 2·comp0 is (2, 0).
	p, _ := m.Transform([]float32{float32(m.Mean[0] + 2*m.Components[0]), float32(m.Mean[1] + 2*m.Components[1])}, 1)
	if math.Abs(float64(p[0])-2) > 1e-5 || math.Abs(float64(p[1])) > 1e-5 {
		t.Errorf("Transform = %v, want (2, 0)", p)
	}
}

func TestFitErrors(t *testing.T) {
	if _, err := Fit([]float32{1, 2}, 1, 2, 1); err == nil {
		t.Error("one row accepted")
	}
	if _, err := Fit([]float32{1, 2, 3, 4}, 2, 2, 3); err == nil {
		t.Error("k > d accepted")
	}
	if _, err := Fit([]float32{1, float32(math.NaN()), 3, 4}, 2, 2, 1); err == nil {
		t.Error("NaN accepted")
	}
}
