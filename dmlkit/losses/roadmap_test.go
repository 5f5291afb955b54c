package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blRoadmap is an independent float64 evaluation of ROADMAP (query excluded).
func blRoadmap(b losstest.Batch, c *losses.RoadmapConfig) float64 {
	step := func(t float64) float64 {
		if t >= 0 {
			return 1
		}
		return 0
	}
	neg := func(t float64) float64 {
		switch {
		case t <= 0:
			return blSigmoid(t / c.Tau)
		case t <= c.Delta:
			return 0.5 + blSigmoid(t/c.Tau)
		}
		return c.Rho*(t-c.Delta) + c.Offset
	}
	supAP := blRankAP(b, c.QueryAsPositive, step, neg)
	var ps, ns float64
	var pn, nn int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
			if b.Labels[i] == b.Labels[j] {
				if v := math.Max(0, c.PosMargin-s); v > 0 || !c.AvgNonZero {
					ps, pn = ps+v, pn+1
				}
			} else if v := math.Max(0, s-c.NegMargin); v > 0 || !c.AvgNonZero {
				ns, nn = ns+v, nn+1
			}
		}
	}
	cal := 0.0
	if pn > 0 {
		cal += ps / float64(pn)
	}
	if nn > 0 {
		cal += ns / float64(nn)
	}
	return (1-c.Lambda)*supAP + c.Lambda*cal
}

func TestRoadmapHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1 (as in TestSmoothAPHandWorked).
	// SupAP: query 0, p=1: negative 2 is above by t=1/√2 > δ -> H⁻ = 100·(0.7071−0.05)+1.44 = 67.150678;
	// AP0 = 1/(1+67.150678); query 1 the same; query 2 skipped. SupAP = 1 − 1/68.150678.
	// Calibration: positives s=0 -> [0.9−0]₊ = 0.9 (mean 0.9); negatives s=1/√2 -> 0.7071−0.6 (mean).
	// L = 0.9·(1 − 1/68.150678) + 0.1·(0.9 + 1/√2 − 0.6).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	h := 100*(1/math.Sqrt2-0.05) + 1.44
	want := 0.9*(1-1/(1+h)) + 0.1*(0.9+1/math.Sqrt2-0.6)
	got, _ := losstest.Value(t, losses.DefaultRoadmap(), b, losses.EvalOptions{})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("roadmap = %.15g, want %.15g", got, want)
	}
}

func TestRoadmapMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	soft := losses.DefaultRoadmap()
	soft.Tau, soft.Lambda = 0.3, 0.5
	nz := losses.DefaultRoadmap()
	nz.AvgNonZero = true
	for _, c := range []*losses.RoadmapConfig{losses.DefaultRoadmap(), soft, nz} {
		b := losstest.Random(6, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blRoadmap(b, c); math.Abs(got-want) > 1e-11 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-11)
	}
	// Gradient: τ=0.3 keeps the sigmoid smooth at h=1e-6; the random batch is far from the kinks at
	// 0, δ and the calibration margins (checked by the value test passing for tiny perturbations).
	losstest.CheckGradient(t, soft, losstest.Random(6, 4, labels), losses.EvalOptions{}, 1e-5)
}

func TestRoadmapDegenerate(t *testing.T) {
	// No positives: SupAP 0, calibration = negative term only; one class: SupAP 0 (every retrieved
	// item is positive), calibration = positive term only. Compare with the brute force, check no NaN.
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		b := losstest.Random(7, 3, labels)
		v, g := losstest.Value(t, losses.DefaultRoadmap(), b, losses.EvalOptions{})
		if want := blRoadmap(b, losses.DefaultRoadmap()); math.IsNaN(v) || math.Abs(v-want) > 1e-12 {
			t.Errorf("labels %v: %v, want %v", labels, v, want)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatalf("labels %v: NaN gradient", labels)
			}
		}
	}
}

func TestRoadmapSupAPCodeReference(t *testing.T) {
	// Reference values from a float64 PyTorch 1.13 transcription of SupAP in elias-ramzi/ROADMAP
	// (smooth_rank_ap.py: step_rank + SmoothRankAP.quick_forward, label matrix with diagonal, i.e.
	// the query is its own positive), on the batch of TestSmoothAPCodeReference. λ = 0 isolates SupAP.
	emb := []float64{0.9, 0.1, -0.3, 0.5, 0.6, 0.2, -0.4, 0.8, 0.1, 0.1, -0.7, 0.6,
		0.3, 0.2, 0.9, -0.6, -0.2, 0.4, 0.7, -0.5, -0.1, 0.2, 0.9, -0.4}
	b := losstest.Batch{Emb: emb, B: 8, D: 3, Labels: []int64{0, 0, 1, 1, 2, 2, 3, 3}}
	for _, tc := range []struct{ tau, rho, offset, delta, want float64 }{
		{0.01, 100, 1.44, 0.05, 0.46897525494742276},
		{0.1, 10, 1.2, 0.1, 0.4066895753738714},
	} {
		c := &losses.RoadmapConfig{Tau: tc.tau, Rho: tc.rho, Offset: tc.offset, Delta: tc.delta, QueryAsPositive: true}
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: %.15g, authors' code %.15g", *c, got, tc.want)
		}
	}
}
