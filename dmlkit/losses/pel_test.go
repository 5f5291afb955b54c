package losses_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// brutePEL evaluates the HIB loss by loops over pairs and sample pairs with the given noise [K·B·D].
func brutePEL(b losstest.Batch, c *losses.PELConfig, noise []float64) float64 {
	d, k := b.D/2, c.Samples
	z := make([][][]float64, k) // z[k][i] = μ_i + exp(½ log σ²_i) ε
	for s := 0; s < k; s++ {
		z[s] = make([][]float64, b.B)
		for i := 0; i < b.B; i++ {
			row := losstest.Row(b.Emb, b.D, i)
			z[s][i] = make([]float64, d)
			for j := 0; j < d; j++ {
				z[s][i][j] = row[j] + math.Exp(0.5*row[d+j])*noise[(s*b.B+i)*d+j]
			}
		}
	}
	sig := func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
	var ps, ns float64
	var pn, nn int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			p := 0.0
			for s := 0; s < k; s++ {
				for r := 0; r < k; r++ {
					p += sig(-c.A*losstest.Dist(z[s][i], z[r][j], false) + c.B)
				}
			}
			p /= float64(k * k)
			if b.Labels[i] == b.Labels[j] {
				ps += -math.Log(p)
				pn++
			} else {
				ns += -math.Log(1 - p)
				nn++
			}
		}
	}
	out := 0.0
	if pn > 0 {
		out += ps / float64(pn)
	}
	if nn > 0 {
		out += ns / float64(nn)
	}
	kl := 0.0
	for i := 0; i < b.B; i++ {
		row := losstest.Row(b.Emb, b.D, i)
		for j := 0; j < d; j++ {
			kl += 0.5 * (math.Exp(row[d+j]) + row[j]*row[j] - 1 - row[d+j])
		}
	}
	return out + c.KLWeight*kl/float64(b.B)
}

func pelNoise(seed uint64, n int) []float64 {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]float64, n)
	for i := range out {
		out[i] = r.NormFloat64()
	}
	return out
}

func TestPELHandWorked(t *testing.T) {
	// K = 1, zero noise, σ irrelevant: z = μ. μ0 = (0), μ1 = (1) label 0; μ2 = (3) label 1; log σ² = 0.
	// a = 1, b = 0: positives (0,1),(1,0): d = 1, p = σ(−1) -> −log σ(−1) = log(1 + e) each.
	// Negatives: (0,2),(2,0): d = 3, 1 − p = σ(3) -> log(1 + e^−3); (1,2),(2,1): d = 2 -> log(1 + e^−2).
	// KL with β = 0.5: per sample ½(1 + μ² − 1 − 0) = μ²/2 -> mean (0 + 0.5 + 4.5)/3 = 5/3.
	b := losstest.Batch{Emb: []float64{0, 0, 1, 0, 3, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	c := &losses.PELConfig{Samples: 1, KLWeight: 0.5, A: 1, B: 0, FixedAB: true, Noise: []float64{0, 0, 0}}
	want := math.Log(1+math.E) + (math.Log(1+math.Exp(-3))+math.Log(1+math.Exp(-2)))/2 + 0.5*5.0/3
	if got, _ := losstest.Value(t, c, b, losses.EvalOptions{}); math.Abs(got-want) > 1e-12 {
		t.Errorf("pel = %.15g, want %.15g", got, want)
	}
}

func TestPELMatchesBruteForce(t *testing.T) {
	b := losstest.Random(81, 6, []int64{0, 0, 1, 1, 1, 2, 3})
	for _, c := range []*losses.PELConfig{
		{Samples: 3, KLWeight: 1e-4, A: 1, B: 0},
		{Samples: 2, KLWeight: 0.1, A: 2.5, B: 1, FixedAB: true},
	} {
		c.Noise = pelNoise(5, c.Samples*b.B*b.D/2)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := brutePEL(b, c, c.Noise); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
	}
}

func TestPELRandomNoise(t *testing.T) {
	// RNG noise: reproducible for a seed, different for another; K = 1 with log σ² → −∞ (σ ≈ 0)
	// must approach the deterministic value whatever the noise.
	b := losstest.Random(82, 4, []int64{0, 0, 1, 1})
	c := losses.DefaultPEL()
	v1, _ := losstest.Value(t, c, b, losses.EvalOptions{Seed: 1})
	v1b, _ := losstest.Value(t, c, b, losses.EvalOptions{Seed: 1})
	v2, _ := losstest.Value(t, c, b, losses.EvalOptions{Seed: 2})
	if v1 != v1b || v1 == v2 || math.IsNaN(v1) {
		t.Errorf("seed 1: %v, %v; seed 2: %v", v1, v1b, v2)
	}
	sharp := losstest.Batch{Emb: append([]float64(nil), b.Emb...), B: b.B, D: b.D, Labels: b.Labels}
	for i := 0; i < b.B; i++ {
		sharp.Emb[i*b.D+2], sharp.Emb[i*b.D+3] = -60, -60 // σ = e^−30
	}
	det := &losses.PELConfig{Samples: 1, A: 1, B: 0, FixedAB: true, Noise: make([]float64, b.B*2)}
	want, _ := losstest.Value(t, det, sharp, losses.EvalOptions{})
	rnd := &losses.PELConfig{Samples: 4, A: 1, B: 0, FixedAB: true}
	if got, _ := losstest.Value(t, rnd, sharp, losses.EvalOptions{Seed: 3}); math.Abs(got-want) > 1e-9 {
		t.Errorf("σ ≈ 0: sampled %.12g, deterministic %.12g", got, want)
	}
	if _, err := losses.New("pel", map[string]any{"samples": 0}); err == nil {
		t.Error("samples 0 accepted")
	}
}
