package notebook

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// root is this checkout: the tests read the committed idml reproduction (spec, claims, records,
// figures), whose tables/claims.md `dmlkit tables` wrote with its own formatter.
var root = filepath.Join("..", "..")

func TestFromEnv(t *testing.T) {
	tmp := t.TempDir()
	for _, c := range []struct {
		scale, retrain, results string
		wantScale, wantShown    string
		wantRetrain             bool
		wantResults             string
	}{
		{"", "", "", "small", "small", false, "reproductions/idml/results"},
		{"smoke", "", "", "smoke", "small", true, "reproductions/idml/results"},
		{"small", "1", tmp, "small", "small", true, tmp},
		{"full", "1", "", "full", "full", true, filepath.Join(tmp, "dmlkit-idml-full", "results")},
		{"full", "", "", "full", "full", false, "reproductions/idml/results"},
	} {
		t.Setenv("SCALE", c.scale)
		t.Setenv("DMLKIT_RETRAIN", c.retrain)
		t.Setenv("DMLKIT_RESULTS", c.results)
		t.Setenv("TMPDIR", tmp)
		p := FromEnv("/r", "idml")
		want := c.wantResults
		if !filepath.IsAbs(want) {
			want = filepath.Join("/r", want)
		}
		if p.Scale != c.wantScale || p.ShownScale() != c.wantShown || p.Retrain != c.wantRetrain || p.ResultsDir() != want {
			t.Errorf("SCALE=%q DMLKIT_RETRAIN=%q DMLKIT_RESULTS=%q: scale %q shown %q retrain %v results %q; want %q %q %v %q",
				c.scale, c.retrain, c.results, p.Scale, p.ShownScale(), p.Retrain, p.ResultsDir(), c.wantScale, c.wantShown, c.wantRetrain, want)
		}
	}
}

// TestClaimsMarkdownMatchesTables: the notebook's line for c14-unc-mixed carries the verdict and the
// effect that tables/claims.md prints for it (written by `dmlkit tables`, another formatter:
// "+0.29 [+0.15, +0.44]"), and a prefix selects exactly the claims that start with it.
func TestClaimsMarkdownMatchesTables(t *testing.T) {
	p := &Paper{Root: root, Name: "idml", Scale: "small"}
	md, err := p.ClaimsMarkdown("c14-", "c13-")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "- ") {
			lines = append(lines, l)
		}
	}
	if !strings.HasPrefix(md, "Claims tested here:") || len(lines) != 2 { // c13, c14
		t.Fatalf("ClaimsMarkdown(c14-, c13-):\n%s\nwant a heading and two claims", md)
	}
	claims, err := readFile(filepath.Join(p.Dir(), "tables", "claims.md"))
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, l := range strings.Split(claims, "\n") {
		if strings.HasPrefix(l, "| c14-unc-mixed |") {
			row = l
		}
	}
	cells := strings.Split(row, " | ")
	if len(cells) < 9 {
		t.Fatalf("tables/claims.md has no c14-unc-mixed row: %q", row)
	}
	// Columns: id, claim, where, regime, kind, arms, effect, …
	effect := strings.ReplaceAll(strings.Fields(cells[6])[0]+" "+strings.Fields(cells[6])[1]+" "+strings.Fields(cells[6])[2], "−", "-")
	verdict := strings.Trim(strings.Fields(cells[len(cells)-1])[0], "*|")
	got := lines[1]
	if !strings.Contains(got, "`c14-unc-mixed`") || !strings.Contains(got, "**"+verdict+"**") || !strings.Contains(got, "effect "+effect) {
		t.Errorf("notebook line %q: want the id, **%s** and effect %s (tables/claims.md)", got, verdict, effect)
	}
}

