package plots

import (
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LegendEntry is one line of a [Chart]'s legend: a text after its thumbnails (drawn on top of each
// other, e.g. a line and its marker).
type LegendEntry struct {
	Text   string
	Thumbs []plot.Thumbnailer
}

// ColorBar is the scale of a heatmap's colours, drawn right of the plot and as high as its data
// area: the colours from Min (bottom) to Max (top), with ticks and an optional label.
type ColorBar struct {
	Palette  palette.Palette
	Min, Max float64
	Label    string
}

// Chart is a plot whose legend (and colour bar) lie outside the data area: the legend below the
// plot (in as many columns as fit; the figure grows by the legend's height) or in a strip to its
// right, as Style.Legend says. Every plot kind of this package returns a *Chart; the embedded
// *plot.Plot can be adjusted as usual before [Save] (its own Legend stays empty: add entries to
// Entries instead). Data plotters added with [Chart.AddData] are known to [CheckLayout] as data
// marks.
type Chart struct {
	*plot.Plot
	Style    Style
	Entries  []LegendEntry
	ColorBar *ColorBar
	// padPoints widens both axes by 5 % on each side when the chart is first drawn (on a log
	// axis: by 5 % of its decades), so that markers drawn without a line ([Lines]: fewer than
	// MinLinePoints values) do not sit on the axes.
	padPoints, padded bool
}

// pad widens the axes once (see padPoints).
func (ch *Chart) pad() {
	if !ch.padPoints || ch.padded {
		return
	}
	ch.padded = true
	for _, a := range []*plot.Axis{&ch.Plot.X, &ch.Plot.Y} {
		if _, log := a.Scale.(plot.LogScale); log && a.Min > 0 {
			f := math.Pow(a.Max/a.Min, 0.05)
			if f == 1 {
				f = 1.2
			}
			a.Min, a.Max = a.Min/f, a.Max*f
			continue
		}
		d := (a.Max - a.Min) * 0.05
		if d == 0 {
			d = math.Max(math.Abs(a.Max)*0.05, 0.5)
		}
		a.Min, a.Max = a.Min-d, a.Max+d
	}
}

func newChart(st Style, l Labels) *Chart {
	return &Chart{Plot: st.newPlot(l), Style: st}
}

// AddData adds plotters that draw data (lines, bands, bars, points, cells, annotations), as
// opposed to decorations such as grids.
func (ch *Chart) AddData(ps ...plot.Plotter) {
	for _, p := range ps {
		ch.Plot.Add(dataPlotter{p})
	}
}

// AddLegend appends a legend entry.
func (ch *Chart) AddLegend(text string, thumbs ...plot.Thumbnailer) {
	ch.Entries = append(ch.Entries, LegendEntry{Text: text, Thumbs: thumbs})
}

// dataPlotter tags what a plotter draws as data for a [Recorder]; it forwards the data range and
// glyph boxes of the plotter it wraps (neutral values when the plotter has none).
type dataPlotter struct{ plot.Plotter }

func (d dataPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	if r := recorderOf(c.Canvas); r != nil {
		prev := r.SetRole(RoleData)
		defer r.SetRole(prev)
	}
	d.Plotter.Plot(c, p)
}

func (d dataPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	if r, ok := d.Plotter.(plot.DataRanger); ok {
		return r.DataRange()
	}
	inf := math.Inf(1)
	return inf, -inf, inf, -inf
}

func (d dataPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	if g, ok := d.Plotter.(plot.GlyphBoxer); ok {
		return g.GlyphBoxes(p)
	}
	return nil
}

// legend geometry
const (
	chartMargin  = 2              // left, top and right of the plot, pt
	legendThumb  = 0.22 * vg.Inch // thumbnail width
	legendGap    = 3              // between thumbnail and text, pt
	legendColGap = 8              // between columns, pt
	legendPad    = 3              // around the legend block, pt
)

func (ch *Chart) legendStyle() text.Style {
	sty := ch.Plot.Legend.TextStyle
	sty.Font.Size = ch.Style.TickSize
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	return sty
}

func (ch *Chart) rowHeight() vg.Length {
	e := ch.legendStyle().FontExtents()
	return e.Height * 1.05
}

// legendGrid returns the number of columns and rows of the legend below a plot of width w, and
// the column width.
func (ch *Chart) legendGrid(w vg.Length) (cols, rows int, colW vg.Length) {
	n := len(ch.Entries)
	if n == 0 {
		return 0, 0, 0
	}
	sty := ch.legendStyle()
	for _, e := range ch.Entries {
		colW = max(colW, legendThumb+legendGap+sty.Width(e.Text))
	}
	cols = int((w - 2*legendPad + legendColGap) / (colW + legendColGap))
	cols = max(1, min(cols, n))
	rows = (n + cols - 1) / cols
	cols = (n + rows - 1) / rows // balance: as few columns as the rows need
	return cols, rows, colW
}

func (ch *Chart) legendBelowHeight() vg.Length {
	if ch.Style.Legend != LegendBelow || len(ch.Entries) == 0 {
		return 0
	}
	_, rows, _ := ch.legendGrid(ch.Style.Width)
	return vg.Length(rows)*ch.rowHeight() + 2*legendPad
}

func (ch *Chart) legendRightWidth() vg.Length {
	if ch.Style.Legend != LegendRight || len(ch.Entries) == 0 {
		return 0
	}
	var w vg.Length
	sty := ch.legendStyle()
	for _, e := range ch.Entries {
		w = max(w, sty.Width(e.Text))
	}
	return legendThumb + legendGap + w + 2*legendPad
}

// Size is Style.Width wide and Style.Height high plus the height of a legend below the plot.
func (ch *Chart) Size() (w, h vg.Length) {
	return ch.Style.Width, ch.Style.Height + ch.legendBelowHeight()
}

// Draw draws the chart onto c, filling it white first.
func (ch *Chart) Draw(c draw.Canvas) {
	ch.pad()
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	rec := recorderOf(c.Canvas)
	area := draw.Crop(c, chartMargin, -chartMargin, 0, -chartMargin) // text boxes of the title and the y label stay inside
	area.Min.Y += ch.legendBelowHeight()
	area.Max.X -= ch.legendRightWidth()
	if ch.ColorBar != nil {
		area.Max.X -= ch.colorBarWidth()
	}
	dataArea := ch.Plot.DataCanvas(area)
	ch.Plot.Draw(area)
	if rec != nil {
		rec.AddBox(RoleDataArea, dataArea.Rectangle)
	}
	if ch.ColorBar != nil {
		ch.drawColorBar(c, dataArea.Rectangle, area.Max.X)
	}
	if len(ch.Entries) == 0 {
		return
	}
	var box vg.Rectangle
	switch ch.Style.Legend {
	case LegendRight:
		h := vg.Length(len(ch.Entries))*ch.rowHeight() + 2*legendPad
		x0 := c.Max.X - ch.legendRightWidth()
		// Top-aligned with the data area.
		box = vg.Rectangle{Min: vg.Point{X: x0, Y: dataArea.Max.Y - h}, Max: vg.Point{X: c.Max.X, Y: dataArea.Max.Y}}
		ch.drawEntries(c, box, 1, len(ch.Entries), 0)
	default:
		cols, rows, colW := ch.legendGrid(c.Max.X - c.Min.X)
		w := vg.Length(cols)*colW + vg.Length(cols-1)*legendColGap + 2*legendPad
		x0 := c.Min.X + (c.Max.X-c.Min.X-w)/2
		box = vg.Rectangle{Min: vg.Point{X: x0, Y: c.Min.Y}, Max: vg.Point{X: x0 + w, Y: c.Min.Y + ch.legendBelowHeight()}}
		ch.drawEntries(c, box, cols, rows, colW)
	}
	if rec != nil {
		rec.AddBox(RoleLegend, box)
	}
}

// drawEntries lays the entries out in the box, column by column.
func (ch *Chart) drawEntries(c draw.Canvas, box vg.Rectangle, cols, rows int, colW vg.Length) {
	drawLegend(c, ch.legendStyle(), ch.Entries, box, rows, colW, ch.rowHeight())
}

// drawLegend draws the entries in the box, column by column, rows per column, each row rh high:
// the thumbnails legendThumb wide, then the text.
func drawLegend(c draw.Canvas, sty text.Style, entries []LegendEntry, box vg.Rectangle, rows int, colW, rh vg.Length) {
	if rec := recorderOf(c.Canvas); rec != nil {
		prev := rec.SetRole(RoleLegendText)
		defer rec.SetRole(prev)
	}
	for i, e := range entries {
		col, row := i/rows, i%rows
		x := box.Min.X + legendPad + vg.Length(col)*(colW+legendColGap)
		yTop := box.Max.Y - legendPad - vg.Length(row)*rh
		thumb := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
			Min: vg.Point{X: x, Y: yTop - rh + 0.15*rh},
			Max: vg.Point{X: x + legendThumb, Y: yTop - 0.15*rh},
		}}
		for _, t := range e.Thumbs {
			t.Thumbnail(&thumb)
		}
		c.FillText(sty, vg.Point{X: x + legendThumb + legendGap, Y: yTop - rh/2}, e.Text)
	}
}

