package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blCentroidTriplet is an independent float64 loop: centroids by explicit averaging.
func blCentroidTriplet(b losstest.Batch, c *losses.CentroidTripletConfig) float64 {
	row := func(i int) []float64 {
		r := append([]float64(nil), losstest.Row(b.Emb, b.D, i)...)
		if c.Normalize {
			n := math.Sqrt(blDot(r, r))
			for k := range r {
				r[k] /= n
			}
		}
		return r
	}
	centroid := func(label int64, skip int) ([]float64, int) {
		out := make([]float64, b.D)
		n := 0
		for j := 0; j < b.B; j++ {
			if j == skip || b.Labels[j] != label {
				continue
			}
			for k, v := range row(j) {
				out[k] += v
			}
			n++
		}
		for k := range out {
			out[k] /= float64(max(n, 1))
		}
		return out, n
	}
	dist := func(x, y []float64) float64 {
		s := 0.0
		for k := range x {
			s += (x[k] - y[k]) * (x[k] - y[k])
		}
		if c.Distance == "l2" {
			return math.Sqrt(s)
		}
		return s
	}
	total, n := 0.0, 0
	for a := 0; a < b.B; a++ {
		cp, np := centroid(b.Labels[a], a)
		if np == 0 {
			continue
		}
		hard := math.Inf(1)
		for j := 0; j < b.B; j++ {
			if b.Labels[j] != b.Labels[a] {
				cn, _ := centroid(b.Labels[j], -1)
				hard = math.Min(hard, dist(row(a), cn))
			}
		}
		if math.IsInf(hard, 1) {
			continue
		}
		total += math.Max(0, dist(row(a), cp)-hard+c.Margin)
		n++
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}

func TestCentroidTripletHandWorked(t *testing.T) {
	// Class 0: e0=(0,0), e1=(2,0); class 1: e2=(0,1), e3=(0,3) (centroid (0,2)). Squared distances, α=0.3.
	// a=0: c_P = e1 -> 4; negative centroid (0,2) -> 4: [4−4+0.3]₊ = 0.3.
	// a=1: c_P = e0 -> 4; (2,0)-(0,2) -> 8: 0.
	// a=2: c_P = e3 -> 4; class-0 centroid (1,0) -> 1+1 = 2: 2.3.
	// a=3: c_P = e2 -> 4; (0,3)-(1,0) -> 10: 0.   L = (0.3+2.3)/4 = 0.65.
	b := losstest.Batch{Emb: []float64{0, 0, 2, 0, 0, 1, 0, 3}, B: 4, D: 2, Labels: []int64{0, 0, 1, 1}}
	got, _ := losstest.Value(t, losses.DefaultCentroidTriplet(), b, losses.EvalOptions{})
	if math.Abs(got-0.65) > 1e-12 {
		t.Fatalf("centroidtriplet = %.15g, want 0.65", got)
	}
}

func TestCentroidTripletMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.CentroidTripletConfig{
		{Margin: 1, Distance: "squared_l2"},
		{Margin: 0.5, Distance: "l2", Normalize: true},
	} {
		b := losstest.Random(27, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		want := blCentroidTriplet(b, c)
		if math.Abs(got-want) > 1e-12 || want == 0 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		v, g := losstest.Value(t, losses.DefaultCentroidTriplet(), losstest.Random(28, 3, labels), losses.EvalOptions{})
		if v != 0 {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatal("NaN gradient")
			}
		}
	}
}
