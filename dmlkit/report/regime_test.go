package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestRegimes: a run's regime from its configuration, a verdict's from its arms (or its scale
// when no arm has records), and the summary's rows per paper and regime.
func TestRegimes(t *testing.T) {
	rec := func(cfg map[string]any) *sweep.Record { return &sweep.Record{Config: cfg} }
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{map[string]any{"model": map[string]any{"backbone": "cnn"}}, judge.RegimeScratch},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite", "freeze_backbone": true}}, judge.RegimeFrozen},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite"}}, judge.RegimeFineTuned},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite", "trainable_tail": 2}}, judge.RegimeFineTuned + " (last 2 blocks)"},
		{map[string]any{"model": map[string]any{"backbone": "mobilenet_v2", "pretrained": "w.tflite", "trainable_tail": 1.0}}, judge.RegimeFineTuned + " (last block)"},
		{map[string]any{"model": map[string]any{"backbone": "cnn", "init_from": "runs/x"}}, judge.RegimeStoredStart},
		{map[string]any{"model": map[string]any{"backbone": "cnn", "freeze_backbone": true}}, judge.RegimeScratch + ", frozen"},
	} {
		if got := judge.RegimeOf(rec(c.cfg)); got != c.want {
			t.Errorf("RegimeOf(%v) = %q, want %q", c.cfg, got, c.want)
		}
	}
	v := judge.ClaimVerdict{Scale: judge.PretrainedScale}
	if g := v.Regime(); g != judge.RegimePretrained {
		t.Errorf("no records at the pretrained scale: %q, want %q", g, judge.RegimePretrained)
	}
	v.Facts = []judge.ArmFacts{{N: 3, Regime: judge.RegimeFrozen}, {N: 3, Regime: judge.RegimeFrozen}}
	if g := v.Regime(); g != judge.RegimeFrozen {
		t.Errorf("two frozen arms: %q", g)
	}
	v.Facts[1].Regime = judge.RegimeFineTuned
	if g := v.Regime(); g != judge.RegimeFrozen+" vs "+judge.RegimeFineTuned {
		t.Errorf("frozen vs fine-tuned arms: %q", g)
	}
	mk := func(verdict string, regime string) judge.ClaimVerdict {
		return judge.ClaimVerdict{Verdict: verdict, Raw: verdict, Cause: judge.CauseInterval, Facts: []judge.ArmFacts{{N: 1, Regime: regime}}}
	}
	r := &judge.ClaimsReport{Paper: "p", Scale: "small", Verdicts: []judge.ClaimVerdict{
		mk(judge.VerdictHeld, judge.RegimeScratch), mk(judge.VerdictContradicted, judge.RegimeFrozen), mk(judge.VerdictHeld, judge.RegimeFrozen),
	}}
	sum := SummaryMarkdown([]*judge.ClaimsReport{r})
	for _, want := range []string{
		"| p | from scratch | 1 | 1 | 0 | 0 | 0 | 1 / 0 / 0 |",
		"| p | pretrained, frozen | 2 | 1 | 1 | 0 | 0 | 1 / 1 / 0 |",
		"| **all** | pretrained, frozen | 2 | 1 | 1 |",
		"| **all** |  | 3 | 2 | 1 |",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("SummaryMarkdown lacks %q:\n%s", want, sum)
		}
	}
	// Every outcome in its column, worked by hand: 5 claims from scratch — 1 held; 1 where the
	// method did not train (its own column); 3 inconclusive: the interval, unequal arms (the
	// interval alone contradicted), training not recorded (the interval alone held).
	with := func(verdict, raw, cause string) judge.ClaimVerdict {
		v := mk(verdict, judge.RegimeScratch)
		v.Raw, v.Cause = raw, cause
		return v
	}
	q := &judge.ClaimsReport{Paper: "q", Scale: "small", Verdicts: []judge.ClaimVerdict{
		with(judge.VerdictHeld, judge.VerdictHeld, judge.CauseInterval),
		with(judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseMethodUntrained),
		with(judge.VerdictInconclusive, judge.VerdictHeld, judge.CauseNotRecorded),
		with(judge.VerdictInconclusive, judge.VerdictContradicted, judge.CauseUnequal),
		with(judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseInterval),
	}}
	want := "| q | from scratch | 5 | 1 | 0 | 1 | 3: 1 interval · 1 unequal arms · 1 training not recorded | 2 / 1 / 2 |"
	if sum := SummaryMarkdown([]*judge.ClaimsReport{q}); !strings.Contains(sum, want) {
		t.Errorf("SummaryMarkdown lacks %q:\n%s", want, sum)
	}
	if got, w := q.OutcomeText(), "1 held, 0 contradicted, 1 where the method did not train here, 3 inconclusive"; got != w {
		t.Errorf("OutcomeText %q, want %q", got, w)
	}
}

