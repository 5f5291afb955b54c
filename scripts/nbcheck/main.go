// Command nbcheck executes dmlkit's notebooks headless with the GoNB kernel and fails on any
// error output, on a missing or broken image, or on a cell that ran longer than its budget.
//
// Usage (from the repository root; scripts/check-notebooks.sh sets up the environment):
//
//	go run ./scripts/nbcheck [-out out/notebooks] [-scale smoke] [-budget 300s] [notebooks/*.ipynb ...]
//	go run ./scripts/nbcheck -check-only executed.ipynb ...
//	go run ./scripts/nbcheck -lint [notebooks/*.ipynb ...]       # committed notebooks: see [Lint]
//	go run ./scripts/nbcheck -lint -staged DIR notebooks/x.ipynb ...  # DIR/x.ipynb as notebooks/x.ipynb
//	go run ./scripts/nbcheck -normalize notebooks/x.ipynb executed.ipynb   # see [Normalize]
//	go run ./scripts/nbcheck -stamp notebooks/x.ipynb ...        # stamp notebooks/x.html, see [Stamp]
//	go run ./scripts/nbcheck -render-math notebooks/x.html ...   # typeset its formulas, see [RenderMath]
//
// The last four are the steps of scripts/export-notebooks.sh, which commits notebooks executed
// from stored results with an HTML export beside each.
//
// Each notebook is executed with `jupyter nbconvert --execute` (nbclient, record_timing on,
// allow_errors on so every failing cell is reported) into -out, with SCALE and
// DMLKIT_FIGURES_DIR (default <out>/figures) in the kernel's environment, then checked by
// [Check]. Conventions the check relies on (notebooks/README.md):
//
//   - notebook metadata "dmlkit": {"expect_images": N} — at least N valid image/png outputs;
//   - cell metadata "dmlkit": {"budget_s": S} — that cell may run S seconds (default -budget).
//
// The per-cell nbclient timeout is the notebook's largest budget plus one minute, and the whole
// nbconvert run is killed after the sum of the cells' budgets plus two minutes, so a hung cell is
// stopped rather than waited on. A summary is written to <out>/nbcheck.json.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("nbcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "out/notebooks", "directory for the executed notebooks, logs, figures and nbcheck.json")
	scale := fs.String("scale", "smoke", "SCALE passed to the notebooks: smoke, small or full")
	budget := fs.Duration("budget", 300*time.Second, "default per-cell budget (cell metadata dmlkit.budget_s overrides)")
	kernel := fs.String("kernel", "gonb", "Jupyter kernel name")
	jupyter := fs.String("jupyter", "jupyter", "the jupyter command")
	checkOnly := fs.Bool("check-only", false, "do not execute: check already executed notebooks")
	lint := fs.Bool("lint", false, "do not execute: lint committed notebooks and their HTML exports (outputs, machine paths, export up to date)")
	normalize := fs.String("normalize", "", "do not execute: write the one executed notebook given, normalized for committing, to this file")
	stamp := fs.Bool("stamp", false, "do not execute: stamp each notebook's HTML export (same name, .html) with the notebook's content hash")
	renderMath := fs.Bool("render-math", false, "do not execute: typeset the formulas of each HTML export given in place (KaTeX MathML, scripts/katex-render.js)")
	katexScript := fs.String("katex", "scripts/katex-render.js", "the KaTeX script -render-math runs with node")
	staged := fs.String("staged", "", "with -lint: read each notebook given (and its export) from this directory, by its base name, and lint it as the notebook at the path given (links resolve from there): the staged outputs of scripts/export-notebooks.sh before they replace the committed ones")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	switch {
	case *lint:
		return runLint(fs.Args(), *staged, stdout, stderr)
	case *normalize != "":
		return runNormalize(fs.Args(), *normalize, stderr)
	case *stamp:
		return runStamp(fs.Args(), stdout, stderr)
	case *renderMath:
		return runRenderMath(fs.Args(), *katexScript, stdout, stderr)
	}
	switch *scale {
	case "smoke", "small", "full":
	default:
		fmt.Fprintf(stderr, "nbcheck: -scale %q: want smoke, small or full\n", *scale)
		return 2
	}
	files := fs.Args()
	if len(files) == 0 {
		var err error
		if files, err = filepath.Glob("notebooks/*.ipynb"); err != nil || len(files) == 0 {
			fmt.Fprintln(stderr, "nbcheck: no notebooks given and none in notebooks/*.ipynb")
			return 2
		}
	}
	opts := Options{DefaultBudget: *budget}
	var results []*Result
	failed := false
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		if !*checkOnly {
			t0 := time.Now()
			fmt.Fprintf(stdout, "nbcheck: executing %s (SCALE=%s) ...\n", f, *scale)
			data, err = execute(f, data, *out, *scale, *kernel, *jupyter, *budget)
			if err != nil {
				fmt.Fprintf(stdout, "FAIL %s: %v\n", f, err)
				results = append(results, &Result{Notebook: f, Problems: []Problem{{Cell: -1, Kind: "execute", Msg: err.Error()}}})
				failed = true
				continue
			}
			fmt.Fprintf(stdout, "nbcheck: executed %s in %.1f s\n", f, time.Since(t0).Seconds())
		}
		r, err := Check(f, data, opts)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		results = append(results, r)
		report(stdout, r)
		failed = failed || !r.OK()
	}
	if !*checkOnly {
		if b, err := json.MarshalIndent(results, "", "  "); err == nil {
			if err := os.WriteFile(filepath.Join(*out, "nbcheck.json"), append(b, '\n'), 0o644); err != nil {
				fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			}
		}
	}
	if failed {
		return 1
	}
	return 0
}

