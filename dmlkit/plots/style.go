// Package plots draws the figure kinds of dmlkit's reproductions with gonum/plot, in one print
// style (column 3.3in or page 6.9in wide, fonts >= 8pt, Okabe–Ito colours with fixed slots per
// method), and writes each figure as PNG (300 dpi), SVG and PDF, byte-identical when saved again.
//
// The package reads plain numbers only: series, points, grids and samples. It knows nothing of
// training or of the results store; package report turns stored records into these inputs.
//
// Figure kinds, each a [Chart] whose legend (and colour bar) lie outside the data area: [Lines]
// (mean curves with ± error bands, e.g. ± SE over seeds), [Pareto] (points with their Pareto
// frontier), [Heatmap] (an annotated grid with its colour bar, e.g. margins), [Histograms]
// (overlaid density histograms), [Utility] (per-class utility curves: values sorted in descending
// order against the fraction of classes), [Density2D] (a 2-D embedding as a density image), [Bars]
// (grouped bars with error bars); and [Embedding2D] (per-class directions, spreads and densities of
// 2-D embeddings, one panel per model, drawn as [Panels]).
//
// [CheckLayout] draws a figure onto a [Recorder], which records the box of every text and data
// mark, and lists overlapping, clipped or too small text and legends or axis text over data.
package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Print widths of a two-column paper: one column, or the whole text width (a "page" figure).
const (
	ColumnWidth = 3.3 * vg.Inch
	PageWidth   = 6.9 * vg.Inch
	// MinFontSize is the smallest font any figure may use at its print size; [CheckLayout] flags
	// smaller text.
	MinFontSize vg.Length = 8
)

// LegendPos says where a [Chart] puts its legend: always outside the data area.
type LegendPos int

const (
	LegendBelow LegendPos = iota // below the x axis, in as many columns as fit (the default)
	LegendRight                  // in a strip right of the plot
)

// Style fixes the look shared by all figures. The zero value is not useful; start from
// [DefaultStyle] (a column figure) or [PageStyle].
type Style struct {
	Width, Height vg.Length     // figure size; a legend below the plot adds to Height
	DPI           int           // PNG resolution; default 300
	TitleSize     vg.Length     // default 9pt
	LabelSize     vg.Length     // axis labels; default 8pt
	TickSize      vg.Length     // tick labels, legend and annotations; default 8pt
	LineWidth     vg.Length     // default 1.2pt
	BandAlpha     uint8         // opacity of error bands and histogram fills; default 60 of 255
	Palette       []color.Color // series colours, cycled; default [PrintPalette]
	Legend        LegendPos     // where charts put their legend
	// Slots fixes the colour, marker and dash of named series (e.g. the methods of a paper), so that
	// a method looks the same in every figure: slot k has colour Palette[k mod n], marker
	// [Glyph](k) and dash pattern k / n (solid, dashed, dotted …). Series not listed take, in
	// order, the lowest slots not used by a listed series of the same figure.
	Slots map[string]int
}

// OkabeIto is the colour-blind-safe palette of Okabe & Ito (2008), without black, in their order:
// orange, sky blue, bluish green, yellow, blue, vermillion, reddish purple, then black.
var OkabeIto = []color.Color{
	color.RGBA{0xE6, 0x9F, 0x00, 0xFF},
	color.RGBA{0x56, 0xB4, 0xE9, 0xFF},
	color.RGBA{0x00, 0x9E, 0x73, 0xFF},
	color.RGBA{0xF0, 0xE4, 0x42, 0xFF},
	color.RGBA{0x00, 0x72, 0xB2, 0xFF},
	color.RGBA{0xD5, 0x5E, 0x00, 0xFF},
	color.RGBA{0xCC, 0x79, 0xA7, 0xFF},
	color.RGBA{0x00, 0x00, 0x00, 0xFF},
}

// PrintPalette is the Okabe–Ito palette ordered so that neighbouring slots contrast (blue, orange,
// bluish green, vermillion, sky blue, reddish purple, black) and with yellow last, darkened to
// DarkYellow: Okabe–Ito's yellow has a contrast ratio of about 1.3:1 on white and a 1.2pt line of
// it all but vanishes in print.
var PrintPalette = []color.Color{
	OkabeIto[4], OkabeIto[0], OkabeIto[2], OkabeIto[5], OkabeIto[1], OkabeIto[6], OkabeIto[7], DarkYellow,
}

// DarkYellow is Okabe–Ito's yellow (#F0E442) darkened to #B39E00 (same hue, about 2.7:1 on white).
var DarkYellow = color.RGBA{0xB3, 0x9E, 0x00, 0xFF}

// DefaultStyle is the house style for a column figure: 3.3in × 2.3in (plus the legend below),
// 300 dpi, Liberation Serif at 9/8/8 pt, [PrintPalette].
func DefaultStyle() Style {
	return Style{
		Width:     ColumnWidth,
		Height:    2.3 * vg.Inch,
		DPI:       300,
		TitleSize: 9,
		LabelSize: 8,
		TickSize:  8,
		LineWidth: 1.2,
		BandAlpha: 60,
		Palette:   PrintPalette,
	}
}

// PageStyle is [DefaultStyle] at the full text width (6.9in × 2.6in), legend on the right.
func PageStyle() Style {
	s := DefaultStyle()
	s.Width, s.Height = PageWidth, 2.6*vg.Inch
	s.Legend = LegendRight
	return s
}

// StyleFor returns the style of a print width: "column" (or "") or "page".
func StyleFor(width string) (Style, error) {
	switch width {
	case "", "column":
		return DefaultStyle(), nil
	case "page":
		return PageStyle(), nil
	}
	return Style{}, fmt.Errorf("plots: unknown width %q (want column or page)", width)
}

