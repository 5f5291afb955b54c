package judge

import (
	"fmt"
	"math"
	"strings"
)

// Why is a verdict's "why" in words and numbers from its records, for a reader who sees only the
// verdict and its effect: the level each arm reaches on the claim's metric ("R@1 over 5 seeds:
// Triplet (tuned) 66.6 % (train R@1 0.55), CIT 38.2 % (train R@1 0.17)") with its training R@1 where recorded, the arms that did not train, and, for
// a claim tested in several forms, every form's verdict. "" for a verdict without paired seeds.
//
// An arm's level is the claim's metric scaled by its factor (a factor of 100 prints as a
// percentage: "66.6 %", another with the claim's unit: "12.300 ×1e-3"); its training R@1 is a
// fraction ("train R@1 0.55").
func (v *ClaimVerdict) Why() string {
	if len(v.Seeds) == 0 || len(v.Arms) == 0 {
		return ""
	}
	c := v.Claim
	level := func(x float64) string {
		s := claimNum(x*c.factor(), c.digits(), false)
		switch {
		case c.factor() == 100:
			return s + " %"
		case c.Unit != "" && c.Unit != "points":
			return s + " " + c.Unit // e.g. "×1e-3"
		}
		return s
	}
	var arms []string
	// Trend, argmax and rank claims have many arms: their levels are in the claims table.
	if c.Kind == KindBetter || c.Kind == KindEquivalent || c.Kind == KindInteraction {
		for i, a := range v.Arms {
			s := a.Label + " " + level(a.Mean)
			if i < len(v.Facts) && !math.IsNaN(v.Facts[i].TrainR1) {
				s += " (train R@1 " + FmtNum(v.Facts[i].TrainR1, 2) + ")"
			}
			arms = append(arms, s)
		}
	}
	var b strings.Builder
	if len(arms) > 0 {
		fmt.Fprintf(&b, "%s over %d seeds: %s", c.Metric, len(v.Seeds), strings.Join(arms, ", "))
	}
	if len(v.Forms) > 1 {
		var fs []string
		for _, f := range v.Forms {
			s := f.Form + ": " + f.Verdict
			if RuleDecided(f.Cause) {
				s += " (" + CauseLabel(f.Cause) + ")"
			}
			if len(f.Diffs) > 0 {
				s += ", " + f.effectTextPlain()
			}
			fs = append(fs, s)
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString("forms — " + strings.Join(fs, "; "))
	}
	return b.String()
}
