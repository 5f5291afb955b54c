package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

var whiteBG = color.White

// Series is one curve: Y against X, with an optional band Y ± Err (Err nil or all zero: no band).
type Series struct {
	Name    string
	X, Y    []float64
	Err     []float64
	Markers bool // draw a marker at each point
}

func (s Series) check() error {
	if len(s.X) != len(s.Y) {
		return fmt.Errorf("series %q: %d x values but %d y values", s.Name, len(s.X), len(s.Y))
	}
	if s.Err != nil && len(s.Err) != len(s.Y) {
		return fmt.Errorf("series %q: %d error values for %d points", s.Name, len(s.Err), len(s.Y))
	}
	if len(s.X) == 0 {
		return fmt.Errorf("series %q: no points", s.Name)
	}
	return nil
}

func xys(x, y []float64) plotter.XYs {
	out := make(plotter.XYs, len(x))
	for i := range x {
		out[i] = plotter.XY{X: x[i], Y: y[i]}
	}
	return out
}

// MinLinePoints is the fewest measured values a series needs to be drawn as a line with a band: a
// line through two points draws a trend nobody measured, so a series with fewer values is drawn as
// markers with ± Err error bars ([Lines]).
const MinLinePoints = 3

// Lines draws each series as a line with a translucent ± Err band (e.g. ± SE over seeds), with a
// legend below the plot when there is more than one series (or the only one is named). A series
// keeps its slot's colour, dash and marker ([Style.Slots]); Markers draws the marker at each point.
// A series of fewer than [MinLinePoints] values gets no line and no band: its points are drawn as
// markers with ± Err error bars, and its legend entry shows the marker alone.
func Lines(st Style, l Labels, series []Series) (*Chart, error) {
	if len(series) == 0 {
		return nil, errors.New("plots: Lines: no series")
	}
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
	}
	slots := st.SlotsOf(names)
	// Bands first, so that no band veils another series' line.
	for i, s := range series {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("plots: Lines: %w", err)
		}
		if hasBand(s.Err) && len(s.X) >= MinLinePoints {
			poly := make(plotter.XYs, 0, 2*len(s.X))
			for j := range s.X {
				poly = append(poly, plotter.XY{X: s.X[j], Y: s.Y[j] + s.Err[j]})
			}
			for j := len(s.X) - 1; j >= 0; j-- {
				poly = append(poly, plotter.XY{X: s.X[j], Y: s.Y[j] - s.Err[j]})
			}
			band, err := plotter.NewPolygon(poly)
			if err != nil {
				return nil, fmt.Errorf("plots: Lines: %w", err)
			}
			band.Color = st.Translucent(st.Color(slots[i]))
			band.LineStyle.Width = 0
			ch.AddData(band)
		}
	}
	// Series drawn as points are dodged sideways (4 pt apart) so that error bars at one x do not
	// hide each other.
	var dodge []int
	for i, s := range series {
		if len(s.X) < MinLinePoints {
			dodge = append(dodge, i)
		}
	}
	ch.padPoints = len(dodge) > 0
	offset := func(i int) vg.Length {
		j := slices.Index(dodge, i)
		if j < 0 || len(dodge) < 2 {
			return 0
		}
		return vg.Length(4 * (float64(j) - float64(len(dodge)-1)/2))
	}
	for i, s := range series {
		k := slots[i]
		off := offset(i)
		var thumbs []plot.Thumbnailer
		if len(s.X) >= MinLinePoints {
			line, err := plotter.NewLine(xys(s.X, s.Y))
			if err != nil {
				return nil, fmt.Errorf("plots: Lines: series %q: %w", s.Name, err)
			}
			line.LineStyle = st.lineStyle(k)
			ch.AddData(line)
			thumbs = append(thumbs, line)
		} else {
			// Too few values for a line: each point with its error bar (solid, whatever the slot's dash).
			s.Markers = true
			if hasBand(s.Err) {
				eb, err := plotter.NewYErrorBars(errPoints{s.X, s.Y, s.Err})
				if err != nil {
					return nil, fmt.Errorf("plots: Lines: %w", err)
				}
				eb.LineStyle = draw.LineStyle{Color: st.Color(k), Width: st.LineWidth}
				eb.CapWidth = 4
				ch.AddData(shiftedPlotter{eb, off})
			}
		}
		if s.Markers {
			sc, err := plotter.NewScatter(xys(s.X, s.Y))
			if err != nil {
				return nil, fmt.Errorf("plots: Lines: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: st.Color(k), Radius: 2, Shape: Glyph(k)}
			if off != 0 {
				ch.AddData(shiftedPlotter{sc, off})
			} else {
				ch.AddData(sc)
			}
			thumbs = append(thumbs, sc)
		}
		if s.Name != "" {
			ch.AddLegend(s.Name, thumbs...)
		}
	}
	return ch, nil
}

// LogX puts the x axis on a log scale with ticks at the given values (e.g. the points of a
// geometric sweep: 16, 32, 64, …), or at the powers of ten when none are given.
func (ch *Chart) LogX(ticksAt ...float64) {
	ch.Plot.X.Scale = plot.LogScale{}
	if len(ticksAt) == 0 {
		ch.Plot.X.Tick.Marker = plot.LogTicks{Prec: -1}
		return
	}
	var ticks plot.ConstantTicks
	for _, v := range ticksAt {
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
	}
	ch.Plot.X.Tick.Marker = ticks
}

// LogY puts the y axis on a log scale with ticks at the powers of ten (for quantities that span
// decades, e.g. a norm that grows 100× in one arm and shrinks in the others). Every y value drawn
// must be positive: a band's lower edge, y − err, included (see report's log_y, which clips it).
func (ch *Chart) LogY() {
	ch.Plot.Y.Scale = plot.LogScale{}
	ch.Plot.Y.Tick.Marker = plot.LogTicks{Prec: -1}
}

// RotateXTicks turns the x tick labels by deg degrees (counter-clockwise), anchored at their end,
// so that long category names do not overprint.
func (ch *Chart) RotateXTicks(deg float64) {
	if deg == 0 {
		return
	}
	ch.Plot.X.Tick.Label.Rotation = deg * math.Pi / 180
	ch.Plot.X.Tick.Label.XAlign = draw.XRight
	ch.Plot.X.Tick.Label.YAlign = draw.YTop
}

// gapTicks makes the ticks of a nominal axis invisible but 2.5pt long, so that the tick labels
// keep off the data (gonum sets them to zero length, and the labels' font box then reaches into
// the data area).
func gapTicks(a *plot.Axis) {
	a.Tick.LineStyle.Width = 0.5
	a.Tick.LineStyle.Color = color.Transparent
	a.Tick.Length = 2.5
}

func hasBand(err []float64) bool {
	for _, e := range err {
		if e != 0 && !math.IsNaN(e) {
			return true
		}
	}
	return false
}

// Glyph is the marker of slot k: filled circle, hollow square, filled triangle, hollow ring,
// filled box, hollow triangle, plus, cross; slots k and k + 8 differ in their marker (k + k/8
// modulo 8) as well as their dash pattern.
func Glyph(k int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}}
	return shapes[(k+k/len(shapes))%len(shapes)]
}

