package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
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

// TestTablesRefuseTypos: `tables` exits non-zero, naming the file, the field and the name, for a
// claims.yaml where key no record and no spec configuration has and for a table metric no record
// has; before, the claim read "inconclusive (no records)" and the column was empty, with exit 0.
func TestTablesRefuseTypos(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	toyExperiments(t)
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5 + float64(r.Seed)/100}}, nil
	})
	for _, tc := range []struct {
		name, spec, claims, want string
	}{
		{"claims where key", cliSpec, `paper: toy
claims:
  - {id: c1, paper: "rsk beats contrastive", source: "Table 1", kind: better, metric: R@1, direction: higher,
     base: {label: contrastive, where: {loss.name: contrastive}}, treatment: {label: rsk, where: {loss.nam: rsk}}}
`, `claims.yaml: claims[0] (id "c1"): field "treatment.where": key "loss.nam": no configuration of the spec and no stored record has it (did you mean "loss.name"?)`},
		{"table metric", strings.Replace(cliSpec, "metrics: [R@1]", "metrics: [R@1, R@one]", 1), "",
			`table "main": field "metrics[1]": metric "R@one": none of the stored records has it`},
	} {
		_, spec := writeSpec(t, tc.spec)
		if tc.claims != "" {
			if err := os.WriteFile(filepath.Join(filepath.Dir(spec), "claims.yaml"), []byte(tc.claims), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if code, _, stderr := runCLI("run", spec, "--scale", "smoke", "--workers", "1", "--quiet"); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", tc.name, code, stderr)
		}
		code, _, stderr := runCLI("tables", spec, "--scale", "smoke", "--quiet")
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: tables: exit %d, stderr %q\nwant: %s", tc.name, code, stderr, tc.want)
		}
	}
}

// TestFlagsNothingSilentlyDropped: `run --index` without `--of`, `eval --k 1,,2` and
// `train --resume --out` a directory that does not exist are errors naming the flag and the
// value; before, the first ran every run, the second dropped the empty entry and the third
// trained from scratch without a word.
func TestFlagsNothingSilentlyDropped(t *testing.T) {
	toyExperiments(t)
	_, spec := writeSpec(t, cliSpec)
	dir := t.TempDir()
	e, l := writeCircle(t, dir)
	missing := filepath.Join(dir, "no-such-run")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", spec, "--scale", "smoke", "--index", "2", "--dry-run"}, "--index 2 without --of"},
		{[]string{"eval", "--emb", e, "--labels", l, "--k", "1,,2"}, `--k: "1,,2": entry 2 is empty`},
		{[]string{"train", "--config", exampleConfig, "--quiet", "--out", missing, "--resume"}, "--resume --out " + missing + ": no such run directory"},
	} {
		code, _, stderr := runCLI(tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("train --resume created %s", missing)
	}
}

// TestRunWarnsOfTruncatedRecord: a results line cut short (kill -9, disk full) is not a stored
// run: `run` runs it again and says so with the warning `tables` prints, naming the file and
// line; before, it reran it without a word.
func TestRunWarnsOfTruncatedRecord(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	toyExperiments(t)
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
	})
	root, spec := writeSpec(t, cliSpec)
	results := filepath.Join(root, "res")
	args := []string{"run", spec, "--scale", "smoke", "--results", results, "--workers", "1", "--quiet"}
	if code, _, stderr := runCLI(args...); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	file := filepath.Join(results, "smoke.jsonl")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	last := lines[len(lines)-1]
	cut := strings.Join(lines[:len(lines)-1], "") + last[:len(last)/2]
	if err := os.WriteFile(file, []byte(cut), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(args...)
	want := fmt.Sprintf("warning: skipped unreadable record %s:%d:", file, len(lines))
	if code != 0 || !strings.Contains(stderr, want) || !strings.Contains(stdout, "1 ran") {
		t.Errorf("rerun: exit %d, stdout %q, stderr %q; want the run again and %q", code, stdout, stderr, want)
	}
}
