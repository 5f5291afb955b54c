package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// RefLine is a reference value of the x axis drawn as a vertical line across the plot, with its
// legend entry: e.g. a leaderboard's zero-shot floor (what the network gives with no training).
type RefLine struct {
	X     float64
	Label string

	legendOnly bool // listed in the legend, not drawn (outside a clipped axis)
}

// refDashes are the dash patterns of successive reference lines (dash-dot, then dots, then
// long dashes), so that lines of one colour stay apart in print, and apart from the plain dashes
// of a Pareto frontier.
var refDashes = [][]vg.Length{{5, 1.5, 1, 1.5}, {1, 1.5}, {8, 2}}

// refColor is the colour of reference lines: a mid grey, apart from the black of baselines and
// the dark grey of a Pareto frontier.
var refColor = color.Gray{Y: 0x70}

// addRefLines draws each ref as a vertical line from y0 to y1 (the plot's y range) and adds its
// legend entry; a ref without a finite X is an error.
func addRefLines(ch *Chart, refs []RefLine, y0, y1 float64) error {
	for i, r := range refs {
		if math.IsNaN(r.X) || math.IsInf(r.X, 0) {
			return fmt.Errorf("plots: reference line %q has no finite x", r.Label)
		}
		ln, err := plotter.NewLine(plotter.XYs{{X: r.X, Y: y0}, {X: r.X, Y: y1}})
		if err != nil {
			return err
		}
		ln.LineStyle = draw.LineStyle{Color: refColor, Width: 1, Dashes: refDashes[i%len(refDashes)]}
		if !r.legendOnly {
			ch.AddData(ln)
		}
		th := *ln
		ch.AddLegend(r.Label, &th)
	}
	return nil
}

// refRange widens [lo, hi] to hold every ref's X.
func refRange(refs []RefLine, lo, hi float64) (float64, float64) {
	for _, r := range refs {
		lo, hi = math.Min(lo, r.X), math.Max(hi, r.X)
	}
	return lo, hi
}
