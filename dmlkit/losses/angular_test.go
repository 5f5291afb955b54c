package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blAngular is an independent float64 loop over (a, p) pairs and negatives n.
func blAngular(b losstest.Batch, alphaDeg float64) float64 {
	t2 := math.Pow(math.Tan(alphaDeg*math.Pi/180), 2)
	unit := func(i int) []float64 {
		r := losstest.Row(b.Emb, b.D, i)
		n := math.Sqrt(blDot(r, r))
		out := make([]float64, len(r))
		for k := range r {
			out[k] = r[k] / n
		}
		return out
	}
	total, pairs := 0.0, 0
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			if p == a || b.Labels[p] != b.Labels[a] {
				continue
			}
			xa, xp := unit(a), unit(p)
			s := 0.0
			for n := 0; n < b.B; n++ {
				if b.Labels[n] == b.Labels[a] {
					continue
				}
				xn := unit(n)
				s += math.Exp(4*t2*(blDot(xa, xn)+blDot(xp, xn)) - 2*(1+t2)*blDot(xa, xp))
			}
			total += math.Log1p(s)
			pairs++
		}
	}
	if pairs == 0 {
		return 0
	}
	return total / float64(pairs)
}

func blDot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestAngularHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(−1,0) class 1; α=45° -> tan²α = 1.
	// Pair (0,1): f = 4·((x0+x1)·x2) − 4·(x0·x1) = 4·(−1) − 0 = −4; pair (1,0) the same.
	// L = log(1+e^{−4}).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, -1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, &losses.AngularConfig{AlphaDeg: 45}, b, losses.EvalOptions{})
	if want := math.Log1p(math.Exp(-4)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("angular = %.15g, want %.15g", got, want)
	}
}

func TestAngularMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, alpha := range []float64{40, 30} {
		c := &losses.AngularConfig{AlphaDeg: alpha}
		b := losstest.Random(23, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blAngular(b, alpha); math.Abs(got-want) > 1e-12 {
			t.Errorf("α=%g: graph %.15g, brute force %.15g", alpha, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		if v, _ := losstest.Value(t, losses.DefaultAngular(), losstest.Random(24, 3, labels), losses.EvalOptions{}); v != 0 {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
	}
	if _, err := losses.New("angular", map[string]any{"alpha": 90}); err == nil {
		t.Error("alpha 90 accepted")
	}
}
