package main

import (
	"crypto/sha256"
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
//   - "caption": a figure whose caption line names its file and nothing else.

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
				continue
			}
			for _, mime := range []string{"text/markdown", "text/html"} {
				raw, ok := o.Data[mime]
				if !ok {
					continue
				}
				t, _ := multiline(raw)
				for _, p := range sweep.ReaderRawTexts(t) {
					out = append(out, Problem{i, "raw", fmt.Sprintf("shows %s (give it words in the spec's labels map or the generator)", p)})
				}
				break
			}
		}
	}
	return out
}

// emptyCaption reports whether output k of c (an image) is followed by a caption line that names
// the figure's file and says nothing about it ("*`figures/idml/regimes.png`* — ").
func emptyCaption(c *proseCell, k int) bool {
	if k+1 >= len(c.Outputs) {
		return false
	}
	raw, ok := c.Outputs[k+1].Data["text/markdown"]
	if !ok {
		return false
	}
	t, _ := multiline(raw)
	head, rest, ok := strings.Cut(t, " — ")
	return ok && strings.Contains(head, "figures/") && strings.TrimSpace(rest) == ""
}
