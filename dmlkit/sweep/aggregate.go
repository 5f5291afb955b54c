package sweep

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Stat summarises one metric over the seeds of a group.
type Stat struct {
	Mean float64 // arithmetic mean; NaN when N = 0 or any value is NaN
	Std  float64 // sample standard deviation (divisor N−1); 0 when N = 1, NaN when N = 0
	N    int     // records of the group that have the metric
}

// Group is a set of records sharing the values of the grouping keys (normally differing only in
// their seed).
type Group struct {
	Keys    []string  // the grouping keys
	Values  []any     // the value of each key (nil where a record lacks it)
	Records []*Record // in store order
}

// Label renders the group's key values as "k1=v1 k2=v2" (or "all" with no keys).
func (g *Group) Label() string {
	if len(g.Keys) == 0 {
		return "all"
	}
	parts := make([]string, len(g.Keys))
	for i, k := range g.Keys {
		parts[i] = k + "=" + FormatValue(g.Values[i])
	}
	return strings.Join(parts, " ")
}

// ValueLabel renders only the values, joined by ", ".
func (g *Group) ValueLabel() string {
	parts := make([]string, len(g.Values))
	for i, v := range g.Values {
		parts[i] = FormatValue(v)
	}
	return strings.Join(parts, ", ")
}

// Seeds lists the seeds of the group's records.
func (g *Group) Seeds() []int64 {
	out := make([]int64, len(g.Records))
	for i, r := range g.Records {
		out[i] = r.Seed
	}
	return out
}

// CheckSeeds returns an error when two records of the group have the same seed: the group then
// mixes configurations (say, tuning runs on another class split that a where without the split key
// also catches), and a mean ± std over its records is not one over seeds. The error names the
// group, the seed, both records' hashes and the configuration keys in which they differ.
func (g *Group) CheckSeeds() error {
	first := map[int64]*Record{}
	for _, r := range g.Records {
		prev, dup := first[r.Seed]
		if !dup {
			first[r.Seed] = r
			continue
		}
		what := ""
		if diff := configDiff(prev.Config, r.Config); len(diff) > 0 {
			if len(diff) > 3 {
				diff = append(diff[:3], "…")
			}
			what = ", which differ in " + strings.Join(diff, ", ")
		} else if prev.Scale != r.Scale {
			what = fmt.Sprintf(", of scales %q and %q", prev.Scale, r.Scale)
		}
		return fmt.Errorf("group %q has two records of seed %d (%s and %s%s): narrow its where", g.Label(), r.Seed, prev.Hash, r.Hash, what)
	}
	return nil
}

// configDiff lists, sorted, the dotted keys whose values differ between configurations a and b
// (a key set in only one of them included).
func configDiff(a, b map[string]any) []string {
	fa, fb := Flatten(a), Flatten(b)
	var out []string
	for k, v := range fa {
		if w, ok := fb[k]; !ok || !ValueEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range fb {
		if _, ok := fa[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// Stat computes mean ± sample std of metric over the group's records.
func (g *Group) Stat(metric string) Stat {
	var vals []float64
	for _, r := range g.Records {
		if v, ok := r.Metrics[metric]; ok {
			vals = append(vals, v)
		}
	}
	return MeanStd(vals)
}

// MeanStd returns the mean and sample standard deviation (divisor n−1) of vals.
func MeanStd(vals []float64) Stat {
	n := len(vals)
	if n == 0 {
		return Stat{Mean: math.NaN(), Std: math.NaN()}
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	mean := sum / float64(n)
	if n == 1 {
		return Stat{Mean: mean, N: 1}
	}
	var ss float64
	for _, v := range vals {
		ss += (v - mean) * (v - mean)
	}
	return Stat{Mean: mean, Std: math.Sqrt(ss / float64(n-1)), N: n}
}

// GroupBy partitions records by the values of keys (see [Record.Value] for what a key may name).
// Groups are sorted by their values, numerically where both values are numbers. Records marked
// failed ([Record.Failed]) belong to no group.
func GroupBy(records []Record, keys []string) []*Group {
	index := map[string]*Group{}
	var groups []*Group
	for i := range records {
		r := &records[i]
		if r.Failed != "" {
			continue
		}
		vals := make([]any, len(keys))
		parts := make([]string, len(keys))
		for j, k := range keys {
			v, _ := r.Value(k)
			vals[j] = v
			parts[j] = FormatValue(v)
		}
		id := strings.Join(parts, "\x00")
		g, ok := index[id]
		if !ok {
			g = &Group{Keys: keys, Values: vals}
			index[id] = g
			groups = append(groups, g)
		}
		g.Records = append(g.Records, r)
	}
	sort.SliceStable(groups, func(a, b int) bool {
		for j := range keys {
			if c := compareValues(groups[a].Values[j], groups[b].Values[j]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	return groups
}

// compareValues orders numbers numerically, false before true, and everything else by its text.
func compareValues(a, b any) int {
	fa, oka := Numeric(a)
	fb, okb := Numeric(b)
	if oka && okb {
		switch {
		case fa < fb:
			return -1
		case fa > fb:
			return 1
		}
		return 0
	}
	return strings.Compare(FormatValue(a), FormatValue(b))
}

func Numeric(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// Select keeps the records of scale (all scales when empty) whose values match every key of where
// ([ValueEqual]; a list value in where means any of its elements; a null value, alone or in a
// list, means the key is absent, e.g. to leave out the runs of an ablation grid that set an extra
// option, or to keep the runs without it beside one grid point). Records marked failed
// ([Record.Failed]) are never selected.
func Select(records []Record, scale string, where map[string]any) []Record {
	return SelectRecords(records, scale, where, false)
}

// SelectRecords is [Select], with the failed records too when withFailed.
func SelectRecords(records []Record, scale string, where map[string]any, withFailed bool) []Record {
	var out []Record
	for i := range records {
		r := &records[i]
		if scale != "" && r.Scale != scale || r.Failed != "" && !withFailed {
			continue
		}
		if MatchRecord(r, where) {
			out = append(out, *r)
		}
	}
	return out
}

func MatchRecord(r *Record, where map[string]any) bool {
	for k, want := range where {
		v, ok := r.Value(k)
		if want == nil {
			if ok {
				return false
			}
			continue
		}
		if alts, isList := want.([]any); isList {
			hit := false
			for _, a := range alts {
				if a == nil && !ok || ok && a != nil && ValueEqual(v, a) {
					hit = true
					break
				}
			}
			if !hit {
				return false
			}
		} else if !ok || !ValueEqual(v, want) {
			return false
		}
	}
	return true
}

// ReferenceFor returns the first reference for metric whose Match every record of g satisfies.
func ReferenceFor(refs []Reference, g *Group, metric string) (Reference, bool) {
	for _, ref := range refs {
		if ref.Metric != metric {
			continue
		}
		ok := len(g.Records) > 0
		for _, r := range g.Records {
			if !MatchRecord(r, ref.Match) {
				ok = false
				break
			}
		}
		if ok {
			return ref, true
		}
	}
	return Reference{}, false
}

// SelectFor selects the records of a table or figure: its own scale when it names one, else the
// scale asked for, and its where filter. It returns the records and the scale used.
func SelectFor(records []Record, own, scale string, where map[string]any) ([]Record, string) {
	if own != "" {
		scale = own
	}
	return Select(records, scale, where), scale
}
