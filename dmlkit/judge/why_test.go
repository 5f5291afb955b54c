package judge

import (
	"math"
	"testing"
)

// TestWhy: the levels and training R@1 of each arm, and every form's verdict, worked by hand.
func TestWhy(t *testing.T) {
	c := ClaimSpec{Kind: KindBetter, Metric: "R@1", Factor: 100, Unit: "points", Digits: ptr(1)}
	v := ClaimVerdict{Claim: c, Seeds: []int64{0, 1, 2, 3, 4},
		Arms:  []ArmStat{{Label: "Triplet (tuned)", Mean: 0.6662}, {Label: "CIT", Mean: 0.3817}},
		Facts: []ArmFacts{{TrainR1: 0.553}, {TrainR1: math.NaN()}}}
	if got, want := v.Why(), "R@1 over 5 seeds: Triplet (tuned) 66.6 % (train R@1 0.55), CIT 38.2 %"; got != want {
		t.Errorf("Why() = %q, want %q", got, want)
	}
	// Two forms: each form's verdict with its cause and effect (OPIS ×1e-3, 3 digits).
	o := ClaimSpec{Kind: KindBetter, Metric: "OPIS", Factor: 1000, Unit: "×1e-3", Digits: ptr(3)}
	form := func(name, verdict, cause string, mean float64) ClaimVerdict {
		return ClaimVerdict{Claim: o, Form: name, Verdict: verdict, Cause: cause, Diffs: []float64{mean}, Mean: mean, Lo: math.NaN(), Hi: math.NaN()}
	}
	w := ClaimVerdict{Claim: o, Seeds: []int64{0, 1, 2},
		Arms:  []ArmStat{{Label: "RS@k", Mean: 0.0123}, {Label: "RS@k + TCM", Mean: 0.0098}},
		Facts: []ArmFacts{{TrainR1: 0.6}, {TrainR1: 0.61}},
		Forms: []ClaimVerdict{form("paper text", VerdictHeld, CauseInterval, -0.0025), form("authors' code", VerdictInconclusive, CauseNotRecorded, -0.001)}}
	want := "OPIS over 3 seeds: RS@k 12.300 ×1e-3 (train R@1 0.60), RS@k + TCM 9.800 ×1e-3 (train R@1 0.61); " +
		"forms — paper text: held, −2.500 ×1e-3; authors' code: inconclusive (training not recorded), −1.000 ×1e-3"
	if got := w.Why(); got != want {
		t.Errorf("Why() =\n%q, want\n%q", got, want)
	}
	if got := (&ClaimVerdict{Claim: c}).Why(); got != "" {
		t.Errorf("no seeds: %q", got)
	}
}

func ptr(i int) *int { return &i }
