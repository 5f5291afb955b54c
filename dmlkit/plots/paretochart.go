package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one labelled point of a scatter plot; points with the same Group share a colour and
// marker (the group's slot, see [Style.Slots]).
type Point struct {
	X, Y       float64
	XErr, YErr float64 // ± error bars, e.g. the SE over seeds (0: none)
	Label      string  // annotation: next to the point, or in the numbered key ([ParetoOptions].Numbered)
	Group      string  // legend entry
	Size       float64 // marker radius relative to the default (0 or 1: default)
	// Marked points are drawn filled and the others open (hollow), when any point is marked (e.g.
	// the models trained with TCM, seed 000 Fig. 3).
	Marked bool
}

// SizeKey is a legend entry for a marker size of [Pareto] (e.g. "batch 256" for Size 2).
type SizeKey struct {
	Label string
	Size  float64
}

// ParetoOptions are the settings of [Pareto].
type ParetoOptions struct {
	MaxX, MaxY  bool      // larger x (y) is better; otherwise smaller is
	MarkLabel   string    // legend entry of the filled (marked) markers ("" for none)
	UnmarkLabel string    // legend entry of the open markers ("" for none)
	Sizes       []SizeKey // legend entries of the marker sizes
	// XMin, when set (HasXMin), clips the x axis: points left of it are not drawn (their frontier
	// is still computed over all points) and are listed in the numbered key as off the axis, so
	// that a few outliers do not squash the cluster a reader needs to tell apart.
	XMin    float64
	HasXMin bool
	LogY    bool // log y axis, ticks at 1, 2 and 5 times the powers of ten; y error bars cut at y/10
	// Numbered labels each point with its number (in the order of the points, 1-based), placed
	// next to its marker where no other number or marker is, and lists "n  Label" below the plot.
	Numbered     bool
	XName, YName string // what the key calls x and y of an off-axis point (e.g. "R@1", "OPIS")
	// Refs are reference values of x drawn as labelled vertical lines across the plot (a
	// leaderboard's zero-shot floor), inside the x range, listed in the legend before the key.
	Refs []RefLine
}

// ScatterPareto is [Pareto] with the options as arguments (markLabel: the filled markers' legend
// entry).
func ScatterPareto(st Style, l Labels, pts []Point, maxX, maxY bool, markLabel ...string) (*Chart, error) {
	opt := ParetoOptions{MaxX: maxX, MaxY: maxY}
	if len(markLabel) > 0 {
		opt.MarkLabel = markLabel[0]
	}
	return Pareto(st, l, pts, opt)
}

