package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// TestSimRegByHand: e₀ = (1, 0), e₁ = (0, 3), e₂ = (2, 2) (norms differ on purpose: the loss
// normalises). Cosines: s₀₁ = 0, s₀₂ = s₁₂ = 1/√2, s_ii = 1, so Σ_{i,j} s_ij = 3 + 4/√2 = 3 + 2√2
// and L = ((3 + 2√2)/9 − s̃)² — 0.120828… at s̃ = 0.3. Without the diagonal the mean would be
// 2√2/6 = 0.4714 and L = 0.0294 at s̃ = 0.3: the value pins the diagonal in, as Eq. 30 and
// contextual.go have it. Labels do not matter.
func TestSimRegByHand(t *testing.T) {
	b := losstest.Batch{Emb: []float64{1, 0, 0, 3, 2, 2}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	mean := (3 + 2*math.Sqrt2) / 9
	for _, target := range []float64{0.3, 0.25, -0.5} {
		got, _ := losstest.Value(t, &losses.SimRegConfig{TargetSim: target}, b, losses.EvalOptions{})
		if want := (mean - target) * (mean - target); math.Abs(got-want) > 1e-15 {
			t.Errorf("s̃ = %g: %.17g, want %.17g", target, got, want)
		}
	}
	if got, _ := losstest.Value(t, losses.DefaultSimReg(), b, losses.EvalOptions{}); math.Abs(got-0.120827855245033) > 1e-12 {
		t.Errorf("default s̃: %.15g, want 0.120827855245033", got)
	}
}

// TestSimRegGradient: L_reg is smooth (a square of a mean of cosines); central differences with
// tolerance 1e-6 (see losstest.CheckGradient), plain labels and label sets alike.
func TestSimRegGradient(t *testing.T) {
	losstest.CheckGradient(t, losses.DefaultSimReg(), losstest.Random(81, 4, []int64{0, 0, 1, 1, 2, 2, 3}), losses.EvalOptions{}, 1e-6)
	sets := losstest.Random(82, 3, []int64{0, 0, 1, 2, 2})
	sets.Labels, sets.SetSize = []int64{0, -1, 0, 1, 1, -1, 2, -1, 2, 0}, 2
	losstest.CheckGradient(t, &losses.SimRegConfig{TargetSim: 0.6}, sets, losses.EvalOptions{}, 1e-6)
	losstest.CheckPermutationInvariant(t, losses.DefaultSimReg(), losstest.Random(83, 4, []int64{0, 1, 2, 3, 4}), losses.EvalOptions{}, 1e-14)
}

// TestSimRegIsContextualGamma: the γ term of the contextual loss is simreg — a second path to the
// same value. Contextual with γ equals contextual(γ = 0) + γ·simreg(s̃) (paper weights: the
// contrastive weight 1 − λ does not depend on γ), contrastive-free (λ = 1) and at λ = 0.4; and the
// combo "contextual(gamma=0)+0.1*simreg" has the value and gradient of the default contextual
// loss (γ = 0.1, s̃ = 0.3). Tolerances: rounding of a few sums of O(1) terms.
func TestSimRegIsContextualGamma(t *testing.T) {
	b := losstest.Random(91, 4, []int64{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2})
	for _, lambda := range []float64{1, 0.4} {
		with := losses.DefaultContextual()
		with.Lambda, with.Gamma, with.TargetSim = lambda, 0.3, 0.25
		without := *with
		without.Gamma = 0
		vw, _ := losstest.Value(t, with, b, losses.EvalOptions{})
		v0, _ := losstest.Value(t, &without, b, losses.EvalOptions{})
		reg, _ := losstest.Value(t, &losses.SimRegConfig{TargetSim: 0.25}, b, losses.EvalOptions{})
		if math.Abs(vw-(v0+0.3*reg)) > 1e-14 || reg == 0 {
			t.Errorf("λ = %g: contextual(γ=0.3) = %.17g, contextual(γ=0) + 0.3·simreg = %.17g", lambda, vw, v0+0.3*reg)
		}
	}
	combo, err := losses.New("combo", map[string]any{"expr": "contextual(gamma=0)+0.1*simreg"})
	if err != nil {
		t.Fatal(err)
	}
	vc, gc := losstest.Value(t, combo, b, losses.EvalOptions{})
	vd, gd := losstest.Value(t, losses.DefaultContextual(), b, losses.EvalOptions{})
	worst := 0.0
	for i := range gc {
		worst = math.Max(worst, math.Abs(gc[i]-gd[i]))
	}
	if math.Abs(vc-vd) > 1e-14 || worst > 1e-12 {
		t.Errorf("combo %.17g vs contextual %.17g, max gradient difference %.3g", vc, vd, worst)
	}
}

// TestSimRegRegisteredAndValidated: simreg is registered with its paper, target_sim outside
// [-1, 1] (and non-finite) is an error naming the field, the default is the paper's 0.3, and the
// Table 6 form "0.9*triplet+0.1*simreg" configures.
func TestSimRegRegisteredAndValidated(t *testing.T) {
	e, ok := losses.Lookup("simreg")
	if !ok || !strings.Contains(e.Paper, "seed 004") || e.Summary == "" {
		t.Fatalf("simreg entry: %+v", e)
	}
	if d := losses.DefaultSimReg(); d.TargetSim != 0.3 {
		t.Errorf("default target_sim %g, want 0.3", d.TargetSim)
	}
	for _, tc := range []struct {
		v     any
		field string
	}{{1.5, "target_sim 1.5"}, {-1.01, "target_sim -1.01"}, {"NaN", "target_sim = NaN"}, {0.25, ""}, {-1, ""}} {
		_, err := losses.New("simreg", map[string]any{"target_sim": tc.v})
		if tc.field == "" {
			if err != nil {
				t.Errorf("target_sim %v: %v", tc.v, err)
			}
		} else if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "simreg") {
			t.Errorf("target_sim %v: got %v; want an error naming simreg and %q", tc.v, err, tc.field)
		}
	}
	for _, expr := range []string{"0.9*triplet+0.1*simreg", "multisimilarity+0.1*simreg(target_sim=0.25)"} {
		if _, err := losses.New("combo", map[string]any{"expr": expr}); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}
