package reproduce

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/train"
)

func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(p, s string) {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q")
	write("code.go", "package x\n")
	write("reproductions/p/results/small.jsonl", "{}\n")
	write(".gitignore", "runs/\n")
	run("add", ".")
	run("commit", "-q", "-m", "init")
	return dir
}

func TestTreeState(t *testing.T) {
	dir := gitRepo(t)
	results := filepath.Join(dir, "reproductions", "p", "results")
	tr, err := TreeState(dir, results)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Dirty || len(tr.Commit) != 40 {
		t.Fatalf("fresh commit: %+v", tr)
	}
	// Appending to the results file being written does not make the tree dirty; nor do ignored files.
	os.WriteFile(filepath.Join(results, "small.jsonl"), []byte("{}\n{}\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "runs"), 0o755)
	os.WriteFile(filepath.Join(dir, "runs", "log"), []byte("x"), 0o644)
	if tr, _ := TreeState(dir, results); tr.Dirty {
		t.Errorf("results append / ignored file made the tree dirty: %v", tr.Changed)
	}
	// Without the ignore the results file counts.
	if tr, _ := TreeState(dir); !tr.Dirty || !slices.Equal(tr.Changed, []string{"reproductions/p/results/small.jsonl"}) {
		t.Errorf("without ignore: %+v", tr)
	}
	// A modified source file and an untracked, not ignored file both count, from a subdirectory too.
	os.WriteFile(filepath.Join(dir, "code.go"), []byte("package y\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "new.go"), []byte("package x\n"), 0o644)
	tr, err = TreeState(filepath.Join(dir, "reproductions"), "p/results")
	if err != nil {
		t.Fatal(err)
	}
	if !tr.Dirty || !slices.Equal(tr.Changed, []string{"code.go", "new.go"}) {
		t.Errorf("changes: %+v", tr)
	}
	env := Environment(tr)
	if env["git_commit"] != tr.Commit || env["git_dirty"] != true || env["cpu_model"] == "" || env["go_version"] == nil {
		t.Errorf("environment %v", env)
	}
	if _, err := TreeState(t.TempDir()); err == nil || !strings.Contains(err.Error(), "git rev-parse") {
		t.Errorf("outside a work tree: %v", err)
	}
}

func TestBestOverTraining(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	series := map[string][]float64{
		"curve/epoch":       {1, 2, 3, 4},
		"curve/loss":        {3, 2, 1, 0.5},
		"curve/test/R@1":    {0.5, 0.7, 0.7, 0.6}, // max 0.7, first reached at epoch 2
		"curve/val/OPIS":    {0.02, nan, 0.01, 0.015},
		"curve/test/n_skip": {1, 2, 3, 4}, // no known direction: left out
	}
	got := map[string]float64{}
	bestOverTraining(series, got)
	want := map[string]float64{"best/R@1": 0.7, "best/R@1/epoch": 2, "best/val/OPIS": 0.01, "best/val/OPIS/epoch": 3,
		"curve_mean/R@1": (0.5 + 0.7 + 0.7 + 0.6) / 4, "curve_mean/val/OPIS": (0.02 + 0.01 + 0.015) / 3} // NaN skipped
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}

// TestInitialEvaluation: the first evaluation is the step-0 one only when its epoch is 0.
func TestInitialEvaluation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		series map[string][]float64
		want   map[string]float64
	}{
		{"eval.initial", map[string][]float64{
			"curve/epoch": {0, 1, 2}, "curve/loss": {math.NaN(), 2, 1},
			"curve/test/R@1": {0.12, 0.5, 0.6}, "curve/val/R@1": {0.2, 0.4, 0.5},
		}, map[string]float64{"init/R@1": 0.12, "init/val/R@1": 0.2}},
		{"no step-0 evaluation", map[string][]float64{
			"curve/epoch": {1, 2}, "curve/test/R@1": {0.5, 0.6},
		}, map[string]float64{}},
		{"no curve", map[string][]float64{}, map[string]float64{}},
	} {
		got := map[string]float64{}
		initialEvaluation(tc.series, got)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("%s: %s = %v, want %v", tc.name, k, got[k], v)
			}
		}
	}
}

// TestStepLogSeries: 12 logged steps → windows of ⌈12/10⌉ = 2: first = mean(10, 8) = 9, last =
// mean(2, NaN→skipped) = 2; series copied with the step numbers.
func TestStepLogSeries(t *testing.T) {
	nan := math.NaN()
	l := &train.StepLog{Steps: []int{5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60},
		Values: map[string][]float64{"hard_triplets": {10, 8, 7, 6, 5, 5, 4, 4, 3, 3, 2, nan}}}
	series, m := map[string][]float64{}, map[string]float64{}
	stepLogSeries(l, series, m)
	if m["steplog/hard_triplets/first"] != 9 || m["steplog/hard_triplets/last"] != 2 {
		t.Errorf("first %v, last %v; want 9, 2", m["steplog/hard_triplets/first"], m["steplog/hard_triplets/last"])
	}
	if len(series["steplog/step"]) != 12 || series["steplog/step"][11] != 60 || len(series["steplog/hard_triplets"]) != 12 {
		t.Errorf("series %v", series)
	}
	stepLogSeries(&train.StepLog{}, series, m) // empty: nothing added, no panic
}