// Pareto draws the points, coloured and shaped by group, sized by Point.Size, filled when marked
// and open otherwise, with ± error bars, and their Pareto frontier (see [ParetoFrontier], over all
// points, clipped ones included) as a black staircase through the non-dominated points. Labels are
// drawn next to the points, or as numbers with a key below the plot ([ParetoOptions].Numbered).
func Pareto(st Style, l Labels, pts []Point, opt ParetoOptions) (*Chart, error) {
	if len(pts) == 0 {
		return nil, errors.New("plots: Pareto: no points")
	}
	if opt.Numbered {
		st.Legend = LegendBelow
	}
	if opt.LogY { // a log axis has no 0: a bar's lower end is cut at a tenth of its point
		pts = append([]Point(nil), pts...)
		for i := range pts {
			pts[i].YErr = math.Min(pts[i].YErr, 0.9*pts[i].Y)
		}
	}
	ch := newChart(st, l)
	ch.Plot.Add(plotter.NewGrid())
	anyMarked := false
	for _, p := range pts {
		anyMarked = anyMarked || p.Marked
	}
	visible := func(p Point) bool { return !opt.HasXMin || p.X >= opt.XMin }
	// The extent of the visible points with their bars (the frontier's tails and the axes): a
	// single seed has no bar (NaN), and on a log axis a bar is cut above 0.
	visMinX, visMaxX, visMinY, visMaxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		if !visible(p) {
			continue
		}
		xe, ye := p.XErr, p.YErr
		if math.IsNaN(xe) {
			xe = 0
		}
		if math.IsNaN(ye) {
			ye = 0
		}
		lo := p.Y - ye
		if opt.LogY && !(lo > 0) {
			lo = p.Y
		}
		visMinX, visMaxX = math.Min(visMinX, p.X-xe), math.Max(visMaxX, p.X+xe)
		visMinY, visMaxY = math.Min(visMinY, lo), math.Max(visMaxY, p.Y+ye)
	}
	radius := func(size float64) vg.Length {
		if size <= 0 {
			size = 1
		}
		return vg.Length(2.6 * size)
	}
	groups := pointGroups(pts)
	slots := st.SlotsOf(groups)
	slotOf := map[string]int{}
	for i, g := range groups {
		slotOf[g] = slots[i]
	}
	// Error bars first, under the markers.
	for _, p := range pts {
		if !visible(p) {
			continue
		}
		col := st.Color(slotOf[p.Group])
		ls := draw.LineStyle{Color: col, Width: 0.6}
		if p.YErr > 0 {
			eb, err := plotter.NewYErrorBars(errPoints{[]float64{p.X}, []float64{p.Y}, []float64{p.YErr}})
			if err != nil {
				return nil, fmt.Errorf("plots: Pareto: %w", err)
			}
			eb.LineStyle, eb.CapWidth = ls, 2.5
			ch.AddData(eb)
		}
		if p.XErr > 0 {
			eb, err := plotter.NewXErrorBars(xErrPoint{p.X, p.Y, p.XErr})
			if err != nil {
				return nil, fmt.Errorf("plots: Pareto: %w", err)
			}
			eb.LineStyle, eb.CapWidth = ls, 2.5
			ch.AddData(eb)
		}
	}
	x := make([]float64, len(pts))
	y := make([]float64, len(pts))
	for i, p := range pts {
		x[i], y[i] = p.X, p.Y
	}
	front := ParetoFrontier(x, y, opt.MaxX, opt.MaxY)
	var fr plotter.XYs
	var fv []int
	var frontTh plot.Thumbnailer
	for _, j := range front {
		if visible(pts[j]) {
			fv = append(fv, j)
		}
	}
	for i, j := range fv {
		if i > 0 { // staircase: the edge of the region the frontier points dominate
			prev := fv[i-1]
			if opt.MaxX {
				fr = append(fr, plotter.XY{X: x[prev], Y: y[j]})
			} else {
				fr = append(fr, plotter.XY{X: x[j], Y: y[prev]})
			}
		}
		fr = append(fr, plotter.XY{X: x[j], Y: y[j]})
	}
	if len(fr) > 0 {
		// The tails: from the frontier's ends to the edges of the visible points, so that the
		// boundary of the region the frontier dominates shows even for a one-model frontier.
		minX, maxX, minY, maxY := visMinX, visMaxX, visMinY, visMaxY
		if opt.HasXMin {
			minX = opt.XMin
		}
		worseY := maxY
		if opt.MaxY {
			worseY = minY
		}
		first, last := fr[0], fr[len(fr)-1]
		if opt.MaxX {
			fr = append(append(plotter.XYs{{X: minX, Y: first.Y}}, fr...), plotter.XY{X: last.X, Y: worseY})
		} else {
			fr = append(append(plotter.XYs{{X: first.X, Y: worseY}}, fr...), plotter.XY{X: maxX, Y: last.Y})
		}
		fl, err := plotter.NewLine(fr)
		if err != nil {
			return nil, fmt.Errorf("plots: Pareto: %w", err)
		}
		fl.LineStyle = draw.LineStyle{Color: color.Gray{0x40}, Width: 0.8, Dashes: []vg.Length{3, 2}}
		ch.AddData(fl)
		th := *fl
		frontTh = &th
	}
	for _, g := range groups {
		k := slotOf[g]
		var xy plotter.XYs
		var idx []int
		for i, p := range pts {
			if p.Group == g && visible(p) {
				xy = append(xy, plotter.XY{X: p.X, Y: p.Y})
				idx = append(idx, i)
			}
		}
		sh := filledGlyph(k)
		open := openGlyph(k)
		col := st.Color(k)
		if len(xy) > 0 {
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return nil, fmt.Errorf("plots: Pareto: %w", err)
			}
			sc.GlyphStyleFunc = func(j int) draw.GlyphStyle {
				p := pts[idx[j]]
				if anyMarked && !p.Marked {
					return draw.GlyphStyle{Color: col, Radius: radius(p.Size), Shape: open}
				}
				return draw.GlyphStyle{Color: col, Radius: radius(p.Size), Shape: sh}
			}
			ch.AddData(sc)
		}
		if g != "" && len(xy) > 0 {
			ch.AddLegend(g, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: col, Radius: radius(1), Shape: sh}})
		}
	}
	if anyMarked {
		if opt.MarkLabel != "" {
			ch.AddLegend(opt.MarkLabel, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{0x50}, Radius: radius(1), Shape: draw.CircleGlyph{}}})
		}
		if opt.UnmarkLabel != "" {
			ch.AddLegend(opt.UnmarkLabel, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{0x50}, Radius: radius(1), Shape: thickRing{}}})
		}
	}
	for _, sk := range opt.Sizes {
		ch.AddLegend(sk.Label, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{0x80}, Radius: radius(sk.Size), Shape: draw.RingGlyph{}}})
	}
	if frontTh != nil {
		what := "models"
		if len(front) == 1 {
			what = "model"
		}
		ch.AddLegend(fmt.Sprintf("Pareto frontier (%d %s)", len(front), what), frontTh)
	}
	if opt.LogY {
		ch.Plot.Y.Scale = plot.LogScale{}
		ch.Plot.Y.Tick.Marker = logTicks125{}
	}
	// The axes: the visible points with their bars and 3 % room, so that no marker sits on an axis.
	{
		minX, maxX, minY, maxY := visMinX, visMaxX, visMinY, visMaxY
		if !opt.HasXMin { // a clipped axis keeps its span; refs left of it are listed, not drawn
			minX, maxX = refRange(opt.Refs, minX, maxX)
		}
		dx := (maxX - minX) * 0.03
		ch.Plot.X.Min, ch.Plot.X.Max = minX-dx, maxX+dx
		if opt.HasXMin {
			ch.Plot.X.Min = opt.XMin
		}
		if opt.LogY && minY > 0 {
			f := math.Pow(maxY/minY, 0.03)
			if f < 1.05 { // one point, or points at one height
				f = 1.2
			}
			ch.Plot.Y.Min, ch.Plot.Y.Max = minY/f, maxY*f
		} else {
			dy := (maxY - minY) * 0.03
			if dy == 0 {
				dy = math.Max(math.Abs(maxY)*0.1, 1e-9)
			}
			ch.Plot.Y.Min, ch.Plot.Y.Max = minY-dy, maxY+dy
		}
	}
	// A reference line left of a clipped x axis is not drawn (it would fall outside the plot): its
	// legend entry says where it is.
	var refs []RefLine
	for _, r := range opt.Refs {
		if opt.HasXMin && r.X < opt.XMin {
			r.Label += " (left of the axis)"
			r.legendOnly = true
		}
		refs = append(refs, r)
	}
	if err := addRefLines(ch, refs, ch.Plot.Y.Min, ch.Plot.Y.Max); err != nil {
		return nil, err
	}
	lab := &pointLabels{style: labelStyle(st), radius: radius}
	for i, p := range pts {
		if !visible(p) {
			continue
		}
		t := p.Label
		if opt.Numbered {
			t = strconv.Itoa(i + 1)
		}
		lab.pts = append(lab.pts, labelPoint{x: p.X, y: p.Y, size: p.Size, text: t})
	}
	ch.AddData(lab)
	if opt.Numbered {
		num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
		for i, p := range pts {
			t := p.Label
			if !visible(p) {
				t += fmt.Sprintf(" (off the axis: %s %s, %s %s)", opt.XName, num(roundSig(p.X, 3)), opt.YName, num(roundSig(p.Y, 2)))
			}
			ch.AddLegend(t, numberThumb{n: i + 1, style: labelStyle(st)})
		}
	}
	return ch, nil
}

