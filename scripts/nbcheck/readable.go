package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// The checks of what a reader sees in a notebook's results, part of [Lint]:
//
//   - "raw": a displayed output (Markdown or HTML: the tables, the claim lines, the captions) shows
//     raw configuration instead of words — a null value, a run hash, a dotted config key
//     ("sampler.batch_size"), a config expression, a run group's name ("fig8") — as
//     [sweep.RawTexts] finds them in figures ([sweep.ReaderRawTexts]: code spans, links and markup
//     are the notebook's references, not its words; the papers' symbols, L_context, may stand);
//   - "figure-twice": the same image is shown twice in one notebook (the regime figure used to be
//     embedded by its section and again by "Other figures");
//   - "caption": a figure whose caption line names its file and nothing else;
//   - "figure-size": a committed figure (its caption line names figures/…) of one panel, at most
//     [ColumnPixels] pixels wide, shown without a display width (image/png metadata "width"): the
//     browser draws it at its pixel size, 800 px high with labels twice the text's size, where
//     the paper notebooks show it at half (notebook.Figure.Metadata, the setup cell's showFigure);
//   - "sources": a table's "Paper numbers:" sources listed under it instead of folded
//     (report.Table.FoldedMarkdown): two dozen lines under each of TCM's tables.
//   - "details-markdown": a Markdown table inside a <details> element of an output: nbconvert's
//     HTML export shows it as raw "| … |---|" text (Markdown inside an HTML block is not rendered
//     there); folded tables are written as HTML (notebook.SettingMarkdown).

// lintReadable runs the checks above on a notebook's cells.
func lintReadable(cells []proseCell) []Problem {
	var out []Problem
	seen := map[[32]byte]int{}
	for i := range cells {
		c := &cells[i]
		if c.CellType != "code" {
			continue
		}
		for k, o := range c.Outputs {
			if raw, ok := o.Data["image/png"]; ok {
				sum := sha256.Sum256(raw)
				if j, ok := seen[sum]; ok {
					out = append(out, Problem{i, "figure-twice", fmt.Sprintf("an image already shown by cell %d: show each figure once", j)})
				} else {
					seen[sum] = i
				}
				if emptyCaption(c, k) {
					out = append(out, Problem{i, "caption", "a figure under an empty caption: give it the spec's caption (or show it once, where it has one)"})
				}
				if w := pngWidth(raw); committedFigure(c, k) && w > 0 && w <= ColumnPixels && shownWidth(c.Outputs[k].Metadata) == 0 {
					out = append(out, Problem{i, "figure-size", fmt.Sprintf("a %d-pixel figure shown at its pixel size: give it a display width (image/png metadata width, notebook.Figure.Metadata: %d)", w, (w+1)/2)})
				}
				continue
			}
			for _, mime := range []string{"text/markdown", "text/html"} {
				raw, ok := o.Data[mime]
				if !ok {
					continue
				}
				t, _ := multiline(raw)
				if markdownTableInDetails(t) {
					out = append(out, Problem{i, "details-markdown", "a Markdown table inside <details>: the HTML export shows it as raw text; write the folded table as HTML"})
				}
				if strings.Contains(t, "Paper numbers:\n[1]") {
					out = append(out, Problem{i, "sources", "a table's sources listed under it: fold them (report.Table.FoldedMarkdown)"})
				}
				for _, p := range sweep.ReaderRawTexts(t) {
					out = append(out, Problem{i, "raw", fmt.Sprintf("shows %s (give it words in the spec's labels map or the generator)", p)})
				}
				break
			}
		}
	}
	return out
}

// markdownTableInDetails reports whether t holds a Markdown table's delimiter row ("|---|")
// between a "<details" and its "</details>".
func markdownTableInDetails(t string) bool {
	for {
		i := strings.Index(t, "<details")
		if i < 0 {
			return false
		}
		t = t[i:]
		j := strings.Index(t, "</details>")
		if j < 0 {
			j = len(t)
		}
		if strings.Contains(t[:j], "|---") {
			return true
		}
		if j == len(t) {
			return false
		}
		t = t[j:]
	}
}

// captionText is the Markdown output after output k of c (an image): the figure's caption line
// ("*`figures/…`* — caption"); ok is false when none follows.
func captionText(c *proseCell, k int) (t string, ok bool) {
	if k+1 >= len(c.Outputs) {
		return "", false
	}
	raw, ok := c.Outputs[k+1].Data["text/markdown"]
	if !ok {
		return "", false
	}
	t, _ = multiline(raw)
	return t, true
}

// emptyCaption reports whether output k of c (an image) is followed by a caption line that names
// the figure's file and says nothing about it ("*`figures/idml/regimes.png`* — ").
func emptyCaption(c *proseCell, k int) bool {
	t, ok := captionText(c, k)
	if !ok {
		return false
	}
	head, rest, ok := strings.Cut(t, " — ")
	return ok && strings.Contains(head, "figures/") && strings.TrimSpace(rest) == ""
}

// ColumnPixels is the widest figure, in pixels, that the HTML export draws at its pixel size: its
// output column is about 1,080 px wide in a 1,200-px window; a wider figure is scaled down to it.
const ColumnPixels = 1100

// committedFigure reports whether output k of c (an image) is a committed figure: the output
// after it is its caption line, naming a file under figures/.
func committedFigure(c *proseCell, k int) bool {
	t, ok := captionText(c, k)
	head, _, _ := strings.Cut(t, " — ")
	return ok && strings.Contains(head, "figures/")
}

// pngWidth is the width in pixels of a base64 image/png output (0 when it is not a PNG).
func pngWidth(raw json.RawMessage) int {
	s, err := multiline(raw)
	if err != nil {
		return 0
	}
	s = strings.Join(strings.Fields(s), "")
	if len(s) > 64 {
		s = s[:64]
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(b) < 24 || string(b[:8]) != "\x89PNG\r\n\x1a\n" || string(b[12:16]) != "IHDR" {
		return 0
	}
	return int(binary.BigEndian.Uint32(b[16:20]))
}

// shownWidth is the display width an output's metadata gives its image/png, px (0: none).
func shownWidth(md map[string]json.RawMessage) float64 {
	var png struct {
		Width float64 `json:"width"`
	}
	if raw, ok := md["image/png"]; !ok || json.Unmarshal(raw, &png) != nil {
		return 0
	}
	return png.Width
}
