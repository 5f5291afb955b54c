package report

import (
	"fmt"
	"html"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Table is a rendered-independent results table built by [BuildTable].
type Table struct {
	Spec    sweep.TableSpec
	Header  []string // column titles
	Align   []byte   // 'l' or 'r' per column
	Rows    [][]Cell
	Sources []string // citations of the paper's numbers, numbered from 1 in order of first use
	Records int      // records used
	// Selected is the row Spec.Select chose (nil without Spec.Select); that row's first cell is
	// marked "(selected)".
	Selected *sweep.SelectedRow
	// Failed describes the runs the table's where selects that are stored as failed (diverged):
	// left out of the rows, they are listed below the table so that a missing seed or row is
	// explained.
	Failed []string
}

// Cell is one table entry. Text cells carry Text; number cells carry Mean (and Std when HasStd).
type Cell struct {
	Text   string
	Number bool
	Mean   float64
	Std    float64
	HasStd bool
	Bold   bool
	Cite   int // 1-based index into Table.Sources, 0: none
}

// BuildTable aggregates records (already filtered by scale) into the table t describes. A row
// with two records of one seed is an error ([Group.CheckSeeds]): its mean ± std would not be one
// over seeds. So is a NaN value of one of the table's metrics in a selected record.
func BuildTable(t sweep.TableSpec, records []sweep.Record, refs []sweep.Reference) (*Table, error) {
	recs := sweep.Select(records, "", t.Where)
	// A NaN metric would print as "NaN ± NaN" in the row and poison its mean: refused, naming the
	// record and the file it was read from.
	for _, m := range t.Metrics {
		for i := range recs {
			if v, ok := recs[i].Metrics[m]; ok && math.IsNaN(v) {
				return nil, fmt.Errorf("table %q: metric %q is NaN in %s: mark the run failed or narrow the where", t.Name, m, recs[i].Where())
			}
		}
	}
	groups := sweep.GroupBy(recs, t.Rows)
	for _, g := range groups {
		if err := g.CheckSeeds(); err != nil {
			return nil, fmt.Errorf("table %q: row %w", t.Name, err)
		}
	}
	var failed []string
	for _, r := range sweep.SelectRecords(records, "", t.Where, true) {
		if r.Failed == "" {
			continue
		}
		var parts []string
		for _, k := range t.Rows {
			v, _ := r.Value(k)
			parts = append(parts, t.Label(k)+" "+valueText(&t, k, v))
		}
		parts = append(parts, fmt.Sprintf("seed %d", r.Seed))
		what := r.Failed
		if r.FailedStep > 0 {
			what = fmt.Sprintf("step %d: %s", r.FailedStep, r.Failed)
		}
		failed = append(failed, fmt.Sprintf("%s (%s; %s)", strings.Join(parts, ", "), r.Hash, what))
	}
	factor := t.Factor
	if factor == 0 {
		factor = 1
	}
	tab := &Table{Spec: t, Records: len(recs), Failed: failed}
	refs = refsForTable(refs, t.Name)
	for _, k := range t.Rows {
		tab.Header = append(tab.Header, t.Label(k))
		tab.Align = append(tab.Align, 'l')
	}
	// A paper column appears for a metric when at least one group has a reference for it.
	hasRef := map[string]bool{}
	if !t.NoRef {
		for _, m := range t.Metrics {
			for _, g := range groups {
				if _, ok := sweep.ReferenceFor(refs, g, m); ok {
					hasRef[m] = true
					break
				}
			}
		}
	}
	for _, m := range t.Metrics {
		tab.Header = append(tab.Header, t.Label(m))
		tab.Align = append(tab.Align, 'r')
		if hasRef[m] {
			tab.Header = append(tab.Header, t.Label(m)+" (paper)")
			tab.Align = append(tab.Align, 'r')
		}
	}
	tab.Header = append(tab.Header, "seeds")
	tab.Align = append(tab.Align, 'r')

	cites := map[string]int{}
	best := map[string]float64{}
	for _, m := range t.Metrics {
		best[m] = math.NaN()
		for _, g := range groups {
			s := g.Stat(m)
			if s.N == 0 || math.IsNaN(s.Mean) {
				continue
			}
			if math.IsNaN(best[m]) || (t.Best == "max" && s.Mean > best[m]) || (t.Best == "min" && s.Mean < best[m]) {
				best[m] = s.Mean
			}
		}
	}
	for _, g := range groups {
		var row []Cell
		for i, v := range g.Values {
			row = append(row, Cell{Text: valueText(&t, t.Rows[i], v)})
		}
		for _, m := range t.Metrics {
			s := g.Stat(m)
			if s.N == 0 {
				row = append(row, Cell{Text: "—"})
			} else {
				row = append(row, Cell{Number: true, Mean: s.Mean * factor, Std: s.Std * factor, HasStd: s.N > 1,
					Bold: t.Best != "" && s.Mean == best[m]})
			}
			if !hasRef[m] {
				continue
			}
			ref, ok := sweep.ReferenceFor(refs, g, m)
			if !ok {
				row = append(row, Cell{Text: "—"})
				continue
			}
			c, seen := cites[ref.Source]
			if !seen {
				tab.Sources = append(tab.Sources, ref.Source)
				c = len(tab.Sources)
				cites[ref.Source] = c
			}
			row = append(row, Cell{Number: true, Mean: ref.Value, Std: ref.Std, HasStd: ref.Std != 0, Cite: c})
		}
		row = append(row, Cell{Text: strconv.Itoa(len(g.Records))})
		tab.Rows = append(tab.Rows, row)
	}
	if t.Select != nil {
		sel := sweep.SelectRow(*t.Select, groups)
		tab.Selected = &sel
		if sel.Row >= 0 && len(tab.Rows[sel.Row]) > 0 && !tab.Rows[sel.Row][0].Number {
			tab.Rows[sel.Row][0].Text += " (selected)"
		}
	}
	return tab, nil
}

// failedLine is the note below a table that lists its runs stored as failed.
func (t *Table) failedLine() string {
	runs := "runs"
	if len(t.Failed) == 1 {
		runs = "run"
	}
	return fmt.Sprintf("Left out: %d %s stored as failed — %s.", len(t.Failed), runs, strings.Join(t.Failed, "; "))
}

func (t *Table) factor() float64 {
	if t.Spec.Factor == 0 {
		return 1
	}
	return t.Spec.Factor
}

func (t *Table) digits() int {
	if t.Spec.Digits != nil {
		return *t.Spec.Digits
	}
	return 2
}

// Markdown renders the table as GitHub-flavoured Markdown, with the sources as a numbered list.
func (t *Table) Markdown() string { return t.markdown(false) }

// FoldedMarkdown is [Table.Markdown] with the sources of the paper's numbers folded in a closed
// <details> element under the table (a notebook's results: one line where a table's two dozen
// sources used to take 800 px; the [n] beside each paper number is its item in the list).
func (t *Table) FoldedMarkdown() string { return t.markdown(true) }

func (t *Table) markdown(foldSources bool) string {
	var b strings.Builder
	if t.Spec.Caption != "" {
		fmt.Fprintf(&b, "**%s**\n\n", mdText(t.Spec.Caption))
	}
	b.WriteString("|")
	for _, h := range t.Header {
		b.WriteString(" " + mdText(h) + " |")
	}
	b.WriteString("\n|")
	for _, a := range t.Align {
		if a == 'r' {
			b.WriteString("---:|")
		} else {
			b.WriteString(":---|")
		}
	}
	b.WriteString("\n")
	d := t.digits()
	for _, row := range t.Rows {
		b.WriteString("|")
		for _, c := range row {
			s := mdText(c.Text)
			if c.Number {
				s = judge.FmtNum(c.Mean, d)
				if c.HasStd {
					s += " ± " + judge.FmtNum(c.Std, d)
				}
				if c.Bold {
					s = "**" + s + "**"
				}
				if c.Cite > 0 {
					s += fmt.Sprintf(" [%d]", c.Cite)
				}
			}
			b.WriteString(" " + s + " |")
		}
		b.WriteString("\n")
	}
	if len(t.Rows) == 0 {
		b.WriteString("\n_No stored results match this table._\n")
	}
	if t.Selected != nil {
		b.WriteString("\n" + selectionLine(*t.Spec.Select, *t.Selected, t.Spec.Label, func(k string, v any) string { return valueText(&t.Spec, k, v) }, t.factor(), d, false) + "\n")
	}
	if len(t.Failed) > 0 {
		b.WriteString("\n" + mdText(t.failedLine()) + "\n")
	}
	if len(t.Sources) > 0 && foldSources {
		what := fmt.Sprintf("the %d numbers in brackets come", len(t.Sources))
		if len(t.Sources) == 1 {
			what = "the number in brackets comes"
		}
		fmt.Fprintf(&b, "\n<details><summary>Paper numbers: where %s from</summary>\n<ol>\n", what)
		for _, s := range t.Sources {
			fmt.Fprintf(&b, "<li>%s</li>\n", html.EscapeString(s))
		}
		b.WriteString("</ol>\n</details>\n")
	} else if len(t.Sources) > 0 {
		b.WriteString("\nPaper numbers:\n")
		for i, s := range t.Sources {
			fmt.Fprintf(&b, "[%d] %s  \n", i+1, mdText(s))
		}
	}
	return b.String()
}

// LaTeX renders the table as a booktabs table environment; label is used for \label{...}.
func (t *Table) LaTeX(label string) string {
	var b strings.Builder
	b.WriteString("% Generated by `dmlkit tables` from stored results; do not edit.\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n")
	if t.Spec.Caption != "" {
		fmt.Fprintf(&b, "\\caption{%s}\n", judge.TexEscape(t.Spec.Caption))
	}
	if label != "" {
		fmt.Fprintf(&b, "\\label{%s}\n", label)
	}
	fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", string(t.Align))
	hs := make([]string, len(t.Header))
	for i, h := range t.Header {
		hs[i] = judge.TexEscape(h)
	}
	b.WriteString(strings.Join(hs, " & ") + " \\\\\n\\midrule\n")
	d := t.digits()
	for _, row := range t.Rows {
		cs := make([]string, len(row))
		for i, c := range row {
			if !c.Number {
				cs[i] = judge.TexEscape(c.Text)
				if c.Text == "—" {
					cs[i] = "--"
				}
				continue
			}
			s := judge.FmtNum(c.Mean, d)
			if c.Bold {
				s = "\\mathbf{" + s + "}"
			}
			if c.HasStd {
				s += " \\pm " + judge.FmtNum(c.Std, d)
			}
			s = "$" + s + "$"
			if c.Cite > 0 {
				s += fmt.Sprintf("\\textsuperscript{%d}", c.Cite)
			}
			cs[i] = s
		}
		b.WriteString(strings.Join(cs, " & ") + " \\\\\n")
	}
	b.WriteString("\\bottomrule\n\\end{tabular}\n")
	if t.Selected != nil {
		b.WriteString("\\par\\smallskip\\footnotesize " + selectionLine(*t.Spec.Select, *t.Selected, t.Spec.Label, func(k string, v any) string { return valueText(&t.Spec, k, v) }, t.factor(), d, true) + "\n")
	}
	if len(t.Failed) > 0 {
		b.WriteString("\\par\\smallskip\\footnotesize " + judge.TexEscape(t.failedLine()) + "\n")
	}
	if len(t.Sources) > 0 {
		b.WriteString("\\par\\smallskip\\footnotesize Paper numbers: ")
		for i, s := range t.Sources {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "\\textsuperscript{%d}%s", i+1, judge.TexEscape(s))
		}
		b.WriteString(".\n")
	}
	b.WriteString("\\end{table}\n")
	return b.String()
}