// SlotsOf assigns a slot to each series name (see [Style.Slots]).
func (s Style) SlotsOf(names []string) []int {
	out := make([]int, len(names))
	used := map[int]bool{}
	for i, n := range names {
		out[i] = -1
		if k, ok := s.Slots[n]; ok && n != "" {
			out[i] = k
			used[k] = true
		}
	}
	next := 0
	for i := range out {
		if out[i] >= 0 {
			continue
		}
		for used[next] {
			next++
		}
		out[i] = next
		used[next] = true
	}
	return out
}

func (s Style) palette() []color.Color {
	if len(s.Palette) == 0 {
		return PrintPalette
	}
	return s.Palette
}

// Dashes returns the dash pattern of a slot: solid for the first len(Palette) slots, then dashed,
// dotted and dash-dotted.
func (s Style) Dashes(slot int) []vg.Length {
	switch (slot / len(s.palette())) % 4 {
	case 1:
		return []vg.Length{4, 2}
	case 2:
		return []vg.Length{1, 1.5}
	case 3:
		return []vg.Length{4, 1.5, 1, 1.5}
	}
	return nil
}

// Color returns the i-th series colour (cycling).
func (s Style) Color(i int) color.Color {
	p := s.palette()
	return p[i%len(p)]
}

// Translucent returns c with the style's band opacity (premultiplied, as image/color expects).
func (s Style) Translucent(c color.Color) color.Color {
	return withAlpha(c, s.BandAlpha)
}

// withAlpha returns the opaque colour c with opacity a (premultiplied, as image/color expects).
func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	A := uint32(a)
	return color.RGBA{uint8(r >> 8 * A / 255), uint8(g >> 8 * A / 255), uint8(b >> 8 * A / 255), uint8(A)}
}

// ClassColors returns n colours for classes: the style's palette when it has at least n colours,
// otherwise n hues evenly spaced around the colour wheel (HSV with saturation 0.85 and value
// 0.8), so that no two classes share a colour.
func (s Style) ClassColors(n int) []color.Color {
	out := make([]color.Color, n)
	pal := s.palette()
	if n <= len(pal) {
		copy(out, pal[:n])
		return out
	}
	for i := range out {
		out[i] = hsv(float64(i)/float64(n), 0.85, 0.8)
	}
	return out
}

// hsv converts hue h ∈ [0, 1), saturation and value to an opaque colour.
func hsv(h, sat, val float64) color.Color {
	h6 := h * 6
	i := int(h6) % 6
	f := h6 - float64(int(h6))
	p, q, t := val*(1-sat), val*(1-sat*f), val*(1-sat*(1-f))
	var r, g, b float64
	switch i {
	case 0:
		r, g, b = val, t, p
	case 1:
		r, g, b = q, val, p
	case 2:
		r, g, b = p, val, t
	case 3:
		r, g, b = p, q, val
	case 4:
		r, g, b = t, p, val
	default:
		r, g, b = val, p, q
	}
	return color.RGBA{uint8(math.Round(255 * r)), uint8(math.Round(255 * g)), uint8(math.Round(255 * b)), 0xFF}
}

// Labels are the texts of a figure.
type Labels struct {
	Title, X, Y string
}

// newPlot returns an empty plot with the style's fonts and the labels set.
func (s Style) newPlot(l Labels) *plot.Plot {
	p := plot.New()
	p.Title.Text = l.Title
	p.X.Label.Text = l.X
	p.Y.Label.Text = l.Y
	p.Title.TextStyle.Font.Size = s.TitleSize
	p.X.Label.TextStyle.Font.Size = s.LabelSize
	p.Y.Label.TextStyle.Font.Size = s.LabelSize
	p.X.Tick.Label.Font.Size = s.TickSize
	p.Y.Tick.Label.Font.Size = s.TickSize
	p.Legend.TextStyle.Font.Size = s.TickSize
	p.Legend.ThumbnailWidth = 0.25 * vg.Inch
	p.X.Padding = 2
	p.Y.Padding = 2
	p.X.Tick.Marker = TrimTicks{}
	p.Y.Tick.Marker = TrimTicks{}
	return p
}

// lineStyle is the line of slot k: its colour and dash pattern.
func (s Style) lineStyle(k int) draw.LineStyle {
	return draw.LineStyle{Color: s.Color(k), Width: s.LineWidth, Dashes: s.Dashes(k)}
}

// TrimTicks is gonum's [plot.DefaultTicks] with the decimals every label has in excess removed:
// DefaultTicks writes all labels of an axis with one precision, which for a range starting at 0
// is sometimes too many ("0.00, 25.00, 50.00" → "0, 25, 50"). Labels keep a common number of
// decimals, the most any of them needs ("0.0, 0.5, 1.0" stays); labels in exponent form are left
// as they are. The axes of every chart use it unless a figure sets its own marker.
type TrimTicks struct{}

// Ticks implements plot.Ticker.
func (TrimTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := (plot.DefaultTicks{}).Ticks(lo, hi)
	need := 0
	for _, t := range ts {
		if strings.ContainsAny(t.Label, "eE") {
			return ts
		}
		if i := strings.IndexByte(t.Label, '.'); i >= 0 {
			need = max(need, len(strings.TrimRight(t.Label[i+1:], "0")))
		}
	}
	for k, t := range ts {
		if i := strings.IndexByte(t.Label, '.'); i >= 0 {
			if need == 0 {
				ts[k].Label = t.Label[:i]
			} else if len(t.Label) > i+1+need {
				ts[k].Label = t.Label[:i+1+need]
			}
		}
	}
	return ts
}
