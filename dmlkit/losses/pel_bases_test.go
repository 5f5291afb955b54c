package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// pelDraws returns the K Monte-Carlo batches z⁽ᵏ⁾ = μ + exp(½ log σ²) ε⁽ᵏ⁾ of a [μ | log σ²] batch
// (noise [K·B·D] row-major (k, i, d)), and the mean KL(N(μ, σ²) ‖ N(0, I)) over the rows.
func pelDraws(b losstest.Batch, k int, noise []float64) ([]losstest.Batch, float64) {
	d := b.D / 2
	var draws []losstest.Batch
	for s := 0; s < k; s++ {
		z := losstest.Batch{B: b.B, D: d, Labels: b.Labels, SetSize: b.SetSize}
		for i := 0; i < b.B; i++ {
			row := losstest.Row(b.Emb, b.D, i)
			for j := 0; j < d; j++ {
				z.Emb = append(z.Emb, row[j]+math.Exp(0.5*row[d+j])*noise[(s*b.B+i)*d+j])
			}
		}
		draws = append(draws, z)
	}
	kl := 0.0
	for i := 0; i < b.B; i++ {
		row := losstest.Row(b.Emb, b.D, i)
		for j := 0; j < d; j++ {
			kl += 0.5 * (math.Exp(row[d+j]) + row[j]*row[j] - 1 - row[d+j])
		}
	}
	return draws, kl / float64(b.B)
}

// TestPELProxyAnchorHandWorked: K = 1 with zero noise puts the draw at μ, so PEL-PA is ProxyAnchor
// on μ plus β·KL. μ0 = (1, 0) of class 0, μ1 = (1, 1) of class 1, proxies (1, 0), (0, 1), (−1, 0),
// α = 1, δ = 0 (TestProxyAnchorHandWorked's batch): r = 1/√2, ProxyAnchor =
// [log(1 + e^{−1}) + log(1 + e^{−r})]/2 + [log(1 + e^{r}) + log 2 + log(1 + e^{−1} + e^{−r})]/3.
// log σ² = (ln 2, 0) and (0, −1): KL_0 = ½[(2 + 1 − 1 − ln 2) + (1 + 0 − 1 − 0)] = 1 − ½ln 2,
// KL_1 = ½[(1 + 1 − 1 − 0) + (e^{−1} + 1 − 1 + 1)] = ½(2 + e^{−1}); β = 0.1 times their mean.
func TestPELProxyAnchorHandWorked(t *testing.T) {
	r := 1 / math.Sqrt2
	pa := (math.Log1p(math.Exp(-1))+math.Log1p(math.Exp(-r)))/2 +
		(math.Log1p(math.Exp(r))+math.Log(2)+math.Log1p(math.Exp(-1)+math.Exp(-r)))/3
	kl := ((1 - 0.5*math.Ln2) + 0.5*(2+math.Exp(-1))) / 2
	want := pa + 0.1*kl
	b := losstest.Batch{Emb: []float64{1, 0, math.Ln2, 0, 1, 1, 0, -1}, B: 2, D: 4, Labels: []int64{0, 1}}
	c := &losses.PELConfig{Samples: 1, KLWeight: 0.1, Base: "proxyanchor", Margin: 0, Scale: 1, Noise: make([]float64, 4)}
	store := blProxyStore(t, "proxies", []float64{1, 0, 0, 1, -1, 0}, 3, 2)
	got, _ := losstest.Value(t, c, b, losses.EvalOptions{Store: store, NumClasses: 3})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("PEL-PA = %.15g, want %.15g", got, want)
	}
}

