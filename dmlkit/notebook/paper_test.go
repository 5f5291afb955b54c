package notebook

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// paperClaims: T against B and against a weak baseline W (Table 1), the first re-tested with a
// pretrained backbone (twin), and a Fig. 2 claim without runs.
const paperClaims = `
paper: p
scale: small
weak:
  - {where: {loss.name: w}, reason: "W reaches 40 % R@1, the others 50 %"}
central: [a, {id: ap, note: pretrained}]
claims:
  - {id: a, paper: "T beats B", source: "Table 1", kind: better, metric: R@1, direction: higher, factor: 100, unit: points,
     base: {label: B, where: {loss.name: b}}, treatment: {label: T, where: {loss.name: t}}}
  - {id: w, paper: "T beats W", source: "Table 1, §3", kind: better, metric: R@1, direction: higher, factor: 100, unit: points,
     base: {label: W, where: {loss.name: w}}, treatment: {label: T, where: {loss.name: t}}}
  - {id: ap, twin: a, scale: pretrained, paper: "T beats B; pretrained", source: "Table 1", kind: better, metric: R@1, direction: higher, factor: 100, unit: points,
     base: {label: B, where: {loss.name: b}}, treatment: {label: T, where: {loss.name: t}}}
  - {id: none, paper: "T beats X", source: "Fig. 2", kind: better, metric: R@1, direction: higher, factor: 100, unit: points,
     base: {label: X, where: {loss.name: x}}, treatment: {label: T, where: {loss.name: t}}}
`

// paperRecords, per seed 0, 1, 2 (R@1): small scale B 0.50, T 0.52 / 0.53 / 0.54, W 0.40; the
// pretrained scale (frozen MobileNetV2) B 0.80, T 0.78 / 0.77 / 0.76; every arm's training R@1
// 0.6 (all trained, so that the interval decides).
func paperRecords() []sweep.Record {
	var recs []sweep.Record
	add := func(scale, loss string, seed int64, r1 float64) {
		cfg := map[string]any{"loss": map[string]any{"name": loss}}
		if scale == "pretrained" {
			cfg["model"] = map[string]any{"pretrained": "mobilenet_v2", "freeze_backbone": true}
		}
		recs = append(recs, sweep.Record{Paper: "p", Scale: scale, Seed: seed, Config: cfg, Metrics: sweep.Metrics{"R@1": r1, "train/R@1": 0.6},
			Hash: scale + loss + string(rune('0'+seed))})
	}
	for s := int64(0); s < 3; s++ {
		add("small", "b", s, 0.50)
		add("small", "t", s, 0.52+0.01*float64(s))
		add("small", "w", s, 0.40)
		add("pretrained", "b", s, 0.80)
		add("pretrained", "t", s, 0.78-0.01*float64(s))
	}
	return recs
}