// TestTableOfAnotherScale: a table that names its own scale (rsk's table5p_init: scale pretrained)
// is built from that scale's records in a small-scale notebook, and reads exactly as the
// committed tables/table5p_init.md that `dmlkit tables rsk` wrote (another caller of BuildTable).
func TestTableOfAnotherScale(t *testing.T) {
	p := &Paper{Root: root, Name: "rsk", Scale: "small"}
	tabs, err := p.TablesMarkdown("table5p_init")
	if err != nil {
		t.Fatal(err)
	}
	want, err := readFile(filepath.Join(p.Dir(), "tables", "table5p_init.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tabs) != 1 || strings.TrimSpace(tabs[0]) != strings.TrimSpace(want) {
		t.Errorf("table5p_init in the notebook:\n%s\nwant tables/table5p_init.md:\n%s", tabs[0], want)
	}
}

func TestTablesAndFigures(t *testing.T) {
	p := &Paper{Root: root, Name: "idml", Scale: "small"}
	tabs, err := p.TablesMarkdown("table1_losses", "tune_lr-contrastive")
	if err != nil {
		t.Fatal(err)
	}
	if len(tabs) != 2 || !strings.Contains(tabs[0], "Multi-similarity") || !strings.Contains(tabs[1], "optimizer.lr") && !strings.Contains(tabs[1], "learning rate") {
		t.Errorf("tables: %d, first %.200q, second %.200q", len(tabs), tabs[0], tabs[1])
	}
	if _, err := p.TablesMarkdown("no_such_table"); err == nil || !strings.Contains(err.Error(), "spec.yaml") {
		t.Errorf("unknown table: %v, want an error naming spec.yaml", err)
	}
	figs, missing, err := p.Figures("fig4_tau", "not_drawn")
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) != 1 || len(missing) != 1 || missing[0] != "not_drawn" {
		t.Fatalf("figures %d, missing %v", len(figs), missing)
	}
	if !bytes.HasPrefix(figs[0].PNG, []byte("\x89PNG\r\n\x1a\n")) {
		t.Error("fig4_tau.png is not a PNG")
	}
	// figures/idml/README.md (written by `dmlkit figures`) heads the figure with its stands_for and
	// gives the caption below the image.
	readme, err := readFile(filepath.Join(root, "figures", "idml", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readme, "## fig4_tau — seed 002 Fig. 4 (left: τ)") || !strings.HasPrefix(figs[0].Caption, "**seed 002 Fig. 4 (left: τ).** ") ||
		!strings.Contains(readme, strings.TrimPrefix(figs[0].Caption, "**seed 002 Fig. 4 (left: τ).** ")) {
		t.Errorf("caption %q does not match figures/idml/README.md", figs[0].Caption)
	}
	if got := p.MissingFigures(missing); !strings.Contains(got, "`not_drawn`") || !strings.Contains(got, "dmlkit figures idml") {
		t.Errorf("MissingFigures: %q", got)
	}
	if p.MissingFigures(nil) != "" {
		t.Error("MissingFigures(nil) is not empty")
	}
}

func TestDistinct(t *testing.T) {
	recs := []sweep.Record{{Config: map[string]any{"a": 2}}, {Config: map[string]any{"a": 1}}, {Config: map[string]any{"a": 2}}, {Config: map[string]any{}}}
	get := func(r *sweep.Record) (any, bool) { v, ok := r.Config["a"]; return v, ok }
	if got := Distinct(recs, get); got != "1, 2" {
		t.Errorf("Distinct = %q, want \"1, 2\"", got)
	}
	if got := Distinct(recs[3:], get); got != "—" {
		t.Errorf("Distinct of no values = %q, want —", got)
	}
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func TestAbstractMarkdown(t *testing.T) {
	p := &Paper{Root: root, Name: "idml", Scale: "small"}
	md, err := p.AbstractMarkdown()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Report()
	if err != nil {
		t.Fatal(err)
	}
	h, c, i := rep.Counts()
	m := 0 // the method did not train here: counted apart from the inconclusive verdicts
	for _, v := range rep.Verdicts {
		if v.Cause == judge.CauseMethodUntrained {
			m++
		}
	}
	counts := fmt.Sprintf("**%d held, %d contradicted, %d inconclusive**", h, c, i)
	if m > 0 {
		counts = fmt.Sprintf("**%d held, %d contradicted, %d where the method did not train here, %d inconclusive**", h, c, m, i-m)
	}
	for _, want := range []string{"**Abstract.**", counts, fmt.Sprintf("%d claims", len(rep.Verdicts)), "(../docs/reproducing.md)"} {
		if !strings.Contains(md, want) {
			t.Errorf("abstract lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "reproducing.md")); err != nil {
		t.Errorf("the abstract links docs/reproducing.md: %v", err)
	}
	// The reasons of the inconclusive verdicts add up to their count (the method's own failures
	// are counted apart, not among them).
	if _, why, ok := strings.Cut(md, "(inconclusive by "); ok {
		why, _, _ = strings.Cut(why, ")")
		sum := 0
		for _, part := range strings.Split(why, ", ") {
			f := strings.Fields(part)
			n, err := strconv.Atoi(f[len(f)-1])
			if err != nil {
				t.Fatalf("reason %q: %v", part, err)
			}
			sum += n
		}
		if sum != i-m {
			t.Errorf("the reasons add up to %d, want the %d inconclusive verdicts: %s", sum, i-m, why)
		}
	} else if i-m > 0 && !strings.Contains(md, fmt.Sprintf("%d inconclusive**. ", i-m)) {
		t.Errorf("abstract without reasons for its inconclusive verdicts:\n%s", md)
	}
}

// TestClaimsMarkdownStalePrefix: a notebook naming claims that claims.yaml no longer has (the CIT
// notebook's ShowClaims("h1c-") after the h1c claims became h1's second form) fails.
func TestClaimsMarkdownStalePrefix(t *testing.T) {
	p := &Paper{Root: root, Name: "idml", Scale: "small"}
	_, err := p.ClaimsMarkdown("c14-", "c99-gone-")
	if err == nil || !strings.Contains(err.Error(), `"c99-gone-"`) || strings.Contains(err.Error(), `"c14-"`) {
		t.Errorf("a stale prefix: err = %v", err)
	}
}

// TestReportReadsEveryScale: a notebook's claims report evaluates the pretrained regime's claims
// on the pretrained scale's stored records, as dmlkit tables does (tcm has them).
func TestReportReadsEveryScale(t *testing.T) {
	p := &Paper{Root: root, Name: "tcm", Scale: "small"}
	rep, err := p.Report()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		if v.Claim.ID == "t2p-opis-cifar10-smoothap" {
			if v.Cause == judge.CauseNoRecords || len(v.Seeds) != 5 {
				t.Errorf("%s: cause %q, %d seeds; want the 5 stored pretrained seeds", v.Claim.ID, v.Cause, len(v.Seeds))
			}
			return
		}
	}
	t.Error("no claim t2p-opis-cifar10-smoothap")
}

// TestTableSourcesFolded: in a notebook the sources of a table's paper numbers fold under it.
// TCM's Table 2 (R@k) cites 24 numbers of the paper, whose sources used to fill 800 px of the
// export under the table; now one summary line shows, and the list opens on a click.
func TestTableSourcesFolded(t *testing.T) {
	p := &Paper{Root: root, Name: "tcm", Scale: "small"}
	tabs, err := p.TablesMarkdown("table2_recall")
	if err != nil {
		t.Fatal(err)
	}
	md := tabs[0]
	if want := "\n<details><summary>Paper numbers: where the 24 numbers in brackets come from</summary>\n<ol>\n<li>seed 000 Table 2, ArcFace + TCM row, R@1 column"; !strings.Contains(md, want) {
		t.Errorf("table2_recall in the notebook lacks %q:\n%s", want, md)
	}
	if strings.Contains(md, "\nPaper numbers:\n") || strings.Count(md, "<li>") != 24 || !strings.HasSuffix(md, "</ol>\n</details>\n") {
		t.Errorf("table2_recall in the notebook: want its 24 sources folded, not listed:\n%s", md)
	}
}

// TestFigureShownWidth: a notebook shows a committed figure at half its pixels — CIT's Table 3
// figure, one panel 990 pixels wide, at 495 px; TCM's Fig. 9, two panels in 2070 pixels, at 1035.
func TestFigureShownWidth(t *testing.T) {
	for _, tc := range []struct {
		paper, name  string
		width, shown int
	}{
		{"cit", "table3_gamma_r1", 990, 495},
		{"tcm", "fig9_variants_r1_curve", 2070, 1035},
	} {
		p := &Paper{Root: root, Name: tc.paper, Scale: "small"}
		figs, _, err := p.Figures(tc.name)
		if err != nil || len(figs) != 1 {
			t.Fatalf("%s %s: %d figures, %v", tc.paper, tc.name, len(figs), err)
		}
		f := figs[0]
		if f.Width != tc.width || f.ShownWidth() != tc.shown {
			t.Errorf("%s %s: width %d shown at %d, want %d shown at %d", tc.paper, tc.name, f.Width, f.ShownWidth(), tc.width, tc.shown)
		}
		md, ok := f.Metadata()["image/png"].(map[string]int)
		if !ok || md["width"] != tc.shown {
			t.Errorf("%s %s: Metadata() = %v, want {image/png: {width: %d}}", tc.paper, tc.name, f.Metadata(), tc.shown)
		}
	}
	if md := (Figure{Name: "x", PNG: []byte("not a png")}).Metadata(); md != nil {
		t.Errorf("Metadata of a figure of unknown width = %v, want nil", md)
	}
}