// OpenGlyph is the open (hollow) marker of slot k, the outline of [FilledGlyph](k) drawn with a
// 1 pt line (ring, square, triangle), for another figure that tells groups apart by marker.
func OpenGlyph(k int) draw.GlyphDrawer { return openGlyph(k) }

// openGlyph is the open (hollow) marker of slot k, the outline of [filledGlyph](k).
func openGlyph(k int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{thickRing{}, thickSquare{}, thickTriangle{}}
	return shapes[k%len(shapes)]
}

// thickRing, thickSquare and thickTriangle are hollow markers drawn with a 1 pt outline (gonum's
// ring and square use the glyph's default 0.5 pt hairline, which vanishes in print).
type thickRing struct{}

func (thickRing) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: 1})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius - 0.5, Y: pt.Y})
	p.Arc(pt, sty.Radius-0.5, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

type thickSquare struct{}

func (thickSquare) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: 1})
	r := sty.Radius - 0.5
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Close()
	c.Stroke(p)
}

type thickTriangle struct{}

func (thickTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: 1})
	r := sty.Radius + (sty.Radius-sty.Radius*vg.Length(math.Sqrt(3))/2)/2 - 0.5 // as draw.PyramidGlyph
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r*vg.Length(math.Sqrt(3))/2, Y: pt.Y - r/2})
	p.Line(vg.Point{X: pt.X + r*vg.Length(math.Sqrt(3))/2, Y: pt.Y - r/2})
	p.Close()
	c.Stroke(p)
}

