// Package benchreport stores what dmlkit's CPU benchmarks measured beside their reference
// libraries (the exact kNN search beside faiss, the training steps beside PyTorch) and renders the
// README's performance block from those stored reports, so that no ratio in it is typed.
//
// A benchmark (a DMLKIT_BENCH=1 test) writes its report when DMLKIT_BENCH_REPORT names a
// directory ([FromEnv], [Write]): one JSON file per benchmark, <bench>.json, replaced by the next
// run. The committed reports live in reproductions/bench/; `dmlkit summary` reads them ([Load])
// and writes [Markdown] into the README's "performance" block.
package benchreport

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
)

// EnvDir names the environment variable that asks a benchmark to write its report into a
// directory ([FromEnv]).
const EnvDir = "DMLKIT_BENCH_REPORT"

// Report is one benchmark run: where and when it ran and what it measured.
type Report struct {
	Bench   string  `json:"bench"`   // file name without .json, e.g. "knn-sop"
	Title   string  `json:"title"`   // what was timed, one line
	Command string  `json:"command"` // how to run it again
	Date    string  `json:"date"`    // UTC day it ran, YYYY-MM-DD
	CPU     string  `json:"cpu"`     // the processor's model name
	Threads int     `json:"threads"` // GOMAXPROCS of the run (the reference ran with as many threads)
	Load    float64 `json:"load"`    // the one-minute load average when it started (other work on the machine)
	Rows    []Row   `json:"rows"`
	// Notes are sentences the benchmark adds under its table (e.g. that the neighbour sets agree).
	Notes []string `json:"notes,omitempty"`
}

// Row is one timing of dmlkit beside its reference, in one unit.
type Row struct {
	Case      string  `json:"case"`      // what was timed
	Unit      string  `json:"unit"`      // "s CPU", "ms/step", ...
	Dmlkit    float64 `json:"dmlkit"`    // dmlkit's time
	Reference float64 `json:"reference"` // the reference's time
	RefName   string  `json:"ref_name"`  // the reference, with its version
	// MedianRatio, when set, is the benchmark's own ratio over alternating rounds (the median of
	// the rounds' ratios, not the ratio of the median times), and Spread their range ("1.10–1.66").
	MedianRatio float64 `json:"median_ratio,omitempty"`
	Spread      string  `json:"spread,omitempty"`
}

// Busy reports whether other work shared the machine when the benchmark started: a one-minute
// load average above its threads.
func (r *Report) Busy() bool { return r.Load > float64(r.Threads) }

// Ratio is dmlkit's time over the reference's (below 1: dmlkit is faster): MedianRatio when the
// benchmark gives one.
func (r Row) Ratio() float64 {
	if r.MedianRatio > 0 {
		return r.MedianRatio
	}
	return r.Dmlkit / r.Reference
}

// New returns a report of bench stamped with today's date (UTC), the CPU model, GOMAXPROCS and
// the current load average.
func New(bench, title, command string) *Report {
	return &Report{Bench: bench, Title: title, Command: command, Date: time.Now().UTC().Format(time.DateOnly),
		CPU: CPUModel(), Threads: runtime.GOMAXPROCS(0), Load: LoadAverage()}
}

// FromEnv returns the directory $DMLKIT_BENCH_REPORT names ("" when it is not set).
func FromEnv() string { return os.Getenv(EnvDir) }

// Write stores r as dir/<r.Bench>.json (indented, atomically), replacing an older report of the
// same benchmark, and returns the file's path.
func Write(dir string, r *Report) (string, error) {
	if r.Bench == "" || strings.ContainsAny(r.Bench, `/\`) {
		return "", fmt.Errorf("benchreport: bench name %q: want a file name", r.Bench)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("benchreport: %w", err)
	}
	path := filepath.Join(dir, r.Bench+".json")
	return path, atomicfile.WriteFile(path, append(b, '\n'), 0o644)
}

// Load reads every report (*.json) in dir, sorted by file name; a missing directory holds none.
func Load(dir string) ([]*Report, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Report
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("benchreport: %w", err)
		}
		var r Report
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("benchreport: %s: %w", f, err)
		}
		if r.Bench+".json" != filepath.Base(f) {
			return nil, fmt.Errorf("benchreport: %s holds the report of %q (want %s.json)", f, r.Bench, r.Bench)
		}
		for i, row := range r.Rows {
			if !(row.Dmlkit > 0) || !(row.Reference > 0) {
				return nil, fmt.Errorf("benchreport: %s: row %d (%s): times %v and %v, want both > 0", f, i+1, row.Case, row.Dmlkit, row.Reference)
			}
		}
		out = append(out, &r)
	}
	return out, nil
}

// Markdown renders the reports as the README's performance block: per report, a line naming the
// benchmark, the CPU, its threads, the load and the date, a table of the rows (dmlkit's time, the
// reference's, their ratio) and the report's notes; the command that reproduces it; the file it
// came from (dir, relative to the README); a report of a busy machine ([Report.Busy]) says so
// above its table. No report: a line saying so.
func Markdown(reps []*Report, dir string) string {
	var b strings.Builder
	p := func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }
	if len(reps) == 0 {
		p("No stored benchmark report (%s/*.json): run a benchmark with %s=$PWD/%s.\n", dir, EnvDir, dir)
		return b.String()
	}
	p("Generated by `dmlkit summary` from the benchmarks' own reports in `%s/` (written by the benchmark with\n", dir)
	p("`%s=$PWD/%s`); ratios are dmlkit's time over the reference's, below 1× dmlkit is faster. They move\n", EnvDir, dir)
	p("with the CPU and with other work on the machine (the load average is the report's): rerun the command on yours.\n")
	for _, r := range reps {
		p("\n**%s** — %s, %d threads, load average %s, %s (`%s/%s.json`).\n\n", r.Title, r.CPU, r.Threads,
			strconv.FormatFloat(r.Load, 'f', 1, 64), r.Date, dir, r.Bench)
		if r.Busy() {
			p("The machine was busy (load average %s on %d threads: other work shared its cores), so these ratios are not the CPU's; rerun on a quiet machine.\n\n",
				strconv.FormatFloat(r.Load, 'f', 1, 64), r.Threads)
		}
		p("| case | dmlkit | reference | ratio |\n|---|---:|---:|---:|\n")
		for _, row := range r.Rows {
			ratio := fmt.Sprintf("%.2f×", row.Ratio())
			if row.Spread != "" {
				ratio += " (" + row.Spread + "×)"
			}
			p("| %s | %s %s | %s: %s %s | %s |\n", row.Case, num(row.Dmlkit), row.Unit, row.RefName, num(row.Reference), row.Unit, ratio)
		}
		for _, n := range r.Notes {
			p("\n%s\n", n)
		}
		p("\nTo run it again: `%s`\n", r.Command)
	}
	return b.String()
}

// num writes a time with three significant digits (at least one decimal below 100).
func num(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// CPUModel is the processor's model name (Linux: /proc/cpuinfo "model name"), else GOARCH.
func CPUModel() string {
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

// LoadAverage is the one-minute load average (Linux: /proc/loadavg), or −1 where unknown.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
