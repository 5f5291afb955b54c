package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
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

// Lines draws each series as a line with a translucent ± Err band, in palette order, with a legend
// when there is more than one series (or the only one is named).
func Lines(st Style, l Labels, series []Series) (*plot.Plot, error) {
	if len(series) == 0 {
		return nil, errors.New("plots: Lines: no series")
	}
	p := st.newPlot(l)
	p.Add(plotter.NewGrid())
	// Bands first, so that no band veils another series' line.
	for i, s := range series {
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("plots: Lines: %w", err)
		}
		if hasBand(s.Err) {
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
			band.Color = st.Translucent(st.Color(i))
			band.LineStyle.Width = 0
			p.Add(band)
		}
	}
	for i, s := range series {
		line, err := plotter.NewLine(xys(s.X, s.Y))
		if err != nil {
			return nil, fmt.Errorf("plots: Lines: series %q: %w", s.Name, err)
		}
		line.LineStyle = st.lineStyle(i)
		p.Add(line)
		if len(s.X) == 1 && hasBand(s.Err) {
			// A band needs two points; show a lone point's spread as an error bar.
			eb, err := plotter.NewYErrorBars(errXY{s.X[0], s.Y[0], s.Err[0]})
			if err != nil {
				return nil, fmt.Errorf("plots: Lines: %w", err)
			}
			eb.LineStyle = st.lineStyle(i)
			p.Add(eb)
		}
		if s.Markers {
			sc, err := plotter.NewScatter(xys(s.X, s.Y))
			if err != nil {
				return nil, fmt.Errorf("plots: Lines: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: st.Color(i), Radius: 1.6, Shape: glyph(i)}
			p.Add(sc)
			p.Legend.Add(s.Name, line, sc)
		} else if s.Name != "" {
			p.Legend.Add(s.Name, line)
		}
	}
	return p, nil
}

// legendRoom raises the top of the y axis so that a legend in the top corner does not cover data.
func legendRoom(p *plot.Plot, entries int) {
	if entries == 0 {
		return
	}
	p.Y.Max += (0.08 + 0.07*float64(entries)) * (p.Y.Max - p.Y.Min)
}

func hasBand(err []float64) bool {
	for _, e := range err {
		if e != 0 && !math.IsNaN(e) {
			return true
		}
	}
	return false
}

func glyph(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	return shapes[i%len(shapes)]
}

// Point is one labelled point of a scatter plot; points with the same Group share a colour.
type Point struct {
	X, Y   float64
	Label  string  // optional annotation next to the point
	Group  string  // legend entry
	Size   float64 // marker radius relative to the default (0 or 1: default)
	Marked bool    // drawn with a black ring (e.g. the TCM-regularised models of seed 000 Fig. 3)
}

// ScatterPareto draws the points, coloured by group and sized by Point.Size, rings the marked ones
// (legend entry markLabel, when not empty), and joins their Pareto frontier (see [ParetoFrontier])
// with a dashed step line.
func ScatterPareto(st Style, l Labels, pts []Point, maxX, maxY bool, markLabel ...string) (*plot.Plot, error) {
	if len(pts) == 0 {
		return nil, errors.New("plots: ScatterPareto: no points")
	}
	p := st.newPlot(l)
	p.Add(plotter.NewGrid())
	var groups []string
	byGroup := map[string]plotter.XYs{}
	sizes := map[string][]float64{}
	var marked plotter.XYs
	var markedSize []float64
	x := make([]float64, len(pts))
	y := make([]float64, len(pts))
	for i, pt := range pts {
		x[i], y[i] = pt.X, pt.Y
		if _, ok := byGroup[pt.Group]; !ok {
			groups = append(groups, pt.Group)
		}
		size := pt.Size
		if size <= 0 {
			size = 1
		}
		byGroup[pt.Group] = append(byGroup[pt.Group], plotter.XY{X: pt.X, Y: pt.Y})
		sizes[pt.Group] = append(sizes[pt.Group], size)
		if pt.Marked {
			marked = append(marked, plotter.XY{X: pt.X, Y: pt.Y})
			markedSize = append(markedSize, size)
		}
	}
	legendEntries := len(groups) + 1
	front := ParetoFrontier(x, y, maxX, maxY)
	fr := make(plotter.XYs, len(front))
	for i, j := range front {
		fr[i] = plotter.XY{X: x[j], Y: y[j]}
	}
	fl, err := plotter.NewLine(fr)
	if err != nil {
		return nil, fmt.Errorf("plots: ScatterPareto: %w", err)
	}
	fl.LineStyle = draw.LineStyle{Color: color.Gray{0x55}, Width: st.LineWidth * 0.8, Dashes: []vg.Length{3, 2}}
	p.Add(fl)
	p.Legend.Add("Pareto frontier", fl)
	for i, g := range groups {
		sc, err := plotter.NewScatter(byGroup[g])
		if err != nil {
			return nil, fmt.Errorf("plots: ScatterPareto: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: st.Color(i), Radius: 2, Shape: glyph(i)}
		gs, col, sh := sizes[g], st.Color(i), glyph(i)
		sc.GlyphStyleFunc = func(k int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: col, Radius: vg.Length(2 * gs[k]), Shape: sh}
		}
		p.Add(sc)
		if g != "" {
			p.Legend.Add(g, sc)
		}
	}
	if len(marked) > 0 {
		ring, err := plotter.NewScatter(marked)
		if err != nil {
			return nil, fmt.Errorf("plots: ScatterPareto: %w", err)
		}
		ring.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: 3.5, Shape: draw.RingGlyph{}}
		ring.GlyphStyleFunc = func(k int) draw.GlyphStyle {
			return draw.GlyphStyle{Color: color.Black, Radius: vg.Length(2*markedSize[k] + 1.5), Shape: draw.RingGlyph{}}
		}
		p.Add(ring)
		if len(markLabel) > 0 && markLabel[0] != "" {
			p.Legend.Add(markLabel[0], ring)
			legendEntries++
		}
	}
	var lab plotter.XYLabels
	for _, pt := range pts {
		if pt.Label != "" {
			lab.XYs = append(lab.XYs, plotter.XY{X: pt.X, Y: pt.Y})
			lab.Labels = append(lab.Labels, pt.Label)
		}
	}
	if len(lab.Labels) > 0 {
		ls, err := plotter.NewLabels(lab)
		if err != nil {
			return nil, fmt.Errorf("plots: ScatterPareto: %w", err)
		}
		for i := range ls.TextStyle {
			ls.TextStyle[i].Font.Size = st.TickSize - 1
		}
		ls.Offset = vg.Point{X: 3, Y: 2}
		p.Add(ls)
	}
	legendRoom(p, legendEntries)
	return p, nil
}

// Grid is a matrix of values for [Heatmap]: Z[r][c] is the value at column label XLabels[c] and
// row label YLabels[r] (row 0 at the bottom). NaN cells are drawn grey and left unannotated.
type Grid struct {
	XLabels, YLabels []string
	Z                [][]float64
	Digits           int // decimals of the cell annotations; negative: no annotations
}

type gridXYZ struct{ g Grid }

func (g gridXYZ) Dims() (c, r int)   { return len(g.g.XLabels), len(g.g.YLabels) }
func (g gridXYZ) Z(c, r int) float64 { return g.g.Z[r][c] }
func (g gridXYZ) X(c int) float64    { return float64(c) }
func (g gridXYZ) Y(r int) float64    { return float64(r) }

// Heatmap draws an annotated grid with a perceptually uniform sequential colour map (Moreland's
// Kindlmann), e.g. a metric over a grid of two margins.
func Heatmap(st Style, l Labels, g Grid) (*plot.Plot, error) {
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
	p := st.newPlot(l)
	hm := plotter.NewHeatMap(gridXYZ{g}, pal)
	hm.Min, hm.Max = lo, hi
	hm.NaN = color.Gray{0xC0}
	p.Add(hm)
	p.NominalX(g.XLabels...)
	p.NominalY(g.YLabels...)
	p.X.Padding, p.Y.Padding = 0, 0
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
				fnt.Size = st.TickSize - 1
				ls.TextStyle[i] = styles[i]
				ls.TextStyle[i].Font = fnt
				ls.TextStyle[i].Handler = plot.DefaultTextHandler
			}
			p.Add(ls)
		}
	}
	return p, nil
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
func Histograms(st Style, l Labels, samples []Sample, bins int) (*plot.Plot, error) {
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
	p := st.newPlot(l)
	p.Add(plotter.NewGrid())
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
		line.LineStyle = st.lineStyle(i)
		line.LineStyle.Width = st.LineWidth * 0.8
		line.FillColor = st.Translucent(st.Color(i))
		p.Add(line)
		if s.Name != "" {
			p.Legend.Add(s.Name, line)
		}
	}
	named := 0
	for _, s := range samples {
		if s.Name != "" {
			named++
		}
	}
	legendRoom(p, named)
	return p, nil
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
func Utility(st Style, l Labels, series []Series) (*plot.Plot, error) {
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
func Density2D(st Style, l Labels, x, y []float64, bins int) (*plot.Plot, error) {
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
	p := st.newPlot(l)
	hm := plotter.NewHeatMap(d, densityPalette())
	hm.Min, hm.Max = 0, hi
	p.Add(hm)
	p.X.Padding, p.Y.Padding = 0, 0
	return p, nil
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

// Bars draws grouped bars: one group per category, one bar per series within a group, with
// error bars where Err is given.
func Bars(st Style, l Labels, categories []string, series []BarSeries) (*plot.Plot, error) {
	if len(categories) == 0 || len(series) == 0 {
		return nil, errors.New("plots: Bars: no categories or no series")
	}
	p := st.newPlot(l)
	p.Add(plotter.NewGrid())
	// Categories sit at x = 0..n-1 on an axis from -0.5 to n-0.5; the data area is the figure
	// less about half an inch of y axis, and a group of bars fills 80% of its category's slot.
	avail := (st.Width - 0.5*vg.Inch) * 0.8 / vg.Length(len(categories))
	w := avail / vg.Length(len(series))
	for i, s := range series {
		if len(s.Values) != len(categories) {
			return nil, fmt.Errorf("plots: Bars: series %q has %d values for %d categories", s.Name, len(s.Values), len(categories))
		}
		bc, err := plotter.NewBarChart(plotter.Values(s.Values), w*0.9)
		if err != nil {
			return nil, fmt.Errorf("plots: Bars: series %q: %w", s.Name, err)
		}
		bc.Color = st.Color(i)
		bc.LineStyle.Width = 0
		bc.Offset = w * (vg.Length(i) - vg.Length(len(series)-1)/2)
		p.Add(bc)
		if s.Name != "" {
			p.Legend.Add(s.Name, bc)
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
			off := bc.Offset
			p.Add(shifted{eb, off})
		}
	}
	p.Y.Min = math.Min(p.Y.Min, 0)
	named := 0
	for _, s := range series {
		if s.Name != "" {
			named++
		}
	}
	legendRoom(p, named)
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	return p, nil
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
