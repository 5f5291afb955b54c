package plots

import (
	"bytes"
	"gonum.org/v1/plot/plotter"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/plot"
)

func TestParetoFrontierHandWorked(t *testing.T) {
	// Points (x=R@1, y=throughput), both to maximise:
	//   0:(1,5) 1:(2,4) 2:(2,2) 3:(3,3) 4:(4,1) 5:(0,5) 6:(3,3)
	// 2 is dominated by 1 and 3; 5 by 0 (same y, smaller x). 3 and 6 are equal, so neither
	// dominates the other and both stay. Frontier sorted by x: 0(1,5) 1(2,4) 3,6(3,3) 4(4,1).
	x := []float64{1, 2, 2, 3, 4, 0, 3}
	y := []float64{5, 4, 2, 3, 1, 5, 3}
	got := ParetoFrontier(x, y, true, true)
	want := []int{0, 1, 3, 6, 4}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("max/max frontier = %v, want %v", got, want)
	}
	// Minimising both: only (0,5)... is not minimal in y. Minimal points: (0,5) has the smallest x;
	// (4,1) the smallest y; (2,2) beats (3,3) and (2,4); (1,5) is dominated by (0,5);
	// (2,2) vs (0,5): neither dominates. So {5:(0,5), 2:(2,2), 4:(4,1)}.
	got = ParetoFrontier(x, y, false, false)
	want = []int{5, 2, 4}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("min/min frontier = %v, want %v", got, want)
	}
}

func TestDensityIntegratesToOne(t *testing.T) {
	// Values k/8, k = 0..8 (exact in binary), over [0,1] in 4 bins of width 0.25: counts 2,2,2,3
	// (1.0 falls in the last bin); NaN is ignored. Density = count/(9·0.25).
	vals := []float64{0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1, math.NaN()}
	d := Density(vals, 0, 1, 4)
	want := []float64{2, 2, 2, 3}
	area := 0.0
	for i := range d {
		if math.Abs(d[i]-want[i]/(9*0.25)) > 1e-12 {
			t.Errorf("bin %d density %v, want %v", i, d[i], want[i]/(9*0.25))
		}
		area += d[i] * 0.25
	}
	if math.Abs(area-1) > 1e-12 {
		t.Errorf("area %v, want 1", area)
	}
}

func TestSortedCurve(t *testing.T) {
	x, y := SortedCurve([]float64{0.2, math.NaN(), 0.9, 0.5, 0.1})
	if !reflect.DeepEqual(y, []float64{0.9, 0.5, 0.2, 0.1}) || !reflect.DeepEqual(x, []float64{0.25, 0.5, 0.75, 1}) {
		t.Fatalf("SortedCurve = %v, %v", x, y)
	}
}

// fixtures builds one plot of each kind from fixed numbers.
func fixtures(t *testing.T, st Style) map[string]*Chart {
	t.Helper()
	out := map[string]*Chart{}
	must := func(name string, p *Chart, err error) {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out[name] = p
	}
	ep := []float64{1, 2, 3, 4, 5}
	p, err := Lines(st, Labels{"R@1 over training", "epoch", "R@1"}, []Series{
		{Name: "Smooth-AP", X: ep, Y: []float64{0.3, 0.45, 0.52, 0.55, 0.56}, Err: []float64{0.02, 0.02, 0.01, 0.01, 0.01}},
		{Name: "Smooth-AP + TCM", X: ep, Y: []float64{0.32, 0.47, 0.55, 0.58, 0.6}, Err: []float64{0.03, 0.02, 0.02, 0.01, 0.01}, Markers: true},
	})
	must("lines", p, err)
	p, err = ScatterPareto(st, Labels{"Accuracy vs hierarchy", "R@1", "OPIS"}, []Point{
		{X: 0.5, Y: 0.2, Label: "a", Group: "rsk"}, {X: 0.55, Y: 0.1, Label: "b", Group: "rsk", Size: 2},
		{X: 0.52, Y: 0.3, Group: "tcm", Marked: true}, {X: 0.6, Y: 0.05, Group: "tcm", Size: 1.5, Marked: true},
	}, true, true, "TCM")
	must("pareto", p, err)
	p, err = Heatmap(st, Labels{"Margins", "m_neg", "m_pos"}, Grid{
		XLabels: []string{"0.3", "0.4", "0.5"}, YLabels: []string{"0.7", "0.8"},
		Z: [][]float64{{0.51, 0.55, 0.53}, {0.56, math.NaN(), 0.5}}, Digits: 2,
	})
	must("heatmap", p, err)
	p, err = Histograms(st, Labels{"Distances", "distance", "density"}, []Sample{
		{"positive", []float64{0.1, 0.2, 0.2, 0.3, 0.35, 0.4}}, {"negative", []float64{0.5, 0.6, 0.7, 0.7, 0.8, 0.9, 1.2}},
	}, 10)
	must("hist", p, err)
	p, err = Utility(st, Labels{Title: "Per-class R@1", Y: "R@1"}, []Series{
		{Name: "base", Y: []float64{0.9, 0.1, 0.5, 0.7}}, {Name: "cit", Y: []float64{0.8, 0.3, 0.6, 0.6}},
	})
	must("utility", p, err)
	var xs, ys []float64
	for i := 0; i < 400; i++ {
		a := float64(i) * 0.1
		xs = append(xs, math.Cos(a)*float64(i%7))
		ys = append(ys, math.Sin(a)*float64(i%5))
	}
	p, err = Density2D(st, Labels{"Embedding", "z1", "z2"}, xs, ys, 30)
	must("density2d", p, err)
	p, err = Bars(st, Labels{"R@1 by loss", "", "R@1"}, []string{"CUB", "Cars", "SOP"}, []BarSeries{
		{"contrastive", []float64{0.6, 0.7, 0.75}, []float64{0.01, 0.02, 0.01}},
		{"rsk", []float64{0.65, 0.8, 0.79}, []float64{0.02, 0.01, 0.01}},
	})
	must("bars", p, err)
	return out
}

