package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// idmlDot is the dot product of two vectors.
func idmlDot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func idmlVecNorm(x []float64) float64 { return math.Sqrt(idmlDot(x, x)) }

func idmlUnit(x []float64) []float64 {
	n := idmlVecNorm(x)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] / n
	}
	return out
}

// idmlBruteDecay is exp(−r_conf/τ): paper r = (β+γ)/α (Eq. 5–6), code r = (β²+γ)/α².
func idmlBruteDecay(c *losses.IDMLConfig, alpha, beta float64) float64 {
	if c.CodeMetric {
		return math.Exp(-(beta*beta + c.Gamma) / (alpha * alpha) / c.Tau)
	}
	return math.Exp(-(beta + c.Gamma) / alpha / c.Tau)
}

// idmlLabelSet returns the label set of row i (−1 slots dropped).
func idmlLabelSet(b losstest.Batch, i int) map[int64]bool {
	s := max(b.SetSize, 1)
	out := map[int64]bool{}
	for _, l := range b.Labels[i*s : (i+1)*s] {
		if l >= 0 {
			out[l] = true
		}
	}
	return out
}

// bruteIDMLProxy is ProxyAnchor on C_IN (seed 002 Eq. 8) by loops; emb rows are [s | u].
func bruteIDMLProxy(b losstest.Batch, c *losses.IDMLConfig, proxies [][]float64) float64 {
	d := b.D / 2
	nc := len(proxies)
	posSum, negSum := make([]float64, nc), make([]float64, nc)
	hasPos := make([]bool, nc)
	for i := 0; i < b.B; i++ {
		row := losstest.Row(b.Emb, b.D, i)
		s, u := idmlUnit(row[:d]), append([]float64(nil), row[d:]...)
		if c.CodeMetric {
			u = idmlUnit(u)
		}
		set := idmlLabelSet(b, i)
		for j, p := range proxies {
			pu := idmlUnit(p)
			cos := idmlDot(s, pu)
			alpha := losstest.Dist(s, pu, false)
			if c.CodeMetric {
				alpha = losstest.Dist(s, p, false)
			}
			cin := 1 - (1-cos)*idmlBruteDecay(c, alpha, idmlVecNorm(u))
			if set[int64(j)] {
				hasPos[j] = true
				posSum[j] += math.Exp(-c.Scale * (cin - c.Margin))
			} else {
				negSum[j] += math.Exp(c.Scale * (cin + c.Margin))
			}
		}
	}
	var pos, neg float64
	np := 0
	for j := 0; j < nc; j++ {
		if hasPos[j] {
			pos += math.Log1p(posSum[j])
			np++
		}
		neg += math.Log1p(negSum[j])
	}
	if np > 0 {
		pos /= float64(np)
	}
	return pos + neg/float64(nc)
}

// bruteIDMLContrastive is the contrastive loss on D_IN (Eq. 6) by loops.
func bruteIDMLContrastive(b losstest.Batch, c *losses.IDMLConfig) float64 {
	d := b.D / 2
	var ps, ns float64
	var pn, nn int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			ri, rj := losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j)
			ui, uj := ri[d:], rj[d:]
			if c.CodeMetric {
				ui, uj = idmlUnit(ui), idmlUnit(uj)
			}
			sum := make([]float64, d)
			for k := range sum {
				sum[k] = ui[k] + uj[k]
			}
			alpha := losstest.Dist(idmlUnit(ri[:d]), idmlUnit(rj[:d]), false)
			din := alpha * idmlBruteDecay(c, alpha, idmlVecNorm(sum))
			pos := false
			for l := range idmlLabelSet(b, i) {
				pos = pos || idmlLabelSet(b, j)[l]
			}
			if pos {
				if t := math.Max(0, din-c.PosMargin); t > 0 {
					ps += t
					pn++
				}
			} else if t := math.Max(0, c.NegMargin-din); t > 0 {
				ns += t
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
	return out
}

