package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blCircle is an independent float64 loop (log of the product of the two sums, computed as a
// sum of logs of shifted sums to avoid overflow at γ = 80).
func blCircle(b losstest.Batch, c *losses.CircleConfig) float64 {
	lse := func(v []float64) float64 {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, x)
		}
		s := 0.0
		for _, x := range v {
			s += math.Exp(x - m)
		}
		return m + math.Log(s)
	}
	total, n := 0.0, 0
	for i := 0; i < b.B; i++ {
		var lp, ln []float64
		for j := 0; j < b.B; j++ {
			if j == i {
				continue
			}
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
			if b.Labels[j] == b.Labels[i] {
				lp = append(lp, -c.Gamma*math.Max(0, 1+c.Margin-s)*(s-(1-c.Margin)))
			} else {
				ln = append(ln, c.Gamma*math.Max(0, s+c.Margin)*(s-c.Margin))
			}
		}
		if len(lp) == 0 || len(ln) == 0 {
			continue
		}
		z := lse(lp) + lse(ln)
		total += math.Max(z, 0) + math.Log1p(math.Exp(-math.Abs(z))) // softplus
		n++
	}
	if n == 0 {
		return 0
	}
	return total / float64(n)
}

func TestCircleHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1; r=1/√2. m=0.25, γ=1.
	// Anchor 0: s_p=0 -> α_p=1.25, logit_p = −1.25·(0−0.75) = 0.9375;
	//           s_n=r -> α_n=r+0.25, logit_n = (r+0.25)(r−0.25).  L_0 = softplus(0.9375 + r²−0.0625).
	// Anchor 1 the same; anchor 2 has no positive. L = L_0 = softplus(0.875 + 0.5) = log(1+e^{1.375}).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, &losses.CircleConfig{Margin: 0.25, Gamma: 1}, b, losses.EvalOptions{})
	if want := math.Log1p(math.Exp(1.375)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("circle = %.15g, want %.15g", got, want)
	}
}

func TestCircleMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.CircleConfig{losses.DefaultCircle(), {Margin: 0.25, Gamma: 2}} {
		b := losstest.Random(20, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blCircle(b, c); math.Abs(got-want) > 1e-12*math.Max(1, want) {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		// The α weights carry no gradient, so plain finite differences do not apply; the gradient
		// is checked with frozen weights in TestCircleGradientStopsAtWeights.
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12*math.Max(1, got))
	}
}

func TestCircleGradientStopsAtWeights(t *testing.T) {
	// The analytic gradient treats α_p, α_n as constants (paper: "a non-negative weighting
	// factor" with stop-gradient, as in pytorch-metric-learning's detach), so it differs from the
	// finite difference of the value. Check it against finite differences of a surrogate with the
	// weights frozen at the current point: perturbing e by ±h with frozen α changes L by ±h·∇.
	b := losstest.Random(21, 3, []int64{0, 0, 1, 1, 2})
	c := &losses.CircleConfig{Margin: 0.25, Gamma: 2}
	_, g := losstest.Value(t, c, b, losses.EvalOptions{})
	frozen := blCircleFrozen(b, b, c)
	const h = 1e-6
	for i := range b.Emb {
		orig := b.Emb[i]
		pb := b
		pb.Emb = append([]float64(nil), b.Emb...)
		pb.Emb[i] = orig + h
		fp := blCircleFrozen(pb, b, c)
		pb.Emb[i] = orig - h
		fm := blCircleFrozen(pb, b, c)
		if fd := (fp - fm) / (2 * h); math.Abs(fd-g[i]) > 1e-6 {
			t.Fatalf("element %d: analytic %.9g, frozen-weight finite difference %.9g (L=%.6g)", i, g[i], fd, frozen)
		}
	}
}

// blCircleFrozen evaluates the circle loss of b with the α weights taken from the batch w.
func blCircleFrozen(b, w losstest.Batch, c *losses.CircleConfig) float64 {
	total, n := 0.0, 0
	for i := 0; i < b.B; i++ {
		sp, sn := 0.0, 0.0
		np, nn := 0, 0
		for j := 0; j < b.B; j++ {
			if j == i {
				continue
			}
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
			sw := losstest.Cosine(losstest.Row(w.Emb, w.D, i), losstest.Row(w.Emb, w.D, j))
			if b.Labels[j] == b.Labels[i] {
				sp += math.Exp(-c.Gamma * math.Max(0, 1+c.Margin-sw) * (s - (1 - c.Margin)))
				np++
			} else {
				sn += math.Exp(c.Gamma * math.Max(0, sw+c.Margin) * (s - c.Margin))
				nn++
			}
		}
		if np > 0 && nn > 0 {
			total += math.Log1p(sp * sn)
			n++
		}
	}
	return total / float64(n)
}

func TestCircleDegenerate(t *testing.T) {
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		v, g := losstest.Value(t, losses.DefaultCircle(), losstest.Random(22, 3, labels), losses.EvalOptions{})
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
