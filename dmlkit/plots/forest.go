package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ForestRow is one row of a forest plot: an estimate X with its interval [Lo, Hi] (NaN: none).
type ForestRow struct {
	Label     string // the row's y tick label
	Group     string // its legend entry and colour, e.g. a verdict
	X, Lo, Hi float64
}

// forestRowHeight is the height each row adds to the figure.
const forestRowHeight = 0.17 * vg.Inch

// ForestGroup names a group of rows and its colour.
type ForestGroup struct {
	Name  string
	Color color.Color
	Shape draw.GlyphDrawer // its marker (nil: a filled circle), e.g. [FilledGlyph] of its slot
}

// Forest draws the rows top to bottom, each a filled marker at X and a horizontal line from Lo to
// Hi, coloured by its group (the colour groups gives it, else the style's palette in order of
// first appearance), with a dashed vertical line at x = 0 and the labels as y ticks; the legend
// lists the groups present, those of groups first in its order. The figure is Style.Height high
// plus forestRowHeight per row.
func Forest(st Style, l Labels, rows []ForestRow, groups []ForestGroup) (*Chart, error) {
	return ForestWith(st, l, rows, groups, ForestOptions{})
}

// ForestOptions are the settings of [ForestWith].
type ForestOptions struct {
	// NoZero leaves out the dashed line at x = 0, and 0 from the x range: for estimates that are
	// not differences (e.g. a leaderboard's R@1 in %, far from 0).
	NoZero bool
	// Wrap breaks a row label longer than Wrap runes into lines at spaces, each at most Wrap runes
	// (0: one line, whatever its length); a row of k lines is (1 + (k-1)·forestLineShare) rows
	// high, so that no label is cut and the others keep their spacing.
	Wrap int
	// Refs are reference values drawn as labelled vertical lines across the rows (a leaderboard's
	// zero-shot floor), in the x range and listed in the legend after the groups.
	Refs []RefLine
}

// forestLineShare is the height each further line of a wrapped label adds to its row, as a share
// of a one-line row.
const forestLineShare = 0.7

// wrapLabel breaks s at spaces into lines of at most n runes (a longer word stays whole).
func wrapLabel(s string, n int) []string {
	if n <= 0 || len([]rune(s)) <= n {
		return []string{s}
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
		case len([]rune(line))+1+len([]rune(w)) <= n:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line)
}

// ForestWith is [Forest] with options.
func ForestWith(st Style, l Labels, rows []ForestRow, groups []ForestGroup, opt ForestOptions) (*Chart, error) {
	if len(rows) == 0 {
		return nil, errors.New("plots: Forest: no rows")
	}
	n := len(rows)
	// Each row's centre, from the top: one unit per row, more for a wrapped label.
	labels := make([]string, n)
	ys := make([]float64, n)
	units := 0.0
	for i, r := range rows {
		lines := wrapLabel(r.Label, opt.Wrap)
		labels[i] = strings.Join(lines, "\n")
		h := 1 + forestLineShare*float64(len(lines)-1)
		ys[i] = units + h/2
		units += h
	}
	for i := range ys {
		ys[i] = units - ys[i] - 0.5 // bottom row at 0, as without wrapping
	}
	st.Height += vg.Length(units) * forestRowHeight
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	present := map[string]bool{}
	var extra []string
	for _, r := range rows {
		if math.IsNaN(r.X) || math.IsInf(r.X, 0) {
			return nil, fmt.Errorf("plots: Forest: row %q has no finite estimate", r.Label)
		}
		if !present[r.Group] {
			present[r.Group] = true
			if !slices.ContainsFunc(groups, func(g ForestGroup) bool { return g.Name == r.Group }) {
				extra = append(extra, r.Group)
			}
		}
	}
	var order []string
	col := map[string]color.Color{}
	shape := map[string]draw.GlyphDrawer{}
	for _, g := range groups {
		if present[g.Name] {
			order = append(order, g.Name)
			col[g.Name] = g.Color
			shape[g.Name] = g.Shape
		}
	}
	shapeOf := func(g string) draw.GlyphDrawer {
		if s := shape[g]; s != nil {
			return s
		}
		return draw.CircleGlyph{}
	}
	for i, g := range extra {
		order = append(order, g)
		col[g] = st.Color(i)
	}
	ticks := make([]plot.Tick, n)
	lo, hi := 0.0, 0.0
	if opt.NoZero {
		lo, hi = math.Inf(1), math.Inf(-1)
	}
	for i, r := range rows {
		y := ys[i]
		ticks[i] = plot.Tick{Value: y, Label: labels[i]}
		lo, hi = math.Min(lo, r.X), math.Max(hi, r.X)
		if !math.IsNaN(r.Lo) && !math.IsNaN(r.Hi) {
			lo, hi = math.Min(lo, r.Lo), math.Max(hi, r.Hi)
			ln, err := plotter.NewLine(plotter.XYs{{X: r.Lo, Y: y}, {X: r.Hi, Y: y}})
			if err != nil {
				return nil, err
			}
			ln.LineStyle = draw.LineStyle{Color: col[r.Group], Width: st.LineWidth}
			ch.AddData(ln)
		}
		sc, err := plotter.NewScatter(plotter.XYs{{X: r.X, Y: y}})
		if err != nil {
			return nil, err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col[r.Group], Radius: 2.2, Shape: shapeOf(r.Group)}
		ch.AddData(sc)
	}
	if !opt.NoZero {
		zero, err := plotter.NewLine(plotter.XYs{{X: 0, Y: -0.6}, {X: 0, Y: units - 0.4}})
		if err != nil {
			return nil, err
		}
		zero.LineStyle = draw.LineStyle{Color: color.Gray{Y: 90}, Width: 0.6, Dashes: []vg.Length{2, 2}}
		ch.Plot.Add(zero)
	}
	for _, g := range order {
		sc, _ := plotter.NewScatter(plotter.XYs{{}})
		sc.GlyphStyle = draw.GlyphStyle{Color: col[g], Radius: 2.2, Shape: shapeOf(g)}
		ch.AddLegend(g, sc)
	}
	lo, hi = refRange(opt.Refs, lo, hi)
	pad := 0.05 * (hi - lo)
	if pad == 0 {
		pad = math.Max(0.05*math.Abs(hi), 1e-9)
		if !opt.NoZero {
			pad = 1
		}
	}
	ch.Plot.X.Min, ch.Plot.X.Max = lo-pad, hi+pad
	ch.Plot.Y.Min, ch.Plot.Y.Max = -0.6, units-0.4
	ch.Plot.Y.Tick.Marker = plot.ConstantTicks(ticks)
	if err := addRefLines(ch, opt.Refs, -0.6, units-0.4); err != nil {
		return nil, err
	}
	return ch, nil
}