// idmlStoreWithProxies returns a seeded store after one evaluation (which creates the proxies) and
// the proxies' values.
func idmlStoreWithProxies(t *testing.T, l losses.Loss, b losstest.Batch, numClasses int) (*model.Store, [][]float64) {
	t.Helper()
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(3); err != nil {
		t.Fatal(err)
	}
	losstest.Value(t, l, b, losses.EvalOptions{Store: store, NumClasses: numClasses})
	for v := range store.IterVariables() {
		if v.Name() != "proxies" {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		flat := tensors.MustCopyFlatData[float64](val)
		dims := val.Shape().Dimensions
		out := make([][]float64, dims[0])
		for i := range out {
			out[i] = flat[i*dims[1] : (i+1)*dims[1]]
		}
		return store, out
	}
	t.Fatal("no proxies variable in the store")
	return nil, nil
}

func TestIDMLProxyMatchesBruteForce(t *testing.T) {
	plain := losstest.Random(71, 6, []int64{0, 0, 1, 1, 2, 3, 3})
	sets := losstest.Random(72, 6, []int64{0, 0, 1, 1, 2, 3, 3})
	sets.Labels = []int64{0, -1, 0, 2, 1, -1, 1, 3, 2, -1, 3, -1, 3, 0}
	sets.SetSize = 2
	for _, c := range []*losses.IDMLConfig{
		losses.DefaultIDML(),
		{Base: "proxyanchor", Tau: 5, Gamma: 3, Margin: 0.1, Scale: 32},
		{Base: "proxyanchor", Tau: 5, Gamma: 4, Margin: 0.1, Scale: 32, CodeMetric: true},
	} {
		for _, b := range []losstest.Batch{plain, sets} {
			store, proxies := idmlStoreWithProxies(t, c, b, 5)
			opt := losses.EvalOptions{Store: store, NumClasses: 5}
			got, _ := losstest.Value(t, c, b, opt)
			if want := bruteIDMLProxy(b, c, proxies); math.Abs(got-want) > 1e-11*math.Max(1, math.Abs(want)) {
				t.Errorf("%+v set=%d: graph %.15g, brute force %.15g", *c, b.SetSize, got, want)
			}
			// Scale 32 makes the loss steep (second derivatives ~32²): central differences with
			// h = 1e−6 are accurate to ~1e−8 relative; tolerance 1e−5.
			losstest.CheckGradient(t, c, b, opt, 1e-5)
			losstest.CheckPermutationInvariant(t, c, b, opt, 1e-12)
		}
	}
}

func TestIDMLContrastiveMatchesBruteForce(t *testing.T) {
	b := losstest.Random(73, 8, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	for _, c := range []*losses.IDMLConfig{
		{Base: "contrastive", Tau: 5, Gamma: 0, PosMargin: 0, NegMargin: 1},
		{Base: "contrastive", Tau: 2, Gamma: 1, PosMargin: 0.05, NegMargin: 0.5},
		{Base: "contrastive", Tau: 5, Gamma: 4, PosMargin: 0, NegMargin: 1, CodeMetric: true},
	} {
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := bruteIDMLContrastive(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestIDMLCodeMetricIgnoresUncertainty(t *testing.T) {
	// With the code's metric the uncertainty is L2-normalised, so ‖û‖² ≡ 1 against a proxy: the loss
	// cannot depend on u and ∂L/∂u vanishes up to rounding (papers-vs-code §4 measured ~7e−9 in
	// float32). With the paper's metric the uncertainty head gets a real gradient.
	b := losstest.Random(74, 8, []int64{0, 0, 1, 1, 2, 2})
	gradU := func(c *losses.IDMLConfig) float64 {
		store, _ := idmlStoreWithProxies(t, c, b, 3)
		_, g := losstest.Value(t, c, b, losses.EvalOptions{Store: store, NumClasses: 3})
		worst := 0.0
		for i := 0; i < b.B; i++ {
			for k := b.D / 2; k < b.D; k++ {
				worst = math.Max(worst, math.Abs(g[i*b.D+k]))
			}
		}
		return worst
	}
	code := &losses.IDMLConfig{Base: "proxyanchor", Tau: 5, Gamma: 4, Margin: 0.1, Scale: 32, CodeMetric: true}
	if g := gradU(code); g > 1e-12 {
		t.Errorf("code metric: max |∂L/∂u| = %.3g, want ≈ 0", g)
	}
	if g := gradU(losses.DefaultIDML()); g < 1e-4 {
		t.Errorf("paper metric: max |∂L/∂u| = %.3g, want a non-negligible gradient", g)
	}
}

func TestIDMLValidate(t *testing.T) {
	for _, set := range []map[string]any{
		{"base": "npair"},
		{"metric": "both"},
		{"unc_dim": -1},
		{"base": "triplet", "triplet_mining": "hard"},
		{"base": "triplet", "triplet_margin": -0.1},
		{"base": "proxynca", "nca_temperature": 0},
		{"base": "multisimilarity", "ms_beta": 0},
		{"base": "fastap", "fastap_bins": 0},
	} {
		if _, err := losses.New("idml", set); err == nil {
			t.Errorf("%v accepted", set)
		}
	}
	for _, base := range []string{"triplet", "proxynca", "multisimilarity", "fastap"} {
		if _, err := losses.New("idml", map[string]any{"base": base, "metric": "dis", "unc_dim": 3}); err != nil {
			t.Errorf("base %s: %v", base, err)
		}
	}
	if _, err := losses.New("idml", map[string]any{"tau": 0}); err == nil {
		t.Error("tau 0 accepted")
	}
	// Odd embedding width cannot be split into semantic and uncertainty halves.
	b := losstest.Random(1, 5, []int64{0, 1})
	_, err := losses.Evaluate(backend.MustShared(), &losses.IDMLConfig{Base: "contrastive", Tau: 5}, b.Emb, 2, 5, b.Labels, 1, losses.EvalOptions{})
	if err == nil || !strings.Contains(err.Error(), "concat(semantic, uncertainty)") {
		t.Errorf("odd width: error %v, want one naming the [B, 2D] layout", err)
	}
}

// bruteIDMLMarginAll is seed 002 Eq. 7 with every negative pair used once: the margin loss
// [D_IN − (β−α)]₊ over positives and [(β+α) − D_IN]₊ over negatives, averaged over the active
// terms (as MarginConfig); rows are [s | u].
func bruteIDMLMarginAll(b losstest.Batch, c *losses.IDMLConfig) float64 {
	d := b.D / 2
	var sum float64
	var active int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			ri, rj := losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j)
			u := make([]float64, d)
			for k := range u {
				u[k] = ri[d+k] + rj[d+k]
			}
			alpha := losstest.Dist(idmlUnit(ri[:d]), idmlUnit(rj[:d]), false)
			din := alpha * idmlBruteDecay(c, alpha, idmlVecNorm(u))
			var t float64
			if b.Labels[i] == b.Labels[j] {
				t = din - (c.PairBeta - c.PairMargin)
			} else {
				t = (c.PairBeta + c.PairMargin) - din
			}
			if t > 0 {
				sum += t
				active++
			}
		}
	}
	if active == 0 {
		return 0
	}
	return sum / float64(active)
}

func TestIDMLMarginBase(t *testing.T) {
	b := losstest.Random(91, 8, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	// β = 0.9 puts both hinge sides in play for D_IN of random points (D_IN ≤ α ≤ 2, shrunk by the
	// introspective factor); the second config uses the margin loss's defaults.
	for _, c := range []*losses.IDMLConfig{
		{Base: "margin", Tau: 5, Gamma: 0, PairMargin: 0.2, PairBeta: 0.9, PairSampling: "all"},
		{Base: "margin", Tau: 2, Gamma: 1, PairMargin: 0.2, PairBeta: 1.2, PairSampling: "all"},
	} {
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := bruteIDMLMarginAll(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	// Distance-weighted sampling (the default) is deterministic given the seed, and differs from
	// using every negative.
	c := losses.DefaultIDML()
	c.Base = "margin"
	v1, _ := losstest.Value(t, c, b, losses.EvalOptions{Seed: 3})
	v2, _ := losstest.Value(t, c, b, losses.EvalOptions{Seed: 3})
	all := *c
	all.PairSampling = "all"
	vAll, _ := losstest.Value(t, &all, b, losses.EvalOptions{Seed: 3})
	if v1 != v2 || math.IsNaN(v1) || v1 == vAll {
		t.Errorf("sampled margin base: %v, %v (same seed), all negatives %v", v1, v2, vAll)
	}
}
