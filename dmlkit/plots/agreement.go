package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AgreementOptions are the settings of [Agreement].
type AgreementOptions struct {
	// Numbered labels each point with its number (1-based, in the order of the points) and lists
	// "n  Label" below the plot, as [ParetoOptions].Numbered; otherwise the labels are drawn next
	// to the points.
	Numbered bool
	// DiagonalLabel is the legend entry of the diagonal ("" for none).
	DiagonalLabel string
}

// Agreement draws the ranks of items in two settings against each other: each point at (its rank
// in the first, its rank in the second; 1 = best), coloured and shaped by its group's slot (see
// [Style.Slots]), labelled, and the diagonal of equal ranks as a dashed grey line. Both axes run
// from 0.5 to n + 0.5, n the largest rank, with a tick at every rank (every second or fifth one
// when there are many).
func Agreement(st Style, l Labels, pts []Point, opt AgreementOptions) (*Chart, error) {
	if len(pts) == 0 {
		return nil, errors.New("plots: Agreement: no points")
	}
	if opt.Numbered {
		st.Legend = LegendBelow
	}
	n := 1.0
	for _, p := range pts {
		if math.IsNaN(p.X) || math.IsNaN(p.Y) || p.X < 1 || p.Y < 1 {
			return nil, fmt.Errorf("plots: Agreement: point %q has ranks (%v, %v), want ranks ≥ 1", p.Label, p.X, p.Y)
		}
		n = math.Max(n, math.Max(p.X, p.Y))
	}
	n = math.Ceil(n)
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	diag, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: 0.5}, {X: n + 0.5, Y: n + 0.5}})
	if err != nil {
		return nil, fmt.Errorf("plots: Agreement: %w", err)
	}
	diag.LineStyle = draw.LineStyle{Color: color.Gray{Y: 0x60}, Width: 0.8, Dashes: []vg.Length{3, 2}}
	ch.AddData(diag)
	groups := pointGroups(pts)
	slots := st.SlotsOf(groups)
	const radius = 2.6
	for gi, g := range groups {
		var xy plotter.XYs
		for _, p := range pts {
			if p.Group == g {
				xy = append(xy, plotter.XY{X: p.X, Y: p.Y})
			}
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return nil, fmt.Errorf("plots: Agreement: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: st.Color(slots[gi]), Radius: radius, Shape: filledGlyph(slots[gi])}
		ch.AddData(sc)
		if g != "" {
			ch.AddLegend(g, &plotter.Scatter{GlyphStyle: sc.GlyphStyle})
		}
	}
	if opt.DiagonalLabel != "" {
		th := *diag
		ch.AddLegend(opt.DiagonalLabel, &th)
	}
	lab := &pointLabels{style: labelStyle(st), radius: func(float64) vg.Length { return radius }}
	for i, p := range pts {
		t := p.Label
		if opt.Numbered {
			t = strconv.Itoa(i + 1)
		}
		lab.pts = append(lab.pts, labelPoint{x: p.X, y: p.Y, text: t})
	}
	ch.AddData(lab)
	if opt.Numbered {
		for i, p := range pts {
			ch.AddLegend(p.Label, numberThumb{n: i + 1, style: labelStyle(st)})
		}
	}
	step := 1
	switch {
	case n > 24:
		step = 5
	case n > 12:
		step = 2
	}
	var ticks plot.ConstantTicks
	for r := 1; r <= int(n); r += step {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: strconv.Itoa(r)})
	}
	for _, a := range []*plot.Axis{&ch.Plot.X, &ch.Plot.Y} {
		a.Min, a.Max = 0.5, n+0.5
		a.Tick.Marker = ticks
	}
	return ch, nil
}
