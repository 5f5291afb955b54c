package judge

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Vocabulary is what the records of a paper can be selected and measured by: the configuration
// keys (and their values) that the spec's configurations or the stored records set, and the
// metrics and series the stored records have. A where key, a row or group key, a value or a
// metric outside it is a typo, not a run still to come: it would select nothing (an
// "inconclusive (no records)" claim, an empty column, a merged null row, an empty plot) where an
// error is wanted.
type Vocabulary struct {
	keys    map[string]map[string]bool // dotted key (and every dotted prefix) → FormatValue of its values
	metrics map[string]bool            // metric and series names of the stored records
	// mentions counts the items of the spec (each table with its labels, figure, tuning step,
	// reference, and the spec's labels map) that name a metric or series: a metric some runs
	// produce only at some scales (say, timings) is known from another item naming it.
	mentions map[string]int
	seedKey  string
}

// pseudoKeys are the record fields [Record.Value] addresses besides the configuration.
var pseudoKeys = []string{"scale", "paper", "seed", "hash"}

// NewVocabulary collects the vocabulary of spec s and its stored records (all scales).
func NewVocabulary(s *sweep.Spec, records []sweep.Record) *Vocabulary {
	v := &Vocabulary{keys: map[string]map[string]bool{}, metrics: map[string]bool{}, seedKey: s.Sweep.SeedKey}
	if v.seedKey == "" {
		v.seedKey = "seed"
	}
	for _, k := range pseudoKeys {
		v.keys[k] = map[string]bool{}
	}
	v.keys[v.seedKey] = map[string]bool{}
	v.addConfig("", s.Base)
	for _, k := range sweep.SortedKeys(s.Sweep.Grid) {
		v.addValues(k, s.Sweep.Grid[k])
	}
	for _, e := range s.Sweep.List {
		v.addConfig("", e)
	}
	for _, sc := range s.Scales {
		for k, x := range sc {
			switch k {
			case "seeds":
			case "grid":
				if g, ok := x.(map[string]any); ok {
					for gk, gv := range g {
						if l, ok := gv.([]any); ok {
							v.addValues(gk, l)
						}
					}
				}
			case "list":
				if l, ok := x.([]any); ok {
					for _, e := range l {
						if m, ok := e.(map[string]any); ok {
							v.addConfig("", m)
						}
					}
				}
			default:
				v.addConfig("", map[string]any{k: x})
			}
		}
	}
	for _, t := range s.Tune {
		v.addConfig("", t.Point)
		for k, vals := range t.Grid {
			v.addValues(k, vals)
		}
	}
	v.mentions = specMentions(s)
	for i := range records {
		r := &records[i]
		v.addConfig("", r.Config)
		for k, x := range r.Params {
			v.add("params."+k, x)
		}
		for m := range r.Metrics {
			v.metrics[m] = true
		}
		for m := range r.Series {
			v.metrics[m] = true
		}
	}
	return v
}

// specMentions counts, for every name, the items of s that name it as a metric, series or label.
func specMentions(s *sweep.Spec) map[string]int {
	out := map[string]int{}
	item := func(names ...string) {
		seen := map[string]bool{}
		for _, n := range names {
			if n != "" && !seen[n] {
				seen[n] = true
				out[n]++
			}
		}
	}
	for _, t := range s.AllTables() {
		names := slices.Clone(t.Metrics)
		for k := range t.Labels {
			names = append(names, k)
		}
		if t.Select != nil {
			names = append(names, t.Select.Metric, t.Select.Guard)
		}
		item(names...)
	}
	for _, f := range s.Figures {
		item(append([]string{f.X, f.Y, f.Metric, f.XSeries}, f.Series...)...)
	}
	for _, t := range s.Tune {
		item(t.Select.Metric, t.Select.Guard)
	}
	for _, r := range s.Reference {
		item(r.Metric)
	}
	item(s.Labels.Keys...)
	return out
}

// addConfig adds the leaves of cfg (keys may be dotted or nested) under prefix.
func (v *Vocabulary) addConfig(prefix string, cfg map[string]any) {
	for k, x := range cfg {
		if m, ok := x.(map[string]any); ok && len(m) > 0 {
			v.addConfig(prefix+k+".", m)
			continue
		}
		v.add(prefix+k, x)
	}
}