func TestFiguresRenderValidFiles(t *testing.T) {
	st := DefaultStyle()
	dir := t.TempDir()
	// 3.3in wide at 300 dpi = 990 pixels; 2.3in (690 pixels) high plus the legend below.
	for name, p := range fixtures(t, st) {
		w, h := p.Size()
		wantW, wantH := int(math.Round(w.Dots(300))), int(math.Round(h.Dots(300)))
		if wantW != 990 || wantH < 690 {
			t.Errorf("%s: size %v × %v", name, w, h)
		}
		files, err := Save(p, st, filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(files) != 3 {
			t.Fatalf("%s: wrote %v", name, files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: PNG does not decode: %v", name, err)
		}
		if sz := img.Bounds().Size(); abs(sz.X-wantW) > 1 || abs(sz.Y-wantH) > 1 {
			t.Errorf("%s: PNG is %dx%d, want %dx%d", name, sz.X, sz.Y, wantW, wantH)
		}
		// Not blank: a real figure colours a few percent of its pixels at least.
		if f := nonWhiteFraction(img); f < 0.01 {
			t.Errorf("%s: only %.4f of the PNG's pixels are not white", name, f)
		}
		svg, _ := os.ReadFile(files[1])
		if !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) || len(svg) < 2000 {
			t.Errorf("%s: SVG invalid or trivial (%d bytes): %.40q", name, len(svg), svg)
		}
		pdf, _ := os.ReadFile(files[2])
		if !bytes.HasPrefix(pdf, []byte("%PDF-")) || !bytes.Contains(pdf, []byte("%%EOF")) || len(pdf) < 2000 {
			t.Errorf("%s: PDF invalid or trivial (%d bytes): %.20q", name, len(pdf), pdf)
		}
	}
}

func TestLinesUsePaletteColours(t *testing.T) {
	// The first two series must appear in Okabe–Ito orange and sky blue.
	st := DefaultStyle()
	p := fixtures(t, st)["lines"]
	dir := t.TempDir()
	files, err := Save(p, st, filepath.Join(dir, "l"), "png")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(files[0])
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if n := countColor(img, st.Color(i)); n < 100 {
			t.Errorf("series %d colour %v found in %d pixels, want ≥ 100", i, st.Color(i), n)
		}
	}
	if n := countColor(img, OkabeIto[2]); n > 0 {
		t.Errorf("unused third palette colour found in %d pixels", n)
	}
}

func abs(x int) int { return max(x, -x) }

func nonWhiteFraction(img image.Image) float64 {
	b := img.Bounds()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xF000 || g < 0xF000 || bl < 0xF000 {
				n++
			}
		}
	}
	return float64(n) / float64(b.Dx()*b.Dy())
}

func countColor(img image.Image, c color.Color) int {
	cr, cg, cb, _ := c.RGBA()
	b := img.Bounds()
	n := 0
	near := func(a, b uint32) bool { d := int(a>>8) - int(b>>8); return d >= -3 && d <= 3 }
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r, cr) && near(g, cg) && near(bl, cb) {
				n++
			}
		}
	}
	return n
}

func TestBadInputsAreErrors(t *testing.T) {
	st := DefaultStyle()
	if _, err := Lines(st, Labels{}, []Series{{Name: "a", X: []float64{1, 2}, Y: []float64{1}}}); err == nil {
		t.Error("Lines accepted mismatched lengths")
	}
	if _, err := Heatmap(st, Labels{}, Grid{XLabels: []string{"a"}, YLabels: []string{"b"}, Z: [][]float64{{math.NaN()}}}); err == nil {
		t.Error("Heatmap accepted a grid without finite values")
	}
	if _, err := Bars(st, Labels{}, []string{"a", "b"}, []BarSeries{{Name: "x", Values: []float64{1}}}); err == nil {
		t.Error("Bars accepted a short series")
	}
	if _, err := Density2D(st, Labels{}, []float64{1}, nil, 10); err == nil {
		t.Error("Density2D accepted mismatched lengths")
	}
}

