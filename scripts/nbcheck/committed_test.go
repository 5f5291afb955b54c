package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// TestLintStaged: -lint -staged DIR lints DIR/<name>.ipynb (and its export) as the notebook at
// the path given, so that scripts/export-notebooks.sh lints its staged outputs, whose relative
// links resolve from notebooks/, before they replace the committed ones; the same files linted
// where they lie fail on those links.
func TestLintStaged(t *testing.T) {
	committed := filepath.Join("..", "..", "notebooks", "cit.ipynb")
	stage := t.TempDir()
	for _, f := range []string{committed, htmlFor(committed)} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(stage, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"-lint", "-staged", stage, committed}, &out, &errb); code != 0 {
		t.Errorf("-lint -staged: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"-lint", filepath.Join(stage, "cit.ipynb")}, &out, &errb); code == 0 || !strings.Contains(out.String(), "does not exist in the repository") {
		t.Errorf("-lint of the staged copy where it lies: exit %d\n%s", code, out.String())
	}
	// A staged notebook whose export is stale fails, whatever the committed one holds.
	if err := os.WriteFile(htmlFor(filepath.Join(stage, "cit.ipynb")), []byte("<html></html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if code := run([]string{"-lint", "-staged", stage, committed}, &out, &errb); code == 0 {
		t.Errorf("-lint -staged with a stale export: exit 0\n%s", out.String())
	}
}
