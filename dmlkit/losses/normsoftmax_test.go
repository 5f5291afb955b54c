package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// bruteNormSoftmax evaluates the cosine classifier by loops: rows [s | u] (u of width du, none when
// du = 0), class weights w [C][D], targets per row as class → weight.
func bruteNormSoftmax(b losstest.Batch, du int, w [][]float64, c *losses.NormSoftmaxConfig, targets []map[int]float64) float64 {
	ds := b.D - du
	total := 0.0
	for i := 0; i < b.B; i++ {
		row := losstest.Row(b.Emb, b.D, i)
		s := idmlUnit(row[:ds])
		logits := make([]float64, len(w))
		for k := range w {
			wk := idmlUnit(w[k])
			cs := idmlDot(s, wk)
			if c.ISM {
				alpha := math.Max(losstest.Dist(s, wk, false), 1e-12)
				e := math.Exp(-(idmlVecNorm(row[ds:]) + c.Gamma) / (c.Tau * alpha))
				if c.Metric == "dis" {
					cs *= e
				} else {
					cs = 1 - (1-cs)*e
				}
			}
			logits[k] = c.Scale * cs
		}
		lse := 0.0
		for _, l := range logits {
			lse += math.Exp(l)
		}
		lse = math.Log(lse)
		for k, t := range targets[i] {
			total -= t * (logits[k] - lse)
		}
	}
	return total / float64(b.B)
}

// TestNormSoftmaxHandWorked: class weights (1, 0), (0, 1), s = 2. x0 = (1, 0) of class 0 has
// cosines (1, 0): −log softmax = log(1 + e^{−2}); x1 = (1, 1) of class 1 has (r, r): log 2.
// With ISM (τ = 1, γ = 0) and u0 = 3, u1 = 0: C_IN(x0, w0) = 1 (α = 0), C_IN(x0, w1) = 1 − e^{−3/√2}
// (α = √2), so x0 costs log(1 + e^{−2·e^{−3/√2}}); x1 has no uncertainty and still costs log 2.
// A label set {0, 1} on x0 with weights (0.25, 0.75) costs 0.25·log(1 + e^{−2}) + 0.75·log(1 + e²);
// without weights the two slots count ½ each.
func TestNormSoftmaxHandWorked(t *testing.T) {
	store := func() losses.EvalOptions {
		return losses.EvalOptions{Store: blProxyStore(t, "weights", []float64{1, 0, 0, 1}, 2, 2), NumClasses: 2}
	}
	plain := &losses.NormSoftmaxConfig{Scale: 2, Tau: 1, Metric: "sim"}
	b := losstest.Batch{Emb: []float64{1, 0, 1, 1}, B: 2, D: 2, Labels: []int64{0, 1}}
	want := (math.Log1p(math.Exp(-2)) + math.Log(2)) / 2
	if got, _ := losstest.Value(t, plain, b, store()); math.Abs(got-want) > 1e-12 {
		t.Errorf("plain = %.15g, want %.15g", got, want)
	}
	ism := &losses.NormSoftmaxConfig{Scale: 2, Tau: 1, Metric: "sim", ISM: true, UncDim: 1}
	bu := losstest.Batch{Emb: []float64{1, 0, 3, 1, 1, 0}, B: 2, D: 3, Labels: []int64{0, 1}}
	want = (math.Log1p(math.Exp(-2*math.Exp(-3/math.Sqrt2))) + math.Log(2)) / 2
	if got, _ := losstest.Value(t, ism, bu, store()); math.Abs(got-want) > 1e-12 {
		t.Errorf("ism = %.15g, want %.15g", got, want)
	}
	sets := losstest.Batch{Emb: []float64{1, 0}, B: 1, D: 2, Labels: []int64{0, 1}, SetSize: 2}
	opt := store()
	opt.LabelWeights = []float64{0.25, 0.75}
	want = 0.25*math.Log1p(math.Exp(-2)) + 0.75*math.Log1p(math.Exp(2))
	if got, _ := losstest.Value(t, plain, sets, opt); math.Abs(got-want) > 1e-12 {
		t.Errorf("weighted set = %.15g, want %.15g", got, want)
	}
	want = 0.5*math.Log1p(math.Exp(-2)) + 0.5*math.Log1p(math.Exp(2))
	if got, _ := losstest.Value(t, plain, sets, store()); math.Abs(got-want) > 1e-12 {
		t.Errorf("unweighted set = %.15g, want %.15g", got, want)
	}
}

