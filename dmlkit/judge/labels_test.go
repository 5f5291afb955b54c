package judge

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
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
		// Issue 50: a tuning difference's remainder counted, a key's last part for its words.
		"borrowed tuning (Loss: tuned at ProxyAnchor, this arm IDML on; Mixup: tuned at no, this arm yes and 25 more)": "a count of unnamed differences",
		"borrowed tuning (name: tuned at omniglot, this arm fashion-mnist; epochs: tuned at 2, this arm 1 and 3 more)": "a config key's last part",
		"batch size: tuned at 196, this arm 98; m: tuned at 4, this arm 2":                                             "a config key's last part",
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
		"borrowed tuning (Loss: tuned at ProxyAnchor, this arm IDML on; Mixup: tuned at no, this arm yes and 2 other settings)",
		"dataset: tuned at Omniglot, this arm MNIST; batch: tuned at 128, this arm 100; budget: tuned at 2 epochs, this arm 1 epoch capped at 200 steps",
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
// (claims.md) the comparability and verdict columns are checked, also for values the spec's labels
// map or the shared vocabulary would have written in words ([sweep.LabelMap.UnwordedTexts]:
// "dataset: tuned at omniglot"): the other columns quote the paper and the arm labels of
// claims.yaml.
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
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "[") || strings.HasPrefix(line, "Paper numbers") { // the paper's sources, quoted
				continue
			}
			if claims {
				cols := tableCells(line)
				if len(cols) < 10 || cols[0] == "id" {
					continue
				}
				line = cols[len(cols)-2] + " | " + cols[len(cols)-1] // comparability and verdict
				for _, p := range specs[dir].Labels.UnwordedTexts(line) {
					t.Errorf("%s:%d: %s", filepath.ToSlash(f), i+1, p)
				}
			}
			for _, p := range sweep.RawTexts(unescapeMD.Replace(line)) {
				if claims && strings.HasPrefix(p, "an identifier with an underscore") {
					continue // a reason quotes the papers' symbols (L_context)
				}
				if !crossReference(specs[dir], p) { // "table tune_margins" names a file a reader can open
					t.Errorf("%s:%d: %s", filepath.ToSlash(f), i+1, p)
				}
			}
		}
	}
}

// cellSep is a Markdown table's cell separator: a "|" not escaped.
var cellSep = regexp.MustCompile(`(^|[^\\])\|`)

// tableCells are the cells of a Markdown table row, each as a reader reads it (escapes undone);
// nil for a line that is not a row.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || strings.HasPrefix(line, "|---") {
		return nil
	}
	marked := cellSep.ReplaceAllString(line, "$1\x00")
	parts := strings.Split(marked, "\x00")
	var out []string
	for _, p := range parts[1 : len(parts)-1] {
		out = append(out, strings.TrimSpace(unescapeMD.Replace(p)))
	}
	return out
}

