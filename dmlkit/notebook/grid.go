package notebook

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"strings"
)

// GridColumn is the widest a notebook shows a [FigureGrid], px: the output column of the HTML
// export (about 1,060 px in a 1,200-px window) with a margin.
const GridColumn = 1000

// FigureGrid composes figs into one figure of perRow panels a row, in reading order, each panel at
// its own pixels in a cell as large as the largest panel (centred in it; a last row with fewer
// panels is centred too), on white: panels the reader compares (one histogram per loss) side by
// side. A notebook shows it at half its pixels, at most [GridColumn] ([Figure.Metadata]): five
// histograms of 990 × 755 pixels, three a row, make one 2,970 × 1,510 figure shown 1,000 px wide
// and 508 px high, where one under the other they took 5 × 378 px and five captions.
//
// The grid's Name is the panels' names joined by "+"; its Caption is empty (see [GridCaption]).
func FigureGrid(figs []Figure, perRow int) (Figure, error) {
	if len(figs) == 0 {
		return Figure{}, fmt.Errorf("figure grid: no figures")
	}
	if perRow <= 0 {
		perRow = len(figs)
	}
	perRow = min(perRow, len(figs))
	imgs := make([]image.Image, len(figs))
	cw, ch := 0, 0
	names := make([]string, len(figs))
	for i, f := range figs {
		img, err := png.Decode(bytes.NewReader(f.PNG))
		if err != nil {
			return Figure{}, fmt.Errorf("figure grid: %s: %w", f.Name, err)
		}
		imgs[i] = img
		b := img.Bounds()
		cw, ch = max(cw, b.Dx()), max(ch, b.Dy())
		names[i] = f.Name
	}
	rows := (len(figs) + perRow - 1) / perRow
	out := image.NewRGBA(image.Rect(0, 0, perRow*cw, rows*ch))
	draw.Draw(out, out.Bounds(), &image.Uniform{color.White}, image.Point{}, draw.Src)
	for i, img := range imgs {
		row, col := i/perRow, i%perRow
		inRow := min(perRow, len(figs)-row*perRow)
		x0 := (perRow-inRow)*cw/2 + col*cw // the last row centred
		b := img.Bounds()
		at := image.Pt(x0+(cw-b.Dx())/2, row*ch+(ch-b.Dy())/2)
		draw.Draw(out, image.Rectangle{Min: at, Max: at.Add(b.Size())}, img, b.Min, draw.Over)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return Figure{}, err
	}
	w := out.Bounds().Dx()
	return Figure{Name: strings.Join(names, "+"), PNG: buf.Bytes(), Width: w, Shown: min((w+1)/2, GridColumn)}, nil
}

// GridCaption is the caption of a [FigureGrid] of figs: the panels' files, how they are laid out,
// and their captions. Captions that differ only in one clause (the arm of each panel: "…, pooled
// over the seeds, RS@k + TCM, Omniglot; …") are written once, the clause listed panel by panel
// ([mergeCaptions]); others are listed one a line, in reading order.
func (p *Paper) GridCaption(figs []Figure, perRow int) string {
	paths := make([]string, len(figs))
	caps := make([]string, len(figs))
	for i, f := range figs {
		paths[i] = fmt.Sprintf("*`figures/%s/%s.png`*", p.Name, f.Name)
		caps[i] = f.Caption
	}
	head := fmt.Sprintf("%s (%d panels, %d a row, left to right and top to bottom)", strings.Join(paths, ", "), len(figs), min(max(perRow, 1), len(figs)))
	if merged, ok := mergeCaptions(caps); ok {
		return head + " — " + merged
	}
	var b strings.Builder
	b.WriteString(head + " — panel by panel:\n\n")
	for i, c := range caps {
		fmt.Fprintf(&b, "%d. %s\n", i+1, c)
	}
	return b.String()
}

// mergeCaptions writes captions that share their words but for one clause as one caption: the
// common words before the clause (up to a word that ends in ",", ";", ":" or "."), the clauses
// numbered "(1) …; (2) …", and the common words after them. False when there are fewer than two
// captions, they share no such beginning and end, or a clause is empty.
func mergeCaptions(caps []string) (string, bool) {
	if len(caps) < 2 {
		return "", false
	}
	words := make([][]string, len(caps))
	shortest := -1
	for i, c := range caps {
		words[i] = strings.Fields(c)
		if shortest < 0 || len(words[i]) < shortest {
			shortest = len(words[i])
		}
	}
	same := func(at func(ws []string) string) bool {
		for _, ws := range words[1:] {
			if at(ws) != at(words[0]) {
				return false
			}
		}
		return true
	}
	pre := 0
	for pre < shortest && same(func(ws []string) string { return ws[pre] }) {
		pre++
	}
	for pre > 0 && !strings.ContainsAny(words[0][pre-1][len(words[0][pre-1])-1:], ",;:.") {
		pre-- // the clause starts after a punctuation mark
	}
	suf := 0
	for suf < shortest-pre && same(func(ws []string) string { return ws[len(ws)-1-suf] }) {
		suf++
	}
	if pre == 0 || suf == 0 {
		return "", false
	}
	var clauses []string
	end := ""
	for i, ws := range words {
		mid := ws[pre : len(ws)-suf]
		if len(mid) == 0 {
			return "", false
		}
		c := strings.Join(mid, " ")
		end = c[len(c)-1:]
		if !strings.ContainsAny(end, ",;:.") {
			end = ""
		}
		clauses = append(clauses, fmt.Sprintf("(%d) %s", i+1, strings.TrimRight(c, ",;:.")))
	}
	return strings.Join(words[0][:pre], " ") + " " + strings.Join(clauses, "; ") + end + " " + strings.Join(words[0][len(words[0])-suf:], " "), true
}
