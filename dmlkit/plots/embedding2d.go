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
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// EmbeddingPanel is one panel of [Embedding2D]: 2-D embeddings of test points with their class
// labels (integral values are printed without decimals).
type EmbeddingPanel struct {
	Title  string
	X, Y   []float64
	Labels []float64
}

// EmbeddingFigure is the figure [Embedding2D] draws, with the per-class numbers it shows.
type EmbeddingFigure struct {
	Panels
	Classes  [][]ClassSpread // per panel, the classes present, by increasing label
	OnCircle bool            // true: the unit-circle view was drawn; false: the 2-D KDE view
}

// Geometry and resolution of [Embedding2D].
const (
	// UnitCircleTol is how far from 1 a point's norm may be for the unit-circle view.
	UnitCircleTol = 1e-3
	bandHeight    = 0.3 // radial thickness of the densest class's band, in data units
	angleBins     = 240 // KDE evaluation points around the circle
	kdeGrid       = 80  // cells per side of the 2-D KDE grid
)

// Embedding2D draws 2-D embeddings per class, one panel per model, in the manner of seed 000
// Fig. 5. In every panel each class c has
//
//   - an arrow from the origin to the class's centroid (for unit vectors: the mean resultant vector,
//     of length R̄), labelled with the class;
//   - at the arrow's tip, a line perpendicular to it of half-length min(σ, π/2)·ρ, where σ is the
//     circular standard deviation sqrt(−2 ln R̄) of the points' angles and ρ their mean distance
//     from the origin (so on the unit circle the line spans ±1 σ of arc); a shorter line is a more
//     compact class, and a dashed line marks σ > π/2;
//   - the class's density. When every point of every panel lies on the unit circle
//     (| ‖p‖ − 1 | ≤ UnitCircleTol, as for L2-normalised embeddings), the density of the angles is
//     a wrapped-Gaussian kernel estimate ([WrappedKDE], bandwidth [CircularBandwidth]), drawn as a
//     band outside the circle whose thickness is proportional to the density and whose opacity
//     grows with it (four stacked translucent layers);
//     otherwise it is a 2-D Gaussian kernel estimate ([KDE2D]) drawn as contours at 5%, 20%, 45%
//     and 70% of the largest density, darker for higher levels.
//
// Densities are per class (each integrates to 1) and share one scale across classes and panels,
// so bands and contours compare directly. Classes keep one colour across panels
// ([Style.ClassColors]). The legend of each panel lists σ in degrees per class; the numbers are in
// [EmbeddingFigure.Classes] for captions. The panels share st.Width side by side, each st.Height high.
func Embedding2D(st Style, l Labels, panels []EmbeddingPanel) (*EmbeddingFigure, error) {
	if len(panels) == 0 {
		return nil, errors.New("plots: Embedding2D: no panels")
	}
	var all []float64
	onCircle := true
	for i, p := range panels {
		if len(p.X) != len(p.Y) || len(p.X) != len(p.Labels) {
			return nil, fmt.Errorf("plots: Embedding2D: panel %d (%s): %d x, %d y and %d labels", i, p.Title, len(p.X), len(p.Y), len(p.Labels))
		}
		if len(p.X) == 0 {
			return nil, fmt.Errorf("plots: Embedding2D: panel %d (%s): no points", i, p.Title)
		}
		for j := range p.X {
			if !finite(p.X[j]) || !finite(p.Y[j]) || !finite(p.Labels[j]) {
				return nil, fmt.Errorf("plots: Embedding2D: panel %d (%s): point %d (%v, %v, label %v) is not finite", i, p.Title, j, p.X[j], p.Y[j], p.Labels[j])
			}
			if math.Abs(math.Hypot(p.X[j], p.Y[j])-1) > UnitCircleTol {
				onCircle = false
			}
		}
		all = append(all, p.Labels...)
	}
	classes := uniqueSorted(all)
	colIdx := map[float64]int{}
	for i, c := range classes {
		colIdx[c] = i
	}
	cols := st.ClassColors(len(classes))

	fig := &EmbeddingFigure{Panels: Panels{Title: l.Title, Square: true, Style: st}, OnCircle: onCircle}
	type classPts struct {
		x, y, angles []float64
	}
	pts := make([]map[float64]*classPts, len(panels))
	extent := 0.0
	for i, p := range panels {
		pts[i] = map[float64]*classPts{}
		for j, lab := range p.Labels {
			cp := pts[i][lab]
			if cp == nil {
				cp = &classPts{}
				pts[i][lab] = cp
			}
			cp.x = append(cp.x, p.X[j])
			cp.y = append(cp.y, p.Y[j])
			if p.X[j] != 0 || p.Y[j] != 0 {
				cp.angles = append(cp.angles, math.Atan2(p.Y[j], p.X[j]))
			}
			extent = math.Max(extent, math.Max(math.Abs(p.X[j]), math.Abs(p.Y[j])))
		}
		var spreads []ClassSpread
		for _, c := range classes {
			if cp := pts[i][c]; cp != nil {
				spreads = append(spreads, Spread(c, cp.x, cp.y))
			}
		}
		fig.Classes = append(fig.Classes, spreads)
	}

	// Densities, on one scale for all classes and panels.
	var grid []float64                          // angles of the band segments (unit-circle view)
	half := 0.0                                 // data range of the 2-D view: [-half, half]²
	dens := make([][][]float64, len(panels))    // unit view: [panel][class][angle bin]
	dens2 := make([][][][]float64, len(panels)) // 2-D view: [panel][class][row][col]
	peak := 0.0
	if onCircle {
		for j := 0; j < angleBins; j++ {
			grid = append(grid, -math.Pi+(float64(j)+0.5)*2*math.Pi/angleBins)
		}
	} else {
		half = 1.08 * extent
	}
	for i := range panels {
		for _, cs := range fig.Classes[i] {
			cp := pts[i][cs.Label]
			if onCircle {
				d := WrappedKDE(cp.angles, cs.Bandwidth, grid)
				dens[i] = append(dens[i], d)
				for _, v := range d {
					peak = math.Max(peak, v)
				}
			} else {
				z := KDE2D(cp.x, cp.y, -half, half, kdeGrid)
				dens2[i] = append(dens2[i], z)
				for _, row := range z {
					for _, v := range row {
						peak = math.Max(peak, v)
					}
				}
			}
		}
	}
	if !(peak > 0) {
		peak = 1
	}

	for i, p := range panels {
		pl := st.newPlot(Labels{})
		ov := &embOverlay{st: st, onCircle: onCircle}
		if onCircle {
			pl.HideAxes()
			r := 1 + bandHeight + 0.2
			pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = -r, r, -r, r
			ov.labelR = 1 + bandHeight + 0.1
			ov.headLen = 0.07
			for k, cs := range fig.Classes[i] {
				ov.bands = append(ov.bands, band{col: cols[colIdx[cs.Label]], dens: dens[i][k], grid: grid, peak: peak})
			}
		} else {
			pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = -half, half, -half, half
			pl.X.Label.Text, pl.Y.Label.Text = l.X, l.Y
			ov.headLen = 0.04 * half
			ov.labelOff = 0.07 * half
			d := 2 * half / kdeGrid
			for k, cs := range fig.Classes[i] {
				g := densGrid{z: dens2[i][k], x0: -half, dx: d, y0: -half, dy: d}
				for li, frac := range []float64{0.05, 0.2, 0.45, 0.7} {
					ct := plotter.NewContour(g, []float64{frac * peak}, nil)
					ct.Palette = nil
					ct.LineStyles = []draw.LineStyle{{Color: blend(cols[colIdx[cs.Label]], 0.4+0.2*float64(li)), Width: st.LineWidth * 0.6}}
					pl.Add(dataPlotter{ct})
				}
			}
		}
		pl.X.Padding, pl.Y.Padding = 0, 0
		for _, cs := range fig.Classes[i] {
			ov.classes = append(ov.classes, cs)
			ov.cols = append(ov.cols, cols[colIdx[cs.Label]])
		}
		pl.Add(dataPlotter{ov})

		leg := []LegendEntry{{Text: "circ. std (deg)"}}
		for k, cs := range fig.Classes[i] {
			leg = append(leg, LegendEntry{Text: FormatLabel(cs.Label) + ": " + formatDegrees(cs.CircStd), Thumbs: []plot.Thumbnailer{swatch{ov.cols[k]}}})
		}
		fig.Plots = append(fig.Plots, pl)
		fig.Titles = append(fig.Titles, p.Title)
		fig.Legends = append(fig.Legends, leg)
	}
	return fig, nil
}

