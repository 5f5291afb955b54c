package notebook

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
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
	wantCapt := "*`figures/toy/r.png`*, *`figures/toy/g.png`*, *`figures/toy/b.png`* (3 panels, 2 a row, left to right and top to bottom) — panel by panel:\n\n1. \n2. \n3. \n"
	if capt != wantCapt {
		t.Errorf("GridCaption:\n got %q\nwant %q", capt, wantCapt)
	}
}

// TestMergeCaptions, by hand: captions that differ in one clause are written once with the clauses
// numbered — the common beginning cut back to its last punctuation ("the seeds,"), the clauses'
// own commas dropped and the last one's restored before the common end; captions with nothing in
// common, or one that is another's beginning, are not merged.
func TestMergeCaptions(t *testing.T) {
	got, ok := mergeCaptions([]string{
		"**Fig. 10.** Distances pooled over the seeds, RS@k + TCM, Omniglot; density-normalised.",
		"**Fig. 10.** Distances pooled over the seeds, RS@k + TCM positive term only, Omniglot; density-normalised.",
		"**Fig. 10.** Distances pooled over the seeds, RS@k + ROADMAP calibration, Omniglot; density-normalised.",
	})
	want := "**Fig. 10.** Distances pooled over the seeds, (1) RS@k + TCM; (2) RS@k + TCM positive term only; (3) RS@k + ROADMAP calibration, Omniglot; density-normalised."
	if !ok || got != want {
		t.Errorf("mergeCaptions = %q, %v\nwant %q", got, ok, want)
	}
	for _, caps := range [][]string{
		{"A test OPIS grid.", "Validation R@1 of the grid."},
		{"Distances, RS@k.", "Distances, RS@k, Omniglot."},
		{"one caption"},
	} {
		if got, ok := mergeCaptions(caps); ok {
			t.Errorf("mergeCaptions(%q) = %q, want no merge", caps, got)
		}
	}
}