// colour bar geometry
const (
	cbarGap   = 6 // between the plot and the bar, pt
	cbarWidth = 8 // the bar, pt
	cbarTick  = 2 // tick length, pt
	cbarPad   = 2 // between ticks and labels, and after the label, pt
)

func (ch *Chart) cbarTicks() []plot.Tick {
	cb := ch.ColorBar
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(cb.Min, cb.Max) {
		if t.Label != "" && t.Value >= cb.Min && t.Value <= cb.Max {
			out = append(out, t)
		}
	}
	if len(out) < 2 { // a narrow range: label both ends
		out = []plot.Tick{{Value: cb.Min, Label: trimFloat(cb.Min)}, {Value: cb.Max, Label: trimFloat(cb.Max)}}
	}
	return out
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func (ch *Chart) cbarTickStyle() text.Style {
	sty := ch.Plot.Y.Tick.Label
	sty.Font.Size = ch.Style.TickSize
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
	return sty
}

func (ch *Chart) cbarLabelStyle() text.Style {
	sty := ch.Plot.Y.Label.TextStyle
	sty.Font.Size = ch.Style.LabelSize
	sty.Rotation = math.Pi / 2 // reads bottom to top, as the y label
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	return sty
}

func (ch *Chart) colorBarWidth() vg.Length {
	sty := ch.cbarTickStyle()
	var lw vg.Length
	for _, t := range ch.cbarTicks() {
		lw = max(lw, sty.Width(t.Label))
	}
	w := cbarGap + cbarWidth + cbarTick + cbarPad + lw + cbarPad
	if ch.ColorBar.Label != "" {
		w += ch.cbarLabelStyle().FontExtents().Height + cbarPad
	}
	return w
}

func (ch *Chart) drawColorBar(c draw.Canvas, data vg.Rectangle, x0 vg.Length) {
	cb := ch.ColorBar
	cols := cb.Palette.Colors()
	x0 += cbarGap
	x1 := x0 + cbarWidth
	h := data.Max.Y - data.Min.Y
	n := len(cols)
	for i, col := range cols {
		y0 := data.Min.Y + h*vg.Length(i)/vg.Length(n)
		y1 := data.Min.Y + h*vg.Length(i+1)/vg.Length(n)
		if i < n-1 {
			y1 += 0.3 // no hairline gaps between the slices
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
	ls := draw.LineStyle{Color: color.Black, Width: 0.5}
	c.StrokeLines(ls, []vg.Point{{X: x0, Y: data.Min.Y}, {X: x1, Y: data.Min.Y}, {X: x1, Y: data.Max.Y}, {X: x0, Y: data.Max.Y}, {X: x0, Y: data.Min.Y}})
	sty := ch.cbarTickStyle()
	var lw vg.Length
	for _, t := range ch.cbarTicks() {
		y := data.Min.Y + h*vg.Length((t.Value-cb.Min)/(cb.Max-cb.Min))
		c.StrokeLine2(ls, x1, y, x1+cbarTick, y)
		c.FillText(sty, vg.Point{X: x1 + cbarTick + cbarPad, Y: y}, t.Label)
		lw = max(lw, sty.Width(t.Label))
	}
	if cb.Label != "" {
		lx := x1 + cbarTick + cbarPad + lw + cbarPad
		c.FillText(ch.cbarLabelStyle(), vg.Point{X: lx, Y: (data.Min.Y + data.Max.Y) / 2}, cb.Label)
	}
}