func paperReport(t *testing.T) *judge.ClaimsReport {
	t.Helper()
	cs, err := judge.ParseClaims([]byte(paperClaims), "claims.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := cs.Report(paperRecords(), judge.ClaimOptions{Scale: "small"})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestConclusionMarkdown, by hand: a's paired differences are 2, 3, 4 points (mean 3, SD 1, SE
// 1/√3; t(0.975, 2) = 4.303, half-width 2.48): [+0.52, +5.48], held. w's are 12, 13, 14: held. ap's
// are −2, −3, −4: [−5.48, −0.52], contradicted. none has no runs: inconclusive. So 2 held, 1
// contradicted, 1 inconclusive; central a held, ap contradicted; a and ap differ: the regime changes
// 1 of 1.
func TestConclusionMarkdown(t *testing.T) {
	got := conclusionMarkdown(paperReport(t))
	want := "Of the paper's 4 claims tested at the small scale: 2 held, 1 contradicted, 1 inconclusive. " +
		"Of its 2 central claims, 1 held (`a`: T vs B (R@1), +3.00 [+0.52, +5.48] points — R@1 over 3 seeds: B 50.00 % (train R@1 0.60), T 53.00 % (train R@1 0.60)), " +
		"1 contradicted (`ap`: T vs B (R@1), pretrained, −3.00 [−5.48, −0.52] points — R@1 over 3 seeds: B 80.00 % (train R@1 0.60), T 77.00 % (train R@1 0.60)). " +
		"With a pretrained backbone instead of training from scratch, the verdict changes for 1 of the 1 claims tested in both regimes.\n"
	if got != want {
		t.Errorf("conclusion:\n got %q\nwant %q", got, want)
	}
}

// TestDiscussionMarkdown: the runs of both scales the verdicts read (9 small, 6 pretrained; not the full scale's), in the order of the claims; the 3
// claims with runs by regime (2 from scratch, 1 pretrained, frozen), 3 seeds each; no verdict left
// inconclusive by the interval (none's has no runs: "not tested here"); w rests on the weak
// baseline W with claims.yaml's reason; a and ap change with the regime.
func TestDiscussionMarkdown(t *testing.T) {
	got := discussionMarkdown(paperReport(t), map[string]int{"small": 9, "pretrained": 6, "full": 1})
	for _, want := range []string{
		"- **Scale and regime.** The verdicts read the stored runs (9 of the small scale, 6 of the pretrained scale). Of the 3 claims with runs, by the regime of their arms: from scratch 2; pretrained, frozen 1, each on 3 seeds.",
		"- **Weak baselines.** 1 verdict rests on a baseline below its level, so a verdict against it says little about the paper's comparison: `w` — W reaches 40 % R@1, the others 50 %.\n",
		"- **Not tested here yet.** 1 claim has no stored runs: `none`.\n",
		"- **From scratch and pretrained.** 1 claim is tested in both regimes; the verdict changes with the regime for 1: `ap` (held from scratch, contradicted pretrained).",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("discussion lacks %q:\n%s", want, got)
		}
	}
	for _, absent := range []string{"What the seeds cannot resolve", "Unequal arms", "did not train"} {
		if strings.Contains(got, absent) {
			t.Errorf("discussion has %q without such verdicts:\n%s", absent, got)
		}
	}
}

// TestDiscussionUnequal: verdicts made by hand — two the comparability rule made inconclusive (the
// interval alone: held, inconclusive) and one the interval left inconclusive.
func TestDiscussionUnequal(t *testing.T) {
	v := func(id, verdict, raw, cause string) judge.ClaimVerdict {
		return judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: id, Kind: judge.KindBetter}, Verdict: verdict, Raw: raw, Cause: cause, Seeds: []int64{0, 1, 2, 3, 4}}
	}
	rep := &judge.ClaimsReport{Scale: "small", Verdicts: []judge.ClaimVerdict{
		v("u1", judge.VerdictInconclusive, judge.VerdictHeld, judge.CauseUnequal),
		v("u2", judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseUnequal),
		v("i", judge.VerdictInconclusive, judge.VerdictInconclusive, judge.CauseInterval),
	}}
	got := discussionMarkdown(rep, map[string]int{"small": 15})
	for _, want := range []string{
		"(15 of the small scale). Of the 3 claims with runs, by the regime of their arms: from scratch 3, each on 5 seeds.",
		"- **What the seeds cannot resolve.** 1 verdict is inconclusive because",
		"- **Unequal arms.** 2 verdicts compare arms tuned or trained unequally (borrowed tuning, another budget) and stay inconclusive whatever their interval: `u1`, `u2`. The interval rule alone would have decided 1 of them (1 held, 0 contradicted: `u1` (held));",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("discussion lacks %q:\n%s", want, got)
		}
	}
}

// TestDiscussionRegimeUnchanged: a re-test with the same verdict as its original: "changes … for 0"
// and no sentence about where it changes.
func TestDiscussionRegimeUnchanged(t *testing.T) {
	v := func(id, twin, verdict string) judge.ClaimVerdict {
		return judge.ClaimVerdict{Claim: judge.ClaimSpec{ID: id, Twin: twin, Kind: judge.KindBetter}, Verdict: verdict, Raw: verdict, Cause: judge.CauseInterval, Seeds: []int64{0, 1, 2}}
	}
	rep := &judge.ClaimsReport{Scale: "small", Verdicts: []judge.ClaimVerdict{v("a", "", judge.VerdictHeld), v("ap", "a", judge.VerdictHeld)}}
	got := discussionMarkdown(rep, map[string]int{"small": 6})
	if !strings.Contains(got, "- **From scratch and pretrained.** 1 claim is tested in both regimes; the verdict changes with the regime for 0.\n") || strings.Contains(got, "Where it changes") {
		t.Errorf("discussion:\n%s", got)
	}
}
