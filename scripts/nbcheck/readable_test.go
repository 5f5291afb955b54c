package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"
)

// TestLintReadable: a notebook whose setting table is headed by raw group names and a null column,
// whose claim line names a raw config key, and which shows one figure twice (the second time under
// an empty caption) fails with each; the same notebook in words, each figure once, passes.
func TestLintReadable(t *testing.T) {
	png := func(b string) string {
		return `{"output_type": "display_data", "data": {"image/png": "` + b + `"}, "metadata": {}}`
	}
	md := func(s string) string {
		j, _ := json.Marshal(s)
		return `{"output_type": "display_data", "data": {"text/markdown": ` + string(j) + `}, "metadata": {}}`
	}
	cells := func(outs ...string) []proseCell {
		var cs []proseCell
		for _, o := range outs {
			var c proseCell
			if err := json.Unmarshal([]byte(`{"cell_type": "code", "source": "", "metadata": {}, "outputs": [`+o+`]}`), &c); err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	bad := cells(
		md("| | fig8 | lr-check | null |\n|---|---|---|---|\n| runs | 18 | 5 | 72 |"),
		md("<details><summary>What differs</summary>\n\n| | a |\n|---|---|\n| runs | 1 |\n\n</details>\n"),
		md("- **inconclusive** — τ1 = 1 gives the best results (`c10-best`, Fig. 8; unequal comparison (sampler.batch_size: tuned at 196, this arm 392))"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — **From scratch and pretrained.** …"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — "),
	)
	got := map[string]int{}
	for _, p := range lintReadable(bad) {
		got[p.Kind]++
	}
	if got["raw"] != 3 || got["figure-twice"] != 1 || got["caption"] != 1 || got["details-markdown"] != 1 {
		var all []string
		for _, p := range lintReadable(bad) {
			all = append(all, p.String())
		}
		t.Errorf("lintReadable: %v, want 3 raw (fig8, null, sampler.batch_size), 1 figure-twice, 1 caption, 1 details-markdown:\n%s", got, strings.Join(all, "\n"))
	}
	good := cells(
		md("| | Fig. 8 | half the tuned rate | (no name) |\n|---|---|---|---|\n| runs | 18 | 5 | 72 |"),
		md("<details><summary>What differs</summary>\n\n<table>\n<tr><td>runs</td><td>1</td></tr>\n</table>\n\n</details>\n\n| | after |\n|---|---|\n| a | 1 |"),
		md("- **inconclusive** — τ1 = 1 gives the best results (`c10-best`, Fig. 8; unequal comparison (batch size: tuned at 196, this arm 392))"),
		png("QUJD")+`, `+md("*`figures/rsk/regimes.png`* — **From scratch and pretrained.** …"),
		png("REVG")+`, `+md("*`figures/rsk/fig8_tau1.png`* — **Fig. 8.** τ1."),
	)
	if probs := lintReadable(good); len(probs) > 0 {
		t.Errorf("lintReadable of the notebook in words: %v", probs)
	}
}

// TestLintFigureSizeAndSources: a committed one-panel figure (990 pixels) shown without a display
// width fails, as the paper notebooks showed theirs, 800 px high; the same at 495 px passes, and so
// does a two-panel figure (2070 pixels, scaled to the column anyway) or a figure the notebook drew
// itself (no figures/ caption). A table's sources listed under it fail; folded, they pass.
func TestLintFigureSizeAndSources(t *testing.T) {
	header := func(w uint32) string {
		b := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR")
		b = binary.BigEndian.AppendUint32(b, w)
		b = binary.BigEndian.AppendUint32(b, 795)
		return base64.StdEncoding.EncodeToString(append(b, 8, 6, 0, 0, 0))
	}
	out := func(data, metadata string) string {
		return `{"output_type": "display_data", "data": ` + data + `, "metadata": ` + metadata + `}`
	}
	png := func(w uint32, md string) string { return out(`{"image/png": "`+header(w)+`"}`, md) }
	md := func(s string) string {
		j, _ := json.Marshal(s)
		return out(`{"text/markdown": `+string(j)+`}`, `{}`)
	}
	cell := func(outs ...string) proseCell {
		var c proseCell
		if err := json.Unmarshal([]byte(`{"cell_type": "code", "source": "", "metadata": {}, "outputs": [`+strings.Join(outs, ", ")+`]}`), &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	caption := func(name string) string {
		return md("*`figures/cit/" + name + ".png`* — **Table 3 (γ).** Final test R@1.")
	}
	for _, tc := range []struct {
		name string
		c    proseCell
		want string // the problem's kind; "" passes
	}{
		{"one panel at its pixel size", cell(png(990, `{}`), caption("a")), "figure-size"},
		{"one panel at half", cell(png(990, `{"image/png": {"width": 495}}`), caption("b")), ""},
		{"two panels", cell(png(2070, `{}`), caption("c")), ""},
		{"drawn by the notebook", cell(png(990, `{}`)), ""},
		{"sources listed", cell(md("**Toy**\n\n| a |\n|---|\n| 1 [1] |\n\nPaper numbers:\n[1] seed 003 Table 1, CUB row  \n")), "sources"},
		{"sources folded", cell(md("**Toy**\n\n| a |\n|---|\n| 1 [1] |\n\n<details><summary>Paper numbers: where the number in brackets comes from</summary>\n<ol>\n<li>seed 003 Table 1, CUB row</li>\n</ol>\n</details>\n")), ""},
	} {
		var kinds []string
		for _, p := range lintReadable([]proseCell{tc.c}) {
			kinds = append(kinds, p.Kind)
		}
		if got := strings.Join(kinds, ","); got != tc.want {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
}
