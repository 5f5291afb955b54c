package report

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// TestFindingsRule: reversals first, then the decisive central verdicts by relative effect, then
// the method that did not train; three at most. Worked by hand: "small" is held with +1 on a base
// of 50 (2 %), "large" contradicted with −5 on a base of 10 (50 %), "orig"/"retest" held from
// scratch and contradicted pretrained (a reversal), "nomethod" the method below the floor.
func TestFindingsRule(t *testing.T) {
	one := 1
	mk := func(id, verdict, cause, regime string, base, diff float64) judge.ClaimVerdict {
		return judge.ClaimVerdict{
			Claim:   judge.ClaimSpec{ID: id, Paper: "claim " + id, Kind: judge.KindBetter, Metric: "R@1", Direction: "higher", Digits: &one},
			Verdict: verdict, Raw: verdict, Cause: cause, Seeds: []int64{0, 1, 2},
			Arms:  []judge.ArmStat{{Label: "B", Mean: base}, {Label: "T", Mean: base + diff}},
			Diffs: []float64{diff, diff, diff}, Mean: diff, Lo: diff - 0.5, Hi: diff + 0.5,
			Facts:  []judge.ArmFacts{{N: 3, Regime: regime, TrainR1: math.NaN()}, {N: 3, Regime: regime, TrainR1: math.NaN()}},
			Reason: "T did not train (train R@1 0.100 < 0.50 × 0.600, its setting's best of 4)",
		}
	}
	retest := mk("retest", judge.VerdictContradicted, judge.CauseInterval, judge.RegimeFrozen, 20, -1)
	retest.Claim.Twin = "orig"
	r := &judge.ClaimsReport{Paper: "p", Verdicts: []judge.ClaimVerdict{
		mk("small", judge.VerdictHeld, judge.CauseInterval, judge.RegimeScratch, 50, 1),
		mk("large", judge.VerdictContradicted, judge.CauseInterval, judge.RegimeScratch, 10, -5),
		mk("orig", judge.VerdictHeld, judge.CauseInterval, judge.RegimeScratch, 20, 2),
		retest,
		mk("nomethod", judge.VerdictInconclusive, judge.CauseMethodUntrained, judge.RegimeScratch, 30, 0),
	}, Central: []judge.CentralClaim{{ID: "small"}, {ID: "large"}, {ID: "orig"}, {ID: "nomethod"}}}
	got := Findings(r, 3)
	if len(got) != 3 {
		t.Fatalf("%d findings: %q", len(got), got)
	}
	for i, want := range []string{
		"Claim orig: held from scratch (+2.0 [+1.5, +2.5]) but contradicted with the pretrained backbone frozen (−1.0 [−1.5, −0.5]).",
		"Claim large: contradicted, −5.0 [−5.5, −4.5] (from scratch) — R@1 over 3 seeds: B 10.0, T 5.0.",
		"Claim small: held, +1.0 [+0.5, +1.5] (from scratch)",
	} {
		if !strings.HasPrefix(got[i], want) {
			t.Errorf("finding %d:\n%q\nwant prefix\n%q", i+1, got[i], want)
		}
	}
	// With four, the method's sentence follows.
	if all := Findings(r, 4); len(all) != 4 || !strings.HasPrefix(all[3], "In 1 claim the paper's method did not train here, e.g. “claim nomethod”: T did not train (train R@1 0.100") {
		t.Errorf("fourth finding: %q", all)
	}
}