// TableResult reports one table of [RenderTables].
type TableResult struct {
	Name  string
	Table *Table
	Files []string
	Err   error // ErrNoRecords (wrapped) when no stored record matched
}

// RenderTables builds every table of the spec from records and writes outDir/<name>.md and
// outDir/<name>.tex through w (nil: [atomicfile.Disk], each file written to a temporary file and
// renamed into place; an [*atomicfile.Batch] holds them until it commits). scale selects the
// records of tables that name no scale ("" = all scales).
func RenderTables(w atomicfile.Writer, s *sweep.Spec, records []sweep.Record, scale, outDir string) []TableResult {
	var out []TableResult
	plans := map[string]*sweep.Plan{} // resolved once per scale for all tuning tables
	for _, t := range s.AllTables() {
		res := TableResult{Name: t.Name}
		sc := scale
		if t.Scale != "" {
			sc = t.Scale
		}
		// With the failed runs: BuildTable leaves them out of the rows and lists them.
		recs := s.TuneRunsOnly(t.Name, sc, records, sweep.SelectRecords(records, sc, t.Where, true), plans)
		if len(recs) == 0 {
			res.Err = fmt.Errorf("table %q: %w (scale %q)", t.Name, ErrNoRecords, sc)
			out = append(out, res)
			continue
		}
		tab, err := BuildTable(t, recs, s.Reference)
		if err != nil {
			res.Err = err
			out = append(out, res)
			continue
		}
		res.Table = tab
		md := filepath.Join(outDir, t.Name+".md")
		tex := filepath.Join(outDir, t.Name+".tex")
		if err := writeOut(w, md, []byte(res.Table.Markdown())); err != nil {
			res.Err = err
		} else if err := writeOut(w, tex, []byte(res.Table.LaTeX("tab:"+s.Paper+"-"+t.Name))); err != nil {
			res.Err = err
		} else {
			res.Files = []string{md, tex}
		}
		out = append(out, res)
	}
	return out
}

