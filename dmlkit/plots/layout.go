package plots

import (
	"fmt"
	"image"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Role says what a recorded box is (see [Recorder]).
type Role int

const (
	RoleText       Role = iota // title, axis label, tick label, panel title
	RoleAnnotation             // text drawn by a data plotter (cell values, point labels)
	RoleLegendText             // a legend entry's text
	RoleData                   // a data mark: a line segment, a filled area, a marker
	RoleLegend                 // the box of a chart's legend
	RoleDataArea               // the data area of a chart (inside its axes)
)

func (r Role) String() string {
	return [...]string{"text", "annotation", "legend text", "data", "legend", "data area"}[r]
}

// Box is one recorded item: its role, its extent on the canvas (points, origin bottom left) and,
// for text, the string and its font size.
type Box struct {
	Role Role
	Rect vg.Rectangle // the axis-aligned bounding box
	Quad []vg.Point   // text: the four corners of the (possibly rotated) text box
	Text string
	Size vg.Length
}

// corners returns the box's outline: its Quad, or the corners of Rect.
func (b Box) corners() []vg.Point {
	if len(b.Quad) == 4 {
		return b.Quad
	}
	r := b.Rect
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
}

// intersects reports whether the convex outlines of a and b overlap by more than slack along
// every separating direction (the edge normals of both, as in the separating axis theorem); for
// two axis-aligned rectangles: in width and in height.
func intersects(a, b Box, slack vg.Length) bool {
	if w, h := overlap(a.Rect, b.Rect); w <= slack || h <= slack {
		return false
	}
	pa, pb := a.corners(), b.corners()
	for _, poly := range [][]vg.Point{pa, pb} {
		for i := range poly {
			p, q := poly[i], poly[(i+1)%len(poly)]
			nx, ny := float64(-(q.Y - p.Y)), float64(q.X-p.X)
			n := math.Hypot(nx, ny)
			if n == 0 {
				continue
			}
			nx, ny = nx/n, ny/n
			lo1, hi1 := project(pa, nx, ny)
			lo2, hi2 := project(pb, nx, ny)
			if math.Min(hi1, hi2)-math.Max(lo1, lo2) <= float64(slack) {
				return false
			}
		}
	}
	return true
}

func project(pts []vg.Point, nx, ny float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		v := float64(p.X)*nx + float64(p.Y)*ny
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi
}

// Recorder is a vg.Canvas that draws nothing and records where things would be drawn: the box of
// every string (from the font's extents and advance width, through the current transform, so
// rotated labels are boxed as drawn), the box of every path segment and image drawn while the
// role is [RoleData] (figures tag their data plotters, see [Chart.AddData]), and the boxes figures
// add themselves (legend, data area). [CheckLayout] checks a figure with it.
type Recorder struct {
	W, H  vg.Length
	Boxes []Box
	role  Role
	m     affine
	stack []affine
	width vg.Length
}

// affine maps (x, y) to (a·x + c·y + e, b·x + d·y + f).
type affine struct{ a, b, c, d, e, f float64 }

var identity = affine{a: 1, d: 1}

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.c*y + m.e), Y: vg.Length(m.b*x + m.d*y + m.f)}
}

// then returns m ∘ t: t applied first.
func (m affine) then(t affine) affine {
	return affine{
		a: m.a*t.a + m.c*t.b, b: m.b*t.a + m.d*t.b,
		c: m.a*t.c + m.c*t.d, d: m.b*t.c + m.d*t.d,
		e: m.a*t.e + m.c*t.f + m.e, f: m.b*t.e + m.d*t.f + m.f,
	}
}

// recorderOf returns the Recorder a canvas draws onto (through any draw.Canvas wrappers), or nil.
func recorderOf(c vg.Canvas) *Recorder {
	for {
		switch x := c.(type) {
		case *Recorder:
			return x
		case draw.Canvas:
			c = x.Canvas
		case *draw.Canvas:
			c = x.Canvas
		default:
			return nil
		}
	}
}

// NewRecorder returns a recorder for a w × h canvas.
func NewRecorder(w, h vg.Length) *Recorder {
	return &Recorder{W: w, H: h, m: identity, width: 1}
}

// SetRole sets the role of what is drawn next and returns the previous one. Text drawn as
// [RoleData] is recorded as [RoleAnnotation].
func (r *Recorder) SetRole(role Role) Role {
	prev := r.role
	r.role = role
	return prev
}

// AddBox records a box given in canvas coordinates (e.g. a legend).
func (r *Recorder) AddBox(role Role, rect vg.Rectangle) {
	r.Boxes = append(r.Boxes, Box{Role: role, Rect: rect})
}

