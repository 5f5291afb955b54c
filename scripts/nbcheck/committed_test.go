package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestCommittedNotebooks lints every notebook committed in notebooks/ (see [Lint]): each code
// cell has outputs (or is marked "dmlkit": {"no_output": true}), nothing failed, no machine path
// appears anywhere, and notebooks/<name>.html was exported from exactly this content. Fix a
// failure with scripts/export-notebooks.sh (executes every notebook from the stored results,
// writes it back with its HTML export). It needs no Jupyter and runs in milliseconds.
func TestCommittedNotebooks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "notebooks", "*.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no notebooks in notebooks/")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			html, err := os.ReadFile(htmlFor(f))
			if errors.Is(err, fs.ErrNotExist) {
				html = nil
			} else if err != nil {
				t.Fatal(err)
			}
			probs, err := Lint(f, data, html)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range probs {
				t.Errorf("%s: %s", filepath.Base(f), p)
			}
			if len(probs) > 0 {
				t.Log("regenerate with scripts/export-notebooks.sh (needs scripts/install-notebook-stack.sh)")
			}
		})
	}
}