func (v *Vocabulary) addValues(key string, vals []any) {
	for _, x := range vals {
		v.add(key, x)
	}
}

// add records value x of key and makes every dotted prefix of key known.
func (v *Vocabulary) add(key string, x any) {
	if v.keys[key] == nil {
		v.keys[key] = map[string]bool{}
	}
	if x != nil {
		v.keys[key][sweep.FormatValue(x)] = true
	}
	for i := strings.LastIndexByte(key, '.'); i > 0; i = strings.LastIndexByte(key[:i], '.') {
		if v.keys[key[:i]] == nil {
			v.keys[key[:i]] = map[string]bool{}
		}
	}
}

// HasMetric reports whether a stored record has the metric or series name.
func (v *Vocabulary) HasMetric(name string) bool { return v.metrics[name] }

// CheckKey returns an error when no configuration of the spec and no stored record has key.
func (v *Vocabulary) CheckKey(key string) error {
	if _, ok := v.keys[key]; ok {
		return nil
	}
	return fmt.Errorf("key %q: no configuration of the spec and no stored record has it%s", key, sweep.Suggest(key, slices.Collect(maps.Keys(v.keys))))
}

// CheckWhere checks every key of a where filter and each value it names (a list: each
// alternative; null: the key's absence, always allowed) against the values the spec and the
// records give the key. Seeds, hashes and scales are not checked for their values.
func (v *Vocabulary) CheckWhere(where map[string]any) error {
	var errs []error
	for _, k := range sweep.SortedKeys(where) {
		if err := v.CheckKey(k); err != nil {
			errs = append(errs, err)
			continue
		}
		if k == v.seedKey || slices.Contains(pseudoKeys, k) || len(v.keys[k]) == 0 {
			continue
		}
		alts := []any{where[k]}
		if l, ok := where[k].([]any); ok {
			alts = l
		}
		for _, a := range alts {
			if a == nil {
				continue
			}
			if !v.keys[k][sweep.FormatValue(a)] {
				known := slices.Sorted(maps.Keys(v.keys[k]))
				errs = append(errs, fmt.Errorf("key %q: value %s: no configuration of the spec and no stored record has it (known: %s)%s",
					k, sweep.FormatValue(a), strings.Join(known, ", "), sweep.Suggest(sweep.FormatValue(a), known)))
			}
		}
	}
	return errors.Join(errs...)
}

// CheckMetric returns an error when metric is named over a non-empty selection of records, no
// stored record has it and no item of the spec names it besides the self items asking (1 for a
// table or figure of the spec, 0 for a claim): then it is a typo, not a metric still to be
// computed (a selection that is empty is a result not run yet, where any metric may be named).
func (v *Vocabulary) CheckMetric(metric string, selected, self int) error {
	if metric == "" || selected == 0 || v.metrics[metric] || v.mentions[metric] > self {
		return nil
	}
	return fmt.Errorf("metric %q: none of the stored records has it (%d selected)%s", metric, selected, sweep.Suggest(metric, slices.Collect(maps.Keys(v.metrics))))
}