func (r *Recorder) Size() (w, h vg.Length)             { return r.W, r.H }
func (r *Recorder) SetLineWidth(w vg.Length)           { r.width = w }
func (r *Recorder) SetLineDash([]vg.Length, vg.Length) {}
func (r *Recorder) SetColor(color.Color)               {}
func (r *Recorder) Rotate(rad float64) {
	s, c := math.Sincos(rad)
	r.m = r.m.then(affine{a: c, b: s, c: -s, d: c})
}
func (r *Recorder) Translate(p vg.Point) {
	r.m = r.m.then(affine{a: 1, d: 1, e: float64(p.X), f: float64(p.Y)})
}
func (r *Recorder) Scale(x, y float64) { r.m = r.m.then(affine{a: x, d: y}) }
func (r *Recorder) Push()              { r.stack = append(r.stack, r.m) }
func (r *Recorder) Pop() {
	if n := len(r.stack); n > 0 {
		r.m = r.stack[n-1]
		r.stack = r.stack[:n-1]
	}
}

// bound returns the bounding box of the points after the current transform.
func (r *Recorder) bound(pts ...vg.Point) vg.Rectangle {
	inf := vg.Length(math.Inf(1))
	b := vg.Rectangle{Min: vg.Point{X: inf, Y: inf}, Max: vg.Point{X: -inf, Y: -inf}}
	for _, p := range pts {
		q := r.m.apply(p)
		b.Min.X, b.Min.Y = min(b.Min.X, q.X), min(b.Min.Y, q.Y)
		b.Max.X, b.Max.Y = max(b.Max.X, q.X), max(b.Max.Y, q.Y)
	}
	return b
}

func (r *Recorder) mark(rect vg.Rectangle) {
	if r.role == RoleData {
		r.Boxes = append(r.Boxes, Box{Role: RoleData, Rect: rect})
	}
}

// Stroke records a box per segment of the path (grown by half the line width).
func (r *Recorder) Stroke(p vg.Path) {
	if r.role != RoleData || r.width <= 0 {
		return
	}
	hw := r.width / 2
	var cur, start vg.Point
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp:
			cur, start = comp.Pos, comp.Pos
		case vg.LineComp, vg.CurveComp:
			pts := append([]vg.Point{cur, comp.Pos}, comp.Control...)
			b := r.bound(pts...)
			r.mark(grow(b, hw))
			cur = comp.Pos
		case vg.ArcComp:
			b := r.bound(arcPoints(comp)...)
			r.mark(grow(b, hw))
			cur = arcEnd(comp)
		case vg.CloseComp:
			r.mark(grow(r.bound(cur, start), hw))
			cur = start
		}
	}
}

// Fill records the bounding box of the filled path.
func (r *Recorder) Fill(p vg.Path) {
	if r.role != RoleData {
		return
	}
	var pts []vg.Point
	for _, comp := range p {
		switch comp.Type {
		case vg.MoveComp, vg.LineComp:
			pts = append(pts, comp.Pos)
		case vg.CurveComp:
			pts = append(pts, comp.Pos)
			pts = append(pts, comp.Control...)
		case vg.ArcComp:
			pts = append(pts, arcPoints(comp)...)
		}
	}
	if len(pts) > 0 {
		r.mark(r.bound(pts...))
	}
}

// arcPoints are points bounding an arc: its ends and the circle's extreme points it passes.
func arcPoints(a vg.PathComp) []vg.Point {
	at := func(t float64) vg.Point {
		s, c := math.Sincos(t)
		return vg.Point{X: a.Pos.X + a.Radius*vg.Length(c), Y: a.Pos.Y + a.Radius*vg.Length(s)}
	}
	pts := []vg.Point{at(a.Start), at(a.Start + a.Angle)}
	lo, hi := a.Start, a.Start+a.Angle
	if lo > hi {
		lo, hi = hi, lo
	}
	for k := math.Ceil(lo / (math.Pi / 2)); k*math.Pi/2 <= hi; k++ {
		pts = append(pts, at(k*math.Pi/2))
	}
	return pts
}

func arcEnd(a vg.PathComp) vg.Point {
	s, c := math.Sincos(a.Start + a.Angle)
	return vg.Point{X: a.Pos.X + a.Radius*vg.Length(c), Y: a.Pos.Y + a.Radius*vg.Length(s)}
}

func grow(b vg.Rectangle, d vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: b.Min.X - d, Y: b.Min.Y - d}, Max: vg.Point{X: b.Max.X + d, Y: b.Max.Y + d}}
}

// FillString records the box of the string: from the baseline's start, its advance width wide,
// from the descent below the baseline to the ascent above it.
func (r *Recorder) FillString(f font.Face, pt vg.Point, s string) {
	if f.Font.Size == 0 || s == "" {
		return
	}
	e := f.Extents()
	w := f.Width(s)
	corners := []vg.Point{
		{X: pt.X, Y: pt.Y - e.Descent}, {X: pt.X + w, Y: pt.Y - e.Descent},
		{X: pt.X + w, Y: pt.Y + e.Ascent}, {X: pt.X, Y: pt.Y + e.Ascent}}
	quad := make([]vg.Point, 4)
	for i, c := range corners {
		quad[i] = r.m.apply(c)
	}
	role := r.role
	if role == RoleData {
		role = RoleAnnotation
	}
	r.Boxes = append(r.Boxes, Box{Role: role, Rect: r.bound(corners...), Quad: quad, Text: s, Size: f.Font.Size})
}

