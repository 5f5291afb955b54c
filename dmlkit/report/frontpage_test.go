package report

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// TestCentralEffects: effects as a percentage of the base arm's mean, signed toward the claim. A
// "higher" claim with base mean 50 and paired difference 5 [1, 9] is +10 % [2, 18]; a "lower"
// claim with base 0.02 and difference −0.01 [−0.015, −0.005] is +50 % [25, 75] (lower is the
// claimed direction, so the sign flips and the interval's ends swap).
func TestCentralEffects(t *testing.T) {
	v1 := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "a", Paper: "T beats B", Kind: judge.KindBetter, Direction: "higher", Metric: "R@1", Unit: "points"},
		Verdict: judge.VerdictHeld, Cause: judge.CauseInterval, Reason: "interval on the claimed side",
		Arms: []judge.ArmStat{{Label: "B", Mean: 50}, {Label: "T", Mean: 55}}, Diffs: []float64{4, 6}, Mean: 5, Lo: 1, Hi: 9}
	v2 := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "b", Paper: "T lowers OPIS", Kind: judge.KindBetter, Direction: "lower", Metric: "OPIS"},
		Verdict: judge.VerdictInconclusive, Cause: judge.CauseUnequal, Reason: "unequal comparison (long details)",
		Arms: []judge.ArmStat{{Label: "B", Mean: 0.02}, {Label: "T", Mean: 0.01}}, Diffs: []float64{-0.01, -0.01}, Mean: -0.01, Lo: -0.015, Hi: -0.005}
	v3 := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "c", Paper: "an order", Kind: judge.KindRank}, Verdict: judge.VerdictHeld, Reason: "every pair held"}
	r := &judge.ClaimsReport{Paper: "p", Verdicts: []judge.ClaimVerdict{v1, v2, v3}, Central: []judge.CentralClaim{{ID: "b", Note: "noisy"}, {ID: "a"}, {ID: "c"}}}
	es := CentralEffects([]*judge.ClaimsReport{r})
	if len(es) != 2 {
		t.Fatalf("%d effects, want 2 (the rank claim has no effect): %+v", len(es), es)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if e := es[0]; e.ID != "b" || !near(e.Effect, 50) || !near(e.Lo, 25) || !near(e.Hi, 75) || e.Compared != "T vs B (OPIS), noisy" {
		t.Errorf("lower claim: %+v", e)
	}
	if e := es[1]; e.ID != "a" || !near(e.Effect, 10) || !near(e.Lo, 2) || !near(e.Hi, 18) {
		t.Errorf("higher claim: %+v", e)
	}
	md := FindingsMarkdown([]*judge.ClaimsReport{r}, map[string]PaperLinks{"p": {Title: "Paper P", Notebook: "nb/p.ipynb", Readme: "p/README.md"}}, "fig.png")
	for _, want := range []string{
		"![Central claims", "(fig.png)",
		"**Paper P** — 3 claims: 2 held, 0 contradicted, 1 inconclusive (of which 1 unequal comparison). [notebook](nb/p.ipynb) · [README and every verdict](p/README.md)",
		"- **inconclusive**: T lowers OPIS [noisy] — ", // the central claim's note beside its text
		"(from scratch; the arms differ in tuning or budget: unequal comparison)",
		"- **held**: T beats B — +5.00 [+1.00, +9.00] points (from scratch; interval on the claimed side)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("findings lack %q:\n%s", want, md)
		}
	}
}