// TestTrimTicks: the labels gonum's DefaultTicks gives (gonum.org/v1/plot v0.17.0: "0.00 25.00
// 50.00" on [0, 52]) lose the decimals none of them needs, keep a common count otherwise, and
// exponent labels and the tick values are left alone.
func TestTrimTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 52, []string{"0", "25", "50"}},
		{0, 5000, []string{"0", "2500", "5000"}},
		{0, 1, []string{"0.0", "0.5", "1.0"}},
		{0.3, 0.9, []string{"0.4", "0.6", "0.8"}},
		{40, 66, []string{"40", "50", "60"}},
		{1e-5, 3e-5, []string{"1.2e-05", "2e-05", "2.8e-05"}},
	} {
		var got []string
		ts, ref := (TrimTicks{}).Ticks(c.lo, c.hi), (plot.DefaultTicks{}).Ticks(c.lo, c.hi)
		if len(ts) != len(ref) {
			t.Fatalf("[%g, %g]: %d ticks, DefaultTicks %d", c.lo, c.hi, len(ts), len(ref))
		}
		for i, tk := range ts {
			if tk.Value != ref[i].Value {
				t.Errorf("[%g, %g]: tick %d at %g, DefaultTicks %g", c.lo, c.hi, i, tk.Value, ref[i].Value)
			}
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("[%g, %g]: labels %q, want %q", c.lo, c.hi, got, c.want)
		}
	}
}

// TestLinesNeedThreeValues: a series of fewer than MinLinePoints values gets no line and no band
// (its legend entry shows the marker alone, and its points carry error bars); one of three or
// more gets its line.
func TestLinesNeedThreeValues(t *testing.T) {
	ch, err := Lines(DefaultStyle(), Labels{X: "batch", Y: "R@1"}, []Series{
		{Name: "two values", X: []float64{64, 256}, Y: []float64{0.6, 0.55}, Err: []float64{0.01, 0.02}},
		{Name: "three values", X: []float64{64, 128, 256}, Y: []float64{0.2, 0.21, 0.22}, Err: []float64{0.01, 0.01, 0.01}},
	})
	if err != nil {
		t.Fatal(err)
	}
	hasLine := func(e LegendEntry) bool {
		for _, th := range e.Thumbs {
			if _, ok := th.(*plotter.Line); ok {
				return true
			}
		}
		return false
	}
	if len(ch.Entries) != 2 {
		t.Fatalf("%d legend entries, want 2", len(ch.Entries))
	}
	if hasLine(ch.Entries[0]) || len(ch.Entries[0].Thumbs) != 1 {
		t.Errorf("two values: legend thumbs %T, want the marker alone", ch.Entries[0].Thumbs)
	}
	if !hasLine(ch.Entries[1]) {
		t.Errorf("three values: legend thumbs %T, want a line", ch.Entries[1].Thumbs)
	}
	if probs, _ := CheckLayout(ch, DefaultStyle()); len(probs) > 0 {
		t.Errorf("layout: %q", probs)
	}
}

// TestParetoLogYDegenerate: a log-OPIS Pareto chart of single-seed points (no error bars: NaN) at
// one height, or with a bar reaching below 0, renders (it failed with "Values must be greater than
// 0 for a log scale" at the smoke scale); the y axis stays above 0 and around the points.
func TestParetoLogYDegenerate(t *testing.T) {
	for _, pts := range [][]Point{
		{{X: 0.5, Y: 0.01, XErr: math.NaN(), YErr: math.NaN()}},
		{{X: 0.5, Y: 0.01}, {X: 0.6, Y: 0.01}},
		{{X: 0.5, Y: 0.01, YErr: 0.05}, {X: 0.6, Y: 0.02, YErr: 0.001}},
	} {
		ch, err := Pareto(DefaultStyle(), Labels{X: "R@1", Y: "OPIS"}, pts, ParetoOptions{MaxX: true, LogY: true})
		if err != nil {
			t.Fatal(err)
		}
		if !(ch.Plot.Y.Min > 0 && ch.Plot.Y.Min < 0.01 && ch.Plot.Y.Max > 0.01) {
			t.Errorf("%v: y axis [%g, %g]", pts, ch.Plot.Y.Min, ch.Plot.Y.Max)
		}
		if _, err := Save(ch, ch.Style, filepath.Join(t.TempDir(), "p"), "png"); err != nil {
			t.Errorf("%v: %v", pts, err)
		}
	}
}
