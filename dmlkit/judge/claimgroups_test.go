package judge

import (
	"strings"
	"testing"
)

func TestClaimGroupName(t *testing.T) {
	for src, want := range map[string]string{
		"Table 4, Fig. 6, §4.3":                    "Table 4",
		"Table 4 / Table 2, §4.3":                  "Table 4",
		"Tables 2-4, §5":                           "Tables 2–4",
		"Abstract; Table 2, §3.3":                  "Table 2",
		"Fig. 6 (label noise), §4.4":               "Fig. 6",
		"§3.3, Fig. 9":                             "Fig. 9",
		"§4.5 (Figs. 6, 8: ambiguous images)":      "Fig. 6",
		"§1 (introduction; untested in the paper)": "§1",
		"the authors' code":                        "Other",
		"Table 10, App. I.5":                       "Table 10",
	} {
		if got := ClaimGroupName(src); got != want {
			t.Errorf("ClaimGroupName(%q) = %q, want %q", src, got, want)
		}
	}
}

func TestShortClaim(t *testing.T) {
	if s := ShortClaim("short words", 20); s != "short words" {
		t.Errorf("a short claim changed: %q", s)
	}
	// 10 characters: head 6 → "alpha " cut at the space → "alpha"; tail 10-6-2 = 2 → "ta".
	long := "alpha beta gamma delta"
	if s := ShortClaim(long, 10); s != "alpha … ta" {
		t.Errorf("ShortClaim(%q, 10) = %q", long, s)
	}
	// The end is kept: claims of one template differ there.
	s := ShortClaim("RS@k outperforms Smooth-AP across backbones, embedding sizes and datasets: Omni-98 (Cars196 analogue)", 60)
	if !strings.HasSuffix(s, "(Cars196 analogue)") || !strings.HasPrefix(s, "RS@k outperforms") || len([]rune(s)) > 60 {
		t.Errorf("shortened to %q", s)
	}
}

// TestGroupedHTML: three claims from two tables and a figure. The groups come tables first by
// number (Table 2 before Table 10), then figures; each has its own counts in the summary of its
// fold; every claim has one row with its verdict and effect, and its arms, seeds and raw verdict
// only inside the inner <details>.
func TestGroupedHTML(t *testing.T) {
	mk := func(id, src, verdict, cause string, mean, lo, hi float64) ClaimVerdict {
		return ClaimVerdict{Claim: ClaimSpec{ID: id, Paper: "T beats B on " + id, Source: src, Kind: KindBetter, Direction: "higher", Unit: "points"},
			Verdict: verdict, Raw: VerdictHeld, Cause: cause, Reason: "reason of " + id, RawReason: "raw reason of " + id,
			Arms: []ArmStat{{Label: "B", Mean: 50, SE: 1, N: 3}, {Label: "T", Mean: 50 + mean, SE: 1, N: 3}}, Seeds: []int64{0, 1, 2},
			Diffs: []float64{mean, mean, mean}, Mean: mean, Lo: lo, Hi: hi, Toward: 3, Need: 3}
	}
	r := &ClaimsReport{Paper: "p", Scale: "small", Verdicts: []ClaimVerdict{
		mk("a", "Table 10, §4", VerdictHeld, CauseInterval, 2, 1, 3),
		mk("b", "Fig. 3", VerdictInconclusive, CauseUnequal, 5, 4, 6),
		mk("c", "Table 2; §3", VerdictHeld, CauseInterval, 1, 0.5, 1.5),
	}}
	g := r.Groups()
	if len(g) != 3 || g[0].Name != "Table 2" || g[1].Name != "Table 10" || g[2].Name != "Fig. 3" {
		t.Fatalf("groups %+v", g)
	}
	out := r.GroupedHTML()
	for _, want := range []string{
		"tested at small scale: 2 held, 0 contradicted, 1 inconclusive (of which 1 unequal comparison)</b>, in 3 groups",
		"<details><summary><b>Table 2</b> — 1 claim: 1 held, 0 contradicted, 0 inconclusive</summary>\n<table>",
		"<details><summary><b>Fig. 3</b> — 1 claim: 0 held, 0 contradicted, 1 inconclusive</summary>\n<table>",
		`<td style="text-align:left"><code>b</code></td><td style="text-align:left">T beats B on b</td><td style="text-align:left"><b>inconclusive</b> (unequal)</td><td style="text-align:left">+5.00 [+4.00, +6.00] points</td>`,
		"<details><summary>Details of the 1 claim of Table 10",
		"arms (mean ± SE): B 50.00 ± 1.00; T 52.00 ± 1.00; seeds agreeing: 3 of 3 (need 3)",
		"interval rule alone: <b>held</b> (raw reason of b); verdict: <b>inconclusive</b> (reason of b)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("GroupedHTML lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "<b>Table 2</b>") > strings.Index(out, "<b>Table 10</b>") || strings.Index(out, "<b>Table 10</b>") > strings.Index(out, "<b>Fig. 3</b>") {
		t.Errorf("groups out of order:\n%s", out)
	}
	// The row shows no arms: they are folded.
	row := out[strings.Index(out, "<code>a</code>"):]
	row = row[:strings.Index(row, "</tr>")]
	if strings.Contains(row, "± 1.00") {
		t.Errorf("the one-line row shows the arms: %s", row)
	}
	// Two folds a group, all closed, each group's whole: the fold, its table, its details, in order.
	if n := strings.Count(out, "<details>"); n != 6 || strings.Count(out, "</details>") != 6 || strings.Contains(out, "<details open") {
		t.Errorf("%d <details> elements (want 6, all closed)", n)
	}
	g2 := out[strings.Index(out, "<details><summary><b>Table 2</b>"):strings.Index(out, "<details><summary><b>Table 10</b>")]
	if !strings.Contains(g2, "<code>c</code>") || !strings.HasSuffix(g2, "</ul>\n</details>\n</details>\n") {
		t.Errorf("the Table 2 group does not fold its table and details whole:\n%s", g2)
	}
}