// FilledGlyph is the filled marker of slot k in [Pareto] and [Agreement] (circle, square,
// triangle), for another figure that shows the same groups (e.g. a [ForestGroup]'s Shape).
func FilledGlyph(k int) draw.GlyphDrawer { return filledGlyph(k) }

// filledGlyph is the filled marker of slot k (circle, square, triangle), for scatter plots whose
// rings and size keys are hollow circles.
func filledGlyph(k int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	return shapes[k%len(shapes)]
}

func xysIdx(x, y []float64, idx []int) plotter.XYs {
	out := make(plotter.XYs, len(idx))
	for i, j := range idx {
		out[i] = plotter.XY{X: x[j], Y: y[j]}
	}
	return out
}

// Grid is a matrix of values for [Heatmap]: Z[r][c] is the value at column label XLabels[c] and
// row label YLabels[r] (row 0 at the bottom). NaN cells are drawn grey and left unannotated.
type Grid struct {
	XLabels, YLabels []string
	Z                [][]float64
	Digits           int    // decimals of the cell annotations; negative: no annotations
	Scale            string // the colour bar's label (e.g. the metric); "" for none
	// Marked cells (row, column) are outlined (black with a white core), e.g. the selected point of
	// a tuning grid.
	Marked [][2]int
}

type gridXYZ struct{ g Grid }

