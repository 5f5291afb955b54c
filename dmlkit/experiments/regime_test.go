package experiments

import (
	"strings"
	"testing"
)

// TestRegimes: a run's regime from its configuration, a verdict's from its arms (or its scale
// when no arm has records), and the summary's rows per paper and regime.
func TestRegimes(t *testing.T) {
	rec := func(cfg map[string]any) *Record { return &Record{Config: cfg} }
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"model": map[string]any{"backbone": "cnn"}}, RegimeScratch},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite", "freeze_backbone": true}}, RegimeFrozen},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite"}}, RegimeFineTuned},
		{map[string]any{"model": map[string]any{"backbone": "cnn", "init_from": "runs/x"}}, RegimeStoredStart},
		{map[string]any{"model": map[string]any{"backbone": "cnn", "freeze_backbone": true}}, RegimeScratch + ", frozen"},
	} {
		if got := RegimeOf(rec(c.cfg)); got != c.want {
			t.Errorf("RegimeOf(%v) = %q, want %q", c.cfg, got, c.want)
		}
	}
	v := ClaimVerdict{Scale: PretrainedScale}
	if g := v.Regime(); g != RegimePretrained {
		t.Errorf("no records at the pretrained scale: %q, want %q", g, RegimePretrained)
	}
	v.Facts = []ArmFacts{{N: 3, Regime: RegimeFrozen}, {N: 3, Regime: RegimeFrozen}}
	if g := v.Regime(); g != RegimeFrozen {
		t.Errorf("two frozen arms: %q", g)
	}
	v.Facts[1].Regime = RegimeFineTuned
	if g := v.Regime(); g != RegimeFrozen+" vs "+RegimeFineTuned {
		t.Errorf("frozen vs fine-tuned arms: %q", g)
	}
	mk := func(verdict string, regime string) ClaimVerdict {
		return ClaimVerdict{Verdict: verdict, Raw: verdict, Cause: CauseInterval, Facts: []ArmFacts{{N: 1, Regime: regime}}}
	}
	r := &ClaimsReport{Paper: "p", Scale: "small", Verdicts: []ClaimVerdict{
		mk(VerdictHeld, RegimeScratch), mk(VerdictContradicted, RegimeFrozen), mk(VerdictHeld, RegimeFrozen),
	}}
	sum := SummaryMarkdown([]*ClaimsReport{r})
	for _, want := range []string{
		"| p | from scratch | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 0 | 1 / 0 / 0 |",
		"| p | pretrained, frozen | 2 | 1 | 1 | 0 | 0 | 0 | 0 | 0 | 1 / 1 / 0 |",
		"| **all** | pretrained, frozen | 2 | 1 | 1 |",
		"| **all** |  | 3 | 2 | 1 |",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("SummaryMarkdown lacks %q:\n%s", want, sum)
		}
	}
}
