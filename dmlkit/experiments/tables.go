package experiments

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

// TableSpec declares a results table: one row per group of records (grouped by Rows), one column
// per metric with mean ± std over seeds, a column with the paper's number next to each metric for
// which the spec has a matching [Reference], and a column with the number of seeds. Below the
// table, the selection line when the table selects a row (hyper-parameter tuning). The paper's
// claims are not a table option: they live in claims.yaml ([ClaimSet]).
type TableSpec struct {
	Name    string            `yaml:"name"`    // output file stem
	Caption string            `yaml:"caption"` // table caption
	Scale   string            `yaml:"scale"`   // only records of this scale (default: the scale asked for, else all)
	Where   map[string]any    `yaml:"where"`   // only records matching these values
	Rows    []string          `yaml:"rows"`    // grouping keys, one column each
	Metrics []string          `yaml:"metrics"` // metric columns
	Digits  *int              `yaml:"digits"`  // decimals (default 2)
	Factor  float64           `yaml:"factor"`  // our values are multiplied by it, e.g. 100 for percent (default 1); references are shown as given
	Labels  map[string]string `yaml:"labels"`  // header text for keys and metrics; "key=value" entries: a row value's text
	Best    string            `yaml:"best"`    // "max" or "min": bold the best mean of each metric column
	NoRef   bool              `yaml:"no_reference"`
	Select  *Selection        `yaml:"select"` // a row chosen by a rule (hyperparameter tuning), reported below the table
	// Paper is the spec's labels map ([Spec.AllTables] sets it): the texts of keys, metrics and
	// values the table's own Labels do not give, with its fallbacks ([LabelMap.Key],
	// [LabelMap.Value]).
	Paper LabelMap `yaml:"-"`
}

func (t *TableSpec) check() error {
	if t.Name == "" {
		return errors.New("field \"name\": missing")
	}
	if len(t.Metrics) == 0 {
		return errors.New("field \"metrics\": missing")
	}
	if t.Digits != nil && (*t.Digits < 0 || *t.Digits > 10) {
		return fmt.Errorf("field \"digits\": %d out of range 0..10", *t.Digits)
	}
	if t.Best != "" && t.Best != "max" && t.Best != "min" {
		return fmt.Errorf("field \"best\": %q is not max or min", t.Best)
	}
	if t.Select != nil {
		if err := t.Select.check(); err != nil {
			fe := err.(*fieldError)
			return &fieldError{Path: "select." + fe.Path, Msg: fe.Msg}
		}
	}
	return nil
}

func (t *TableSpec) label(key string) string {
	if l, ok := t.Labels[key]; ok {
		return l
	}
	return t.Paper.Key(key)
}

// valueText is the text of a row value: the table's label "key=value" when the spec gives one (as
// FormatValue writes the value, so "data.corrupt.label_noise=null" names the records that do not
// set the key), else the paper's labels map with its fallbacks ([LabelMap.Value]: "—" for a key
// the records do not set).
func (t *TableSpec) valueText(key string, v any) string {
	if l, ok := t.Labels[key+"="+FormatValue(v)]; ok {
		return l
	}
	// The paper's text of a value names its key for a legend ("m = 0.05", "λ = 1 (…)"); in a
	// column headed by the key, the value alone.
	return symbolPrefix.ReplaceAllString(t.Paper.Value(key, v), "")
}

// symbolPrefix is a short symbol and " = " at the start of a value's text ("γ = ", "m = ").
var symbolPrefix = regexp.MustCompile(`^[^\s=]{1,3} = `)

