package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// TestFixturesPassLayout: every plot kind, drawn from the fixtures in the house style (column and
// page width), has no overlapping or clipped text, no text under 8 pt and no legend over data.
func TestFixturesPassLayout(t *testing.T) {
	for _, st := range []Style{DefaultStyle(), PageStyle()} {
		for name, p := range fixtures(t, st) {
			if probs, _ := CheckLayout(p, st); len(probs) > 0 {
				t.Errorf("%s (%.1fin): %s", name, float64(st.Width/vg.Inch), strings.Join(probs, "; "))
			}
		}
	}
}

func hasProblem(probs []string, sub string) bool {
	for _, p := range probs {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}

// TestLayoutFlagsOverprintedTicks: bars over long category names (the config values of the old
// opis_by_loss figure) overprint their tick labels unless rotated; the checker names them.
func TestLayoutFlagsOverprintedTicks(t *testing.T) {
	st := DefaultStyle()
	cats := []string{"arcface", "arcface+tcm", "proxynca", "proxynca+tcm", "rsk", "rsk+tcm", "rsk+tcm(lambda_neg=0)", "smoothap", "smoothap+tcm"}
	vals := []float64{15, 16, 55, 30, 7, 12, 4, 11, 10}
	bad, err := Bars(st, Labels{Y: "OPIS"}, cats, []BarSeries{{Values: vals}})
	if err != nil {
		t.Fatal(err)
	}
	probs, _ := CheckLayout(bad, st)
	if !hasProblem(probs, `text "arcface" overlaps text "arcface+tcm"`) {
		t.Errorf("overprinted tick labels not flagged: %q", probs)
	}
	good, _ := Bars(st, Labels{Y: "OPIS"}, cats, []BarSeries{{Values: vals}})
	good.RotateXTicks(40)
	if probs, _ := CheckLayout(good, st); len(probs) > 0 {
		t.Errorf("rotated tick labels: %q", probs)
	}
}

// TestLayoutFlagsLegendOnData: a legend drawn inside the data area over the curves (gonum's own
// legend, as the figures were drawn before) is flagged; the chart's legend below is not.
func TestLayoutFlagsLegendOnData(t *testing.T) {
	st := DefaultStyle()
	x := []float64{0, 1, 2, 3, 4}
	series := []Series{{Name: "Smooth-AP", X: x, Y: []float64{1, 2, 3, 4, 5}}, {Name: "Smooth-AP + TCM", X: x, Y: []float64{5, 4, 4.5, 5, 4.8}}}
	good, err := Lines(st, Labels{X: "epoch", Y: "R@1"}, series)
	if err != nil {
		t.Fatal(err)
	}
	if probs, _ := CheckLayout(good, st); len(probs) > 0 {
		t.Errorf("legend below: %q", probs)
	}
	bad, _ := Lines(st, Labels{X: "epoch", Y: "R@1"}, series)
	for _, e := range bad.Entries {
		bad.Plot.Legend.Add(e.Text, e.Thumbs...)
	}
	bad.Entries = nil
	bad.Plot.Legend.Top = true
	probs, _ := CheckLayout(bad, st)
	if !hasProblem(probs, `text "Smooth-AP + TCM" lies over`) {
		t.Errorf("legend on curves not flagged: %q", probs)
	}
}

// drawFunc is a Figure drawn by a function, for hand-made layouts.
type drawFunc func(c draw.Canvas)

func (f drawFunc) Draw(c draw.Canvas) { f(c) }

// TestRecorderBoxes checks the recorded boxes against hand-computed ones, and each rule once: a
// label beyond the right edge, small text, a legend box over a data mark, and a rotated label
// (the y-axis label's box is as tall as the text is wide).
func TestRecorderBoxes(t *testing.T) {
	st := DefaultStyle()
	sty := newChart(st, Labels{}).Plot.Y.Label.TextStyle
	sty.Font.Size = 8
	var rec *Recorder
	fig := drawFunc(func(c draw.Canvas) {
		rec = c.Canvas.(*Recorder)
		c.FillText(sty, vg.Point{X: 10, Y: 10}, "inside")
		c.FillText(sty, vg.Point{X: st.Width - 5, Y: 50}, "clipped")
		small := sty
		small.Font.Size = 6
		c.FillText(small, vg.Point{X: 10, Y: 100}, "tiny")
		rot := sty
		rot.Rotation = 1.5707963267948966
		c.FillText(rot, vg.Point{X: 60, Y: 60}, "rotated label")
		prev := rec.SetRole(RoleData)
		c.StrokeLine2(draw.LineStyle{Width: 1}, 100, 100, 140, 100)
		rec.SetRole(prev)
		rec.AddBox(RoleLegend, vg.Rectangle{Min: vg.Point{X: 120, Y: 95}, Max: vg.Point{X: 160, Y: 120}})
	})
	probs, _ := CheckLayout(fig, st)
	for _, want := range []string{`text "clipped" sticks out`, `text "tiny" is 6 pt, below 8 pt`, "legend box covers 1 data mark(s)"} {
		if !hasProblem(probs, want) {
			t.Errorf("missing %q in %q", want, probs)
		}
	}
	if len(probs) != 3 {
		t.Errorf("problems %q, want 3", probs)
	}
	// The y label's style centres the text on the point: "inside" spans 10 ± width/2.
	w := sty.Width("inside")
	e := sty.FontExtents()
	in := rec.Boxes[0]
	if in.Text != "inside" || in.Rect.Min.X != 10-w/2 || in.Rect.Max.X != 10+w/2 || in.Rect.Max.Y-in.Rect.Min.Y != e.Ascent+e.Descent {
		t.Errorf("box of %q = %+v, want x %v..%v, height %v", in.Text, in.Rect, 10-w/2, 10+w/2, e.Ascent+e.Descent)
	}
	r := rec.Boxes[3].Rect
	if h, wr := r.Max.Y-r.Min.Y, sty.Width("rotated label"); h < wr-0.01 || h > wr+0.01 {
		t.Errorf("rotated label box %+v: height %v, want the text width %v", r, h, wr)
	}
}

// TestSaveIsByteIdentical: saving the same figures twice gives the same bytes in every format
// (no creation date or random id), and the PDF carries the fixed date.
func TestSaveIsByteIdentical(t *testing.T) {
	st := DefaultStyle()
	a, b := t.TempDir(), t.TempDir()
	for name, p := range fixtures(t, st) {
		fa, err := Save(p, st, filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		fb, err := Save(p, st, filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		for i := range fa {
			x, _ := os.ReadFile(fa[i])
			y, _ := os.ReadFile(fb[i])
			if !bytes.Equal(x, y) {
				t.Errorf("%s: the two saves differ", filepath.Base(fa[i]))
			}
			if strings.HasSuffix(fa[i], ".pdf") && !bytes.Contains(x, []byte("/CreationDate (D:"+PDFDate.Format("20060102150405")+")")) {
				t.Errorf("%s: no fixed CreationDate", fa[i])
			}
		}
	}
}

// TestSlotsKeepMethodStyles: a named series keeps its slot's colour and marker whatever the other
// series of the figure; unnamed ones fill the free slots in order.
func TestSlotsKeepMethodStyles(t *testing.T) {
	st := DefaultStyle()
	st.Slots = map[string]int{"Smooth-AP": 0, "RS@k": 2}
	got := st.SlotsOf([]string{"RS@k", "other", "Smooth-AP", "more"})
	if want := []int{2, 1, 0, 3}; !equalInts(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}
	if Glyph(8) == Glyph(0) || st.Dashes(8) == nil || st.Dashes(7) != nil {
		t.Error("slot 8 must differ from slot 0 in marker and dash")
	}
	x := []float64{0, 1, 2}
	ch, err := Lines(st, Labels{}, []Series{{Name: "RS@k", X: x, Y: x, Markers: true}})
	if err != nil {
		t.Fatal(err)
	}
	sc := ch.Entries[0].Thumbs[1].(*plotter.Scatter)
	if sc.GlyphStyle.Color != st.Color(2) || sc.GlyphStyle.Shape != Glyph(2) {
		t.Errorf("RS@k drawn as %+v, want slot 2", sc.GlyphStyle)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
