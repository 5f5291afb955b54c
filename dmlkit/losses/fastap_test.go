package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blFastAP is an independent float64 loop: histograms per query, then the FastAP sum.
func blFastAP(b losstest.Batch, bins int) float64 {
	delta := 4 / float64(bins)
	sum, n := 0.0, 0
	for i := 0; i < b.B; i++ {
		hp := make([]float64, bins+1)
		ha := make([]float64, bins+1)
		np := 0
		for j := 0; j < b.B; j++ {
			if j == i {
				continue
			}
			dd := losstest.Dist(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j), true)
			dd *= dd
			same := b.Labels[j] == b.Labels[i]
			if same {
				np++
			}
			for l := range ha {
				k := math.Max(0, 1-math.Abs(dd-float64(l)*delta)/delta)
				ha[l] += k
				if same {
					hp[l] += k
				}
			}
		}
		if np == 0 {
			continue
		}
		cp, ca, ap := 0.0, 0.0, 0.0
		for l := range ha {
			cp += hp[l]
			ca += ha[l]
			if ca > 0 {
				ap += hp[l] * cp / ca
			}
		}
		sum += 1 - ap/float64(np)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestFastAPHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(−1,0) class 1. Squared distances: d01=2, d02=4, d12=2.
	// 10 bins, Δ=0.4: d=2 falls exactly on centre 5, d=4 on centre 10 (each a one-hot histogram).
	// Query 0: positive e1 at bin 5, negative e2 at bin 10: h⁺5=1, H⁺5=1, H5=1 -> AP 1.
	// Query 1: positive e0 at bin 5, negative e2 also at bin 5: H5=2 -> AP 1·1/2.
	// Query 2: no positive. L = 1 − (1 + 1/2)/2 = 1/4.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, -1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, losses.DefaultFastAP(), b, losses.EvalOptions{})
	if math.Abs(got-0.25) > 1e-12 {
		t.Fatalf("fastap = %.15g, want 1/4", got)
	}
}

func TestFastAPMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, bins := range []int{10, 4, 25} {
		c := &losses.FastAPConfig{Bins: bins}
		b := losstest.Random(16, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blFastAP(b, bins); math.Abs(got-want) > 1e-12 {
			t.Errorf("bins %d: graph %.15g, brute force %.15g", bins, got, want)
		}
		// Piecewise linear kernel: random distances are ≫ h=1e-6 away from the bin centres.
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestFastAPDegenerate(t *testing.T) {
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		b := losstest.Random(17, 3, labels)
		v, g := losstest.Value(t, losses.DefaultFastAP(), b, losses.EvalOptions{})
		// No positives -> 0; one class -> every retrieved item positive, h⁺=h -> AP 1 -> 0.
		if math.Abs(v) > 1e-12 {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatal("NaN gradient")
			}
		}
	}
}
