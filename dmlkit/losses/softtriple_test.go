package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blSoftTriple is an independent float64 evaluation with fixed centres ([C·K, D] rows).
func blSoftTriple(b losstest.Batch, centers []float64, numClasses int, c *losses.SoftTripleConfig) float64 {
	k := c.Centers
	total := 0.0
	for i := 0; i < b.B; i++ {
		x := losstest.Row(b.Emb, b.D, i)
		logits := make([]float64, numClasses)
		for cl := 0; cl < numClasses; cl++ {
			sims := make([]float64, k)
			z, num := 0.0, 0.0
			for j := range sims {
				sims[j] = losstest.Cosine(x, losstest.Row(centers, b.D, cl*k+j))
				e := math.Exp(sims[j] / c.Gamma)
				z += e
				num += e * sims[j]
			}
			s := num / z
			if cl == int(b.Labels[i]) {
				s -= c.Margin
			}
			logits[cl] = c.Lambda * s
		}
		z := 0.0
		for _, l := range logits {
			z += math.Exp(l)
		}
		total += math.Log(z) - logits[b.Labels[i]]
	}
	loss := total / float64(b.B)
	if c.Tau > 0 && k > 1 {
		reg := 0.0
		for cl := 0; cl < numClasses; cl++ {
			for a := 0; a < k; a++ {
				for bb := a + 1; bb < k; bb++ {
					cs := losstest.Cosine(losstest.Row(centers, b.D, cl*k+a), losstest.Row(centers, b.D, cl*k+bb))
					reg += math.Sqrt(2 + 1e-5 - 2*cs)
				}
			}
		}
		loss += c.Tau * reg / float64(numClasses*k*(k-1))
	}
	return loss
}

func TestSoftTripleHandWorked(t *testing.T) {
	// K=1, γ irrelevant: S_c = cosine to the single centre; it reduces to a normalised softmax
	// with margin. e=(1,0) class 0; centres w0=(1,0), w1=(0,1); λ=1, δ=0.5:
	// logits (1−0.5, 0) -> CE = log(1+e^{−0.5}).
	b := losstest.Batch{Emb: []float64{1, 0}, B: 1, D: 2, Labels: []int64{0}}
	c := &losses.SoftTripleConfig{Centers: 1, Lambda: 1, Gamma: 0.1, Margin: 0.5, Tau: 0.2}
	got, _ := losstest.Value(t, c, b, losses.EvalOptions{Store: blProxyStore(t, "centers", []float64{1, 0, 0, 1}, 2, 2), NumClasses: 2})
	if want := math.Log1p(math.Exp(-0.5)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("softtriple K=1 = %.15g, want %.15g", got, want)
	}
	// K=2 with both centres of a class equal: the soft max over centres returns that cosine (same
	// CE as above); each of the C=2 classes has one centre pair at distance √(2+1e−5−2) = √1e−5,
	// so the regulariser adds τ·2√1e−5/(C·K·(K−1)) = 0.2·2√1e−5/4.
	c2 := &losses.SoftTripleConfig{Centers: 2, Lambda: 1, Gamma: 0.1, Margin: 0.5, Tau: 0.2}
	store := blProxyStore(t, "centers", []float64{1, 0, 1, 0, 0, 1, 0, 1}, 4, 2)
	got, _ = losstest.Value(t, c2, b, losses.EvalOptions{Store: store, NumClasses: 2})
	if want := math.Log1p(math.Exp(-0.5)) + 0.2*2*math.Sqrt(1e-5)/4; math.Abs(got-want) > 1e-12 {
		t.Fatalf("softtriple K=2 = %.15g, want %.15g", got, want)
	}
}

func TestSoftTripleMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	const numClasses, d = 4, 4
	for _, c := range []*losses.SoftTripleConfig{losses.DefaultSoftTriple(), {Centers: 3, Lambda: 5, Gamma: 0.5, Margin: 0.1, Tau: 0}} {
		centers := blRandomProxies(6, numClasses*c.Centers, d)
		opt := func() losses.EvalOptions {
			return losses.EvalOptions{Store: blProxyStore(t, "centers", centers, numClasses*c.Centers, d), NumClasses: numClasses}
		}
		b := losstest.Random(25, d, labels)
		got, _ := losstest.Value(t, c, b, opt())
		if want := blSoftTriple(b, centers, numClasses, c); math.Abs(got-want) > 1e-12*math.Max(1, want) {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		// Curvature grows like (λ/γ)²; scale the tolerance accordingly.
		losstest.CheckGradient(t, c, b, opt(), 1e-9*math.Pow(c.Lambda/c.Gamma, 2))
		losstest.CheckPermutationInvariant(t, c, b, opt(), 1e-12*math.Max(1, got))
	}
	// Learnable centres from the seed: reproducible and finite.
	b := losstest.Random(26, 3, []int64{0, 1, 1})
	v1, _ := losstest.Value(t, losses.DefaultSoftTriple(), b, losses.EvalOptions{Seed: 4})
	v2, _ := losstest.Value(t, losses.DefaultSoftTriple(), b, losses.EvalOptions{Seed: 4})
	if v1 != v2 || math.IsNaN(v1) {
		t.Errorf("seeded centres: %v vs %v", v1, v2)
	}
}