// TestPELBasesMatchBruteForce: with K = 3 fixed draws, PEL-PA is the mean of the brute-force
// ProxyAnchor (blProxyAnchor) over the draws plus β·KL, and PEL-MDW with every negative the mean of
// the brute-force margin loss (blMargin); both gradients match central finite differences.
func TestPELBasesMatchBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 3}
	b := losstest.Random(83, 8, labels) // μ ∈ [−1, 1)⁴, log σ² ∈ [−1, 1)⁴
	const k, nc = 3, 5
	noise := pelNoise(9, k*b.B*4)
	draws, kl := pelDraws(b, k, noise)
	proxies := blRandomProxies(21, nc, 4)
	store := blProxyStore(t, "proxies", proxies, nc, 4)
	pa := &losses.PELConfig{Samples: k, KLWeight: 0.05, Base: "proxyanchor", Margin: 0.1, Scale: 4, Noise: noise}
	want := 0.0
	for _, z := range draws {
		want += blProxyAnchor(z, proxies, nc, &losses.ProxyAnchorConfig{Margin: 0.1, Alpha: 4}) / k
	}
	want += 0.05 * kl
	opt := losses.EvalOptions{Store: store, NumClasses: nc}
	if got, _ := losstest.Value(t, pa, b, opt); math.Abs(got-want) > 1e-12 {
		t.Errorf("PEL-PA = %.15g, brute force %.15g", got, want)
	}
	losstest.CheckGradient(t, pa, b, opt, 1e-6)

	mdw := &losses.PELConfig{Samples: k, KLWeight: 0.05, Base: "margin", PairMargin: 0.2, PairBeta: 1.0, PairSampling: "all", Noise: noise}
	all := make([][]float64, b.B)
	for a := range all {
		all[a] = make([]float64, b.B)
		for n := range labels {
			if labels[n] != labels[a] {
				all[a][n] = 1
			}
		}
	}
	want = 0.05 * kl
	mc := &losses.MarginConfig{Margin: 0.2, Beta: 1.0}
	for _, z := range draws {
		want += blMargin(z, mc, all, func(int64) float64 { return 1.0 }) / k
	}
	if got, _ := losstest.Value(t, mdw, b, losses.EvalOptions{}); math.Abs(got-want) > 1e-12 || want == 0.05*kl {
		t.Errorf("PEL-MDW = %.15g, brute force %.15g", got, want)
	}
	losstest.CheckGradient(t, mdw, b, losses.EvalOptions{}, 1e-6)
}

// TestPELBasesLabelSetsAndSampling: mixup label sets reach the base (K = 1, zero noise: PEL-PA on
// [B, 2] sets equals ProxyAnchor on μ with the same sets, plus β·KL); distance-weighted sampling is
// reproducible for a seed and differs from using every negative; an unknown base or a base's bad
// parameter is refused naming the field.
func TestPELBasesLabelSetsAndSampling(t *testing.T) {
	b := losstest.Random(84, 6, []int64{0, 1, 2, 0})
	b.Labels, b.SetSize = []int64{0, -1, 1, -1, 2, 0, 0, 1}, 2
	mu := losstest.Batch{B: b.B, D: 3, Labels: b.Labels, SetSize: 2}
	for i := 0; i < b.B; i++ {
		mu.Emb = append(mu.Emb, losstest.Row(b.Emb, b.D, i)[:3]...)
	}
	_, kl := pelDraws(b, 1, make([]float64, b.B*3))
	proxies := blRandomProxies(22, 3, 3)
	opt := losses.EvalOptions{Store: blProxyStore(t, "proxies", proxies, 3, 3), NumClasses: 3}
	plain, _ := losstest.Value(t, &losses.ProxyAnchorConfig{Margin: 0.1, Alpha: 32}, mu, opt)
	c := losses.DefaultPEL()
	c.Base, c.Samples, c.KLWeight, c.Noise = "proxyanchor", 1, 0.2, make([]float64, b.B*3)
	opt.Store = blProxyStore(t, "proxies", proxies, 3, 3)
	if got, _ := losstest.Value(t, c, b, opt); math.Abs(got-(plain+0.2*kl)) > 1e-12 {
		t.Errorf("label sets: PEL-PA %.15g, ProxyAnchor(μ) + β·KL %.15g", got, plain+0.2*kl)
	}

	d := losstest.Random(85, 8, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	m := losses.DefaultPEL()
	m.Base, m.Samples = "margin", 2
	v1, _ := losstest.Value(t, m, d, losses.EvalOptions{Seed: 4})
	v2, _ := losstest.Value(t, m, d, losses.EvalOptions{Seed: 4})
	m.PairSampling = "all"
	vAll, _ := losstest.Value(t, m, d, losses.EvalOptions{Seed: 4})
	if v1 != v2 || math.IsNaN(v1) || v1 == vAll {
		t.Errorf("distance-weighted PEL-MDW: %v, %v (same seed), every negative %v", v1, v2, vAll)
	}
	for set, frag := range map[string]string{"bogus": "base \"bogus\"", "proxyanchor,scale=0": "base proxyanchor: alpha", "margin,pair_sampling=x": "sampling \"x\""} {
		parts := strings.Split(set, ",")
		kv := map[string]any{"base": parts[0]}
		for _, p := range parts[1:] {
			f := strings.SplitN(p, "=", 2)
			kv[f[0]] = f[1]
		}
		if _, err := losses.New("pel", kv); err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%s: %v, want an error containing %q", set, err, frag)
		}
	}
}
