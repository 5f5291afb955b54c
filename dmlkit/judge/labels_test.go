package judge

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestRawTextsFlagsTodaysDefects: each raw text that reached a table, legend, axis or caption
// before the labels map covered everything (issue 32) is flagged; their human forms are not.
func TestRawTextsFlagsTodaysDefects(t *testing.T) {
	raw := map[string]string{
		"RS@k + rsk+tcm(no_indicator=true)":    "a config expression",
		`[{"lr_mul":10,"match":"/loss/"}]`:     "JSON",
		"| null | 0.5 | 31.84 ± 0.84 |":        "a null value",
		"run:07d1cf6e":                         "a run hash",
		"seed 3, 9aed33b63b081850":             "a run hash",
		"0.9*contrastive+0.1*simreg":           "a config expression",
		"baseline smoothap+tcm":                "a config expression",
		"L_e of the batch":                     "an identifier with an underscore",
		"hard triplets (S_an > S_ap)":          "an identifier with an underscore",
		"U_roc":                                "an identifier with an underscore",
		"−2.78 points per doubling per decade": "a unit with two denominators",
		"loss.set.expr":                        "a dotted config key",
		"val/R@1 over optimizer.lr":            "a series name",
		"| fig6 | Contextual |":                "a run group's name",
	}
	for s, want := range raw {
		got := sweep.RawTexts(s)
		if !strings.Contains(strings.Join(got, "; "), want) {
			t.Errorf("RawTexts(%q) = %q, want %s", s, got, want)
		}
	}
	for _, s := range []string{
		"RS@k + TCM no indicator", "×10", "—", "0.9 · Contrastive + 0.1 · similarity regulariser",
		"Smooth-AP + TCM", "discordance term Lₑ of the batch", "points per decade", "validation R@1",
		"γ = 0.1 (with the regulariser)", "R@1 (%)", "e.g. 0.5", "figures/tcm/README.md", "1e-3..1e-2",
		"MAP@R", "CNN-S (16-32-64)", "seed 0", "16 characters × 4", "fashion-mnist",
	} {
		if got := sweep.RawTexts(s); len(got) > 0 {
			t.Errorf("RawTexts(%q) = %q, want none", s, got)
		}
	}
}

// TestLabelFallbacks: what the labels map does not name is still written in words.
func TestLabelFallbacks(t *testing.T) {
	lm := sweep.LabelMap{Keys: []string{"contrastive", "simreg", "loss.set.expr"},
		Text: map[string]string{"contrastive": "Contrastive", "simreg": "similarity regulariser", "loss.set.expr": "loss"}}
	for _, c := range []struct {
		key  string
		v    any
		want string
	}{
		{"loss.set.m", nil, "—"},
		{"loss.set.avg_nonzero", true, "yes"},
		{"optimizer.groups", []any{map[string]any{"lr_mul": 10.0, "match": "/loss/"}}, "×10"},
		{"loss.set.expr", "0.9*contrastive+0.1*simreg", "0.9 · Contrastive + 0.1 · similarity regulariser"},
		{"loss.set.expr", "contrastive", "Contrastive"},
	} {
		if got := lm.Value(c.key, c.v); got != c.want {
			t.Errorf("Value(%s, %v) = %q, want %q", c.key, c.v, got, c.want)
		}
	}
	for key, want := range map[string]string{"loss.set.expr": "loss", "loss.set.pos_margin": "pos margin", "val/R@1": "validation R@1", "R@1": "R@1"} {
		if got := lm.Key(key); got != want {
			t.Errorf("Key(%s) = %q, want %q", key, got, want)
		}
	}
}

// unescapeMD undoes the escapes of [mdText], so that the check reads the text a reader sees.
var unescapeMD = strings.NewReplacer(`\*`, "*", `\_`, "_", `\|`, "|")