func (g gridXYZ) Dims() (c, r int)   { return len(g.g.XLabels), len(g.g.YLabels) }
func (g gridXYZ) Z(c, r int) float64 { return g.g.Z[r][c] }
func (g gridXYZ) X(c int) float64    { return float64(c) }
func (g gridXYZ) Y(r int) float64    { return float64(r) }

// Heatmap draws an annotated grid with a perceptually uniform sequential colour map (Moreland's
// Kindlmann) and its colour bar, e.g. a metric over a grid of two margins.
func Heatmap(st Style, l Labels, g Grid) (*Chart, error) {
	if len(g.XLabels) == 0 || len(g.YLabels) == 0 {
		return nil, errors.New("plots: Heatmap: empty grid")
	}
	if len(g.Z) != len(g.YLabels) {
		return nil, fmt.Errorf("plots: Heatmap: %d rows for %d row labels", len(g.Z), len(g.YLabels))
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for r, row := range g.Z {
		if len(row) != len(g.XLabels) {
			return nil, fmt.Errorf("plots: Heatmap: row %d has %d values for %d columns", r, len(row), len(g.XLabels))
		}
		for _, v := range row {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		return nil, errors.New("plots: Heatmap: no finite values")
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	pal := sequential()
	ch := newChart(st, l)
	hm := plotter.NewHeatMap(gridXYZ{g}, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.Gray{0xC0}
	ch.AddData(hm)
	ch.Plot.NominalX(g.XLabels...)
	ch.Plot.NominalY(g.YLabels...)
	ch.Plot.X.Padding, ch.Plot.Y.Padding = 0, 0
	gapTicks(&ch.Plot.X)
	gapTicks(&ch.Plot.Y)
	ch.ColorBar = &ColorBar{Palette: pal, Min: lo, Max: hi, Label: g.Scale}
	for _, rc := range g.Marked {
		r, c := float64(rc[0]), float64(rc[1])
		box, err := plotter.NewLine(plotter.XYs{{X: c - 0.47, Y: r - 0.47}, {X: c + 0.47, Y: r - 0.47}, {X: c + 0.47, Y: r + 0.47}, {X: c - 0.47, Y: r + 0.47}, {X: c - 0.47, Y: r - 0.47}})
		if err != nil {
			return nil, fmt.Errorf("plots: Heatmap: %w", err)
		}
		box.LineStyle = draw.LineStyle{Color: color.Black, Width: 2.5 * st.LineWidth}
		inner, err := plotter.NewLine(plotter.XYs{{X: c - 0.47, Y: r - 0.47}, {X: c + 0.47, Y: r - 0.47}, {X: c + 0.47, Y: r + 0.47}, {X: c - 0.47, Y: r + 0.47}, {X: c - 0.47, Y: r - 0.47}})
		if err != nil {
			return nil, fmt.Errorf("plots: Heatmap: %w", err)
		}
		inner.LineStyle = draw.LineStyle{Color: color.White, Width: 0.8 * st.LineWidth} // visible on dark and light cells
		ch.AddData(box, inner)
	}
	if g.Digits >= 0 {
		var lab plotter.XYLabels
		var styles []text.Style
		for r, row := range g.Z {
			for c, v := range row {
				if math.IsNaN(v) {
					continue
				}
				lab.XYs = append(lab.XYs, plotter.XY{X: float64(c), Y: float64(r)})
				lab.Labels = append(lab.Labels, strconv.FormatFloat(v, 'f', g.Digits, 64))
				col := color.Color(color.White)
				if (v-lo)/(hi-lo) > 0.55 { // light end of the colour map: dark text
					col = color.Black
				}
				styles = append(styles, text.Style{Color: col, XAlign: draw.XCenter, YAlign: draw.YCenter})
			}
		}
		if len(lab.Labels) > 0 {
			ls, err := plotter.NewLabels(lab)
			if err != nil {
				return nil, fmt.Errorf("plots: Heatmap: %w", err)
			}
			for i := range ls.TextStyle {
				fnt := ls.TextStyle[i].Font
				fnt.Size = st.TickSize
				ls.TextStyle[i] = styles[i]
				ls.TextStyle[i].Font = fnt
				ls.TextStyle[i].Handler = plot.DefaultTextHandler
			}
			ch.AddData(ls)
		}
	}
	return ch, nil
}

// sequential is Moreland's Kindlmann colour map (perceptually uniform, dark to
// light), without its black and white ends so that extreme cells stay distinct from the text
// and the background.
func sequential() palette.Palette {
	cm := moreland.Kindlmann()
	cm.SetMin(0)
	cm.SetMax(1)
	const n, bottom, top = 255, 0.06, 0.87
	cols := make([]color.Color, n)
	for i := range cols {
		c, err := cm.At(bottom + (top-bottom)*float64(i)/(n-1))
		if err != nil {
			c = color.Gray{0x80}
		}
		cols[i] = c
	}
	return colorList(cols)
}

// densityPalette runs the Kindlmann map backwards, from white (empty cells) to dark (dense).
func densityPalette() palette.Palette {
	cm := moreland.Kindlmann()
	cm.SetMin(0)
	cm.SetMax(1)
	const n = 255
	cols := make([]color.Color, n)
	for i := range cols {
		c, err := cm.At(1 - 0.95*float64(i)/(n-1))
		if err != nil {
			c = color.Gray{0x80}
		}
		cols[i] = c
	}
	return colorList(cols)
}

type colorList []color.Color

func (c colorList) Colors() []color.Color { return c }

// Sample is a set of values for [Histograms].
type Sample struct {
	Name   string
	Values []float64
}

// Histograms overlays density histograms (area 1 each) of the samples on shared bin edges spanning
// all finite values, e.g. the distances of positive and of negative pairs. Each is drawn as a
// translucent filled step outline.
func Histograms(st Style, l Labels, samples []Sample, bins int) (*Chart, error) {
	if len(samples) == 0 {
		return nil, errors.New("plots: Histograms: no samples")
	}
	if bins < 1 {
		bins = 40
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range samples {
		for _, v := range s.Values {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if lo > hi {
		return nil, errors.New("plots: Histograms: no finite values")
	}
	if lo == hi {
		lo, hi = lo-0.5, hi+0.5
	}
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	names := make([]string, len(samples))
	for i, s := range samples {
		names[i] = s.Name
	}
	slots := st.SlotsOf(names)
	for i, s := range samples {
		dens := Density(s.Values, lo, hi, bins)
		w := (hi - lo) / float64(bins)
		pts := make(plotter.XYs, 0, 2*bins+2)
		pts = append(pts, plotter.XY{X: lo, Y: 0})
		for b, d := range dens {
			pts = append(pts, plotter.XY{X: lo + float64(b)*w, Y: d}, plotter.XY{X: lo + float64(b+1)*w, Y: d})
		}
		pts = append(pts, plotter.XY{X: hi, Y: 0})
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("plots: Histograms: sample %q: %w", s.Name, err)
		}
		line.LineStyle = st.lineStyle(slots[i])
		line.LineStyle.Width = st.LineWidth * 0.8
		line.FillColor = st.Translucent(st.Color(slots[i]))
		ch.AddData(line)
		if s.Name != "" {
			ch.AddLegend(s.Name, line)
		}
	}
	return ch, nil
}

// Density returns the histogram density of the finite values in bins equal bins over [lo, hi]:
// count/(n·width), so that the bars have total area 1 (values outside [lo, hi] are counted in n
// but in no bin). hi itself falls in the last bin.
func Density(values []float64, lo, hi float64, bins int) []float64 {
	out := make([]float64, bins)
	w := (hi - lo) / float64(bins)
	n := 0
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		n++
		if v < lo || v > hi {
			continue
		}
		b := int((v - lo) / w)
		if b == bins {
			b--
		}
		out[b]++
	}
	if n == 0 {
		return out
	}
	for b := range out {
		out[b] /= float64(n) * w
	}
	return out
}

// SortedCurve returns the points of a per-class utility curve: the values sorted in descending
// order (NaN dropped), against the fraction of classes (i+1)/n.
func SortedCurve(values []float64) (x, y []float64) {
	for _, v := range values {
		if !math.IsNaN(v) {
			y = append(y, v)
		}
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(y)))
	x = make([]float64, len(y))
	for i := range y {
		x[i] = float64(i+1) / float64(len(y))
	}
	return x, y
}

// Utility draws per-class utility curves: each series' Y values are per-class utilities (any
// order; X is ignored and replaced), shown sorted in descending order against the fraction of
// classes, with the ± Err band taken from the series after the same sort when given.
func Utility(st Style, l Labels, series []Series) (*Chart, error) {
	var curves []Series
	for _, s := range series {
		x, y := SortedCurve(s.Y)
		if len(y) == 0 {
			return nil, fmt.Errorf("plots: Utility: series %q has no values", s.Name)
		}
		curves = append(curves, Series{Name: s.Name, X: x, Y: y, Err: s.Err})
	}
	if l.X == "" {
		l.X = "fraction of classes"
	}
	return Lines(st, l, curves)
}

type densGrid struct {
	z      [][]float64
	x0, dx float64
	y0, dy float64
}

func (d densGrid) Dims() (c, r int)   { return len(d.z[0]), len(d.z) }
func (d densGrid) Z(c, r int) float64 { return d.z[r][c] }
func (d densGrid) X(c int) float64    { return d.x0 + (float64(c)+0.5)*d.dx }
func (d densGrid) Y(r int) float64    { return d.y0 + (float64(r)+0.5)*d.dy }

// Density2D draws the density of 2-D points (e.g. a 2-D embedding) as an image of bins × bins
// cells, log-scaled (log1p of counts) so that sparse regions stay visible; empty cells are white.
// The colour bar shows log(1 + count).
func Density2D(st Style, l Labels, x, y []float64, bins int) (*Chart, error) {
	if len(x) != len(y) || len(x) == 0 {
		return nil, fmt.Errorf("plots: Density2D: need equal non-empty x and y, got %d and %d", len(x), len(y))
	}
	if bins < 2 {
		bins = 50
	}
	x0, x1 := minMax(x)
	y0, y1 := minMax(y)
	if x0 > x1 || y0 > y1 {
		return nil, errors.New("plots: Density2D: no finite points")
	}
	if x0 == x1 {
		x0, x1 = x0-0.5, x1+0.5
	}
	if y0 == y1 {
		y0, y1 = y0-0.5, y1+0.5
	}
	d := densGrid{x0: x0, dx: (x1 - x0) / float64(bins), y0: y0, dy: (y1 - y0) / float64(bins)}
	d.z = make([][]float64, bins)
	for r := range d.z {
		d.z[r] = make([]float64, bins)
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) || math.IsInf(x[i], 0) || math.IsInf(y[i], 0) {
			continue
		}
		c := min(int((x[i]-x0)/d.dx), bins-1)
		r := min(int((y[i]-y0)/d.dy), bins-1)
		d.z[r][c]++
	}
	hi := 0.0
	for r := range d.z {
		for c := range d.z[r] {
			d.z[r][c] = math.Log1p(d.z[r][c])
			hi = math.Max(hi, d.z[r][c])
		}
	}
	if hi == 0 {
		hi = 1
	}
	ch := newChart(st, l)
	pal := densityPalette()
	hm := plotter.NewHeatMap(d, pal)
	hm.Min, hm.Max = 0, hi
	ch.AddData(hm)
	ch.Plot.X.Padding, ch.Plot.Y.Padding = 0, 0
	ch.ColorBar = &ColorBar{Palette: pal, Min: 0, Max: hi, Label: "log(1 + count)"}
	return ch, nil
}

func minMax(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, e := range v {
		if !math.IsNaN(e) && !math.IsInf(e, 0) {
			lo, hi = math.Min(lo, e), math.Max(hi, e)
		}
	}
	return lo, hi
}

// BarSeries is one set of bars, one per category, with optional error bars.
type BarSeries struct {
	Name   string
	Values []float64
	Err    []float64
}

// Bars draws grouped bars: one group per category, one bar per series within a group (coloured by
// the series' slot), with error bars where Err is given. Long category names need
// [Chart.RotateXTicks]; [CheckLayout] finds those that overprint.
func Bars(st Style, l Labels, categories []string, series []BarSeries) (*Chart, error) {
	if len(categories) == 0 || len(series) == 0 {
		return nil, errors.New("plots: Bars: no categories or no series")
	}
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	names := make([]string, len(series))
	for i, s := range series {
		names[i] = s.Name
	}
	slots := st.SlotsOf(names)
	// Categories sit at x = 0..n-1 on an axis from -0.5 to n-0.5; the data area is the figure
	// less about half an inch of y axis (and the legend on the right), and a group of bars fills
	// 80% of its category's slot.
	avail := (st.Width - 0.5*vg.Inch - ch.legendRightWidth()) * 0.8 / vg.Length(len(categories))
	w := avail / vg.Length(len(series))
	for i, s := range series {
		if len(s.Values) != len(categories) {
			return nil, fmt.Errorf("plots: Bars: series %q has %d values for %d categories", s.Name, len(s.Values), len(categories))
		}
		bc, err := plotter.NewBarChart(plotter.Values(s.Values), w*0.9)
		if err != nil {
			return nil, fmt.Errorf("plots: Bars: series %q: %w", s.Name, err)
		}
		bc.Color = st.Color(slots[i])
		bc.LineStyle.Width = 0
		bc.Offset = w * (vg.Length(i) - vg.Length(len(series)-1)/2)
		ch.AddData(bc)
		if s.Name != "" {
			ch.AddLegend(s.Name, bc)
		}
		if hasBand(s.Err) {
			if len(s.Err) != len(s.Values) {
				return nil, fmt.Errorf("plots: Bars: series %q has %d errors for %d values", s.Name, len(s.Err), len(s.Values))
			}
			var pts errPoints
			for j, e := range s.Err {
				if e > 0 && !math.IsNaN(e) { // no cap for single-seed or missing bars
					pts.x = append(pts.x, float64(j))
					pts.v = append(pts.v, s.Values[j])
					pts.e = append(pts.e, e)
				}
			}
			eb, err := plotter.NewYErrorBars(pts)
			if err != nil {
				return nil, fmt.Errorf("plots: Bars: %w", err)
			}
			eb.LineStyle.Width = st.LineWidth * 0.7
			eb.CapWidth = w * 0.4
			// Error bars sit at category positions; shift them with the bars.
			ch.AddData(shifted{eb, bc.Offset})
		}
	}
	ch.Plot.Y.Min = math.Min(ch.Plot.Y.Min, 0)
	ch.Plot.NominalX(categories...)
	gapTicks(&ch.Plot.X)
	ch.Plot.X.Min, ch.Plot.X.Max = -0.5, float64(len(categories))-0.5
	return ch, nil
}

type errXY struct{ x, y, e float64 }

func (p errXY) Len() int                      { return 1 }
func (p errXY) XY(int) (float64, float64)     { return p.x, p.y }
func (p errXY) YError(int) (float64, float64) { return p.e, p.e }

type errPoints struct{ x, v, e []float64 }

func (p errPoints) Len() int                    { return len(p.v) }
func (p errPoints) XY(i int) (float64, float64) { return p.x[i], p.v[i] }
func (p errPoints) YError(i int) (float64, float64) {
	return p.e[i], p.e[i]
}

// shifted draws a plotter displaced horizontally by off, to align error bars with offset bars.
type shifted struct {
	*plotter.YErrorBars
	off vg.Length
}

func (s shifted) Plot(c draw.Canvas, p *plot.Plot) {
	c.Rectangle.Min.X += s.off
	c.Rectangle.Max.X += s.off
	s.YErrorBars.Plot(c, p)
}

// shiftedPlotter draws a plotter off vg.Length to the right (points of several series dodged at one
// x), with its data range and its glyph boxes moved alike.
type shiftedPlotter struct {
	plot.Plotter
	off vg.Length
}

func (s shiftedPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	c.Rectangle.Min.X += s.off
	c.Rectangle.Max.X += s.off
	s.Plotter.Plot(c, p)
}

func (s shiftedPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	if r, ok := s.Plotter.(plot.DataRanger); ok {
		return r.DataRange()
	}
	inf := math.Inf(1)
	return inf, -inf, inf, -inf
}

func (s shiftedPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	g, ok := s.Plotter.(plot.GlyphBoxer)
	if !ok {
		return nil
	}
	boxes := g.GlyphBoxes(p)
	for i := range boxes {
		boxes[i].Rectangle.Min.X += s.off
		boxes[i].Rectangle.Max.X += s.off
	}
	return boxes
}
