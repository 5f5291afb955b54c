package plots

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Panels is a figure of several plots side by side in one file, e.g. one model per panel. The
// panels share Style.Width (a page figure, normally) and are Style.Height high: each has its title on top, below it the plot (square when
// Square is set) and, in the strip to the right of the plot, the panel's legend. [Save] writes it
// at its own size ([Panels.Size]).
type Panels struct {
	Title   string          // drawn centred above all panels (optional)
	Plots   []*plot.Plot    // one per panel; a plot's own title is drawn as usual, prefer Titles
	Titles  []string        // per panel (optional)
	Legends [][]LegendEntry // per panel, nil for none; drawn top-left in the strip right of the plot
	Square  bool            // shrink each plot so that its data area is square
	Style   Style
}

// Size is Style.Width wide and Style.Height high, plus a line for Title.
func (p *Panels) Size() (w, h vg.Length) {
	return p.Style.Width, p.Style.Height + p.titleHeight(p.Title, p.Style.TitleSize)
}

func (p *Panels) titleHeight(t string, size vg.Length) vg.Length {
	if t == "" {
		return 0
	}
	return 1.6 * size
}

func (p *Panels) textStyle(size vg.Length) text.Style {
	sty := plot.New().Title.TextStyle // black, centred, top-aligned, the default font
	sty.Font.Size = size
	return sty
}

// Draw draws the panels onto c, filling it white first.
func (p *Panels) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	if p.Title != "" {
		c.FillText(p.textStyle(p.Style.TitleSize), vg.Point{X: c.Center().X, Y: c.Max.Y}, p.Title)
		c.Max.Y -= p.titleHeight(p.Title, p.Style.TitleSize)
	}
	n := len(p.Plots)
	if n == 0 {
		return
	}
	tileW := (c.Max.X - c.Min.X) / vg.Length(n)
	for i, pl := range p.Plots {
		tile := c
		tile.Min.X = c.Min.X + vg.Length(i)*tileW
		tile.Max.X = tile.Min.X + tileW
		title := ""
		if i < len(p.Titles) {
			title = p.Titles[i]
		}
		top := tile.Max.Y
		tile.Max.Y -= p.titleHeight(title, p.Style.LabelSize)
		var leg []LegendEntry
		if i < len(p.Legends) {
			leg = p.Legends[i]
		}
		area := tile
		if leg != nil || p.Square {
			side := min(tile.Max.Y-tile.Min.Y, tile.Max.X-tile.Min.X)
			area.Max.X = area.Min.X + side
			area.Min.Y = area.Max.Y - side
		}
		if p.Square {
			area = squareData(pl, area)
		}
		pl.Draw(area)
		if title != "" { // centred over the plot
			c.FillText(p.textStyle(p.Style.LabelSize), vg.Point{X: (area.Min.X + area.Max.X) / 2, Y: top}, title)
		}
		if leg != nil {
			sty := p.textStyle(p.Style.TickSize)
			sty.XAlign, sty.YAlign = draw.XLeft, draw.YCenter
			rh := sty.FontExtents().Height * 1.05
			var w vg.Length
			for _, e := range leg {
				w = max(w, legendThumb+legendGap+sty.Width(e.Text))
			}
			box := vg.Rectangle{Min: vg.Point{X: area.Max.X + 2, Y: area.Max.Y - vg.Length(len(leg))*rh - 2*legendPad}, Max: vg.Point{X: area.Max.X + 2 + w + 2*legendPad, Y: area.Max.Y}}
			drawLegend(c, sty, leg, box, len(leg), w, rh)
			if rec := recorderOf(c.Canvas); rec != nil {
				rec.AddBox(RoleLegend, box)
			}
		}
	}
}

// squareData shrinks the canvas c (from the right or the bottom) so that the data area of pl in it
// is square; the axes' sizes do not depend on the canvas size, so one correction suffices.
func squareData(pl *plot.Plot, c draw.Canvas) draw.Canvas {
	dc := pl.DataCanvas(c)
	dw, dh := dc.Max.X-dc.Min.X, dc.Max.Y-dc.Min.Y
	switch {
	case dw > dh:
		c.Max.X -= dw - dh
	case dh > dw:
		c.Min.Y += dh - dw
	}
	return c
}
