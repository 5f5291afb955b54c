package sweep

import (
	"fmt"
	"math"
	"slices"
)

// Selection declares a hyperparameter choice made from a table's rows, as a paper's "tuned on a
// validation split" step: among the rows whose mean Guard is within Within of the best row's mean
// Guard (higher Guard is better; no Guard: every row), the row with the best mean Metric (lowest
// with Lower, else highest). Ties go to the first row in table order. Values are the records' raw
// values (no table factor): Within 0.01 on a fraction-valued R@1 means one percentage point.
//
// Example (seed 000's margins, tuned on 10 % of the training classes held out as data.val_classes):
//
//	select: {metric: val/OPIS, lower: true, guard: val/R@1, within: 0.01}
type Selection struct {
	Metric string  `yaml:"metric"`
	Lower  bool    `yaml:"lower"`
	Guard  string  `yaml:"guard"`
	Within float64 `yaml:"within"`
	// GuardFactor scales the guard's values in the line below the table (e.g. 100 for percent;
	// default 1); the metric's values are scaled by the table's factor.
	GuardFactor float64 `yaml:"guard_factor"`
}

func (s *Selection) check() error {
	if s.Metric == "" {
		return &FieldError{Path: "metric", Msg: "missing"}
	}
	if s.Within < 0 || math.IsNaN(s.Within) {
		return &FieldError{Path: "within", Msg: fmt.Sprintf("%g: want ≥ 0", s.Within)}
	}
	if s.GuardFactor < 0 {
		return &FieldError{Path: "guard_factor", Msg: fmt.Sprintf("%g: want > 0", s.GuardFactor)}
	}
	if s.Within > 0 && s.Guard == "" {
		return &FieldError{Path: "within", Msg: "set without a guard metric"}
	}
	if s.Guard != "" && s.Within == 0 {
		// Within 0 keeps only the rows of the best guard: the guard would become the criterion.
		return &FieldError{Path: "within", Msg: fmt.Sprintf("missing (> 0) with guard %q: within 0 keeps only the rows of the best %s, making the guard the criterion instead of %s", s.Guard, s.Guard, s.Metric)}
	}
	return nil
}

// SelectedRow is the outcome of a table's [Selection].
type SelectedRow struct {
	Row        int      // index into Table.Rows and Groups; -1 when no row has the metrics
	Keys       []string // the table's row keys
	Values     []any    // the chosen row's values of Keys
	Metric     float64  // its mean Metric (raw)
	Guard      float64  // its mean Guard (raw; NaN without a guard)
	BestGuard  float64  // the best mean Guard over the rows (raw; NaN without a guard)
	Candidates int      // rows within the guard
	// Edge lists the row keys (numeric in every row) whose selected value is the smallest or
	// largest of the grid: the optimum may lie outside the grid, which the line below says.
	Edge []string
}

// SelectRow applies sel to the table's groups (in table order).
func SelectRow(sel Selection, groups []*Group) SelectedRow {
	out := SelectedRow{Row: -1, Metric: math.NaN(), Guard: math.NaN(), BestGuard: math.NaN()}
	mean := func(g *Group, m string) float64 {
		s := g.Stat(m)
		if s.N == 0 {
			return math.NaN()
		}
		return s.Mean
	}
	if sel.Guard != "" {
		for _, g := range groups {
			if v := mean(g, sel.Guard); !math.IsNaN(v) && (math.IsNaN(out.BestGuard) || v > out.BestGuard) {
				out.BestGuard = v
			}
		}
	}
	for i, g := range groups {
		m := mean(g, sel.Metric)
		if math.IsNaN(m) {
			continue
		}
		gv := math.NaN()
		if sel.Guard != "" {
			gv = mean(g, sel.Guard)
			// The 1e-12 absorbs rounding of the guard means (e.g. 0.80 − 0.79 vs 0.01).
			if math.IsNaN(gv) || gv < out.BestGuard-sel.Within-1e-12 {
				continue
			}
		}
		out.Candidates++
		if out.Row < 0 || (sel.Lower && m < out.Metric) || (!sel.Lower && m > out.Metric) {
			out.Row, out.Metric, out.Guard = i, m, gv
			out.Keys, out.Values = g.Keys, g.Values
		}
	}
	if out.Row >= 0 {
		for k := range out.Keys {
			if _, isBool := out.Values[k].(bool); isBool {
				continue // a boolean has no outside
			}
			sel, ok := Numeric(out.Values[k])
			lo, hi, allNum := sel, sel, ok
			for _, g := range groups {
				x, ok := Numeric(g.Values[k])
				if !ok {
					allNum = false
					break
				}
				lo, hi = math.Min(lo, x), math.Max(hi, x)
			}
			if allNum && lo < hi && (sel == lo || sel == hi) {
				out.Edge = append(out.Edge, out.Keys[k])
			} else if !allNum && nonNumericEdge(groups, k, out.Values[k]) {
				out.Edge = append(out.Edge, out.Keys[k])
			}
		}
	}
	return out
}

// nonNumericEdge reports whether the selected value of a key whose values are not all numbers
// (e.g. a proxy learning-rate multiplier written as an optimizer group [{lr_mul: 10}]) is the first
// or the last of its distinct values in table order: such a grid is ordered as written, and its
// optimum may lie beyond the end as for a numeric one. Booleans have no outside and are not
// flagged.
func nonNumericEdge(groups []*Group, k int, sel any) bool {
	var distinct []any
	for _, g := range groups {
		v := g.Values[k]
		if _, isBool := v.(bool); isBool {
			return false
		}
		if !slices.ContainsFunc(distinct, func(x any) bool { return ValueEqual(x, v) }) {
			distinct = append(distinct, v)
		}
	}
	if len(distinct) < 2 {
		return false
	}
	return ValueEqual(sel, distinct[0]) || ValueEqual(sel, distinct[len(distinct)-1])
}
