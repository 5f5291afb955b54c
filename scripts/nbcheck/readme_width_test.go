package main

import (
	"os"
	"path/filepath"
	"testing"
)

// GitHubColumn is the width of a README's text on GitHub (its Markdown column, px).
const GitHubColumn = 980

// TestFrontPageTablesFitGitHub: every table of the front page (README.md, reproductions/README.md)
// fits GitHub's 980-px column ([Table.MinWidth]: its columns' longest words, GitHub's cells pad
// 13 px a side, as the export's 6, so the estimate counts 14 px more per column).
func TestFrontPageTablesFitGitHub(t *testing.T) {
	for _, f := range []string{"README.md", filepath.Join("reproductions", "README.md")} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, tab := range Tables(string(b)) {
			w := tab.MinWidth() + 14*float64(tab.Columns())
			t.Logf("%s: a %d-column table, at least %.0f px: %.60q", f, tab.Columns(), w, tab.Rows[0])
			if w > GitHubColumn {
				t.Errorf("%s: a %d-column table needs at least %.0f px, more than GitHub's %d-px column: split or transpose it (header %q)", f, tab.Columns(), w, GitHubColumn, tab.Rows[0])
			}
		}
	}
}
