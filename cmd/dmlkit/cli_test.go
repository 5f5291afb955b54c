package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestHelpExitsZeroEverywhere: -h (and --help) print the usage and exit 0 at the top level and for
// every subcommand, as Go's flag package does for a program's own -h (before: 2 for most
// subcommands, 0 for data and the top level).
func TestHelpExitsZeroEverywhere(t *testing.T) {
	names := []string{""}
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, h := range []string{"-h", "--help"} {
			args := []string{h}
			if n != "" {
				args = []string{n, h}
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			if code != 0 || !strings.Contains(strings.ToLower(out.String()+errb.String()), "usage") {
				t.Errorf("dmlkit %s: exit %d, output %q", strings.Join(args, " "), code, out.String()+errb.String())
			}
		}
	}
	// A real usage error is still 2.
	var out, errb bytes.Buffer
	if code := run([]string{"eval", "--no-such-flag"}, &out, &errb); code != 2 {
		t.Errorf("eval --no-such-flag: exit %d, want 2", code)
	}
}

// TestQuietSuppressesTablesAndWroteLines: tables --quiet and reproduce --quiet print neither the
// Markdown tables nor "wrote" lines (before: tables --quiet still listed every file written, and
// reproduce --quiet printed every table, claim and file).
func TestQuietSuppressesTablesAndWroteLines(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go") // the records' provenance creates the shared backend: as TestEnvCommand expects
	toyExperiments(t)
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		m, _ := sweep.Get(r.Config, "loss.margin")
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5 + m.(float64)/10 + float64(r.Seed)/100}}, nil
	})
	_, spec := writeSpec(t, cliSpec)
	code, stdout, stderr := runCLI("reproduce", spec, "--scale", "smoke", "--workers", "1", "--quiet")
	if code != 0 || strings.Contains(stdout, "wrote") || strings.Contains(stdout, "| contrastive |") || !strings.Contains(stdout, "8 ran, 0 failed") {
		t.Fatalf("reproduce --quiet: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("tables", spec, "--scale", "smoke", "--quiet")
	if code != 0 || strings.Contains(stdout, "wrote") || strings.Contains(stdout, "| contrastive |") {
		t.Fatalf("tables --quiet: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI("tables", spec, "--scale", "smoke")
	if code != 0 || !strings.Contains(stdout, "wrote") || !strings.Contains(stdout, "| contrastive |") {
		t.Fatalf("tables: code %d\n%s", code, stdout)
	}
	// No small-scale records: the table is skipped, which --quiet does not report.
	code, _, stderr = runCLI("tables", spec, "--scale", "small")
	if code != 0 || !strings.Contains(stderr, "skipped main") {
		t.Fatalf("tables --scale small: code %d, stderr %q", code, stderr)
	}
	code, stdout, stderr = runCLI("tables", spec, "--scale", "small", "--quiet")
	if code != 0 || stderr != "" || strings.Contains(stdout, "skipped") {
		t.Fatalf("tables --scale small --quiet: code %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI("reproduce", spec, "--scale", "smoke", "--workers", "1", "--quiet")
	if code != 0 || strings.Contains(stderr, "skipped") {
		t.Fatalf("reproduce --quiet: code %d, stderr %q", code, stderr)
	}
}

// TestEnvReportsParallelismUsed: the Go backend describes itself with its soft target of
// 2 × GOMAXPROCS workers (parallelism=4 on 2 cores), but never runs more than GOMAXPROCS at once;
// env reports the latter.
func TestEnvReportsParallelismUsed(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	var out, errb bytes.Buffer
	if code := run([]string{"env"}, &out, &errb); code != 0 {
		t.Fatalf("env: exit %d %s", code, errb.String())
	}
	want := fmt.Sprintf("parallelism=%d", runtime.GOMAXPROCS(0))
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), fmt.Sprintf("parallelism=%d)", 2*runtime.GOMAXPROCS(0))) {
		t.Fatalf("env does not report %s:\n%s", want, out.String())
	}
	out.Reset()
	if code := run([]string{"env", "--json"}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	var info map[string]any
	if err := json.Unmarshal(out.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if p, _ := info["parallelism"].(float64); int(p) != runtime.GOMAXPROCS(0) {
		t.Fatalf("env --json parallelism %v, want %d", info["parallelism"], runtime.GOMAXPROCS(0))
	}
}

// TestGoRunHints: started with go run, the tool names the commands in its messages in the form
// that works from a checkout (the README's), so a missing dataset's error is a command to paste.
func TestGoRunHints(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build1234/b001/exe/dmlkit": true,
		"/root/.cache/go-build/80/80e54693797c26557652179f18e3e6d3187cf8a9b4cedfcf93ca391cacddd307-d/dmlkit": true,
		"/home/u/dmlkit/bin/dmlkit":     false,
		"/tmp/go-build1234/b001/dmlkit": false,
	} {
		if isGoRun(exe) != want {
			t.Errorf("isGoRun(%q) = %v", exe, !want)
		}
	}
	var b bytes.Buffer
	msg := "data: omniglot: missing file: …; run `dmlkit data fetch omniglot`\n"
	if n, err := (&commandHints{w: &b, as: goRunCommand}).Write([]byte(msg)); err != nil || n != len(msg) {
		t.Fatal(n, err)
	}
	if want := "data: omniglot: missing file: …; run `GOTOOLCHAIN=auto GOEXPERIMENT=simd go run ./cmd/dmlkit data fetch omniglot`\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
