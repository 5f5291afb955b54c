package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTablesFiguresRejectUnknownScale: `tables`/`figures --scale smal` (a typo) exit non-zero
// naming the flag and the scales defined, and leave the committed outputs alone; before, they
// exited 0 and rewrote figures/<paper>/README.md with "not drawn" for every figure.
func TestTablesFiguresRejectUnknownScale(t *testing.T) {
	toyExperiments(t)
	root, spec := writeSpec(t, cliSpec)
	figDir := filepath.Join(root, "figures", "toy")
	tabDir := filepath.Join(root, "reproductions", "toy", "tables")
	for _, d := range []string{figDir, tabDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	committed := map[string]string{
		filepath.Join(figDir, "README.md"): "# committed figures\n",
		filepath.Join(tabDir, "main.md"):   "committed table\n",
	}
	for p, text := range committed {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"tables", "figures"} {
		code, _, stderr := runCLI(cmd, spec, "--scale", "smal")
		if code == 0 || !strings.Contains(stderr, `--scale: unknown scale "smal"`) || !strings.Contains(stderr, "defines: small, smoke") {
			t.Errorf("%s --scale smal: exit %d, stderr %q; want an error naming the flag, the value and the scales defined", cmd, code, stderr)
		}
	}
	for p, text := range committed {
		if b, err := os.ReadFile(p); err != nil || string(b) != text {
			t.Errorf("%s rewritten: %q (%v)", p, b, err)
		}
	}
}
