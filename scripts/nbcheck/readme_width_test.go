package main

import (
	"os"
	"path/filepath"
	"testing"
)

// GitHubColumn is the width of a README's text on GitHub (its Markdown column, px).
const GitHubColumn = 980

// GitHub's tables: 16-px text (the export's are 12 px) and 13 px of padding each side of a cell.
const (
	githubFontPx    = 16
	githubPaddingPx = 26
)

// githubMinWidth is the minimum width in px of tab as GitHub lays it out: its columns' longest
// words ([Table.MinWidth], measured at the export's 12-px font) scaled to GitHub's 16 px, and
// GitHub's padding. Calibrated in headless Chromium (scripts/check-reading.sh, GitHub's Markdown
// CSS): the per-paper READMEs' ten-column claims tables rendered 1,198 (benchmark), 1,218 (CIT),
// 1,290 (IDML), 1,490 (contextual) and 1,527 px (RS@k) wide, estimated at 1,195, 1,236, 1,289,
// 1,566 and 1,550 px; their nine-column regime tables 1,032-1,085 px against 1,059-1,137 px.
func githubMinWidth(tab Table) float64 {
	n := float64(tab.Columns())
	return (tab.MinWidth()-cellPaddingPx*n)*githubFontPx/tableFontPx + githubPaddingPx*n
}

// TestReadmeTablesFitGitHub: every table of the front page (README.md, reproductions/README.md)
// and of each reproduction's README — the generated claims, regimes and changes blocks, the
// hand-written settings — fits GitHub's 980-px column ([githubMinWidth]).
func TestReadmeTablesFitGitHub(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "reproductions", "*", "README.md"))
	if len(files) == 0 {
		t.Fatal("no reproductions/*/README.md")
	}
	files = append([]string{filepath.Join("..", "..", "README.md"), filepath.Join("..", "..", "reproductions", "README.md")}, files...)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, tab := range Tables(string(b)) {
			w := githubMinWidth(tab)
			if w > GitHubColumn {
				t.Errorf("%s: a %d-column table needs at least %.0f px, more than GitHub's %d-px column: split or transpose it (header %q)", filepath.ToSlash(f), tab.Columns(), w, GitHubColumn, tab.Rows[0])
			}
		}
	}
}

// TestGitHubMinWidth, by hand: one column, headed "x" (bold: 0.53 em × 1.08), whose longest word
// "abc" is 3 × 0.53 em (lower-case letters' advance) = 1.59 em, × 12 px × 1.16 ([FontScale]) =
// 22.13 px at the export's font, 29.51 px at GitHub's 16 px, plus 26 px of padding: 55.51 px.
func TestGitHubMinWidth(t *testing.T) {
	tab := Table{Rows: [][]string{{"x"}, {"abc"}}}
	if got := githubMinWidth(tab); got < 55.5 || got > 55.52 {
		t.Errorf("githubMinWidth = %.3f, want 55.51", got)
	}
}