// CheckSelections checks the tables, figures, leaderboard and references of s against the
// vocabulary of s and its stored records ([Vocabulary]): their scales, where and match keys and
// values, row, group, arm and axis keys, and the metrics of those that select records. Errors name
// the spec (or paper.yaml), the table, figure, leaderboard or reference, the field and the value.
func CheckSelections(s *sweep.Spec, records []sweep.Record) error {
	v := NewVocabulary(s, records)
	var errs []error
	at := func(what, field string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: field %q: %w", s.Name(), what, field, err))
		}
	}
	checkScale := func(sc string) error {
		if _, ok := s.Scales[sc]; sc == "" || ok {
			return nil
		}
		return fmt.Errorf("%q is not a scale of the spec (defined: %s)%s", sc, strings.Join(s.ScaleNames(), ", "), sweep.Suggest(sc, s.ScaleNames()))
	}
	for _, t := range s.AllTables() {
		what := fmt.Sprintf("table %q", t.Name)
		at(what, "scale", checkScale(t.Scale))
		at(what, "where", v.CheckWhere(t.Where))
		for i, k := range t.Rows {
			at(what, fmt.Sprintf("rows[%d]", i), v.CheckKey(k))
		}
		n := len(sweep.Select(records, t.Scale, t.Where))
		for i, m := range t.Metrics {
			at(what, fmt.Sprintf("metrics[%d]", i), v.CheckMetric(m, n, 1))
		}
	}
	for _, f := range s.Figures {
		what := fmt.Sprintf("figure %q", f.Name)
		at(what, "scale", checkScale(f.Scale))
		at(what, "where", v.CheckWhere(f.Where))
		for i, k := range f.Group {
			at(what, fmt.Sprintf("group[%d]", i), v.CheckKey(k))
		}
		for field, k := range map[string]string{"hue": f.Hue, "size": f.Size, "mark_key": f.MarkKey} {
			if k != "" {
				at(what, field, v.CheckKey(k))
			}
		}
		n := len(sweep.Select(records, f.Scale, f.Where))
		keyOrMetric := func(field, name string, isKey bool) {
			if name == "" {
				return
			}
			if isKey {
				at(what, field, v.CheckKey(name))
			} else {
				at(what, field, v.CheckMetric(name, n, 1))
			}
		}
		switch f.Kind {
		case "line", "bar":
			keyOrMetric("x", f.X, true)
			keyOrMetric("y", f.Y, false)
		case "heatmap":
			keyOrMetric("x", f.X, true)
			keyOrMetric("y", f.Y, true)
			keyOrMetric("metric", f.Metric, false)
		case "pareto":
			keyOrMetric("x", f.X, false)
			keyOrMetric("y", f.Y, false)
		}
		for i, sn := range f.Series {
			keyOrMetric(fmt.Sprintf("series[%d]", i), sn, false)
		}
	}
	if l := s.Leaderboard; l != nil {
		what := "leaderboard"
		at(what, "where", v.CheckWhere(l.Where))
		at(what, "arm", v.CheckKey(l.ArmOrDefault()))
		n := len(sweep.Select(records, "", l.Where))
		for i, m := range l.Metrics {
			at(what, fmt.Sprintf("metrics[%d]", i), v.CheckMetric(m, n, 0))
		}
	}
	// A reference may transcribe a row of the paper that the spec does not run (another backbone,
	// a descriptive key that matches nothing on purpose); one scoped to tables is meant for their
	// rows: its tables must exist and its match must name keys and values the runs can have.
	tables := map[string]bool{}
	for _, t := range s.AllTables() {
		tables[t.Name] = true
	}
	descriptive := map[string]bool{}
	for _, k := range s.DescriptiveKeys {
		descriptive[k] = true
	}
	for i, r := range s.Reference {
		file := s.Name()
		if r.File != "" {
			file = r.File
		}
		what := fmt.Sprintf("%s: reference[%d] (%s)", file, r.IndexAt(i), r.Source)
		if len(r.Tables) == 0 {
			// Unscoped: it may describe a row the spec never runs, on the keys the runs have or
			// those declared descriptive; any other key is a typo that would match nothing.
			for _, k := range sweep.SortedKeys(r.Match) {
				if descriptive[k] {
					continue
				}
				if err := v.CheckKey(k); err != nil {
					errs = append(errs, fmt.Errorf("%s: field \"match\": %w (a key that only describes the paper's row goes in descriptive_keys)", what, err))
				}
			}
			continue
		}
		for j, t := range r.Tables {
			if !tables[t] {
				errs = append(errs, fmt.Errorf("%s: field \"tables[%d]\": no table %q in %s%s", what, j, t, s.Name(), sweep.Suggest(t, slices.Collect(maps.Keys(tables)))))
			}
		}
		if err := v.CheckWhere(r.Match); err != nil {
			errs = append(errs, fmt.Errorf("%s: field \"match\": %w", what, err))
		}
		if err := v.CheckMetric(r.Metric, len(sweep.Select(records, "", r.Match)), 1); err != nil {
			errs = append(errs, fmt.Errorf("%s: field \"metric\": %w", what, err))
		}
	}
	return errors.Join(errs...)
}