// refsForTable returns the references a table uses: those scoped to it (Reference.Tables names
// it) when there are any — then no unscoped reference mixes in — else the unscoped ones.
func refsForTable(refs []sweep.Reference, table string) []sweep.Reference {
	var own, general []sweep.Reference
	for _, r := range refs {
		switch {
		case len(r.Tables) == 0:
			general = append(general, r)
		case slices.Contains(r.Tables, table):
			own = append(own, r)
		}
	}
	if len(own) > 0 {
		return own
	}
	return general
}

// writeOut writes data to path through w (nil: [atomicfile.Disk], which writes a temporary file
// next to path and renames it into place; a device or pipe is written directly).
func writeOut(w atomicfile.Writer, path string, data []byte) error {
	if err := atomicfile.Or(w).WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	return nil
}

// valueText is the text of a row value: the table's label "key=value" when the spec gives one (as
// FormatValue writes the value, so "data.corrupt.label_noise=null" names the records that do not
// set the key), else the paper's labels map with its fallbacks ([sweep.LabelMap.Value]: "—" for a key
// the records do not set).
func valueText(t *sweep.TableSpec, key string, v any) string {
	if l, ok := t.Labels[key+"="+sweep.FormatValue(v)]; ok {
		return l
	}
	// The paper's text of a value names its key for a legend ("m = 0.05", "λ = 1 (…)"); in a
	// column headed by the key, the value alone.
	return sweep.SymbolPrefix.ReplaceAllString(t.Paper.Value(key, v), "")
}

