package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// bruteTCM is an independent float64 loop over ordered pairs following seed 000 Eq. 5 / 15–17.
func bruteTCM(b losstest.Batch, c *losses.TCMConfig) float64 {
	var posSum, negSum, posAll, negAll float64
	var posHard, negHard, posN, negN int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			s := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
			if b.Labels[i] == b.Labels[j] {
				posN++
				posAll += c.PosMargin - s
				if s <= c.PosMargin {
					posHard++
					posSum += c.PosMargin - s
				}
			} else {
				negN++
				negAll += s - c.NegMargin
				if s >= c.NegMargin {
					negHard++
					negSum += s - c.NegMargin
				}
			}
		}
	}
	div := func(x float64, n int) float64 { return x / math.Max(float64(n), 1) }
	var p, n float64
	switch {
	case c.NoIndicator && c.TotalCount:
		p, n = div(posAll, posN), div(negAll, negN)
	case c.NoIndicator:
		p, n = div(posAll, posHard), div(negAll, negHard)
	case c.TotalCount:
		p, n = div(posSum, posN), div(negSum, negN)
	default:
		p, n = div(posSum, posHard), div(negSum, negHard)
	}
	return c.PosWeight*p + c.NegWeight*n
}

func TestTCMHandWorked(t *testing.T) {
	// e0=(1,0), e1=(1,1) label 0; e2=(0,1) label 1 (raw, unnormalised: TCM takes the cosine).
	// s01 = 1/√2, s02 = 0, s12 = 1/√2.
	// Positives (0,1),(1,0): s = 1/√2 ≤ 0.9, both hard -> mean 0.9 − 1/√2.
	// Negatives (0,2),(2,0): s = 0 < 0.5 easy; (1,2),(2,1): s = 1/√2 ≥ 0.5 hard -> mean 1/√2 − 0.5.
	// Paper Eq. 5: 0.9 − 1/√2 + 1/√2 − 0.5 = 0.4.
	// TotalCount: negative sum 2(1/√2 − 0.5) over all 4 negatives -> 0.9 − 1/√2 + (1/√2 − 0.5)/2.
	// NoIndicator (Eq. 17): negative sum over all 4 = 2(0 − 0.5) + 2(1/√2 − 0.5) = √2 − 2, over the
	// hard count 2 -> 1/√2 − 1; total 0.9 − 1/√2 + 1/√2 − 1 = −0.1.
	// NoIndicator + TotalCount (Eq. 17 as a mean): positives (0.9 − 1/√2) each over 2; negatives
	// √2 − 2 over all 4 -> 0.9 − 1/√2 + (1/√2 − 1)/2.
	// λ₋ = 0 (Eq. 16): 0.9 − 1/√2; λ₊ = 0 (Eq. 15): 1/√2 − 0.5.
	b := losstest.Batch{Emb: []float64{1, 0, 1, 1, 0, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	r := 1 / math.Sqrt2
	for _, tc := range []struct {
		name string
		set  map[string]any
		want float64
	}{
		{"paper", nil, 0.4},
		{"total_count", map[string]any{"total_count": true}, 0.9 - r + (r-0.5)/2},
		{"no_indicator", map[string]any{"no_indicator": true}, -0.1},
		{"no_indicator, total_count", map[string]any{"no_indicator": true, "total_count": true}, 0.9 - r + (r-1)/2},
		{"positive only", map[string]any{"lambda_neg": 0}, 0.9 - r},
		{"negative only", map[string]any{"lambda_pos": 0}, r - 0.5},
	} {
		l, err := losses.New("tcm", tc.set)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := losstest.Value(t, l, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s: tcm = %.15g, want %.15g", tc.name, got, tc.want)
		}
	}
}

func TestTCMMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 2, 2, 2, 3}
	for _, c := range []*losses.TCMConfig{
		losses.DefaultTCM(),
		{PosWeight: 1, NegWeight: 0.5, PosMargin: 0.6, NegMargin: 0.1},
		{PosWeight: 0, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.0},
		{PosWeight: 1, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.2, NoIndicator: true},
		{PosWeight: 1, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.2, TotalCount: true},
		{PosWeight: 1, NegWeight: 0.5, PosMargin: 0.9, NegMargin: 0.2, NoIndicator: true, TotalCount: true},
	} {
		b := losstest.Random(5, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		want := bruteTCM(b, c)
		if math.Abs(got-want) > 1e-12 { // float64 both sides; only summation order differs
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestTCMVariantsDiffer(t *testing.T) {
	// On a fixed random batch the Table 8/9 variants must give the brute-force value of their own
	// equation and differ from the paper's Eq. 5: total-count normalisation shrinks each term by
	// |hard|/|all| ≤ 1, and dropping the indicator adds the (negative) contributions of easy pairs.
	b := losstest.Random(9, 4, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3})
	paper := bruteTCM(b, losses.DefaultTCM())
	total := bruteTCM(b, &losses.TCMConfig{PosWeight: 1, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.5, TotalCount: true})
	noInd := bruteTCM(b, &losses.TCMConfig{PosWeight: 1, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.5, NoIndicator: true})
	if !(total < paper && noInd < paper) {
		t.Fatalf("expected total-count (%g) and no-indicator (%g) below paper (%g)", total, noInd, paper)
	}
	for _, tc := range []struct {
		set  map[string]any
		want float64
	}{{map[string]any{"total_count": true}, total}, {map[string]any{"no_indicator": "true"}, noInd}} {
		l, err := losses.New("tcm", tc.set)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := losstest.Value(t, l, b, losses.EvalOptions{}); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%v: %.15g, want %.15g", tc.set, got, tc.want)
		}
	}
}

func TestTCMDegenerateBatches(t *testing.T) {
	// All one class: no negatives -> only the positive term. All distinct classes: no positives.
	// Identical rows in one class: every s = 1 > m+, no hard positive -> 0, gradient 0 (not NaN).
	for _, b := range []losstest.Batch{
		losstest.Random(2, 3, []int64{4, 4, 4}),
		losstest.Random(3, 3, []int64{0, 1, 2}),
		{Emb: []float64{1, 2, 1, 2, 1, 2}, B: 3, D: 2, Labels: []int64{7, 7, 7}},
	} {
		v, g := losstest.Value(t, losses.DefaultTCM(), b, losses.EvalOptions{})
		if want := bruteTCM(b, losses.DefaultTCM()); math.IsNaN(v) || math.Abs(v-want) > 1e-12 {
			t.Errorf("labels %v: tcm %v, want %v", b.Labels, v, want)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatalf("labels %v: NaN gradient", b.Labels)
			}
		}
	}
	if _, err := losses.New("tcm", map[string]any{"pos_margin": 2}); err == nil {
		t.Error("pos_margin 2 accepted")
	}
}
