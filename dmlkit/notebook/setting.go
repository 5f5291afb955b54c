package notebook

import (
	"fmt"
	"html"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// SettingRow is one row of a notebook's setting table: a label and what it reads of a record.
type SettingRow struct {
	Label string
	Value func(r *sweep.Record) (any, bool)
}

// Key reads a configuration key of a record ([sweep.Record.Value]: "seed", "name",
// "loss.set.gamma", …). The value comes with its key (a [KeyedValue]), so that [SettingMarkdown]
// writes it in the words of the labels map ("omniglot" → "Omniglot", "adam" → "Adam").
func Key(key string) func(r *sweep.Record) (any, bool) {
	return func(r *sweep.Record) (any, bool) {
		v, ok := r.Value(key)
		return KeyedValue{Key: key, Value: v}, ok
	}
}

// KeyedValue is a configuration value with its key, as [Key] reads it. [Distinct] and
// [SettingMarkdown] read the value; SettingMarkdown writes it with the labels map's text of
// "key=value" or the value ([sweep.LabelMap.Lookup], which falls back to the shared vocabulary).
type KeyedValue struct {
	Key   string
	Value any
}

// unkeyed is the value v read by a row: a [KeyedValue]'s value and its key, else v and "".
func unkeyed(v any) (any, string) {
	if kv, ok := v.(KeyedValue); ok {
		return kv.Value, kv.Key
	}
	return v, ""
}

// Metric reads a final metric of a record ("n_queries").
func Metric(name string) func(r *sweep.Record) (any, bool) {
	return func(r *sweep.Record) (any, bool) { v, ok := r.Metrics[name]; return v, ok }
}

// settingValues lists the distinct values of row over recs like [Distinct], but each value of a
// key ([Key]) in the words labels has for it ("omniglot" → "Omniglot", "[16,32,64]" → "CNN-S
// (16-32-64)"; without a symbol the row's label already names: "γ = 0.1 (with the regulariser)" →
// "0.1 (with the regulariser)"), a list the map does not name with spaces ("[16, 32, 64]", so that
// a table cell can wrap it), and values that start with a number sorted by it ("48, 98, 196");
// "—" when there are none.
func settingValues(recs []sweep.Record, value func(r *sweep.Record) (any, bool), runLabel func(string) string, labels sweep.LabelMap) string {
	out := distinctValues(recs, value, func(v any, key string) string {
		s := sweep.FormatValue(v)
		switch {
		case s == "null":
			return "—" // a key set to null: unset
		case strings.HasPrefix(s, sweep.RunRefPrefix) && runLabel != nil:
			return runLabel(strings.TrimPrefix(s, sweep.RunRefPrefix))
		}
		if key != "" {
			if t, ok := labels.Lookup(key, v); ok {
				return sweep.SymbolPrefix.ReplaceAllString(t, "") // the row names the key: "0.1 (with the regulariser)", not "γ = 0.1 (…)"
			}
		}
		if strings.HasPrefix(s, "[") {
			return strings.ReplaceAll(s, ",", ", ")
		}
		return s
	})
	out = slices.DeleteFunc(out, func(s string) bool { return s == "—" })
	if len(out) == 0 {
		return "—"
	}
	lead := func(s string) string { f, _, _ := strings.Cut(s, " "); return f } // "0 (contrastive term alone)" sorts as 0
	sort.Slice(out, func(a, b int) bool {
		x, errA := strconv.ParseFloat(lead(out[a]), 64)
		y, errB := strconv.ParseFloat(lead(out[b]), 64)
		if errA == nil && errB == nil {
			return x < y
		}
		if (errA == nil) != (errB == nil) {
			return errA == nil
		}
		return out[a] < out[b]
	})
	return strings.Join(out, ", ")
}

// SettingColumns is how many groups one setting table shows side by side: 6 columns of the widest
// values (a run reference, a list of ten k) and the label column fit the page (nbcheck's
// wide-table rule).
const SettingColumns = 6

// SettingMarkdown is a notebook's setting: the records grouped by the configuration key group (the
// run groups of the spec, or the data set), the rows whose value is the same in every group in
// one line, and the rows that differ in tables of at most perTable groups each (perTable ≤ 0:
// [SettingColumns]), with the number of runs of each group; a row without a value in any group of
// a table is left out of it.
//
// The tables are folded under one summary line (a <details> element, the tables inside it in HTML,
// which JupyterLab, nbconvert's export and GitHub all render): a paper notebook's setting took
// 1,000-2,400 px of its results, for reference that a reader opens when they want it.
//
// Each group is headed by its words in labels ([sweep.LabelMap.Value]: the map's "name=fig8" entry,
// else "Fig. 8"), never by the raw group name.
func SettingMarkdown(recs []sweep.Record, scale, group string, rows []SettingRow, perTable int, labels sweep.LabelMap) string {
	if perTable <= 0 {
		perTable = SettingColumns
	}
	by := map[string][]sweep.Record{}
	var names []string
	byHash := map[string]*sweep.Record{}
	for i := range recs {
		byHash[recs[i].Hash] = &recs[i]
	}
	// A run reference (model.init_from: run:<hash>) reads as the run it names, without its seed:
	// "the run named init-bg866", so that the seeds of one source share one value.
	runLabel := func(hash string) string {
		r, ok := byHash[hash]
		if !ok {
			return "a stored run"
		}
		if v, ok := r.Value(group); ok && v != nil {
			return "the " + labels.Value(group, v) + " run"
		}
		var ps []string
		for _, k := range sweep.SortedKeys(r.Params) {
			ps = append(ps, k+" "+sweep.FormatValue(r.Params[k]))
		}
		return "the run with " + strings.Join(ps, ", ")
	}
	for _, r := range recs {
		v, ok := r.Value(group)
		n := sweep.FormatValue(v)
		if !ok || v == nil {
			n = "(no " + group + ")"
		}
		if by[n] == nil {
			names = append(names, n)
		}
		by[n] = append(by[n], r)
	}
	sort.Strings(names)
	heads := make([]string, len(names)) // the groups' words
	for i, n := range names {
		heads[i] = n
		if v, ok := by[n][0].Value(group); ok && v != nil {
			heads[i] = labels.Value(group, v)
		} else {
			heads[i] = ungrouped(by[n], group, labels)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%d stored %s-scale runs** in %s (by `%s`).\n\n", len(recs), scale, counted(len(names), "group", "groups"), group)
	var alike []string
	var differ []SettingRow
	cells := map[string][]string{}
	for _, row := range rows {
		vals := make([]string, len(names))
		same := true
		for i, n := range names {
			vals[i] = settingValues(by[n], row.Value, runLabel, labels)
			same = same && vals[i] == vals[0]
		}
		switch {
		case len(names) == 0 || same && vals[0] == "—":
		case same:
			alike = append(alike, row.Label+" "+vals[0])
		default:
			differ = append(differ, row)
			cells[row.Label] = vals
		}
	}
	if len(alike) > 0 {
		fmt.Fprintf(&b, "The same in every group: %s.\n\n", strings.Join(alike, "; "))
	}
	if len(names) > 0 {
		fmt.Fprintf(&b, "<details><summary>What differs between the %s: one column each, with its runs</summary>\n\n", counted(len(names), "group", "groups"))
	}
	// Inside the fold the tables are HTML: nbconvert's HTML export does not render Markdown inside
	// an HTML block of an output (a Markdown table there showed as raw "| … |---|" text).
	td := func(tag, v string) string { return "<" + tag + ">" + html.EscapeString(v) + "</" + tag + ">" }
	for lo := 0; lo < len(names); lo += perTable {
		hi := min(lo+perTable, len(names))
		b.WriteString("<table>\n<thead><tr><th></th>")
		for _, h := range heads[lo:hi] {
			b.WriteString(td("th", h))
		}
		b.WriteString("</tr></thead>\n<tbody>\n<tr>" + td("td", "runs"))
		for _, n := range names[lo:hi] {
			b.WriteString(td("td", strconv.Itoa(len(by[n]))))
		}
		b.WriteString("</tr>\n")
		for _, row := range differ {
			if !slices.ContainsFunc(cells[row.Label][lo:hi], func(v string) bool { return v != "—" }) {
				continue // unset in every group of this table
			}
			b.WriteString("<tr>" + td("td", row.Label))
			for _, v := range cells[row.Label][lo:hi] {
				b.WriteString(td("td", v))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</tbody>\n</table>\n\n")
	}
	if len(names) > 0 {
		b.WriteString("</details>\n")
	}
	return b.String()
}

// ungrouped is the heading of the records that do not set the group key: the labels map's words
// for the key's null ("name=null"), else "tuning runs" when every one holds out training classes
// for validation (data.val_classes: the runs of the spec's tuning steps), else "other runs".
func ungrouped(recs []sweep.Record, group string, labels sweep.LabelMap) string {
	if t, ok := labels.Lookup(group, nil); ok {
		return t
	}
	for i := range recs {
		if v, ok := recs[i].Value("data.val_classes"); !ok || v == nil {
			return "other runs"
		}
	}
	return "tuning runs"
}

// ProvenanceMarkdown says which commits wrote the records and how many came from a tree with
// uncommitted changes.
func ProvenanceMarkdown(recs []sweep.Record) string {
	dirty := 0
	for i := range recs {
		if recs[i].Dirty() {
			dirty++
		}
	}
	commits := Distinct(recs, func(r *sweep.Record) (any, bool) {
		c, ok := r.Env["git_commit"].(string)
		if ok && len(c) > 12 {
			c = c[:12]
		}
		return "`" + c + "`", ok // a reference, not a word (a hash in prose reads like a raw run hash)
	})
	return fmt.Sprintf("Written at commit(s) %s; **%d of %d records from a tree with uncommitted changes** "+
		"(such records are excluded from verdicts unless counted as provisional, as below).", commits, dirty, len(recs))
}

// SettingMarkdown is [SettingMarkdown] of the paper's records of the shown scale, with the spec's
// labels map.
func (p *Paper) SettingMarkdown(group string, rows []SettingRow, perTable int) (string, error) {
	spec, err := p.Spec()
	if err != nil {
		return "", err
	}
	recs, err := p.Records()
	if err != nil {
		return "", err
	}
	return SettingMarkdown(recs, p.ShownScale(), group, rows, perTable, spec.Labels), nil
}