// selectionLine describes the selection below a table.
func selectionLine(sel sweep.Selection, r sweep.SelectedRow, label func(string) string, value func(string, any) string, factor float64, digits int, tex bool) string {
	esc := judge.MdEscape
	if tex {
		esc = judge.TexEscape
	}
	if r.Row < 0 {
		return esc(fmt.Sprintf("Selected: none (no row has %s).", sel.Metric))
	}
	var kv []string
	for i, k := range r.Keys {
		kv = append(kv, label(k)+" = "+value(k, r.Values[i]))
	}
	dir := "highest"
	if sel.Lower {
		dir = "lowest"
	}
	s := fmt.Sprintf("Selected: %s — the %s %s (%s)", strings.Join(kv, ", "), dir, label(sel.Metric), judge.FmtNum(r.Metric*factor, digits))
	if sel.Guard != "" {
		gf := sel.GuardFactor
		if gf == 0 {
			gf = 1
		}
		s += fmt.Sprintf(" among the %d rows with %s within %s of the best (%s; this row %s)", r.Candidates, label(sel.Guard),
			judge.FmtNum(sel.Within*gf, digits), judge.FmtNum(r.BestGuard*gf, digits), judge.FmtNum(r.Guard*gf, digits))
	}
	s += "."
	for _, k := range r.Edge {
		s += fmt.Sprintf(" %s is at the edge of its grid: the optimum may lie outside it.", label(k))
	}
	if tex {
		return "\\textbf{" + esc(s) + "}"
	}
	return "**" + esc(s) + "**"
}

// mdText is [judge.MdEscape] with * and _ escaped too, for the texts of results tables: a product in a
// formula ("0.9 * a + 0.1 * b") or an underscore would otherwise turn what lies between italic.
func mdText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}
