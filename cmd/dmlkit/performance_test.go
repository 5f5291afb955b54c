package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummaryPerformanceBlock: `dmlkit summary` writes README.md's performance block from the
// stored benchmark reports in reproductions/bench (2 s against 4 s is 0.50×, the CPU and the day
// the report's), `summary --check` then passes, and it fails once a report changes.
func TestSummaryPerformanceBlock(t *testing.T) {
	root, _, _ := txRepo(t)
	readme := filepath.Join(root, "README.md")
	text, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, append(text, "\n"+block("performance")...), 0o644); err != nil {
		t.Fatal(err)
	}
	report := func(dmlkit string) {
		t.Helper()
		writeFiles(t, map[string]string{filepath.Join(root, "reproductions", "bench", "knn.json"): `{"bench": "knn", "title": "Exact kNN",
  "command": "DMLKIT_BENCH=1 go test ./x", "date": "2026-11-29", "cpu": "Some CPU", "threads": 2, "load": 1.5,
  "rows": [{"case": "top-100", "unit": "s", "dmlkit": ` + dmlkit + `, "reference": 4, "ref_name": "faiss"}]}`})
	}
	report("2")
	if code, stdout, stderr := runCLI("summary", "--root", root); code != 0 || !strings.Contains(stdout, "wrote ") {
		t.Fatalf("summary: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	b, _ := os.ReadFile(readme)
	for _, want := range []string{
		"**Exact kNN** — Some CPU, 2 threads, load average 1.5, 2026-11-29 (`reproductions/bench/knn.json`).",
		"| top-100 | 2.00 s | faiss: 4.00 s | 0.50× |",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("README.md lacks %q:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), "typed by a person") {
		t.Errorf("a block was left as typed:\n%s", b)
	}
	if code, _, stderr := runCLI("summary", "--root", root, "--check"); code != 0 {
		t.Fatalf("summary --check after summary: exit %d: %s", code, stderr)
	}
	report("3")
	if code, _, stderr := runCLI("summary", "--root", root, "--check"); code == 0 || !strings.Contains(stderr, "(performance)") {
		t.Errorf("summary --check with a changed report: exit %d, stderr %q; want a failure naming the performance block", code, stderr)
	}
}
