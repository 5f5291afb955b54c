package losses_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// blProxyStore returns a store whose variable /loss/<name> holds the given [c, d] values, so a
// proxy loss evaluated with losses.EvalOptions{Store: ...} uses these fixed proxies.
func blProxyStore(t testing.TB, name string, values []float64, c, d int) *model.Store {
	t.Helper()
	store := model.NewStore()
	if _, err := store.Scope("/loss").CreateVariable(name, tensors.FromFlatDataAndDimensions(append([]float64(nil), values...), c, d)); err != nil {
		t.Fatal(err)
	}
	return store
}

// blRandomProxies returns c·d values uniform in [-1, 1).
func blRandomProxies(seed uint64, c, d int) []float64 {
	r := rand.New(rand.NewPCG(seed, 3))
	out := make([]float64, c*d)
	for i := range out {
		out[i] = 2*r.Float64() - 1
	}
	return out
}

// blProxyAnchor is an independent float64 evaluation of Proxy-Anchor with fixed proxies.
func blProxyAnchor(b losstest.Batch, proxies []float64, numClasses int, c *losses.ProxyAnchorConfig) float64 {
	posSum, negSum, withPos := 0.0, 0.0, 0
	for k := 0; k < numClasses; k++ {
		p := losstest.Row(proxies, b.D, k)
		ps, ns, np := 0.0, 0.0, 0
		for i := 0; i < b.B; i++ {
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), p)
			if int(b.Labels[i]) == k {
				ps += math.Exp(-c.Alpha * (s - c.Margin))
				np++
			} else {
				ns += math.Exp(c.Alpha * (s + c.Margin))
			}
		}
		if np > 0 {
			posSum += math.Log1p(ps)
			withPos++
		}
		negSum += math.Log1p(ns)
	}
	out := negSum / float64(numClasses)
	if withPos > 0 {
		out += posSum / float64(withPos)
	}
	return out
}

func TestProxyAnchorHandWorked(t *testing.T) {
	// Proxies p0=(1,0), p1=(0,1), p2=(−1,0) (class 2 has no sample). e0=(1,0) class 0, e1=(1,1) class 1.
	// α=1, δ=0: cosines: e0·p = (1, 0, −1); e1·p = (r, r, −r), r=1/√2.
	// Positive: p0: log(1+e^{−1}); p1: log(1+e^{−r}); mean over 2 proxies.
	// Negative: p0: log(1+e^{r}); p1: log(1+e^{0}); p2: log(1+e^{−1}+e^{−r}); mean over 3.
	r := 1 / math.Sqrt2
	want := (math.Log1p(math.Exp(-1))+math.Log1p(math.Exp(-r)))/2 +
		(math.Log1p(math.Exp(r))+math.Log(2)+math.Log1p(math.Exp(-1)+math.Exp(-r)))/3
	b := losstest.Batch{Emb: []float64{1, 0, 1, 1}, B: 2, D: 2, Labels: []int64{0, 1}}
	store := blProxyStore(t, "proxies", []float64{1, 0, 0, 1, -1, 0}, 3, 2)
	got, _ := losstest.Value(t, &losses.ProxyAnchorConfig{Margin: 0, Alpha: 1}, b, losses.EvalOptions{Store: store, NumClasses: 3})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("proxyanchor = %.15g, want %.15g", got, want)
	}
}

func TestProxyAnchorMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	const numClasses, d = 5, 4 // class 4 has no sample: negative term only
	proxies := blRandomProxies(1, numClasses, d)
	for _, c := range []*losses.ProxyAnchorConfig{losses.DefaultProxyAnchor(), {Margin: 0.2, Alpha: 4}} {
		b := losstest.Random(11, d, labels)
		opt := func() losses.EvalOptions {
			return losses.EvalOptions{Store: blProxyStore(t, "proxies", proxies, numClasses, d), NumClasses: numClasses}
		}
		got, _ := losstest.Value(t, c, b, opt())
		if want := blProxyAnchor(b, proxies, numClasses, c); math.Abs(got-want) > 1e-12*math.Max(1, want) {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, opt(), 1e-6*math.Max(1, c.Alpha))
		losstest.CheckPermutationInvariant(t, c, b, opt(), 1e-12*math.Max(1, got))
	}
}

func TestProxyAnchorLearnableAndLabelSets(t *testing.T) {
	// Without a store the proxies are created and initialised from the seed: same seed, same value.
	b := losstest.Random(12, 3, []int64{0, 1, 1, 2})
	v1, _ := losstest.Value(t, losses.DefaultProxyAnchor(), b, losses.EvalOptions{Seed: 1})
	v2, _ := losstest.Value(t, losses.DefaultProxyAnchor(), b, losses.EvalOptions{Seed: 1})
	if v1 != v2 || math.IsNaN(v1) {
		t.Fatalf("same seed gave %v and %v", v1, v2)
	}
	// A sample with label set {0, 1} is positive to both proxies. Proxies p0=(1,0), p1=(0,1);
	// e0=(1,1) with set {0,1}; α=1, δ=0, r=1/√2: positive terms p0, p1: log(1+e^{−r}) each (mean
	// over 2 proxies); no negatives -> log 1 = 0.
	sets := losstest.Batch{Emb: []float64{1, 1}, B: 1, D: 2, Labels: []int64{0, 1}, SetSize: 2}
	store := blProxyStore(t, "proxies", []float64{1, 0, 0, 1}, 2, 2)
	got, _ := losstest.Value(t, &losses.ProxyAnchorConfig{Alpha: 1}, sets, losses.EvalOptions{Store: store, NumClasses: 2})
	r := 1 / math.Sqrt2
	if want := math.Log1p(math.Exp(-r)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("label set: %.15g, want %.15g", got, want)
	}
}