type xErrPoint struct{ x, y, e float64 }

func (p xErrPoint) Len() int                      { return 1 }
func (p xErrPoint) XY(int) (float64, float64)     { return p.x, p.y }
func (p xErrPoint) XError(int) (float64, float64) { return p.e, p.e }

// labelStyle is the text of point labels: tick size, black, left-aligned on its baseline centre.
func labelStyle(st Style) text.Style {
	sty := plot.New().Title.TextStyle
	sty.Font.Size = st.TickSize
	sty.Color = color.Black
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	return sty
}

// numberThumb is a legend thumbnail that shows a point's number.
type numberThumb struct {
	n     int
	style text.Style
}

func (t numberThumb) Thumbnail(c *draw.Canvas) {
	sty := t.style
	sty.XAlign, sty.YAlign = draw.XRight, draw.YCenter
	c.FillText(sty, vg.Point{X: c.Max.X - 2, Y: (c.Min.Y + c.Max.Y) / 2}, strconv.Itoa(t.n))
}

type labelPoint struct {
	x, y, size float64
	text       string
}

// pointLabels draws each point's text next to its marker: at the first of 8 places around it
// (right, left, above, below, then the diagonals; then the same twice as far out, with a leader
// line) where it overlaps no other label, no marker and stays inside the data area.
type pointLabels struct {
	pts    []labelPoint
	style  text.Style
	radius func(float64) vg.Length
}