// TestRegimePairs: a claim naming another as its twin is set beside it; the table says whether
// the verdict changes with the regime.
func TestRegimePairs(t *testing.T) {
	orig := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "a", Paper: "T beats B"}, Verdict: judge.VerdictContradicted, Cause: judge.CauseInterval,
		Facts: []judge.ArmFacts{{N: 3, Regime: judge.RegimeScratch}}}
	re := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "ap", Paper: "T beats B; pretrained", Twin: "a"}, Verdict: judge.VerdictHeld, Cause: judge.CauseInterval,
		Facts: []judge.ArmFacts{{N: 3, Regime: judge.RegimeFrozen}}}
	same := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "bp", Paper: "U beats B; pretrained", Twin: "b"}, Verdict: judge.VerdictInconclusive, Cause: judge.CauseNoRecords, Scale: judge.PretrainedScale}
	b := judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: "b", Paper: "U beats B"}, Verdict: judge.VerdictInconclusive, Cause: judge.CauseInterval}
	r := &judge.ClaimsReport{Verdicts: []judge.ClaimVerdict{orig, b, re, same}}
	ps := r.RegimePairs()
	if len(ps) != 2 || ps[0].Original.Claim.ID != "a" || ps[0].Retest.Claim.ID != "ap" || !ps[0].Changed() || ps[1].Changed() || !ps[1].Pending() {
		t.Fatalf("pairs %+v", ps)
	}
	md := r.RegimeMarkdown()
	for _, want := range []string{
		"2 claims tested in two regimes; the verdict changes with the regime for 1 (1 not run yet in both).",
		"| `a` / `ap`: T beats B; pretrained | from scratch: **contradicted**<br>— | pretrained, frozen: **held**<br>— | **yes**: contradicted → held |",
		"| `b` / `bp`: U beats B; pretrained | from scratch: **inconclusive**<br>— | pretrained: **inconclusive** (no records)<br>— | not run yet |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("RegimeMarkdown lacks %q:\n%s", want, md)
		}
	}
	if (&judge.ClaimsReport{Verdicts: []judge.ClaimVerdict{orig}}).RegimeMarkdown() != "" {
		t.Error("a report without twins has a regimes table")
	}
}

// TestHasMarked: a block's begin marker is found; another block's is not; a missing file is an error.
func TestHasMarked(t *testing.T) {
	p := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(p, []byte("x\n"+fmt.Sprintf(markBegin, "changes")+"\n"+fmt.Sprintf(markEnd, "changes")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := HasMarked(p, "changes"); !ok || err != nil {
		t.Errorf("changes: %v, %v", ok, err)
	}
	if ok, err := HasMarked(p, "regimes"); ok || err != nil {
		t.Errorf("regimes: %v, %v", ok, err)
	}
	if _, err := HasMarked(p+".missing", "changes"); err == nil {
		t.Error("a missing file gave no error")
	}
}

// TestMarked reads back what UpdateMarked wrote: the block's text without the markers, and an
// error naming the file for a block it does not have.
func TestMarked(t *testing.T) {
	p := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(p, []byte("x\n"+fmt.Sprintf(markBegin, "summary")+"\nold\n"+fmt.Sprintf(markEnd, "summary")+"\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := UpdateMarked(nil, p, "summary", "| a | b |\n|---|---|\n\n"); err != nil {
		t.Fatal(err)
	}
	if got, err := Marked(p, "summary"); got != "| a | b |\n|---|---|" || err != nil {
		t.Errorf("Marked = %q, %v", got, err)
	}
	if _, err := Marked(p, "findings"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("a missing block: error %v, want one naming %s", err, p)
	}
}