// TestGeneratedTablesHumanLabels reads every committed results table (reproductions/*/tables/*.md,
// written by `dmlkit tables`) and fails on raw keys, JSON, null cells, run hashes and config
// expressions ([RawTexts]) in its caption, headers, cells and notes. Of the verdict tables
// (claims.md) the comparability column is checked: the other columns quote the paper and the arm
// labels of claims.yaml.
func TestGeneratedTablesHumanLabels(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "reproductions", "*", "tables", "*.md"))
	if len(files) == 0 {
		t.Fatal("no reproductions/*/tables/*.md")
	}
	specs := map[string]*sweep.Spec{}
	for _, f := range files {
		claims := filepath.Base(f) == "claims.md"
		dir := filepath.Dir(filepath.Dir(f))
		if specs[dir] == nil {
			s, err := sweep.Load(filepath.Join(dir, "spec.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			specs[dir] = s
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(unescapeMD.Replace(string(b)), "\n") {
			if strings.HasPrefix(line, "[") || strings.HasPrefix(line, "Paper numbers") { // the paper's sources, quoted
				continue
			}
			if claims {
				cols := strings.Split(line, " | ")
				if !strings.HasPrefix(line, "| ") || len(cols) < 9 || strings.HasPrefix(line, "| id ") {
					continue
				}
				line = cols[7] // comparability
			}
			for _, p := range sweep.RawTexts(line) {
				if !crossReference(specs[dir], p) { // "table tune_margins" names a file a reader can open
					t.Errorf("%s:%d: %s", filepath.ToSlash(f), i+1, p)
				}
			}
		}
	}
}

// TestTrendUnitHasOneDenominator: a trend's slope is per decade (log x) or per unit of x; a claim
// unit that names its own denominator ("points per doubling") is not printed with a second one.
func TestTrendUnitHasOneDenominator(t *testing.T) {
	c := ClaimSpec{Kind: KindTrend, Unit: "points per doubling", Sweep: &ClaimSweep{Log: true}}
	v := &ClaimVerdict{Claim: c, Diffs: []float64{0.1, 0.2}, Mean: 0.15, Lo: math.NaN()}
	got := v.effectText()
	if !strings.HasSuffix(got, " points per decade") || len(sweep.RawTexts(got)) > 0 {
		t.Errorf("effect %q, want … points per decade", got)
	}
}

// TestTrendUnitLinear: on a linear axis a unit with its own denominator is kept, without "per unit".
func TestTrendUnitLinear(t *testing.T) {
	c := ClaimSpec{Kind: KindTrend, Unit: "points per degree", Sweep: &ClaimSweep{}}
	v := &ClaimVerdict{Claim: c, Diffs: []float64{0.1, 0.2}, Mean: 0.15, Lo: math.NaN()}
	if got := v.effectText(); !strings.HasSuffix(got, " points per degree") {
		t.Errorf("effect %q, want … points per degree", got)
	}
}

// TestHumanizeComparabilityNotes: the keys and values a verdict's notes name are written with the
// labels map; file names stay.
func TestHumanizeComparabilityNotes(t *testing.T) {
	lm := sweep.LabelMap{Text: map[string]string{"loss.set.gamma": "γ", "loss.set.gamma=0.1": "γ = 0.1 (with the regulariser)",
		"loss.name": "Loss", "proxyanchor": "ProxyAnchor", "sampler.batch_size": "batch size"}}
	in := "borrowed tuning (loss.set.gamma: tuned at 0.1, this arm 0; loss.name: tuned at proxyanchor, this arm idml and 3 more); " +
		"at grid edge: sampler.batch_size (lr); loss.set.k: tuned at [1,2,4], this arm [4]; see spec.yaml"
	want := "borrowed tuning (γ: tuned at 0.1 (with the regulariser), this arm 0; Loss: tuned at ProxyAnchor, this arm idml and 3 more); " +
		"at grid edge: batch size (lr); k: tuned at [1,2,4], this arm [4]; see spec.yaml"
	if got := lm.Humanize(in); got != want {
		t.Errorf("Humanize:\n got %q\nwant %q", got, want)
	}
}

// TestHumanizeUnsetJSONAndEdges: an unset value (null) reads "unset", a loss expression its terms,
// and a selection at its grid's edge ("key = value (step)") the key's and the value's words —
// learning-rate groups as their multiplier, not JSON.
func TestHumanizeUnsetJSONAndEdges(t *testing.T) {
	lm := sweep.LabelMap{Text: map[string]string{"smoothap": "Smooth-AP", "tcm": "TCM", "loss.set.expr": "loss",
		"loss.set.margin": "m", "optimizer.groups": "proxy rate", "data.train_classes": "training characters"}}
	in := `borrowed tuning (data.train_classes: tuned at null, this arm [0,100]; loss.set.expr: tuned at smoothap, this arm smoothap+tcm); ` +
		`at grid edge: optimizer.groups = [{"lr_mul":10,"match":"/loss/"}] (lr-softtriple), loss.set.margin = 0.01 (margin-triplet)`
	want := "borrowed tuning (training characters: tuned at unset, this arm [0,100]; loss: tuned at Smooth-AP, this arm Smooth-AP + TCM); " +
		"at grid edge: proxy rate = ×10 (lr-softtriple), m = 0.01 (margin-triplet)"
	got := lm.Humanize(in)
	if got != want {
		t.Errorf("Humanize:\n got %q\nwant %q", got, want)
	}
	if raw := sweep.ReaderRawTexts(got); len(raw) > 0 {
		t.Errorf("ReaderRawTexts(Humanize) = %q, want none", raw)
	}
	if raw := sweep.ReaderRawTexts(in); len(raw) < 4 {
		t.Errorf("ReaderRawTexts(%q) = %q, want the null, the JSON, the expression and the keys", in, raw)
	}
}

// TestReaderRawTexts: in a generated Markdown or HTML text, the reader's words are checked — a
// group's raw name in a table header, a null cell, a run hash, a dotted key — and its references
// are not: code spans, links, markup, a quoted phrase before a colon, the papers' symbols.
func TestReaderRawTexts(t *testing.T) {
	for s, want := range map[string]string{
		"| | fig8 | lr-check |":                           "a run group's name \"fig8\"",
		"| training characters | [0, 100] | null |":       "a null value",
		"| initialised from | run:07d1cf6e31d2bd90 |":     "a run hash",
		"unequal comparison (sampler.batch_size: tuned…)": "a dotted config key \"sampler.batch_size\"",
		"<td>loss.set.expr</td>":                          "a dotted config key \"loss.set.expr\"",
		`proxy rate = [{"lr_mul":10}]`:                    "JSON",
	} {
		if got := strings.Join(sweep.ReaderRawTexts(s), "; "); !strings.Contains(got, want) {
			t.Errorf("ReaderRawTexts(%q) = %q, want %s", s, got, want)
		}
	}
	for _, s := range []string{
		"Written at commit(s) `831463d58097`, `0bf7584333b5`.",
		"- **held** — … (`c3-beats-proxynca`, Table 4; effect +1.2)",
		"*`figures/rsk/fig8_tau1.png`* — **Fig. 8.** τ1 of RS@k (table tune\\_lr-rsk)",
		"[the rules](../docs/reproducing.md) <code>loss.set.expr</code>",
		`- cit, form "paper text": 0 held, 15 contradicted`,
		"L_context against L_reg",
		"| | Fig. 8 | half the tuned rate | (no name) |",
	} {
		if got := sweep.ReaderRawTexts(s); len(got) > 0 {
			t.Errorf("ReaderRawTexts(%q) = %q, want none", s, got)
		}
	}
}