// Table is a rendered-independent results table built by [BuildTable].
type Table struct {
	Spec    TableSpec
	Header  []string // column titles
	Align   []byte   // 'l' or 'r' per column
	Rows    [][]Cell
	Sources []string // citations of the paper's numbers, numbered from 1 in order of first use
	Records int      // records used
	// Selected is the row Spec.Select chose (nil without Spec.Select); that row's first cell is
	// marked "(selected)".
	Selected *SelectedRow
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
func BuildTable(t TableSpec, records []Record, refs []Reference) (*Table, error) {
	recs := Select(records, "", t.Where)
	// A NaN metric would print as "NaN ± NaN" in the row and poison its mean: refused, naming the
	// record and the file it was read from.
	for _, m := range t.Metrics {
		for i := range recs {
			if v, ok := recs[i].Metrics[m]; ok && math.IsNaN(v) {
				return nil, fmt.Errorf("table %q: metric %q is NaN in %s: mark the run failed or narrow the where", t.Name, m, recs[i].where())
			}
		}
	}
	groups := GroupBy(recs, t.Rows)
	for _, g := range groups {
		if err := g.CheckSeeds(); err != nil {
			return nil, fmt.Errorf("table %q: row %w", t.Name, err)
		}
	}
	var failed []string
	for _, r := range selectRecords(records, "", t.Where, true) {
		if r.Failed == "" {
			continue
		}
		var parts []string
		for _, k := range t.Rows {
			v, _ := r.Value(k)
			parts = append(parts, t.label(k)+" "+t.valueText(k, v))
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
		tab.Header = append(tab.Header, t.label(k))
		tab.Align = append(tab.Align, 'l')
	}
	// A paper column appears for a metric when at least one group has a reference for it.
	hasRef := map[string]bool{}
	if !t.NoRef {
		for _, m := range t.Metrics {
			for _, g := range groups {
				if _, ok := ReferenceFor(refs, g, m); ok {
					hasRef[m] = true
					break
				}
			}
		}
	}
	for _, m := range t.Metrics {
		tab.Header = append(tab.Header, t.label(m))
		tab.Align = append(tab.Align, 'r')
		if hasRef[m] {
			tab.Header = append(tab.Header, t.label(m)+" (paper)")
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
			row = append(row, Cell{Text: t.valueText(t.Rows[i], v)})
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
			ref, ok := ReferenceFor(refs, g, m)
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
		sel := selectRow(*t.Select, groups)
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

func fmtNum(v float64, digits int) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

// Markdown renders the table as GitHub-flavoured Markdown, with the sources as a numbered list.
func (t *Table) Markdown() string {
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
				s = fmtNum(c.Mean, d)
				if c.HasStd {
					s += " ± " + fmtNum(c.Std, d)
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
		b.WriteString("\n" + selectionLine(*t.Spec.Select, *t.Selected, t.Spec.label, t.Spec.valueText, t.factor(), d, false) + "\n")
	}
	if len(t.Failed) > 0 {
		b.WriteString("\n" + mdText(t.failedLine()) + "\n")
	}
	if len(t.Sources) > 0 {
		b.WriteString("\nPaper numbers:\n")
		for i, s := range t.Sources {
			fmt.Fprintf(&b, "[%d] %s  \n", i+1, mdText(s))
		}
	}
	return b.String()
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// mdText is [mdEscape] with * and _ escaped too, for the texts of results tables: a product in a
// formula ("0.9 * a + 0.1 * b") or an underscore would otherwise turn what lies between italic.
func mdText(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "*", `\*`, "_", `\_`).Replace(s)
}

// LaTeX renders the table as a booktabs table environment; label is used for \label{...}.
func (t *Table) LaTeX(label string) string {
	var b strings.Builder
	b.WriteString("% Generated by `dmlkit tables` from stored results; do not edit.\n")
	b.WriteString("\\begin{table}[t]\n\\centering\n")
	if t.Spec.Caption != "" {
		fmt.Fprintf(&b, "\\caption{%s}\n", texEscape(t.Spec.Caption))
	}
	if label != "" {
		fmt.Fprintf(&b, "\\label{%s}\n", label)
	}
	fmt.Fprintf(&b, "\\begin{tabular}{%s}\n\\toprule\n", string(t.Align))
	hs := make([]string, len(t.Header))
	for i, h := range t.Header {
		hs[i] = texEscape(h)
	}
	b.WriteString(strings.Join(hs, " & ") + " \\\\\n\\midrule\n")
	d := t.digits()
	for _, row := range t.Rows {
		cs := make([]string, len(row))
		for i, c := range row {
			if !c.Number {
				cs[i] = texEscape(c.Text)
				if c.Text == "—" {
					cs[i] = "--"
				}
				continue
			}
			s := fmtNum(c.Mean, d)
			if c.Bold {
				s = "\\mathbf{" + s + "}"
			}
			if c.HasStd {
				s += " \\pm " + fmtNum(c.Std, d)
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
		b.WriteString("\\par\\smallskip\\footnotesize " + selectionLine(*t.Spec.Select, *t.Selected, t.Spec.label, t.Spec.valueText, t.factor(), d, true) + "\n")
	}
	if len(t.Failed) > 0 {
		b.WriteString("\\par\\smallskip\\footnotesize " + texEscape(t.failedLine()) + "\n")
	}
	if len(t.Sources) > 0 {
		b.WriteString("\\par\\smallskip\\footnotesize Paper numbers: ")
		for i, s := range t.Sources {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "\\textsuperscript{%d}%s", i+1, texEscape(s))
		}
		b.WriteString(".\n")
	}
	b.WriteString("\\end{table}\n")
	return b.String()
}

func texEscape(s string) string {
	return strings.NewReplacer(
		`\`, `\textbackslash{}`, "&", `\&`, "%", `\%`, "$", `\$`, "#", `\#`, "_", `\_`,
		"{", `\{`, "}", `\}`, "~", `\textasciitilde{}`, "^", `\textasciicircum{}`,
		"±", `$\pm$`, "−", `$-$`, "…", `\dots{}`, "→", `$\rightarrow$`, "≥", `$\geq$`, "≤", `$\leq$`,
		"×", `$\times$`, "δ", `$\delta$`, "γ", `$\gamma$`, "⌈", `$\lceil$`, "⌉", `$\rceil$`, "∞", `$\infty$`,
	).Replace(s)
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
func RenderTables(w atomicfile.Writer, s *Spec, records []Record, scale, outDir string) []TableResult {
	var out []TableResult
	plans := map[string]*Plan{} // resolved once per scale for all tuning tables
	for _, t := range s.AllTables() {
		res := TableResult{Name: t.Name}
		sc := scale
		if t.Scale != "" {
			sc = t.Scale
		}
		// With the failed runs: BuildTable leaves them out of the rows and lists them.
		recs := s.tuneRunsOnly(t.Name, sc, records, selectRecords(records, sc, t.Where, true), plans)
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
func refsForTable(refs []Reference, table string) []Reference {
	var own, general []Reference
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

// TableRecords returns the records a table of the spec is built from: those its where selects
// at scale (the table's own scale first), and for a tuning step's selection table (tune_<step>)
// only the step's own runs — the records whose hash is one of the step's planned runs, resolved
// from records ([Spec.PlanWith]) — since a sweep point may train the same configuration (say, the
// baseline of a margin grid on the same held-out split), which a where cannot tell apart.
func (s *Spec) TableRecords(t TableSpec, scale string, records []Record) []Record {
	recs, sc := selectFor(records, t.Scale, scale, t.Where)
	return s.tuneRunsOnly(t.Name, sc, records, recs, map[string]*Plan{})
}

// tuneRunsOnly restricts recs to the runs of tuning step <name> when table is "tune_<name>" and
// the plan of scale resolves from records (cached in plans); otherwise it returns recs unchanged.
func (s *Spec) tuneRunsOnly(table, scale string, records, recs []Record, plans map[string]*Plan) []Record {
	name, ok := strings.CutPrefix(table, "tune_")
	if !ok || !slices.ContainsFunc(s.Tune, func(t TuneSpec) bool { return t.Name == name }) {
		return recs
	}
	p, done := plans[scale]
	if !done {
		p, _ = s.PlanWith(scale, records) // nil on error: the where alone decides
		plans[scale] = p
	}
	if p == nil {
		return recs
	}
	hashes := map[string]bool{}
	for _, r := range p.Runs {
		if r.InTune(name) {
			hashes[r.Hash] = true
		}
	}
	var out []Record
	for _, r := range recs {
		if hashes[r.Hash] {
			out = append(out, r)
		}
	}
	return out
}