// TestReadmeBlocksInWords reads the blocks `dmlkit tables` writes into each reproduction's
// README (claims, regimes, what changed and why) and fails on raw configuration in the last two
// cells of each table row — the comparability note and the verdict with its reason, the cause of a
// change, a regime's verdict and change — as [TestGeneratedTablesHumanLabels] does for the tables
// (the first cells quote the paper and the claims' ids).
func TestReadmeBlocksInWords(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "reproductions", "*", "README.md"))
	if len(files) == 0 {
		t.Fatal("no reproductions/*/README.md")
	}
	rows := 0
	for _, f := range files {
		s, err := sweep.Load(filepath.Join(filepath.Dir(f), "spec.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in := false
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.Contains(line, "<!-- dmlkit:") && strings.Contains(line, ":begin"):
				in = true
				continue
			case strings.Contains(line, "<!-- dmlkit:") && strings.Contains(line, ":end"):
				in = false
			}
			cols := tableCells(line)
			if !in || len(cols) < 4 {
				continue
			}
			rows++
			text := cols[len(cols)-2] + " | " + cols[len(cols)-1]
			probs := s.Labels.UnwordedTexts(text)
			for _, p := range sweep.RawTexts(text) {
				if !crossReference(s, p) && !strings.HasPrefix(p, "an identifier with an underscore") {
					probs = append(probs, p)
				}
			}
			for _, p := range probs {
				t.Errorf("%s:%d: %s", filepath.ToSlash(f), i+1, p)
			}
		}
	}
	if rows == 0 {
		t.Error("no generated table rows in the READMEs")
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

// TestDiffTextNamesWhatMatters: a borrowed tuning's differences read as the few that decide whether
// the borrowed value fits — the loss, the dataset, the batch, the budget, the start — each once,
// then other differences up to two parts, the rest counted; the inputs are the differences of
// today's arms (TCM's Table 5 on MNIST, IDML's Table 1 with its loss options cut short, RS@k's
// pre-trained start, IDML's batch sizes, TCM's Fig. 6 margins, contextual's λ).
func TestDiffTextNamesWhatMatters(t *testing.T) {
	for _, c := range []struct {
		diffs []string
		want  string
	}{
		{[]string{"data.name: tuned at omniglot, this arm mnist", "epochs: tuned at 2, this arm 1", "sampler.batch_size: tuned at 128, this arm 100",
			"sampler.m: tuned at 4, this arm 20", "steps: tuned at 0, this arm 200"},
			"data.name: tuned at omniglot, this arm mnist; sampler.batch_size: tuned at 128, this arm 100; budget: tuned at 2 epochs, this arm 1 epoch capped at 200 steps"},
		{[]string{"loss.name: tuned at triplet, this arm idml", "loss.set.avg_nonzero: tuned at true, this arm unset", "loss.set.base: tuned at unset, this arm triplet",
			"loss.set.margin: tuned at 0.05, this arm 0.1", "mixup.enabled: tuned at false, this arm true", "model.dual_head: tuned at false, this arm true",
			"model.unc_dim: tuned at 0, this arm 128"},
			"loss.name: tuned at triplet, this arm idml; mixup.enabled: tuned at false, this arm true and 2 other settings"},
		{[]string{"model.init_from: tuned at , this arm run:…", "model.init_head: tuned at false, this arm true", "sampler.batch_size: tuned at 196, this arm 392"},
			"sampler.batch_size: tuned at 196, this arm 392; start: tuned at random weights, this arm a stored run's weights"},
		{[]string{"loss.name: tuned at proxyanchor, this arm idml", "sampler.batch_size: tuned at 120, this arm 40", "steps: tuned at 400, this arm 1200"},
			"loss.name: tuned at proxyanchor, this arm idml; sampler.batch_size: tuned at 120, this arm 40; budget: tuned at a cap of 400 steps, this arm a cap of 1200 steps"},
		{[]string{"loss.set.options.tcm.neg_margin: tuned at unset, this arm 0.25", "loss.set.options.tcm.pos_margin: tuned at unset, this arm 0.8",
			"loss.set.options: tuned at null, this arm unset"},
			"loss.set.options.tcm.neg_margin: tuned at unset, this arm 0.25; loss.set.options.tcm.pos_margin: tuned at unset, this arm 0.8"},
		{[]string{"data.train_classes: tuned at [0,98], this arm null", "epochs: tuned at 20, this arm 3", "sampler.batch_size: tuned at 196, this arm 980"},
			"data.train_classes: tuned at [0,98], this arm null; sampler.batch_size: tuned at 196, this arm 980; budget: tuned at 20 epochs, this arm 3 epochs"},
		{[]string{"loss.set.gamma: tuned at 0.1, this arm 0", "loss.set.lambda: tuned at 0.4, this arm 0.8", "sampler.batch_size: tuned at 128, this arm 256"},
			"sampler.batch_size: tuned at 128, this arm 256; loss.set.gamma: tuned at 0.1, this arm 0 and 1 other setting"},
		{[]string{"data.corrupt.image_noise: tuned at 0, this arm 0.2", "data.corrupt.image_pool: tuned at , this arm mnist"},
			"data.corrupt.image_noise: tuned at 0, this arm 0.2; data.corrupt.image_pool: tuned at unset, this arm mnist"},
	} {
		if got := diffText(c.diffs); got != c.want {
			t.Errorf("diffText(%q):\n got %q\nwant %q", c.diffs, got, c.want)
		}
	}
}

// TestHumanizeSharedWords: keys and values a spec's map does not name read in the shared
// vocabulary (data.name is the dataset, omniglot is Omniglot), the spec's own words first; an unset
// value reads as the map's words for the key's null; a constructed part (the budget) stays.
func TestHumanizeSharedWords(t *testing.T) {
	tcm := sweep.LabelMap{Text: map[string]string{"sampler.batch_size": "batch"}}
	in := "borrowed tuning (data.name: tuned at omniglot, this arm fashion-mnist; sampler.batch_size: tuned at 128, this arm 100; " +
		"budget: tuned at 2 epochs, this arm 1 epoch capped at 200 steps)"
	want := "borrowed tuning (dataset: tuned at Omniglot, this arm Fashion-MNIST; batch: tuned at 128, this arm 100; " +
		"budget: tuned at 2 epochs, this arm 1 epoch capped at 200 steps)"
	if got := tcm.Humanize(in); got != want {
		t.Errorf("Humanize:\n got %q\nwant %q", got, want)
	}
	cit := sweep.LabelMap{Text: map[string]string{"data.name": "Benchmark", "fashion-mnist": "Fashion-MNIST"}}
	if got, want := cit.Humanize("data.name: tuned at omniglot, this arm fashion-mnist"), "Benchmark: tuned at Omniglot, this arm Fashion-MNIST"; got != want {
		t.Errorf("Humanize = %q, want %q", got, want)
	}
	rsk := sweep.LabelMap{Text: map[string]string{"data.train_classes": "training characters", "data.train_classes=[0,98]": "Omni-98",
		"data.train_classes=null": "all classes"}}
	if got, want := rsk.Humanize("(data.train_classes: tuned at [0,98], this arm null and 2 other settings)"),
		"(training characters: tuned at Omni-98, this arm all classes and 2 other settings)"; got != want {
		t.Errorf("Humanize = %q, want %q", got, want)
	}
	if got, want := (sweep.LabelMap{}).Humanize("optimizer.name: tuned at adam, this arm sgd"), "optimiser: tuned at Adam, this arm SGD"; got != want {
		t.Errorf("Humanize = %q, want %q", got, want)
	}
}

// TestUnwordedTexts: a tuning difference's values written as the configuration spells them are
// found where the map or the shared vocabulary has words for them; numbers, words and values
// nobody names are not.
func TestUnwordedTexts(t *testing.T) {
	lm := sweep.LabelMap{Keys: []string{"proxyanchor", "loss.name=idml"}, Text: map[string]string{"proxyanchor": "ProxyAnchor", "loss.name=idml": "IDML on"}}
	for s, want := range map[string]int{
		"borrowed tuning (name: tuned at omniglot, this arm fashion-mnist; epochs: tuned at 2, this arm 1 and 3 more)": 2,
		"Loss: tuned at proxyanchor, this arm idml; Mixup: tuned at no, this arm yes and 2 other settings":             2,
		"optimiser: tuned at adam, this arm Adam":                                                                      1,
		"Loss: tuned at ProxyAnchor, this arm IDML on; Mixup: tuned at no, this arm yes and 2 other settings":          0,
		"γ: tuned at 0.1 (with the regulariser), this arm 0; batch: tuned at 60, this arm 100":                         0,
		"noise images: tuned at unset, this arm MNIST; init: tuned at random weights, this arm a stored run's weights": 0,
		"pool: tuned at foo, this arm bar-baz":                                                                         0,
	} {
		if got := lm.UnwordedTexts(s); len(got) != want {
			t.Errorf("UnwordedTexts(%q) = %q, want %d", s, got, want)
		}
	}
}
