package losses_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
)

// idmlRows is a batch split as the idml loss splits it: normalised semantic rows, raw (or, with
// code_metric, normalised) uncertainty rows and label sets.
type idmlRows struct {
	s, u [][]float64
	sets []map[int64]bool
}

// idmlSplitRows splits every row of b into [s | u] with u of width c.UncDim (b.D/2 when 0).
func idmlSplitRows(b losstest.Batch, c *losses.IDMLConfig) idmlRows {
	du := c.UncDim
	if du == 0 {
		du = b.D / 2
	}
	ds := b.D - du
	var r idmlRows
	for i := 0; i < b.B; i++ {
		row := losstest.Row(b.Emb, b.D, i)
		u := append([]float64(nil), row[ds:]...)
		if c.CodeMetric {
			u = idmlUnit(u)
		}
		r.s = append(r.s, idmlUnit(row[:ds]))
		r.u = append(r.u, u)
		r.sets = append(r.sets, idmlLabelSet(b, i))
	}
	return r
}

// idmlSameSet: the sets intersect (the paper's l_i = l_j for label sets).
func idmlSameSet(a, b map[int64]bool) bool {
	for l := range a {
		if b[l] {
			return true
		}
	}
	return false
}

// idmlNaiveMetric returns D_IN and C_IN between unit vectors s1, s2 whose uncertainty sum has norm
// beta: ISM-Sim α·e and 1 − (1 − C)·e (Eq. 6, 8), ISM-Dis sqrt(2 − 2C·e) and C·e (Eq. 20).
func idmlNaiveMetric(c *losses.IDMLConfig, s1, s2 []float64, beta float64) (dist, cos float64) {
	alpha := losstest.Dist(s1, s2, false)
	cs := idmlDot(s1, s2)
	e := idmlBruteDecay(c, alpha, beta)
	if c.Metric == "dis" {
		return math.Sqrt(2 - 2*cs*e), cs * e
	}
	return alpha * e, 1 - (1-cs)*e
}

// idmlNaivePairs returns D_IN and C_IN for every pair of rows (the diagonal is unused).
func idmlNaivePairs(c *losses.IDMLConfig, r idmlRows) (dist, cos [][]float64) {
	n := len(r.s)
	dist, cos = make([][]float64, n), make([][]float64, n)
	for i := range dist {
		dist[i], cos[i] = make([]float64, n), make([]float64, n)
		for j := range dist[i] {
			if i == j {
				continue
			}
			sum := make([]float64, len(r.u[i]))
			for k := range sum {
				sum[k] = r.u[i][k] + r.u[j][k]
			}
			dist[i][j], cos[i][j] = idmlNaiveMetric(c, r.s[i], r.s[j], idmlVecNorm(sum))
		}
	}
	return dist, cos
}

