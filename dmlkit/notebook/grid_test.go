package notebook

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// solidPNG is a w × h PNG of one colour.
func solidPNG(t *testing.T, w, h int, c color.Color) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFigureGrid, by hand: three 2 × 1 panels (red, green, blue), two a row, make a 4 × 2 figure:
// red at x 0-1 and green at x 2-3 of row 0; the last row's one panel centred, blue at x 1-2 of
// row 1, white at x 0 and 3; shown at half its pixels, 2 px.
func TestFigureGrid(t *testing.T) {
	red, green, blue := color.RGBA{255, 0, 0, 255}, color.RGBA{0, 255, 0, 255}, color.RGBA{0, 0, 255, 255}
	white := color.RGBA{255, 255, 255, 255}
	figs := []Figure{{Name: "r", PNG: solidPNG(t, 2, 1, red)}, {Name: "g", PNG: solidPNG(t, 2, 1, green)}, {Name: "b", PNG: solidPNG(t, 2, 1, blue)}}
	g, err := FigureGrid(figs, 2)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(g.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != "r+g+b" || g.Width != 4 || g.ShownWidth() != 2 || img.Bounds() != image.Rect(0, 0, 4, 2) {
		t.Fatalf("grid %q, width %d shown at %d, bounds %v; want r+g+b, 4 at 2, 4 × 2", g.Name, g.Width, g.ShownWidth(), img.Bounds())
	}
	// A grid wider than twice the column is shown at the column's width: 3 panels of 990 pixels.
	wide := Figure{Name: "w", PNG: solidPNG(t, 990, 2, red)}
	if g3, err := FigureGrid([]Figure{wide, wide, wide}, 3); err != nil || g3.Width != 2970 || g3.ShownWidth() != GridColumn {
		t.Errorf("3 × 990-pixel grid: width %d shown at %d (err %v), want 2970 at %d", g3.Width, g3.ShownWidth(), err, GridColumn)
	}
	want := [2][4]color.RGBA{{red, red, green, green}, {white, blue, blue, white}}
	for y := range 2 {
		for x := range 4 {
			if got := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA); got != want[y][x] {
				t.Errorf("pixel (%d, %d) = %v, want %v", x, y, got, want[y][x])
			}
		}
	}
	if _, err := FigureGrid([]Figure{{Name: "x", PNG: []byte("not a png")}}, 2); err == nil {
		t.Error("a panel that is not a PNG: no error")
	}
	p := &Paper{Name: "toy"}
	capt := p.GridCaption(figs, 2)
	for _, want := range []string{"*3 panels, 2 a row, left to right and top to bottom:*", "1. *`figures/toy/r.png`*", "3. *`figures/toy/b.png`*"} {
		if !strings.Contains(capt, want) {
			t.Errorf("GridCaption lacks %q:\n%s", want, capt)
		}
	}
}
