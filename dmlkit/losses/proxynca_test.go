package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blProxyNCA is an independent float64 evaluation with fixed proxies.
func blProxyNCA(b losstest.Batch, p []float64, numClasses int, c *losses.ProxyNCAConfig) float64 {
	total := 0.0
	for i := 0; i < b.B; i++ {
		x := losstest.Row(b.Emb, b.D, i)
		target, denom := 0.0, 0.0
		for k := 0; k < numClasses; k++ {
			d := losstest.Dist(x, losstest.Row(p, b.D, k), true)
			e := -d * d / c.Temperature
			if k == int(b.Labels[i]) {
				target = e
				if !c.IncludePositive {
					continue
				}
			}
			denom += math.Exp(e)
		}
		total += math.Log(denom) - target
	}
	return total / float64(b.B)
}

func TestProxyNCAHandWorked(t *testing.T) {
	// e=(1,0) class 0, proxies p0=(1,0), p1=(0,1), p2=(−1,0): squared distances 0, 2, 4.
	// Original (T=1): −log(e^0 / (e^{−2}+e^{−4})) = log(e^{−2}+e^{−4}).
	// ProxyNCA++ (T=1/9, included): log(1+e^{−18}+e^{−36}).
	b := losstest.Batch{Emb: []float64{1, 0}, B: 1, D: 2, Labels: []int64{0}}
	p := []float64{1, 0, 0, 1, -1, 0}
	for _, tc := range []struct {
		c    *losses.ProxyNCAConfig
		want float64
	}{
		{losses.DefaultProxyNCA(), math.Log(math.Exp(-2) + math.Exp(-4))},
		{&losses.ProxyNCAConfig{Temperature: 1.0 / 9, IncludePositive: true}, math.Log(1 + math.Exp(-18) + math.Exp(-36))},
	} {
		got, _ := losstest.Value(t, tc.c, b, losses.EvalOptions{Store: blProxyStore(t, "proxies", p, 3, 2), NumClasses: 3})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: %.15g, want %.15g", *tc.c, got, tc.want)
		}
	}
}

func TestProxyNCAMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	const numClasses, d = 5, 4
	p := blRandomProxies(3, numClasses, d)
	b := losstest.Random(15, d, labels)
	opt := func() losses.EvalOptions {
		return losses.EvalOptions{Store: blProxyStore(t, "proxies", p, numClasses, d), NumClasses: numClasses}
	}
	for _, c := range []*losses.ProxyNCAConfig{losses.DefaultProxyNCA(), {Temperature: 1.0 / 9, IncludePositive: true}, {Temperature: 0.5}} {
		got, _ := losstest.Value(t, c, b, opt())
		if want := blProxyNCA(b, p, numClasses, c); math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, opt(), 1e-6/c.Temperature)
		losstest.CheckPermutationInvariant(t, c, b, opt(), 1e-12*math.Max(1, math.Abs(got)))
	}
	// Single class, target excluded: the denominator is empty -> the loss is d/T, here 0 for e = p0.
	one := losstest.Batch{Emb: []float64{1, 0}, B: 1, D: 2, Labels: []int64{0}}
	v, _ := losstest.Value(t, losses.DefaultProxyNCA(), one, losses.EvalOptions{Store: blProxyStore(t, "proxies", []float64{2, 0}, 1, 2), NumClasses: 1})
	if math.Abs(v) > 1e-12 {
		t.Errorf("single class: %v, want 0", v)
	}
}
