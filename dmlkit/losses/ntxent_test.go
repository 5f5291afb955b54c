package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
)

// ntxShare reports whether rows i and j of b share a label (label sets: any slot ≥ 0 in common).
func ntxShare(b losstest.Batch, i, j int) bool {
	s := max(b.SetSize, 1)
	for _, a := range b.Labels[i*s : (i+1)*s] {
		for _, c := range b.Labels[j*s : (j+1)*s] {
			if a >= 0 && a == c {
				return true
			}
		}
	}
	return false
}

// bruteNTXent is pytorch-metric-learning's NTXentLoss written out in plain Go: for every ordered
// positive pair (a, p), a ≠ p, −log(e^{s_ap/τ} / (e^{s_ap/τ} + Σ_{n: negative of a} e^{s_an/τ})),
// averaged over the positive pairs (0 without any). Direct exponentials (no shift): float64 holds
// e^{1/τ} for τ ≥ 0.0014.
func bruteNTXent(b losstest.Batch, tau float64) float64 {
	sum, count := 0.0, 0
	for a := 0; a < b.B; a++ {
		ea := losstest.Row(b.Emb, b.D, a)
		negs := 0.0
		for n := 0; n < b.B; n++ {
			if n != a && !ntxShare(b, a, n) {
				negs += math.Exp(losstest.Cosine(ea, losstest.Row(b.Emb, b.D, n)) / tau)
			}
		}
		for p := 0; p < b.B; p++ {
			if p == a || !ntxShare(b, a, p) {
				continue
			}
			num := math.Exp(losstest.Cosine(ea, losstest.Row(b.Emb, b.D, p)) / tau)
			sum += -math.Log(num / (num + negs))
			count++
		}
	}
	if count == 0 {
		return 0
	}
	return sum / float64(count)
}

// TestNTXentByHand: e₀ = (1, 0), e₁ = (0, 1), e₂ = (−1, 0), labels 0, 0, 1. Positive pairs (0,1)
// and (1,0), s₀₁ = 0; the only negative of 0 is 2 (s₀₂ = −1), of 1 is 2 (s₁₂ = 0). So
// ℓ₀₁ = log(1 + e^{−1/τ}), ℓ₁₀ = log(1 + e⁰) = log 2, L = (log(1 + e^{−1/τ}) + log 2)/2:
// 0.50320… at τ = 1, (log 2)/2 + 3.1e-7 at τ = 0.07.
func TestNTXentByHand(t *testing.T) {
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, -1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	for _, tau := range []float64{1, 0.5, 0.07} {
		got, _ := losstest.Value(t, &losses.NTXentConfig{Temperature: tau}, b, losses.EvalOptions{})
		want := (math.Log1p(math.Exp(-1/tau)) + math.Ln2) / 2
		if math.Abs(got-want) > 1e-14 {
			t.Errorf("τ = %g: %.17g, want %.17g", tau, got, want)
		}
	}
}

// TestNTXentMatchesBruteForce: the graph equals bruteNTXent on random batches — plain labels,
// label sets (row 4 = {0, 1} has no negatives in a batch of classes 0 and 1 only: its pairs cost 0
// and still count), one class only (no negatives anywhere: 0), no positives (0) — over τ from 0.01
// to 1. Tolerance: relative 1e-13 (sums of ≤ 10² exponentials in float64, shifted in the graph).
func TestNTXentMatchesBruteForce(t *testing.T) {
	sets := losstest.Random(101, 3, []int64{0, 0, 1, 1, 0})
	sets.Labels, sets.SetSize = []int64{0, -1, 0, -1, 1, -1, 1, -1, 0, 1}, 2
	for _, b := range []losstest.Batch{
		losstest.Random(102, 4, []int64{0, 0, 0, 1, 1, 1, 2, 2, 3, 3}),
		losstest.Random(103, 5, []int64{4, 1, 4, 2, 1, 2, 7}),
		sets,
		losstest.Random(104, 3, []int64{5, 5, 5}),
		losstest.Random(105, 3, []int64{0, 1, 2}),
	} {
		for _, tau := range []float64{0.01, 0.07, 0.3, 1} {
			c := &losses.NTXentConfig{Temperature: tau}
			got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
			want := bruteNTXent(b, tau)
			if math.Abs(got-want) > 1e-13*math.Max(1, math.Abs(want)) {
				t.Errorf("labels %v, τ = %g: graph %.15g, brute force %.15g", b.Labels, tau, got, want)
			}
		}
		losstest.CheckPermutationInvariant(t, losses.DefaultNTXent(), b, losses.EvalOptions{}, 1e-13)
	}
}

// TestNTXentGradient: NT-Xent is smooth in the cosines; central differences (losstest.CheckGradient,
// h = 1e-6) with tolerance 1e-6: the third derivative grows like τ⁻³ ≈ 3·10³ at τ = 0.07, so the
// O(h²) truncation stays ≲ 1e-8. Float32 at τ = 0.01 (logits up to ±100, beyond float32's exp range
// without the shift) must stay finite.
func TestNTXentGradient(t *testing.T) {
	b := losstest.Random(111, 4, []int64{0, 0, 0, 1, 1, 2, 2, 2})
	for _, tau := range []float64{0.07, 0.2, 1} {
		losstest.CheckGradient(t, &losses.NTXentConfig{Temperature: tau}, b, losses.EvalOptions{}, 1e-6)
	}
	sets := losstest.Random(112, 3, []int64{0, 0, 1, 1, 0})
	sets.Labels, sets.SetSize = []int64{0, -1, 0, -1, 1, -1, 1, -1, 0, 1}, 2
	losstest.CheckGradient(t, losses.DefaultNTXent(), sets, losses.EvalOptions{}, 1e-6)
	v, g := losstest.Value(t, &losses.NTXentConfig{Temperature: 0.01}, b, losses.EvalOptions{DType: dtypes.Float32})
	if want := bruteNTXent(b, 0.01); math.IsNaN(v) || math.Abs(v-want) > 1e-3*math.Max(1, want) {
		t.Errorf("float32, τ = 0.01: %v, want %v", v, want)
	}
	for _, x := range g {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			t.Fatalf("float32, τ = 0.01: non-finite gradient %v", g)
		}
	}
}

// TestNTXentRegisteredAndValidated: registered with its source; τ ≤ 0 (and non-finite) is an error
// naming temperature; the default is PML's 0.07.
func TestNTXentRegisteredAndValidated(t *testing.T) {
	e, ok := losses.Lookup("ntxent")
	if !ok || !strings.Contains(e.Paper, "NTXentLoss") || e.Summary == "" {
		t.Fatalf("ntxent entry: %+v", e)
	}
	if d := losses.DefaultNTXent(); d.Temperature != 0.07 {
		t.Errorf("default temperature %g, want 0.07", d.Temperature)
	}
	for _, tc := range []struct {
		v     any
		field string
	}{{0, "temperature 0"}, {-0.1, "temperature -0.1"}, {"+Inf", "temperature = +Inf"}, {0.5, ""}} {
		_, err := losses.New("ntxent", map[string]any{"temperature": tc.v})
		if tc.field == "" {
			if err != nil {
				t.Errorf("temperature %v: %v", tc.v, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "ntxent") {
			t.Errorf("temperature %v: got %v; want an error naming ntxent and %q", tc.v, err, tc.field)
		}
	}
}