// committedNotebooks is files, or notebooks/*.ipynb when files is empty.
func committedNotebooks(files []string) ([]string, error) {
	if len(files) > 0 {
		return files, nil
	}
	files, err := filepath.Glob("notebooks/*.ipynb")
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no notebooks given and none in notebooks/*.ipynb")
	}
	return files, err
}

// htmlFor is the HTML export beside a notebook: x.ipynb → x.html.
func htmlFor(nb string) string { return strings.TrimSuffix(nb, filepath.Ext(nb)) + ".html" }

// runLint lints the notebooks files (default: the committed ones) and their HTML exports; with
// staged, each is read from staged/<base name> but judged at its path in files.
func runLint(files []string, staged string, stdout, stderr io.Writer) int {
	files, err := committedNotebooks(files)
	if err != nil {
		fmt.Fprintf(stderr, "nbcheck: %v\n", err)
		return 2
	}
	failed := false
	for _, f := range files {
		src := f
		if staged != "" {
			src = filepath.Join(staged, filepath.Base(f))
		}
		data, err := os.ReadFile(src)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		html, err := os.ReadFile(htmlFor(src))
		if err != nil {
			html = nil
		}
		probs, err := Lint(f, data, html)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		for _, p := range probs {
			fmt.Fprintf(stdout, "  PROBLEM %s\n", abbrev(p.String(), 400))
		}
		status := "ok"
		if len(probs) > 0 {
			status, failed = "FAIL", true
		}
		fmt.Fprintf(stdout, "%s %s (lint): %d problems\n", status, f, len(probs))
	}
	if failed {
		return 1
	}
	return 0
}

func runNormalize(files []string, out string, stderr io.Writer) int {
	if len(files) != 1 {
		fmt.Fprintln(stderr, "nbcheck: -normalize OUT wants exactly one executed notebook")
		return 2
	}
	data, err := os.ReadFile(files[0])
	if err == nil {
		data, err = Normalize(data)
	}
	if err == nil {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "nbcheck: %s: %v\n", files[0], err)
		return 1
	}
	return 0
}

func runStamp(files []string, stdout, stderr io.Writer) int {
	files, err := committedNotebooks(files)
	if err != nil {
		fmt.Fprintf(stderr, "nbcheck: %v\n", err)
		return 2
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		hash, err := ContentHash(data)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %s: %v\n", f, err)
			return 1
		}
		h := htmlFor(f)
		html, err := os.ReadFile(h)
		if err == nil {
			html, err = Stamp(html, hash)
		}
		if err == nil {
			err = os.WriteFile(h, html, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %s: %v\n", h, err)
			return 1
		}
		fmt.Fprintf(stdout, "stamped %s (%.19s…)\n", h, hash)
	}
	return 0
}

func runRenderMath(files []string, script string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "nbcheck: -render-math wants the HTML exports to typeset")
		return 2
	}
	for _, f := range files {
		page, err := os.ReadFile(f)
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %v\n", err)
			return 1
		}
		out, n, err := RenderMath(page, KaTeX(script))
		if err == nil && n > 0 {
			err = os.WriteFile(f, out, 0o644)
		}
		if err != nil {
			fmt.Fprintf(stderr, "nbcheck: %s: %v\n", f, err)
			return 1
		}
		fmt.Fprintf(stdout, "typeset %d formulas in %s\n", n, f)
	}
	return 0
}

// report prints one notebook's per-cell timings and problems.
func report(w io.Writer, r *Result) {
	for _, t := range r.Timings {
		fmt.Fprintf(w, "  cell %2d  %6.1f s / %4.0f s  %s\n", t.Cell, t.Duration.Seconds(), t.Budget.Seconds(), abbrev(t.Head, 70))
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  PROBLEM %s\n", abbrev(p.String(), 400))
	}
	status := "ok"
	if !r.OK() {
		status = "FAIL"
	}
	fmt.Fprintf(w, "%s %s: %d code cells, %d images (expected ≥ %d), %d problems\n",
		status, r.Notebook, r.CodeCells, r.Images, r.ExpectImages, len(r.Problems))
}

func abbrev(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// budgets returns the largest per-cell budget of the notebook's code cells and their sum; a cell
// without dmlkit.budget_s counts def.
func budgets(data []byte, def time.Duration) (largest, sum time.Duration) {
	var nb notebook
	if json.Unmarshal(data, &nb) != nil {
		return def, def
	}
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		b := def
		if c.Metadata.Dmlkit.BudgetS > 0 {
			b = time.Duration(c.Metadata.Dmlkit.BudgetS * float64(time.Second))
		}
		largest, sum = max(largest, b), sum+b
	}
	return largest, sum
}

// execute runs the notebook with nbconvert into outDir and returns the executed notebook's JSON.
// nbconvert's log goes to outDir/<name>.log.
func execute(file string, data []byte, outDir, scale, kernel, jupyter string, defBudget time.Duration) ([]byte, error) {
	absOut, err := filepath.Abs(outDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(absOut, 0o755); err != nil {
		return nil, err
	}
	name := filepath.Base(file)
	outFile := filepath.Join(absOut, name)
	_ = os.Remove(outFile)
	largest, sum := budgets(data, defBudget)
	timeout := largest + time.Minute // nbclient's per-cell limit: stops a hung cell
	ctx, cancel := context.WithTimeout(context.Background(), sum+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, jupyter, "nbconvert", "--to", "notebook", "--execute",
		"--ExecutePreprocessor.kernel_name="+kernel,
		fmt.Sprintf("--ExecutePreprocessor.timeout=%d", int(timeout.Seconds())),
		"--ExecutePreprocessor.allow_errors=True",
		"--ExecutePreprocessor.record_timing=True",
		"--output", outFile, file)
	env := append(os.Environ(), "SCALE="+scale, "PYDEVD_DISABLE_FILE_VALIDATION=1")
	if os.Getenv("DMLKIT_FIGURES_DIR") == "" {
		env = append(env, "DMLKIT_FIGURES_DIR="+filepath.Join(absOut, "figures"))
	}
	cmd.Env = env
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	runErr := cmd.Run()
	logFile := filepath.Join(absOut, strings.TrimSuffix(name, filepath.Ext(name))+".log")
	_ = os.WriteFile(logFile, log.Bytes(), 0o644)
	if runErr != nil {
		return nil, fmt.Errorf("nbconvert: %v (log %s):\n%s", runErr, logFile, tail(log.String(), 25))
	}
	return os.ReadFile(outFile)
}

// tail returns the last n lines of s, leaving out GoNB's own klog lines.
func tail(s string, n int) string {
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if len(l) > 5 && strings.ContainsRune("IWE", rune(l[0])) && l[1] >= '0' && l[1] <= '9' && l[2] >= '0' && l[2] <= '9' {
			continue // klog line from the kernel, e.g. "I1121 20:49:01.599 ..."
		}
		keep = append(keep, l)
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}