// DrawImage records the image's rectangle as a data mark.
func (r *Recorder) DrawImage(rect vg.Rectangle, _ image.Image) {
	r.mark(r.bound(rect.Min, rect.Max, vg.Point{X: rect.Min.X, Y: rect.Max.Y}, vg.Point{X: rect.Max.X, Y: rect.Min.Y}))
}

// Record draws the figure at its print size (st.Width × st.Height, or its own [Sizer] size) onto
// a [Recorder] and returns it.
func Record(p Figure, st Style) *Recorder {
	w, h := st.Width, st.Height
	if sz, ok := p.(Sizer); ok {
		w, h = sz.Size()
	}
	r := NewRecorder(w, h)
	p.Draw(draw.New(r))
	return r
}

// Layout tolerances, in points: boxes may touch or overlap by this much. Text boxes reach from
// the font's descent to its ascent, which leaves room for accents and descenders, so two lines of
// text may come closer than their boxes by textSlack without overprinting.
const (
	layoutSlack = 0.3
	textSlack   = 1.0
)

// overlap returns the width and height of the intersection of a and b (≤ 0: none).
func overlap(a, b vg.Rectangle) (w, h vg.Length) {
	return min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X), min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
}

// Problems lists what a reviewer would reject in the recorded layout:
//
//   - text smaller than [MinFontSize];
//   - text outside the canvas (clipped in print);
//   - two texts that overlap (e.g. tick labels that overprint);
//   - a legend box over a data mark, and legend or axis text over a data mark (annotations drawn
//     by the data plotters themselves, such as heatmap cell values, may lie on data).
//
// Each problem names the texts involved. An empty list means the layout passes.
func (r *Recorder) Problems() []string {
	var out []string
	var texts, marks, legends []Box
	for _, b := range r.Boxes {
		switch b.Role {
		case RoleText, RoleAnnotation, RoleLegendText:
			texts = append(texts, b)
		case RoleData:
			marks = append(marks, b)
		case RoleLegend:
			legends = append(legends, b)
		}
	}
	canvas := vg.Rectangle{Max: vg.Point{X: r.W, Y: r.H}}
	for _, t := range texts {
		if t.Size < MinFontSize-1e-9 {
			out = append(out, fmt.Sprintf("%s %q is %.3g pt, below %g pt", t.Role, t.Text, float64(t.Size), float64(MinFontSize)))
		}
		if d := outside(t.Rect, canvas); d > layoutSlack {
			out = append(out, fmt.Sprintf("%s %q sticks out of the %.2fin × %.2fin canvas by %.1f pt", t.Role, t.Text, float64(r.W/vg.Inch), float64(r.H/vg.Inch), float64(d)))
		}
	}
	for i := range texts {
		for j := i + 1; j < len(texts); j++ {
			if intersects(texts[i], texts[j], textSlack) {
				out = append(out, fmt.Sprintf("%s %q overlaps %s %q", texts[i].Role, texts[i].Text, texts[j].Role, texts[j].Text))
			}
		}
	}
	for _, l := range legends {
		if n := countOver(l, marks); n > 0 {
			out = append(out, fmt.Sprintf("legend box covers %d data mark(s)", n))
		}
	}
	for _, t := range texts {
		if t.Role == RoleAnnotation {
			continue
		}
		if n := countOver(t, marks); n > 0 {
			out = append(out, fmt.Sprintf("%s %q lies over %d data mark(s)", t.Role, t.Text, n))
		}
	}
	return dedupe(out)
}

func countOver(b Box, marks []Box) int {
	n := 0
	for _, m := range marks {
		if intersects(b, m, layoutSlack) {
			n++
		}
	}
	return n
}

// outside is how far rect reaches beyond the canvas (0 when inside).
func outside(rect, canvas vg.Rectangle) vg.Length {
	return max(0, canvas.Min.X-rect.Min.X, rect.Max.X-canvas.Max.X, canvas.Min.Y-rect.Min.Y, rect.Max.Y-canvas.Max.Y)
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	sort.Strings(out)
	return out
}

// CheckLayout draws the figure onto a [Recorder] and returns its [Recorder.Problems] (nil when
// the layout passes), and the texts drawn.
func CheckLayout(p Figure, st Style) (problems []string, texts []string) {
	r := Record(p, st)
	for _, b := range r.Boxes {
		if b.Text != "" {
			texts = append(texts, b.Text)
		}
	}
	return r.Problems(), texts
}
