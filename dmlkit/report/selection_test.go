package report

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestSelection: the rule picks the lowest (or highest) mean metric among the rows whose mean guard
// is within the tolerance of the best guard; worked out by hand on four rows of two seeds each.
func TestSelection(t *testing.T) {
	// Row means (m, opis, r1): a (0.50, 0.0050, 0.800), b (0.75, 0.0030, 0.785),
	// c (0.25, 0.0020, 0.770), d (0.90, 0.0040, 0.795).
	rows := []struct {
		m        float64
		opis, r1 [2]float64
	}{
		{0.50, [2]float64{0.0048, 0.0052}, [2]float64{0.79, 0.81}},
		{0.75, [2]float64{0.0030, 0.0030}, [2]float64{0.78, 0.79}},
		{0.25, [2]float64{0.0010, 0.0030}, [2]float64{0.77, 0.77}},
		{0.90, [2]float64{0.0040, 0.0040}, [2]float64{0.795, 0.795}},
	}
	var recs []sweep.Record
	for _, r := range rows {
		for s := 0; s < 2; s++ {
			recs = append(recs, sweep.Record{Scale: "small", Seed: int64(s), Config: map[string]any{"m": r.m},
				Metrics: map[string]float64{"val/OPIS": r.opis[s], "val/R@1": r.r1[s]}})
		}
	}
	for _, tc := range []struct {
		sel        sweep.Selection
		want       float64
		candidates int
		edge       bool // m = 0.25 and 0.90 are the grid's smallest and largest values
	}{
		{sweep.Selection{Metric: "val/OPIS", Lower: true}, 0.25, 4, true},                                   // no guard: c
		{sweep.Selection{Metric: "val/OPIS", Lower: true, Guard: "val/R@1", Within: 0.02}, 0.75, 3, false},  // c is 0.03 below: b
		{sweep.Selection{Metric: "val/OPIS", Lower: true, Guard: "val/R@1", Within: 0.005}, 0.90, 2, true},  // a and d: d
		{sweep.Selection{Metric: "val/OPIS", Lower: true, Guard: "val/R@1", Within: 0.015}, 0.75, 3, false}, // b exactly at the edge
		{sweep.Selection{Metric: "val/R@1", Lower: false}, 0.50, 4, false},                                  // highest R@1: a
	} {
		spec := sweep.TableSpec{Name: "t", Rows: []string{"m"}, Metrics: []string{"val/OPIS", "val/R@1"}, Factor: 100, Select: &tc.sel}
		if err := spec.Check(); err != nil {
			t.Fatal(err)
		}
		tab := mustBuildTable(t, spec, recs, nil)
		got := tab.Selected
		if got == nil || got.Row < 0 || got.Values[0] != tc.want || got.Candidates != tc.candidates {
			t.Errorf("%+v: selected %+v, want m = %g among %d", tc.sel, got, tc.want, tc.candidates)
			continue
		}
		md := tab.Markdown()
		if hasEdge := strings.Contains(md, "m is at the edge of its grid"); hasEdge != tc.edge || (len(got.Edge) == 1) != tc.edge {
			t.Errorf("%+v: edge flag %v / %v, want %v:\n%s", tc.sel, hasEdge, got.Edge, tc.edge, md)
		}
		if !strings.Contains(md, sweep.FormatValue(tc.want)+" (selected)") || !strings.Contains(md, "Selected: m = "+sweep.FormatValue(tc.want)) {
			t.Errorf("%+v: Markdown lacks the selection:\n%s", tc.sel, md)
		}
	}
	bad := sweep.TableSpec{Name: "t", Metrics: []string{"x"}, Select: &sweep.Selection{Metric: "x", Within: 0.1}}
	if err := bad.Check(); err == nil || !strings.Contains(err.Error(), "select.within") {
		t.Errorf("within without guard: error %v, want one naming select.within", err)
	}
}

// TestSelectionNonNumericEdge: a grid of non-numeric values (proxy learning-rate multipliers written
// as optimizer groups) is ordered as the table lists it; the first or last value is at its edge
// like a numeric one's, the middle one is not, and booleans are never flagged.
func TestSelectionNonNumericEdge(t *testing.T) {
	group := func(mul int) any { return []any{map[string]any{"lr_mul": mul, "match": "/loss/"}} }
	for _, tc := range []struct {
		name   string
		values []any
		acc    []float64
		edge   bool
	}{
		{"multiplier x100 best of x10/x100", []any{group(10), group(100)}, []float64{0.5, 0.6}, true},
		{"middle multiplier best", []any{group(1), group(10), group(100)}, []float64{0.5, 0.7, 0.6}, false},
		{"first multiplier best", []any{group(1), group(10), group(100)}, []float64{0.8, 0.7, 0.6}, true},
		{"boolean", []any{false, true}, []float64{0.5, 0.6}, false},
	} {
		var recs []sweep.Record
		for i, v := range tc.values {
			recs = append(recs, sweep.Record{Scale: "small", Config: map[string]any{"g": v}, Metrics: map[string]float64{"val/R@1": tc.acc[i]}})
		}
		sel := sweep.Selection{Metric: "val/R@1"}
		spec := sweep.TableSpec{Name: "t", Rows: []string{"g"}, Metrics: []string{"val/R@1"}, Select: &sel}
		if err := spec.Check(); err != nil {
			t.Fatal(err)
		}
		tab, err := BuildTable(spec, recs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(tab.Selected.Edge) == 1; got != tc.edge {
			t.Errorf("%s: edge %v, want %v (selected %v)", tc.name, tab.Selected.Edge, tc.edge, tab.Selected.Values)
		}
	}
}
