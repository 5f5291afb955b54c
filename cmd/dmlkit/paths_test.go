package main

import (
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestScaleDirectories: the committed scales (small, pretrained and the spec's own) share the spec's results directory (one store
// file per scale) and write tables and figures to their own places; other scales go to out/.
func TestScaleDirectories(t *testing.T) {
	root := t.TempDir()
	s := &sweep.Spec{Paper: "toy", Dir: filepath.Join(root, "reproductions", "toy"), Committed: []string{"long"}}
	for _, c := range []struct{ scale, results, tables, figures string }{
		{"small", "reproductions/toy/results", "reproductions/toy/tables", "figures/toy"},
		{"pretrained", "reproductions/toy/results", "reproductions/toy/tables/pretrained", "figures/toy/pretrained"},
		{"smoke", "out/toy/smoke/results", "out/toy/smoke/tables", "out/toy/smoke/figures"},
		{"long", "reproductions/toy/results", "reproductions/toy/tables/long", "figures/toy/long"}, // committed by the spec
	} {
		for _, d := range []struct{ got, want string }{
			{resultsDir(s, c.scale, ""), c.results}, {tablesDir(s, c.scale), c.tables}, {figuresDir(s, c.scale), c.figures},
		} {
			if d.got != filepath.Join(root, d.want) {
				t.Errorf("scale %s: %s, want %s", c.scale, d.got, filepath.Join(root, d.want))
			}
		}
	}
}