func (l *pointLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	type rect = vg.Rectangle
	var marks, placed []rect
	at := make([]vg.Point, len(l.pts))
	for i, q := range l.pts {
		at[i] = vg.Point{X: trX(q.x), Y: trY(q.y)}
		r := l.radius(q.size) + 0.5
		marks = append(marks, rect{Min: vg.Point{X: at[i].X - r, Y: at[i].Y - r}, Max: vg.Point{X: at[i].X + r, Y: at[i].Y + r}})
	}
	hit := func(a rect) bool {
		if a.Min.X < c.Min.X || a.Max.X > c.Max.X || a.Min.Y < c.Min.Y || a.Max.Y > c.Max.Y {
			return true
		}
		for _, b := range append(marks, placed...) {
			if a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y {
				return true
			}
		}
		return false
	}
	ext := l.style.FontExtents()
	h := ext.Ascent + ext.Descent
	// Points in the densest places first get the nearest places: order by the number of other
	// markers within 20 pt, then by position (deterministic).
	order := make([]int, len(l.pts))
	crowd := make([]int, len(l.pts))
	for i := range order {
		order[i] = i
		for j := range l.pts {
			if j != i && math.Hypot(float64(at[i].X-at[j].X), float64(at[i].Y-at[j].Y)) < 20 {
				crowd[i]++
			}
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return crowd[order[a]] > crowd[order[b]] })
	for _, i := range order {
		q := l.pts[i]
		if q.text == "" {
			continue
		}
		w := l.style.Width(q.text)
		r := l.radius(q.size) + 1
		var box rect
		var lead bool
		found := false
		for ring := 1; ring <= 4 && !found; ring++ {
			d := r * vg.Length(ring)
			cands := []vg.Point{
				{X: at[i].X + d, Y: at[i].Y - h/2}, {X: at[i].X - d - w, Y: at[i].Y - h/2},
				{X: at[i].X - w/2, Y: at[i].Y + d}, {X: at[i].X - w/2, Y: at[i].Y - d - h},
				{X: at[i].X + d*0.7, Y: at[i].Y + d*0.7}, {X: at[i].X - d*0.7 - w, Y: at[i].Y + d*0.7},
				{X: at[i].X + d*0.7, Y: at[i].Y - d*0.7 - h}, {X: at[i].X - d*0.7 - w, Y: at[i].Y - d*0.7 - h},
			}
			for _, m := range cands {
				b := rect{Min: m, Max: vg.Point{X: m.X + w, Y: m.Y + h}}
				if !hit(b) {
					box, lead, found = b, ring > 1, true
					break
				}
			}
		}
		if !found { // last resort: right of the point
			box = rect{Min: vg.Point{X: at[i].X + r, Y: at[i].Y - h/2}, Max: vg.Point{X: at[i].X + r + w, Y: at[i].Y + h/2}}
		}
		placed = append(placed, box)
		if lead {
			cx := math.Max(float64(box.Min.X), math.Min(float64(at[i].X), float64(box.Max.X)))
			cy := math.Max(float64(box.Min.Y), math.Min(float64(at[i].Y), float64(box.Max.Y)))
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{0x90}, Width: 0.4}, at[i].X, at[i].Y, vg.Length(cx), vg.Length(cy))
		}
		c.FillText(l.style, vg.Point{X: box.Min.X, Y: box.Min.Y + ext.Descent}, q.text)
	}
}

// logTicks125 are the ticks of a log axis at 1, 2 and 5 times the powers of ten in range (the
// powers alone when the range spans more than two decades).
type logTicks125 struct{}

func (logTicks125) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	steps := []float64{1, 2, 5}
	switch {
	case hi/lo > 100:
		steps = []float64{1}
	case hi/lo < 12:
		steps = []float64{1, 2, 3, 4, 5, 6, 8}
	}
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, s := range steps {
			v := s * math.Pow(10, e)
			if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
				out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', -1, 64)})
			}
		}
	}
	return out
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// pointGroups lists the distinct groups of pts in the order they first appear (the order of the
// legend and of the colour slots in Pareto and Agreement).
func pointGroups(pts []Point) []string {
	var groups []string
	seen := map[string]bool{}
	for _, p := range pts {
		if !seen[p.Group] {
			seen[p.Group] = true
			groups = append(groups, p.Group)
		}
	}
	return groups
}
