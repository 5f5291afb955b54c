package plots

import (
	"math"
	"slices"
	"testing"
)

// TestRefLines: a reference line outside the rows' range widens the x axis to hold it (forest:
// rows at 10 … 20, a floor at 5 → the axis starts below 5; Pareto likewise), each line is listed
// in the legend by its label, and a line without a finite x is refused.
func TestRefLines(t *testing.T) {
	rows := []ForestRow{{Label: "a", Group: "g", X: 20, Lo: 18, Hi: 22}, {Label: "b", Group: "g", X: 10, Lo: 9, Hi: 11}}
	refs := []RefLine{{X: 5, Label: "floor one"}, {X: 15, Label: "floor two"}}
	ch, err := ForestWith(DefaultStyle(), Labels{X: "x"}, rows, nil, ForestOptions{NoZero: true, Refs: refs})
	if err != nil {
		t.Fatal(err)
	}
	if !(ch.Plot.X.Min < 5 && ch.Plot.X.Max > 22) {
		t.Errorf("forest x axis [%v, %v] does not hold the floor at 5 and the rows up to 22", ch.Plot.X.Min, ch.Plot.X.Max)
	}
	legend := func(ch *Chart) []string {
		var out []string
		for _, e := range ch.Entries {
			out = append(out, e.Text)
		}
		return out
	}
	if l := legend(ch); !slices.Contains(l, "floor one") || !slices.Contains(l, "floor two") {
		t.Errorf("forest legend %q lacks the lines", l)
	}
	pts := []Point{{X: 60, Y: 3, Label: "p", Group: "g"}, {X: 70, Y: 5, Label: "q", Group: "g"}}
	pc, err := Pareto(DefaultStyle(), Labels{X: "x", Y: "y"}, pts, ParetoOptions{MaxX: true, Refs: []RefLine{{X: 40, Label: "floor"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !(pc.Plot.X.Min < 40) || !slices.Contains(legend(pc), "floor") {
		t.Errorf("Pareto: x axis from %v, legend %q; want the floor at 40 inside and listed", pc.Plot.X.Min, legend(pc))
	}
	// A clipped axis (XMin 50) keeps its span: the floor at 40 is listed as left of it, not drawn.
	pc, err = Pareto(DefaultStyle(), Labels{X: "x", Y: "y"}, pts, ParetoOptions{MaxX: true, XMin: 50, HasXMin: true, Refs: []RefLine{{X: 40, Label: "floor"}}})
	if err != nil {
		t.Fatal(err)
	}
	if pc.Plot.X.Min != 50 || !slices.Contains(legend(pc), "floor (left of the axis)") {
		t.Errorf("clipped Pareto: x axis from %v, legend %q; want 50 and the floor listed left of it", pc.Plot.X.Min, legend(pc))
	}
	if _, err := ForestWith(DefaultStyle(), Labels{}, rows, nil, ForestOptions{NoZero: true, Refs: []RefLine{{X: math.NaN(), Label: "bad"}}}); err == nil {
		t.Error("a reference line at NaN accepted")
	}
}