// naiveIDMLTriplet is Eq. 12 with the configured mining (Eq. 13 for semihard) by loops, averaged
// over the triplets with a positive loss.
func naiveIDMLTriplet(b losstest.Batch, c *losses.IDMLConfig) float64 {
	r := idmlSplitRows(b, c)
	d, _ := idmlNaivePairs(c, r)
	m := c.TripletMargin
	sum, n := 0.0, 0
	add := func(t float64) {
		if t > 0 {
			sum += t
			n++
		}
	}
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			if p == a || !idmlSameSet(r.sets[a], r.sets[p]) {
				continue
			}
			best := -1
			for q := 0; q < b.B; q++ {
				if q == a || idmlSameSet(r.sets[a], r.sets[q]) {
					continue
				}
				switch c.TripletMining {
				case "all":
					add(d[a][p] - d[a][q] + m)
				case "band":
					if d[a][q] > d[a][p] && d[a][q] < d[a][p]+m {
						add(d[a][p] - d[a][q] + m)
					}
				case "semihard":
					if d[a][q] > d[a][p] && (best < 0 || d[a][q] < d[a][best]) {
						best = q
					}
				}
			}
			if best >= 0 {
				add(d[a][p] - d[a][best] + m)
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// naiveIDMLProxyNCA is Eq. 14 with e^{−d/T} (the sign of ProxyNCA) by loops; the target sum runs
// over every proxy of the label set, the other sum over the rest (0 when empty).
func naiveIDMLProxyNCA(b losstest.Batch, c *losses.IDMLConfig, proxies [][]float64) float64 {
	r := idmlSplitRows(b, c)
	total := 0.0
	for i := 0; i < b.B; i++ {
		var pos, neg float64
		for k, p := range proxies {
			d, _ := idmlNaiveMetric(c, r.s[i], idmlUnit(p), idmlVecNorm(r.u[i]))
			if c.NCASquared {
				d *= d
			}
			if e := math.Exp(-d / c.NCATemperature); r.sets[i][int64(k)] {
				pos += e
			} else {
				neg += e
			}
		}
		if neg > 0 {
			total += math.Log(neg)
		}
		total -= math.Log(pos)
	}
	return total / float64(b.B)
}

// naiveIDMLMultiSimilarity is Eq. 16–17 (with the MS miner's +ε for positives) by loops.
func naiveIDMLMultiSimilarity(b losstest.Batch, c *losses.IDMLConfig) float64 {
	r := idmlSplitRows(b, c)
	_, s := idmlNaivePairs(c, r)
	total := 0.0
	for i := 0; i < b.B; i++ {
		minPos, maxNeg := math.Inf(1), math.Inf(-1)
		for k := 0; k < b.B; k++ {
			if k == i {
				continue
			}
			if idmlSameSet(r.sets[i], r.sets[k]) {
				minPos = math.Min(minPos, s[i][k])
			} else {
				maxNeg = math.Max(maxNeg, s[i][k])
			}
		}
		ps, ns := 0.0, 0.0
		for k := 0; k < b.B; k++ {
			if k == i {
				continue
			}
			if idmlSameSet(r.sets[i], r.sets[k]) {
				if !c.MSMining || s[i][k] < maxNeg+c.MSEpsilon {
					ps += math.Exp(-c.MSAlpha * (s[i][k] - c.MSBase))
				}
			} else if !c.MSMining || s[i][k] > minPos-c.MSEpsilon {
				ns += math.Exp(c.MSBeta * (s[i][k] - c.MSBase))
			}
		}
		total += math.Log1p(ps)/c.MSAlpha + math.Log1p(ns)/c.MSBeta
	}
	return total / float64(b.B)
}

// naiveIDMLFastAP is FastAP's histogram loop on d = D_IN² (the derivation in IDMLConfig's doc).
func naiveIDMLFastAP(b losstest.Batch, c *losses.IDMLConfig) float64 {
	r := idmlSplitRows(b, c)
	d, _ := idmlNaivePairs(c, r)
	bins := c.FastAPBins
	delta := 4 / float64(bins)
	sum, n := 0.0, 0
	for i := 0; i < b.B; i++ {
		hp, ha := make([]float64, bins+1), make([]float64, bins+1)
		np := 0
		for j := 0; j < b.B; j++ {
			if j == i {
				continue
			}
			dd := d[i][j] * d[i][j]
			same := idmlSameSet(r.sets[i], r.sets[j])
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

// idmlBaseConfig returns the defaults with the given base, metric and changes applied.
func idmlBaseConfig(base, metric string, f func(c *losses.IDMLConfig)) *losses.IDMLConfig {
	c := losses.DefaultIDML()
	c.Base, c.Metric = base, metric
	if f != nil {
		f(c)
	}
	return c
}

// idmlTestBatches: plain labels [B]; mixup-like label sets [B, 2] ({y, −1} originals, {y₁, y₂}
// mixed); and a batch of width 7 = 5 semantic + 2 uncertainty columns (unc_dim 2).
func idmlTestBatches() (plain, sets, narrow losstest.Batch) {
	plain = losstest.Random(81, 6, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	sets = losstest.Random(82, 6, []int64{0, 0, 1, 1, 2, 3, 3})
	sets.Labels = []int64{0, -1, 0, 2, 1, -1, 1, 3, 2, -1, 3, -1, 3, 0}
	sets.SetSize = 2
	narrow = losstest.Random(83, 7, []int64{0, 0, 1, 1, 2, 2, 3})
	return plain, sets, narrow
}

// TestIDMLNewBasesMatchNaive checks the triplet, multisimilarity and fastap bases (ISM-Sim and
// ISM-Dis) against plain-Go loops of the same formulas, and their gradients against central
// differences, on plain labels, label sets and a separate uncertainty width (unc_dim 2).
func TestIDMLNewBasesMatchNaive(t *testing.T) {
	plain, sets, narrow := idmlTestBatches()
	naive := map[string]func(losstest.Batch, *losses.IDMLConfig) float64{
		"triplet": naiveIDMLTriplet, "multisimilarity": naiveIDMLMultiSimilarity, "fastap": naiveIDMLFastAP,
	}
	type tc struct {
		base string
		f    func(c *losses.IDMLConfig)
		// Gradient tolerance: central differences with h = 1e−6 are accurate to ~h²·f''' + ε/h
		// ≈ 1e−10 for these piecewise-smooth losses; the multi-similarity's β = 50 makes third
		// derivatives ~50³, so its error is ~1e−8 relative; a hinge/bin kink within h of a
		// coordinate would show as an O(1) error, far above either tolerance.
		gradTol float64
	}
	cases := []tc{
		{"triplet", func(c *losses.IDMLConfig) { c.TripletMining = "semihard"; c.TripletMargin = 0.3 }, 1e-6},
		{"triplet", func(c *losses.IDMLConfig) { c.TripletMining = "band"; c.TripletMargin = 0.3; c.Gamma = 0.5 }, 1e-6},
		{"triplet", func(c *losses.IDMLConfig) { c.TripletMining = "all"; c.TripletMargin = 0.1; c.Tau = 2 }, 1e-6},
		{"multisimilarity", nil, 1e-5},
		{"multisimilarity", func(c *losses.IDMLConfig) { c.MSMining = false; c.Gamma = 1 }, 1e-5},
		{"fastap", nil, 1e-6},
		{"fastap", func(c *losses.IDMLConfig) { c.FastAPBins = 20; c.Tau = 2 }, 1e-6},
	}
	for _, k := range cases {
		for _, metric := range []string{"sim", "dis"} {
			for _, b := range []losstest.Batch{plain, sets, narrow} {
				c := idmlBaseConfig(k.base, metric, k.f)
				if b.D == 7 {
					c.UncDim = 2
				}
				name := fmt.Sprintf("%s/%s/mining=%s/D=%d/set=%d", k.base, metric, c.TripletMining, b.D, b.SetSize)
				got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
				want := naive[k.base](b, c)
				if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%s: graph %.15g, naive %.15g", name, got, want)
				}
				if want == 0 {
					t.Errorf("%s: the naive loss is 0: the batch does not exercise the base", name)
				}
				losstest.CheckGradient(t, c, b, losses.EvalOptions{}, k.gradTol)
			}
		}
	}
}

// TestIDMLProxyNCAMatchesNaive checks the proxynca base (both metrics, D_IN and D_IN², label
// sets) against a loop over the proxies the graph created, and its gradient against central
// differences.
func TestIDMLProxyNCAMatchesNaive(t *testing.T) {
	plain, sets, narrow := idmlTestBatches()
	for _, f := range []func(c *losses.IDMLConfig){
		nil,
		func(c *losses.IDMLConfig) { c.NCASquared = true },
		func(c *losses.IDMLConfig) { c.NCATemperature = 0.25; c.Gamma = 3 },
	} {
		for _, metric := range []string{"sim", "dis"} {
			for _, b := range []losstest.Batch{plain, sets, narrow} {
				c := idmlBaseConfig("proxynca", metric, f)
				if b.D == 7 {
					c.UncDim = 2
				}
				store, proxies := idmlStoreWithProxies(t, c, b, 5)
				opt := losses.EvalOptions{Store: store, NumClasses: 5}
				got, _ := losstest.Value(t, c, b, opt)
				if want := naiveIDMLProxyNCA(b, c, proxies); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%s squared=%v T=%g D=%d set=%d: graph %.15g, naive %.15g", metric, c.NCASquared, c.NCATemperature, b.D, b.SetSize, got, want)
				}
				// Smooth loss with scale 1/T ≤ 4: central differences good to ~1e−9.
				losstest.CheckGradient(t, c, b, opt, 1e-6)
			}
		}
	}
}

// TestIDMLProxyNCAHandWorked: one sample s = (1, 0) of class 0 with uncertainty u = (0.3, 0.4)
// (‖u‖ = 0.5), proxies p₀ = (1, 0), p₁ = (0, 2), p₂ = (−3, 0) (normalised: α = 0, √2, 2), τ = 1,
// γ = 0. ISM-Sim: D_IN(p₀) = 0 (α = 0), D_IN(p₁) = √2·e^{−0.5/√2}, D_IN(p₂) = 2·e^{−0.25}, so
// J = −log e^0 + log(e^{−D₁} + e^{−D₂}). A label set {0, 1} moves p₁ to the numerator:
// J = −log(1 + e^{−D₁}) + log e^{−D₂} = −log(1 + e^{−D₁}) − D₂.
func TestIDMLProxyNCAHandWorked(t *testing.T) {
	d1 := math.Sqrt2 * math.Exp(-0.5/math.Sqrt2)
	d2 := 2 * math.Exp(-0.25)
	c := idmlBaseConfig("proxynca", "sim", func(c *losses.IDMLConfig) { c.Tau = 1 })
	store := blProxyStore(t, "proxies", []float64{1, 0, 0, 2, -3, 0}, 3, 2)
	for _, tc := range []struct {
		labels  []int64
		setSize int
		want    float64
	}{
		{[]int64{0}, 1, math.Log(math.Exp(-d1) + math.Exp(-d2))},
		{[]int64{0, 1}, 2, -math.Log(1+math.Exp(-d1)) - d2},
	} {
		b := losstest.Batch{Emb: []float64{1, 0, 0.3, 0.4}, B: 1, D: 4, Labels: tc.labels, SetSize: tc.setSize}
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{Store: store, NumClasses: 3})
		if math.Abs(got-tc.want) > 1e-14 {
			t.Errorf("labels %v: %.16g, want %.16g", tc.labels, got, tc.want)
		}
	}
}

// TestIDMLZeroUncertaintyIsPlainBase: with u = 0 and γ = 0 the decay is exactly 1 (r = 0/α), so
// ISM-Sim and ISM-Dis are the plain metric (D_IN = α, C_IN = C) and every base must equal the
// registry's loss of that name on the semantic columns alone — a second implementation path.
// Values agree to rounding (the two paths compute α as ‖ŝ−ŝ'‖ from Gram entries or 2 − 2C):
// 1e−12 relative.
func TestIDMLZeroUncertaintyIsPlainBase(t *testing.T) {
	const ds, du, nc = 4, 3, 4
	sem := losstest.Random(85, ds, []int64{0, 0, 1, 1, 1, 2, 2, 3})
	ext := losstest.Batch{B: sem.B, D: ds + du, Labels: sem.Labels}
	for i := 0; i < sem.B; i++ {
		ext.Emb = append(ext.Emb, losstest.Row(sem.Emb, ds, i)...)
		ext.Emb = append(ext.Emb, make([]float64, du)...)
	}
	store := blProxyStore(t, "proxies", blRandomProxies(86, nc, ds), nc, ds)
	opt := losses.EvalOptions{Store: store, NumClasses: nc}
	for _, tc := range []struct {
		idml  func(c *losses.IDMLConfig)
		base  string
		plain string
		set   map[string]any
	}{
		{func(c *losses.IDMLConfig) { c.TripletMining = "band"; c.TripletMargin = 0.3 }, "triplet", "triplet", map[string]any{"margin": 0.3, "mining": "semihard"}},
		{func(c *losses.IDMLConfig) { c.TripletMining = "all"; c.TripletMargin = 0.1 }, "triplet", "triplet", map[string]any{"margin": 0.1, "mining": "all"}},
		{func(c *losses.IDMLConfig) { c.NCASquared = true }, "proxynca", "proxynca", map[string]any{}},
		{func(c *losses.IDMLConfig) { c.NCASquared = true; c.NCATemperature = 0.5 }, "proxynca", "proxynca", map[string]any{"temperature": 0.5}},
		{nil, "multisimilarity", "multisimilarity", map[string]any{"mining": true}},
		{func(c *losses.IDMLConfig) { c.MSMining = false }, "multisimilarity", "multisimilarity", map[string]any{}},
		{nil, "fastap", "fastap", map[string]any{}},
		{nil, "contrastive", "contrastive", map[string]any{}},
		{nil, "proxyanchor", "proxyanchor", map[string]any{"margin": 0.1, "alpha": 32}},
	} {
		plain, err := losses.New(tc.plain, tc.set)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := losstest.Value(t, plain, sem, opt)
		for _, metric := range []string{"sim", "dis"} {
			for _, uncDim := range []int{0, du} {
				c := idmlBaseConfig(tc.base, metric, tc.idml)
				c.Gamma, c.UncDim = 0, uncDim
				b := ext
				if uncDim == 0 { // halves: pad the semantic part with zero uncertainty of width ds
					b = losstest.Batch{B: sem.B, D: 2 * ds, Labels: sem.Labels}
					for i := 0; i < sem.B; i++ {
						b.Emb = append(b.Emb, losstest.Row(sem.Emb, ds, i)...)
						b.Emb = append(b.Emb, make([]float64, ds)...)
					}
				}
				got, _ := losstest.Value(t, c, b, opt)
				if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%s %v %s unc_dim=%d: idml %.15g, plain %s %.15g", tc.base, tc.set, metric, uncDim, got, tc.plain, want)
				}
				if want == 0 {
					t.Errorf("%s %v: plain loss 0, the batch does not exercise it", tc.base, tc.set)
				}
			}
		}
	}
}

// TestIDMLMetricDis checks ISM-Dis (Eq. 20) by hand on one pair and one proxy: s₁ = (1, 0),
// s₂ = (0, 1) (α = √2, C = 0) and s₃ = (0.6, 0.8) (C(s₁, s₃) = 0.6, α = √0.8), u = (0.1, 0) each,
// τ = 1, γ = 0.
//   - contrastive (m₋ = 2): a negative pair (1, 2) has β = ‖u₁ + u₂‖ = 0.2 and
//     e = exp(−0.2/√2); ISM-Sim D_IN = √2·e, ISM-Dis D_IN = sqrt(2 − 0·e) = √2 (an orthogonal
//     pair is already "dissimilar": Eq. 20 leaves C = 0 unchanged).
//   - proxyanchor with δ = 0, scale 1 and one proxy p = s₃ positive to s₁ (β = ‖u₁‖ = 0.1):
//     J = log(1 + e^{−C_IN}) + log(1 + 0) with C_IN = 1 − 0.4·e' (sim) or 0.6·e' (dis),
//     e' = exp(−0.1/√0.8).
func TestIDMLMetricDis(t *testing.T) {
	e := math.Exp(-0.2 / math.Sqrt2)
	for _, tc := range []struct {
		metric string
		want   float64
	}{
		// One negative pair, counted twice ((1,2) and (2,1)); hinge [m₋ − D_IN]₊ with m₋ = 2, the
		// mean over the active pairs.
		{"sim", 2 - math.Sqrt2*e},
		{"dis", 2 - math.Sqrt2},
	} {
		c := idmlBaseConfig("contrastive", tc.metric, func(c *losses.IDMLConfig) { c.Tau = 1; c.NegMargin = 2 })
		b := losstest.Batch{Emb: []float64{1, 0, 0.1, 0, 0, 1, 0.1, 0}, B: 2, D: 4, Labels: []int64{0, 1}}
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-14 {
			t.Errorf("contrastive %s: %.16g, want %.16g", tc.metric, got, tc.want)
		}
	}
	ep := math.Exp(-0.1 / math.Sqrt(0.8))
	store := blProxyStore(t, "proxies", []float64{0.6, 0.8}, 1, 2)
	for _, tc := range []struct {
		metric string
		cin    float64
	}{{"sim", 1 - 0.4*ep}, {"dis", 0.6 * ep}} {
		c := idmlBaseConfig("proxyanchor", tc.metric, func(c *losses.IDMLConfig) { c.Tau = 1; c.Margin = 0; c.Scale = 1 })
		b := losstest.Batch{Emb: []float64{1, 0, 0.1, 0}, B: 1, D: 4, Labels: []int64{0}}
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{Store: store, NumClasses: 1})
		// One proxy with one positive: positive term log(1 + e^{−C_IN}); no negatives: log 1 = 0.
		if want := math.Log1p(math.Exp(-tc.cin)); math.Abs(got-want) > 1e-14 {
			t.Errorf("proxyanchor %s: %.16g, want %.16g", tc.metric, got, want)
		}
	}
}

// TestIDMLExistingBasesDis: the contrastive and proxyanchor bases under ISM-Dis against the
// existing loops with the ISM-Dis metric, and gradients.
func TestIDMLExistingBasesDis(t *testing.T) {
	plain, sets, _ := idmlTestBatches()
	c := idmlBaseConfig("contrastive", "dis", func(c *losses.IDMLConfig) { c.Tau = 2; c.Gamma = 0.5 })
	got, _ := losstest.Value(t, c, plain, losses.EvalOptions{})
	// Contrastive by loops on the ISM-Dis distances.
	r := idmlSplitRows(plain, c)
	d, _ := idmlNaivePairs(c, r)
	var ps, ns float64
	var pn, nn int
	for i := 0; i < plain.B; i++ {
		for j := 0; j < plain.B; j++ {
			if i == j {
				continue
			}
			if idmlSameSet(r.sets[i], r.sets[j]) {
				if d[i][j] > 0 {
					ps += d[i][j]
					pn++
				}
			} else if v := 1 - d[i][j]; v > 0 {
				ns += v
				nn++
			}
		}
	}
	want := ps/float64(max(pn, 1)) + ns/float64(max(nn, 1))
	if math.Abs(got-want) > 1e-12 {
		t.Errorf("contrastive dis: graph %.15g, loops %.15g", got, want)
	}
	losstest.CheckGradient(t, c, plain, losses.EvalOptions{}, 1e-6)
	// ProxyAnchor on C_IN = C·e: the loop of bruteIDMLProxy with C_IN replaced.
	pa := idmlBaseConfig("proxyanchor", "dis", nil)
	store, proxies := idmlStoreWithProxies(t, pa, sets, 5)
	opt := losses.EvalOptions{Store: store, NumClasses: 5}
	got, _ = losstest.Value(t, pa, sets, opt)
	rs := idmlSplitRows(sets, pa)
	posSum, negSum, hasPos := make([]float64, 5), make([]float64, 5), make([]bool, 5)
	for i := range rs.s {
		for j, p := range proxies {
			_, cin := idmlNaiveMetric(pa, rs.s[i], idmlUnit(p), idmlVecNorm(rs.u[i]))
			if rs.sets[i][int64(j)] {
				hasPos[j] = true
				posSum[j] += math.Exp(-pa.Scale * (cin - pa.Margin))
			} else {
				negSum[j] += math.Exp(pa.Scale * (cin + pa.Margin))
			}
		}
	}
	var pos, neg float64
	np := 0
	for j := range proxies {
		if hasPos[j] {
			pos += math.Log1p(posSum[j])
			np++
		}
		neg += math.Log1p(negSum[j])
	}
	if want := pos/float64(np) + neg/5; math.Abs(got-want) > 1e-11*math.Max(1, want) {
		t.Errorf("proxyanchor dis: graph %.15g, loops %.15g", got, want)
	}
	losstest.CheckGradient(t, pa, sets, opt, 1e-5)
}

// TestIDMLUncDim: a separate uncertainty width splits [B, D+U] at D = width − U; unc_dim equal to
// half the width is the default split exactly; a width that leaves no semantic column is an error.
func TestIDMLUncDim(t *testing.T) {
	plain, _, _ := idmlTestBatches()
	for _, base := range []string{"contrastive", "triplet"} {
		c0 := idmlBaseConfig(base, "sim", nil)
		c3 := idmlBaseConfig(base, "sim", func(c *losses.IDMLConfig) { c.UncDim = plain.D / 2 })
		v0, g0 := losstest.Value(t, c0, plain, losses.EvalOptions{})
		v3, g3 := losstest.Value(t, c3, plain, losses.EvalOptions{})
		if v0 != v3 || fmt.Sprint(g0) != fmt.Sprint(g3) {
			t.Errorf("%s: unc_dim = D/2 gives %v, default %v", base, v3, v0)
		}
		// unc_dim 1 on the same 6 columns: 5 semantic + 1 uncertainty, a different loss (checked
		// against the loops in TestIDMLNewBasesMatchNaive for the triplet base).
		c1 := idmlBaseConfig(base, "sim", func(c *losses.IDMLConfig) { c.UncDim = 1 })
		if base == "triplet" {
			if v1, want := func() (float64, float64) {
				v, _ := losstest.Value(t, c1, plain, losses.EvalOptions{})
				return v, naiveIDMLTriplet(plain, c1)
			}(); math.Abs(v1-want) > 1e-12 {
				t.Errorf("unc_dim 1: %.15g, naive %.15g", v1, want)
			}
		}
	}
	c := idmlBaseConfig("contrastive", "sim", func(c *losses.IDMLConfig) { c.UncDim = 6 })
	_, err := losses.Evaluate(backend.MustShared(), c, plain.Emb, plain.B, plain.D, plain.Labels, 1, losses.EvalOptions{})
	if err == nil || !strings.Contains(err.Error(), "unc_dim") {
		t.Errorf("unc_dim = width: error %v, want one naming unc_dim", err)
	}
}

// TestIDMLFloat32AndZeroUncertaintyGradients: every base and metric in float32 (the training
// dtype) agrees with float64 to 1e−4 relative (float32 rounding, ε ≈ 6e−8, amplified by the
// exponent scales ≤ 50 of the multi-similarity and ProxyAnchor losses stays below 1e−5; proxy
// bases are only checked finite since their proxies are initialised per dtype), and the gradient
// stays finite (no NaN from ‖u‖ at u = 0) on a batch whose uncertainty rows are all zero.
func TestIDMLFloat32AndZeroUncertaintyGradients(t *testing.T) {
	plain, sets, _ := idmlTestBatches()
	zero := losstest.Batch{Emb: append([]float64(nil), plain.Emb...), B: plain.B, D: plain.D, Labels: plain.Labels}
	for i := 0; i < zero.B; i++ {
		clear(losstest.Row(zero.Emb, zero.D, i)[zero.D/2:])
	}
	for _, base := range []string{"proxyanchor", "margin", "contrastive", "triplet", "proxynca", "multisimilarity", "fastap"} {
		for _, metric := range []string{"sim", "dis"} {
			c := idmlBaseConfig(base, metric, func(c *losses.IDMLConfig) { c.PairSampling = "all" })
			proxy := base == "proxyanchor" || base == "proxynca"
			for _, b := range []losstest.Batch{sets, zero} {
				v64, g := losstest.Value(t, c, b, losses.EvalOptions{NumClasses: 5, Seed: 1})
				for i, x := range g {
					if math.IsNaN(x) || math.IsInf(x, 0) {
						t.Fatalf("%s/%s set=%d: ∂L/∂e[%d] = %v", base, metric, b.SetSize, i, x)
					}
				}
				v32, _ := losstest.Value(t, c, b, losses.EvalOptions{NumClasses: 5, Seed: 1, DType: dtypes.Float32})
				if math.IsNaN(v32) || math.IsInf(v32, 0) || (!proxy && math.Abs(v32-v64) > 1e-4*math.Max(1, math.Abs(v64))) {
					t.Errorf("%s/%s set=%d: float32 %.8g, float64 %.8g", base, metric, b.SetSize, v32, v64)
				}
			}
		}
	}
}
