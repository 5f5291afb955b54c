package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// bruteCIT loops over every triplet (a, p, n) of seed 001 Eq. 4, 7, 8.
func bruteCIT(b losstest.Batch, c *losses.CITConfig) float64 {
	cos := func(i, j int) float64 {
		return losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
	}
	sum, n := 0.0, 0
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			if p == a || b.Labels[p] != b.Labels[a] {
				continue
			}
			for ng := 0; ng < b.B; ng++ {
				if b.Labels[ng] == b.Labels[a] {
					continue
				}
				sap, san, spn := cos(a, p), cos(a, ng), cos(p, ng)
				le := math.Max(0, 1-math.Exp(-(san-sap)))
				lp := -(sap - math.Log(math.Exp(san)+math.Exp(spn)))
				l := c.Gamma*le + (1-c.Gamma)*lp
				if c.AvgNonZero && l <= 0 {
					continue
				}
				sum += l
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestCITHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) label 0; e2=(1,0) label 1. Triplets (a,p,n): (0,1,2) and (1,0,2).
	// (0,1,2): S_ap = 0, S_an = 1, S_pn = 0: l_e = 1 − e^{−1}; l_p = log(e + 1) − 0.
	// (1,0,2): S_ap = 0, S_an = 0, S_pn = 1: l_e = 0;          l_p = log(1 + e).
	// γ = 1: paper mean (1 − e^{−1})/2 = 0.31606; code (avg non-zero) 1 − e^{−1} = 0.63212.
	// γ = 0.5: each triplet 0.5·l_e + 0.5·log(1+e); paper mean 0.25(1 − e^{−1}) + 0.5·log(1+e).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	e1 := 1 - math.Exp(-1)
	for _, tc := range []struct {
		c    *losses.CITConfig
		want float64
	}{
		{&losses.CITConfig{Gamma: 1}, e1 / 2},
		{&losses.CITConfig{Gamma: 1, AvgNonZero: true}, e1},
		{&losses.CITConfig{Gamma: 0.5}, 0.25*e1 + 0.5*math.Log(1+math.E)},
	} {
		got, _ := losstest.Value(t, tc.c, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: %.15g, want %.15g", *tc.c, got, tc.want)
		}
	}
}

func TestCITMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.CITConfig{
		losses.DefaultCIT(),
		{Gamma: 1, AvgNonZero: true},
		{Gamma: 0.5},
		{Gamma: 0.3, AvgNonZero: true},
		{Gamma: 0},
	} {
		b := losstest.Random(61, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := bruteCIT(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestCITCodeVsPaper(t *testing.T) {
	// The code averages only over violating triplets (l_e > 0 for γ = 1), so its value is larger by
	// the factor N_T / N_active (papers-vs-code §3: 0.257 vs 0.108 on its batch, ×2.4).
	b := losstest.Random(62, 5, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3})
	paper, _ := losstest.Value(t, losses.DefaultCIT(), b, losses.EvalOptions{})
	code, _ := losstest.Value(t, &losses.CITConfig{Gamma: 1, AvgNonZero: true}, b, losses.EvalOptions{})
	// Independently: count the triplets and the active ones.
	var nAll, nActive int
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			for n := 0; n < b.B; n++ {
				if p == a || b.Labels[p] != b.Labels[a] || b.Labels[n] == b.Labels[a] {
					continue
				}
				nAll++
				ra, rp, rn := losstest.Row(b.Emb, b.D, a), losstest.Row(b.Emb, b.D, p), losstest.Row(b.Emb, b.D, n)
				if losstest.Cosine(ra, rn) > losstest.Cosine(ra, rp) {
					nActive++
				}
			}
		}
	}
	if nActive == 0 || nActive == nAll {
		t.Fatalf("test batch has %d/%d active triplets; need a mix", nActive, nAll)
	}
	if ratio := code / paper; math.Abs(ratio-float64(nAll)/float64(nActive)) > 1e-9 {
		t.Errorf("code/paper = %.12g, want N_T/N_active = %d/%d", ratio, nAll, nActive)
	}
	t.Logf("CIT paper %.4f, code (avg non-zero) %.4f", paper, code)
}

func TestCITDegenerate(t *testing.T) {
	// No negatives (one class) or no positives (all distinct): no triplets -> 0, finite gradient.
	for _, labels := range [][]int64{{1, 1, 1}, {0, 1, 2}} {
		v, g := losstest.Value(t, losses.DefaultCIT(), losstest.Random(7, 3, labels), losses.EvalOptions{})
		if v != 0 || math.IsNaN(g[0]) {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
	}
	if _, err := losses.New("cit", map[string]any{"gamma": 1.5}); err == nil {
		t.Error("gamma 1.5 accepted")
	}
}