// TestNormSoftmaxMatchesBruteForce: random [6 | 2] rows of 4 classes, plain, ISM-Sim and ISM-Dis
// with γ > 0, with label sets and weights; gradients by central finite differences.
func TestNormSoftmaxMatchesBruteForce(t *testing.T) {
	b := losstest.Random(86, 8, []int64{0, 1, 2, 3, 0, 2})
	b.Labels, b.SetSize = []int64{0, -1, 1, 3, 2, -1, 3, 0, 0, -1, 2, 1}, 2
	lw := []float64{1, 0, 0.3, 0.7, 1, 0, 0.6, 0.4, 1, 0, 0.55, 0.45}
	targets := make([]map[int]float64, b.B)
	for i := range targets {
		targets[i] = map[int]float64{}
		for k := 0; k < 2; k++ {
			if l := b.Labels[2*i+k]; l >= 0 {
				targets[i][int(l)] += lw[2*i+k]
			}
		}
	}
	wv := blRandomProxies(23, 4, 6)
	w := make([][]float64, 4)
	for k := range w {
		w[k] = wv[k*6 : (k+1)*6]
	}
	for _, c := range []*losses.NormSoftmaxConfig{
		{Scale: 16, Tau: 1, Metric: "sim", ISM: true, UncDim: 2},
		{Scale: 8, Tau: 2, Gamma: 0.5, Metric: "sim", ISM: true, UncDim: 2},
		{Scale: 8, Tau: 1, Gamma: 0.2, Metric: "dis", ISM: true, UncDim: 2},
	} {
		opt := losses.EvalOptions{Store: blProxyStore(t, "weights", wv, 4, 6), NumClasses: 4, LabelWeights: lw}
		got, _ := losstest.Value(t, c, b, opt)
		if want := bruteNormSoftmax(b, 2, w, c, targets); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, opt, 1e-6)
	}
	plain := losses.DefaultNormSoftmax()
	pb := losstest.Batch{Emb: b.Emb[:6*6], B: 6, D: 6, Labels: b.Labels, SetSize: 2}
	wp := blRandomProxies(24, 4, 6)
	wpr := [][]float64{wp[:6], wp[6:12], wp[12:18], wp[18:]}
	opt := losses.EvalOptions{Store: blProxyStore(t, "weights", wp, 4, 6), NumClasses: 4, LabelWeights: lw}
	if got, want := mustValueNS(t, plain, pb, opt), bruteNormSoftmax(pb, 0, wpr, plain, targets); math.Abs(got-want) > 1e-12 {
		t.Errorf("plain s = 20: graph %.15g, brute force %.15g", got, want)
	}
	for kv, frag := range map[string]string{"scale=0": "scale", "unc_dim=3": "only with ism", "ism=true,metric=x": "metric", "ism=true,tau=0": "tau"} {
		set := map[string]any{}
		for _, p := range strings.Split(kv, ",") {
			f := strings.SplitN(p, "=", 2)
			set[f[0]] = f[1]
		}
		if _, err := losses.New("normsoftmax", set); err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("%s: %v, want an error containing %q", kv, err, frag)
		}
	}
}

func mustValueNS(t *testing.T, l losses.Loss, b losstest.Batch, opt losses.EvalOptions) float64 {
	v, _ := losstest.Value(t, l, b, opt)
	return v
}