// FormatLabel prints a class label: integers without decimals.
func FormatLabel(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// formatDegrees prints an angle in degrees, in ASCII: gonum's PDF canvas encodes text as cp1252,
// so σ and ∞ would not survive (and ° would need a translation it does not do).
func formatDegrees(rad float64) string {
	if math.IsInf(rad, 1) {
		return "inf"
	}
	return fmt.Sprintf("%.1f", rad*180/math.Pi)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func uniqueSorted(v []float64) []float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	out := s[:0]
	for i, e := range s {
		if i == 0 || e != s[i-1] {
			out = append(out, e)
		}
	}
	return out
}

// blend mixes the opaque colour c with white: t = 1 gives c, t = 0 white.
func blend(c color.Color, t float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(math.Round(255 - t*(255-float64(v>>8)))) }
	return color.RGBA{mix(r), mix(g), mix(b), 0xFF}
}

// swatch is a legend thumbnail: a filled square of one colour.
type swatch struct{ col color.Color }

func (s swatch) Thumbnail(c *draw.Canvas) {
	h := c.Max.Y - c.Min.Y
	x0 := c.Min.X + (c.Max.X-c.Min.X-h)/2
	c.FillPolygon(s.col, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x0 + h, Y: c.Min.Y}, {X: x0 + h, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
}

// band is one class's angular density f, drawn outside the unit circle as bandLayers stacked
// translucent layers: layer ℓ spans radii 1 … 1 + bandHeight·max(0, f/peak − ℓ/bandLayers), so the
// band's outline is 1 + bandHeight·f/peak and its opacity near the circle grows with the density.
type band struct {
	col  color.Color
	dens []float64 // at grid
	grid []float64 // equally spaced angles
	peak float64   // the density drawn bandHeight thick
}

const (
	bandLayers = 4
	bandAlpha  = 70 // opacity of one layer, of 255
)

// polygons returns the layers' outlines in data coordinates: for each layer, one polygon per run
// of consecutive angles where the layer is thicker than 0.2% of bandHeight.
func (b band) polygons() [][][2]float64 {
	var out [][][2]float64
	step := 2 * math.Pi / float64(len(b.grid))
	for l := 0; l < bandLayers; l++ {
		tau := float64(l) / bandLayers
		thick := func(j int) float64 { return bandHeight * math.Max(0, b.dens[j]/b.peak-tau) }
		for j := 0; j < len(b.grid); {
			if thick(j) < 0.002*bandHeight {
				j++
				continue
			}
			start := j
			for j < len(b.grid) && thick(j) >= 0.002*bandHeight {
				j++
			}
			// Outer edge through the bin centres, closed at the run's ends on the circle.
			a0, a1 := b.grid[start]-step/2, b.grid[j-1]+step/2
			poly := [][2]float64{{math.Cos(a0), math.Sin(a0)}}
			for k := start; k < j; k++ {
				r := 1 + thick(k)
				poly = append(poly, [2]float64{r * math.Cos(b.grid[k]), r * math.Sin(b.grid[k])})
			}
			poly = append(poly, [2]float64{math.Cos(a1), math.Sin(a1)})
			for k := j - 1; k >= start; k-- { // back along the circle
				poly = append(poly, [2]float64{math.Cos(b.grid[k]), math.Sin(b.grid[k])})
			}
			out = append(out, poly)
		}
	}
	return out
}

// embOverlay draws the unit circle and density bands (unit-circle view), then per class the
// arrow, the perpendicular spread line and the label.
type embOverlay struct {
	st       Style
	onCircle bool
	bands    []band
	classes  []ClassSpread
	cols     []color.Color
	labelR   float64 // unit view: radius of the class labels
	labelOff float64 // 2-D view: label distance beyond the arrow tip
	headLen  float64 // arrow head length, data units
}

func (o *embOverlay) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	pt := func(x, y float64) vg.Point { return vg.Point{X: trX(x), Y: trY(y)} }
	if o.onCircle {
		for _, b := range o.bands {
			for _, poly := range b.polygons() {
				pts := make([]vg.Point, len(poly))
				for i, q := range poly {
					pts[i] = pt(q[0], q[1])
				}
				c.FillPolygon(withAlpha(b.col, bandAlpha), c.ClipPolygonXY(pts))
			}
		}
		circle := make([]vg.Point, 0, 361)
		for k := 0; k <= 360; k++ {
			a := float64(k) * math.Pi / 180
			circle = append(circle, pt(math.Cos(a), math.Sin(a)))
		}
		c.StrokeLines(draw.LineStyle{Color: color.Gray{0x70}, Width: 0.5}, c.ClipLinesXY(circle)...)
	}
	lab := p.Title.TextStyle
	lab.Font.Size = o.st.TickSize + 1
	lab.XAlign, lab.YAlign = draw.XCenter, draw.YCenter
	var labelAngles []float64
	if o.onCircle {
		// Class labels sit on a circle at their class's direction, spread apart where they would
		// overprint (classes whose directions nearly coincide).
		var w vg.Length
		for _, cs := range o.classes {
			w = max(w, lab.Width(FormatLabel(cs.Label)))
		}
		rPts := float64(trX(o.labelR) - trX(0))
		sep := float64(max(w, lab.Height("0"))+3) / rPts
		labelAngles = make([]float64, len(o.classes))
		for k, cs := range o.classes {
			labelAngles[k] = cs.Direction
		}
		spreadAngles(labelAngles, sep)
	}
	for k, cs := range o.classes {
		col := o.cols[k]
		phi := math.Atan2(cs.Mean[1], cs.Mean[0])
		ux, uy := math.Cos(phi), math.Sin(phi)
		tx, ty := cs.Mean[0], cs.Mean[1]
		ls := draw.LineStyle{Color: col, Width: o.st.LineWidth}
		c.StrokeLines(ls, c.ClipLinesXY([]vg.Point{pt(0, 0), pt(tx, ty)})...)
		if math.Hypot(tx, ty) > 2*o.headLen {
			for _, s := range []float64{-1, 1} {
				a := phi + math.Pi + s*0.4
				c.StrokeLines(ls, c.ClipLinesXY([]vg.Point{pt(tx, ty), pt(tx+o.headLen*math.Cos(a), ty+o.headLen*math.Sin(a))})...)
			}
		}
		if !math.IsNaN(cs.CircStd) { // NaN: every point at the origin
			sigma := math.Min(cs.CircStd, math.Pi/2)
			h := sigma * cs.Radius
			ps := draw.LineStyle{Color: col, Width: 1.5 * o.st.LineWidth}
			if cs.CircStd > math.Pi/2 {
				ps.Dashes = []vg.Length{2, 1.5}
			}
			c.StrokeLines(ps, c.ClipLinesXY([]vg.Point{pt(tx-h*uy, ty+h*ux), pt(tx+h*uy, ty-h*ux)})...)
		}
		var lx, ly float64
		if o.onCircle {
			lx, ly = o.labelR*math.Cos(labelAngles[k]), o.labelR*math.Sin(labelAngles[k])
		} else {
			lx, ly = tx+o.labelOff*ux, ty+o.labelOff*uy
		}
		if c.Contains(pt(lx, ly)) {
			c.FillText(lab, pt(lx, ly), FormatLabel(cs.Label))
		}
	}
}

// spreadAngles moves the angles (radians; NaN ones are left alone) apart until neighbours around
// the circle are at least sep apart, each as little as it can: a few hundred rounds of pushing
// too-close neighbours apart symmetrically. It gives up on the spacing when the circle is too
// small for it (n·sep > 2π).
func spreadAngles(a []float64, sep float64) {
	var idx []int
	for i, v := range a {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	n := len(idx)
	if n < 2 || float64(n)*sep > 2*math.Pi {
		return
	}
	for round := 0; round < 500; round++ {
		sort.Slice(idx, func(i, j int) bool { return a[idx[i]] < a[idx[j]] })
		moved := false
		for i := 0; i < n; i++ {
			p, q := idx[i], idx[(i+1)%n]
			gap := a[q] - a[p]
			if i == n-1 {
				gap += 2 * math.Pi
			}
			if gap < sep-1e-9 {
				d := (sep - gap) / 2 * 1.01
				a[p] -= d
				a[q] += d
				moved = true
			}
		}
		for _, i := range idx {
			a[i] = math.Remainder(a[i], 2*math.Pi)
		}
		if !moved {
			return
		}
	}
}
