package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blSoftbinAP is an independent float64 loop: per-query soft histograms, then the AP sum.
func blSoftbinAP(b losstest.Batch, c *losses.SoftbinAPConfig) float64 {
	delta := (c.Max - c.Min) / float64(c.Bins-1)
	kernel := func(s float64, m int) float64 {
		if m == 0 && s >= c.Max || m == c.Bins-1 && s <= c.Min {
			return 1
		}
		return math.Max(0, 1-math.Abs(s-(c.Max-float64(m)*delta))/delta)
	}
	sum, n := 0.0, 0
	for i := 0; i < b.B; i++ {
		np := 0
		hp := make([]float64, c.Bins)
		ha := make([]float64, c.Bins)
		for j := 0; j < b.B; j++ {
			if j == i {
				continue
			}
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
			same := b.Labels[j] == b.Labels[i]
			if same {
				np++
			}
			for m := range ha {
				ha[m] += kernel(s, m)
				if same {
					hp[m] += kernel(s, m)
				}
			}
		}
		if np == 0 {
			continue
		}
		cp, ca, ap := 0.0, 0.0, 0.0
		for m := range ha {
			cp += hp[m]
			ca += ha[m]
			if ca > 0 {
				ap += cp / ca * hp[m] / float64(np)
			}
		}
		sum += 1 - ap
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestSoftbinAPHandWorked(t *testing.T) {
	// M=3 bins on [−1, 1]: centres 1, 0, −1, Δ=1. e0=(1,0), e1=(0,1) class 0; e2=−(1,1)/√2 class 1;
	// s01=0, s02=s12=−r, r=1/√2. Query 0: the positive (s=0) fills bin 2; the negative (s=−r)
	// splits 1−r into bin 2 and r into bin 3. Precision at bin 2 = 1/(1 + 1−r); AP = 1/(2−r).
	// Query 1 the same, query 2 has no positive: L = 1 − 1/(2−r) (a negative ranked below the
	// positive still costs, through the shared bin).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, -1, -1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, &losses.SoftbinAPConfig{Bins: 3, Min: -1, Max: 1}, b, losses.EvalOptions{})
	if want := 1 - 1/(2-1/math.Sqrt2); math.Abs(got-want) > 1e-12 {
		t.Fatalf("softbinap = %.15g, want %.15g", got, want)
	}
}

func TestSoftbinAPMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.SoftbinAPConfig{losses.DefaultSoftbinAP(), {Bins: 5, Min: 0, Max: 0.6}} {
		b := losstest.Random(37, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blSoftbinAP(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	for _, l := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		v, g := losstest.Value(t, losses.DefaultSoftbinAP(), losstest.Random(38, 3, l), losses.EvalOptions{})
		if math.Abs(v) > 1e-12 {
			t.Errorf("labels %v: %v, want 0", l, v)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatal("NaN gradient")
			}
		}
	}
}
