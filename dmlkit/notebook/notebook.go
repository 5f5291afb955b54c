// Package notebook is what the paper notebooks (notebooks/<paper>.ipynb) show of one reproduction:
// its stored records, the verdicts of claims.yaml, the spec's tables with the paper's numbers beside
// ours, and the committed figures with their captions — as Markdown and PNG bytes that the notebook
// displays (this package never prints). Every paper notebook calls it the same way, so a notebook
// holds only its own text and the cells that choose what to show.
package notebook

import (
	"bytes"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Paper is one reproduction seen from a notebook.
type Paper struct {
	// Root is the repository root (the notebook lives in Root/notebooks).
	Root string
	// Name is the directory under reproductions/ and figures/ ("tcm", "idml", …).
	Name string
	// Scale is the run size: "smoke" (CI: the notebook retrains the smoke sweep), "small" (the
	// stored records, default) or "full".
	Scale string
	// Retrain says whether the notebook trains a sweep through the library: always at smoke, at
	// small or full only when asked (DMLKIT_RETRAIN=1 in [FromEnv]).
	Retrain bool
	// Results, when set, is where a retrained small or full sweep writes (DMLKIT_RESULTS in
	// [FromEnv]); empty: a directory under the system's temporary directory.
	Results string

	// memo holds what the methods read and compute once per Paper (a notebook cell is one
	// process, which builds its Paper anew): the stored records and the claims report.
	memo struct {
		recs []sweep.Record
		rep  *judge.ClaimsReport
	}
}

// FromEnv returns the paper named name of the checkout at root with the notebook's environment:
// SCALE (default "small"), DMLKIT_RETRAIN=1 and DMLKIT_RESULTS.
func FromEnv(root, name string) *Paper {
	p := &Paper{Root: root, Name: name, Scale: os.Getenv("SCALE"), Results: os.Getenv("DMLKIT_RESULTS")}
	if p.Scale == "" {
		p.Scale = "small"
	}
	p.Retrain = p.Scale == "smoke" || os.Getenv("DMLKIT_RETRAIN") == "1"
	return p
}

// ShownScale is the scale of the records the tables, claims and figures show: small (also at
// smoke, so that CI runs every cell on the stored records) or full.
func (p *Paper) ShownScale() string {
	if p.Scale == "full" {
		return "full"
	}
	return "small"
}

// Dir holds spec.yaml, claims.yaml, paper.yaml and the stored results.
func (p *Paper) Dir() string { return filepath.Join(p.Root, "reproductions", p.Name) }

// ResultsDir is where the shown records live: the stored results, or, when retraining at small or
// full, Results (default: <temp>/dmlkit-<name>-<scale>/results; a rerun resumes there).
func (p *Paper) ResultsDir() string {
	if p.Scale == "smoke" || !p.Retrain {
		return filepath.Join(p.Dir(), "results")
	}
	if p.Results != "" {
		return p.Results
	}
	return filepath.Join(os.TempDir(), "dmlkit-"+p.Name+"-"+p.Scale, "results")
}

// Spec loads spec.yaml (with paper.yaml's references).
func (p *Paper) Spec() (*sweep.Spec, error) {
	return sweep.Load(filepath.Join(p.Dir(), "spec.yaml"))
}

// Records are the stored records of the shown scale.
func (p *Paper) Records() ([]sweep.Record, error) {
	recs, err := p.allRecords()
	if err != nil {
		return nil, err
	}
	return sweep.Select(recs, p.ShownScale(), nil), nil
}

// allRecords are the stored records of every scale in the results directory (the claims of the
// pretrained regime read the pretrained scale's), superseded ones left out.
func (p *Paper) allRecords() ([]sweep.Record, error) {
	if p.memo.recs != nil {
		return p.memo.recs, nil
	}
	recs, _, err := sweep.NewStore(p.ResultsDir()).Load()
	if err != nil {
		return nil, err
	}
	if spec, err := p.Spec(); err == nil {
		reproduce.Register()
		recs, _ = judge.DropSuperseded(spec, recs) // as dmlkit tables and figures do
	}
	p.memo.recs = recs
	return recs, nil
}

// Report evaluates claims.yaml on the records as `dmlkit tables <paper> --include-dirty` does:
// records written from a tree with uncommitted changes are counted, and the report then says
// "Provisional".
func (p *Paper) Report() (*judge.ClaimsReport, error) {
	if p.memo.rep != nil {
		return p.memo.rep, nil
	}
	cs, err := judge.LoadClaims(filepath.Join(p.Dir(), "claims.yaml"))
	if err != nil {
		return nil, err
	}
	recs, err := p.allRecords() // each claim reads its own scale's
	if err != nil {
		return nil, err
	}
	spec, err := p.Spec()
	if err != nil {
		return nil, err
	}
	reproduce.Register() // the trainer's defaults, which the tuning rule compares configurations with
	rep, err := cs.Report(recs, judge.ClaimOptions{Scale: p.ShownScale(), IncludeDirty: true, Spec: spec})
	if err == nil {
		p.memo.rep = rep
	}
	return rep, err
}

// ClaimsMarkdown lists the verdicts of the claims whose id starts with one of the prefixes (all
// claims without prefixes; a prefix that no claim id starts with is an error, so that a notebook
// cannot go on naming claims that were renamed or removed), one bullet each: the verdict, the
// paper's words, the claim id and source, the mean paired effect with its 95 % interval (claim
// factor and digits applied; none for rank claims), and the verdict's reason.
func (p *Paper) ClaimsMarkdown(prefixes ...string) (string, error) {
	rep, err := p.Report()
	if err != nil {
		return "", err
	}
	used := make([]bool, len(prefixes))
	var b strings.Builder
	b.WriteString("Claims tested here:\n\n")
	for _, v := range rep.Verdicts {
		match := false
		for i, s := range prefixes {
			if strings.HasPrefix(v.Claim.ID, s) {
				used[i], match = true, true
			}
		}
		if len(prefixes) > 0 && !match {
			continue
		}
		c := v.Claim
		f, d := c.Factor, 2
		if f == 0 {
			f = 1
		}
		if c.Digits != nil {
			d = *c.Digits
		}
		eff := ""
		if len(v.Diffs) > 0 && c.Kind != "rank" {
			eff = fmt.Sprintf("; effect %+.*f", d, v.Mean*f)
			if !math.IsNaN(v.Lo) {
				eff += fmt.Sprintf(" [%+.*f, %+.*f]", d, v.Lo*f, d, v.Hi*f)
			}
			if c.Unit != "" {
				eff += " " + c.Unit
			}
		}
		fmt.Fprintf(&b, "- **%s** — %s (`%s`, %s%s; %s)\n", v.Verdict, c.Paper, c.ID, c.Source, eff, rep.Labels.Humanize(v.Reason))
	}
	var stale []string
	for i, u := range used {
		if !u {
			stale = append(stale, strconv.Quote(prefixes[i]))
		}
	}
	if len(stale) > 0 {
		return "", fmt.Errorf("%s: no claim id starts with %s: the notebook names claims that claims.yaml no longer has", filepath.Join(p.Dir(), "claims.yaml"), strings.Join(stale, ", "))
	}
	return b.String(), nil
}

// TablesMarkdown returns the named tables of the spec (tuning tables included), each built from the
// records with the paper's numbers beside ours (report.BuildTable) and their sources folded
// (report.Table.FoldedMarkdown), or a one-line note when
// the table has no records of its scale yet (the table's own scale, else the shown one). An unknown
// name is an error.
func (p *Paper) TablesMarkdown(names ...string) ([]string, error) {
	spec, err := p.Spec()
	if err != nil {
		return nil, err
	}
	recs, err := p.allRecords() // a table that names its scale reads that scale's records (TableRecords)
	if err != nil {
		return nil, err
	}
	all := spec.AllTables()
	var out []string
	for _, name := range names {
		i := slices.IndexFunc(all, func(t sweep.TableSpec) bool { return t.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("%s: no table %q", filepath.Join(p.Dir(), "spec.yaml"), name)
		}
		t := all[i]
		if rs := spec.TableRecords(t, p.ShownScale(), recs); len(rs) == 0 {
			scale := p.ShownScale()
			if t.Scale != "" {
				scale = t.Scale
			}
			out = append(out, fmt.Sprintf("*Table `%s` (%s): no stored %s-scale records yet.*", name, t.Caption, scale))
		} else {
			tab, err := report.BuildTable(t, rs, spec.Reference)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", filepath.Join(p.Dir(), "spec.yaml"), err)
			}
			out = append(out, tab.FoldedMarkdown())
		}
	}
	return out, nil
}

// Figure is a committed figure: figures/<paper>/<Name>.png and its caption.
type Figure struct {
	Name    string
	PNG     []byte
	Caption string // "**<stands_for>.** <caption>" from the spec, as figures/<paper>/README.md
	Width   int    // the PNG's width, pixels (0: not a PNG)
	Shown   int    // the width to show it at, px (0: half its pixels, [Figure.ShownWidth])
}

// ShownWidth is the width a notebook shows the figure at, px: half its pixels. The committed
// figures are drawn 990 pixels a panel, with tick labels about 30 pixels high; shown at their
// pixel size they took 800 px of height each, and a paper notebook's results 25,000-40,000 px. At half size a panel is 495 px wide and its labels as
// large as the text around it; a two-panel figure (2070 pixels) still fills the column.
func (f Figure) ShownWidth() int {
	if f.Shown > 0 {
		return f.Shown
	}
	return (f.Width + 1) / 2
}

// Metadata is the display metadata that shows the figure at [Figure.ShownWidth] (Jupyter's
// image/png width, which JupyterLab and nbconvert's HTML export honour):
// {"image/png": {"width": w}}; nil when the width is unknown.
func (f Figure) Metadata() map[string]any {
	if f.Width <= 0 {
		return nil
	}
	return map[string]any{"image/png": map[string]int{"width": f.ShownWidth()}}
}

// pngWidth reads the width of a PNG from its header (0 when b is not a PNG).
func pngWidth(b []byte) int {
	c, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	return c.Width
}

// Figures reads the named committed figures (the notebook does not redraw them: `dmlkit figures
// <paper>` draws them from the same stored records) with the captions the spec gives them, and
// lists the names that have no PNG yet. A name the spec does not list gets an empty caption.
func (p *Paper) Figures(names ...string) (figs []Figure, missing []string, err error) {
	spec, err := p.Spec()
	if err != nil {
		return nil, nil, err
	}
	for _, name := range names {
		png, err := os.ReadFile(filepath.Join(p.Root, "figures", p.Name, name+".png"))
		if err != nil {
			if os.IsNotExist(err) {
				missing = append(missing, name)
				continue
			}
			return nil, nil, err
		}
		caption := ""
		if i := slices.IndexFunc(spec.Figures, func(f sweep.FigureSpec) bool { return f.Name == name }); i >= 0 {
			caption = strings.TrimSpace(spec.Figures[i].Caption)
			if s := spec.Figures[i].StandsFor; s != "" {
				caption = "**" + s + ".** " + caption
			}
		}
		figs = append(figs, Figure{Name: name, PNG: png, Caption: caption, Width: pngWidth(png)})
	}
	return figs, missing, nil
}

// FigureCaption is the Markdown line a notebook shows under a figure: its path and caption.
func (p *Paper) FigureCaption(f Figure) string {
	return fmt.Sprintf("*`figures/%s/%s.png`* — %s", p.Name, f.Name, f.Caption)
}

// MissingFigures is the Markdown line naming figures not drawn yet ("" when none).
func (p *Paper) MissingFigures(missing []string) string {
	if len(missing) == 0 {
		return ""
	}
	q := make([]string, len(missing))
	for i, m := range missing {
		q[i] = "`" + m + "`"
	}
	return fmt.Sprintf("*Not drawn yet (`dmlkit figures %s` draws them once their runs are stored): %s.*", p.Name, strings.Join(q, ", "))
}

// Distinct lists the distinct values value gives over the records (records for which it reports
// false are skipped), formatted as sweep.FormatValue, sorted and comma-separated; "—" when
// there are none.
func Distinct(recs []sweep.Record, value func(r *sweep.Record) (any, bool)) string {
	out := distinctValues(recs, value, func(v any, _ string) string { return sweep.FormatValue(v) })
	sort.Strings(out)
	if len(out) == 0 {
		return "—"
	}
	return strings.Join(out, ", ")
}

// distinctValues is the distinct values value gives over recs in first-seen order, each
// formatted by format (with its key when value is a [Key]: [KeyedValue]).
func distinctValues(recs []sweep.Record, value func(r *sweep.Record) (any, bool), format func(v any, key string) string) []string {
	seen := map[string]bool{}
	var out []string
	for i := range recs {
		v, ok := value(&recs[i])
		if !ok {
			continue
		}
		s := format(unkeyed(v))
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// AbstractMarkdown is the abstract a paper notebook opens on: how many of the paper's claims were
// tested on how many stored runs, and how many held, were contradicted or stayed inconclusive
// (split by why: the interval, arms compared unequally, an arm that did not train, training not
// recorded, no records) — every number counted from the records by the same
// claims report the notebook's verdict table shows.
func (p *Paper) AbstractMarkdown() (string, error) {
	rep, err := p.Report()
	if err != nil {
		return "", err
	}
	recs, err := p.Records()
	if err != nil {
		return "", err
	}
	return abstractMarkdown(rep, len(recs)), nil
}

func abstractMarkdown(rep *judge.ClaimsReport, runs int) string {
	_, _, i := rep.Counts()
	causes := map[string]int{}
	for _, v := range rep.Verdicts {
		if v.Verdict == judge.VerdictInconclusive {
			causes[v.Cause]++
		}
	}
	var why []string
	interval := i
	for _, k := range []string{judge.CauseUnequal, judge.CauseUntrained, judge.CauseMethodUntrained, judge.CauseNotRecorded, judge.CauseNoRecords} {
		interval -= causes[k]
	}
	if interval > 0 {
		why = append(why, fmt.Sprintf("the interval or the seeds %d", interval))
	}
	for _, k := range []struct{ cause, words string }{
		{judge.CauseUnequal, "unequal comparison"},
		{judge.CauseUntrained, "an arm did not train"},
		{judge.CauseNotRecorded, "training not recorded"},
		{judge.CauseNoRecords, "no runs yet"},
	} {
		if n := causes[k.cause]; n > 0 {
			why = append(why, fmt.Sprintf("%s %d", k.words, n))
		}
	}
	whyText := ""
	if len(why) > 1 || len(why) == 1 && interval == 0 {
		whyText = " (inconclusive by " + strings.Join(why, ", ") + ")"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Abstract.** %d claims of the paper tested at the %s scale on %d stored runs: **%s**%s. ",
		len(rep.Verdicts), rep.Scale, runs, rep.OutcomeText(), whyText)
	b.WriteString("A claim holds when the 95 % t-interval of its per-seed paired differences lies wholly on the claimed side ([rules](../docs/reproducing.md)); each verdict is below.")
	if fs := report.Findings(rep, 3); len(fs) > 0 {
		b.WriteString("\n\n**Three findings** (rule: reversals, then the largest decisive central effects, then the method's failures to train):\n\n")
		for i, f := range fs {
			// The abstract keeps each finding's claim, verdict and effect; its why (the arms'
			// levels) is in the conclusion, so the first result stays on the first screen.
			if head, _, ok := strings.Cut(f, " — "); ok {
				f = head + "."
			}
			if i := strings.Index(f, "”: "); i >= 0 { // the arm and its training R@1: in the conclusion
				f = f[:i+len("”")] + "."
			}
			fmt.Fprintf(&b, "%d. %s\n", i+1, judge.MdEscape(f))
		}
	}
	return b.String()
}

// TableNames lists the names of the spec's tables (tuning tables included, in the spec's order)
// that start with prefix and have records of the shown scale — e.g. every "tune_lr-" table — so
// that a notebook shows every tuning step the spec has run, not the ones it had when the notebook
// was written.
func (p *Paper) TableNames(prefix string) ([]string, error) {
	spec, err := p.Spec()
	if err != nil {
		return nil, err
	}
	recs, err := p.Records()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, t := range spec.AllTables() {
		if strings.HasPrefix(t.Name, prefix) && len(spec.TableRecords(t, p.ShownScale(), recs)) > 0 {
			out = append(out, t.Name)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no table with %s-scale records has a name starting with %q", filepath.Join(p.Dir(), "spec.yaml"), p.ShownScale(), prefix)
	}
	return out, nil
}
