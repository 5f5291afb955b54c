package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

const cliSpec = `paper: toy
base: {loss: {name: contrastive, margin: 0.5}, train: {epochs: 10}}
scales:
  smoke: {train.epochs: 1, seeds: [0, 1]}
  small: {train.epochs: 3}
sweep:
  grid: {loss.name: [contrastive, rsk], loss.margin: [0.2, 0.5]}
  seeds: [0, 1, 2]
  seed_key: train.seed
reference:
  - {match: {loss.name: rsk}, metric: R@1, value: 70.5, source: "seed 003 Table 1, CUB row"}
tables:
  - {name: main, rows: [loss.name, loss.margin], metrics: [R@1], factor: 100}
figures:
  - {name: bars, kind: bar, x: loss.margin, y: R@1, hue: loss.name}
`

// writeSpec creates ROOT/reproductions/toy/spec.yaml and returns ROOT and the spec path.
func writeSpec(t *testing.T, text string) (string, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "reproductions", "toy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, p
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// toyExperiments lets a test drive the experiment commands with the toy spec above (whose keys
// are not trainer fields) and its own runner: it removes the trainer's validator that runner.go
// (reproduce.Register) installs and restores it, and the registered runner, when the test ends.
func toyExperiments(t *testing.T) {
	prev, _ := sweep.RegisteredRunner()
	sweep.SetValidator(nil)
	t.Cleanup(func() {
		sweep.SetRunner(prev)
		sweep.SetValidator(reproduce.ValidateTrainConfig)
	})
}

func TestRunWithoutRunnerFailsClearly(t *testing.T) {
	toyExperiments(t)
	sweep.SetRunner(nil)
	_, spec := writeSpec(t, cliSpec)
	code, _, stderr := runCLI("run", spec, "--scale", "smoke")
	if code != 1 || !strings.Contains(stderr, "no runner registered") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
}

func TestRunRejectsBadSpecBeforeTraining(t *testing.T) {
	_, spec := writeSpec(t, strings.Replace(cliSpec, "seed_key: train.seed", "seed_key: train.seed\n  grdi: {}", 1))
	code, _, stderr := runCLI("run", spec)
	if code != 1 || !strings.Contains(stderr, "line 10: field grdi not found") {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	_, spec = writeSpec(t, cliSpec)
	if code, _, stderr := runCLI("run", spec, "--scale", "huge"); code != 1 || !strings.Contains(stderr, `unknown scale "huge"`) {
		t.Fatalf("code %d, stderr %q", code, stderr)
	}
	if code, _, _ := runCLI("run", spec, "--nope"); code != 2 {
		t.Fatalf("bad flag: code %d", code)
	}
}

func TestReproduceRunsThenRegenerates(t *testing.T) {
	toyExperiments(t)
	var mu sync.Mutex
	calls := 0
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		m, _ := sweep.Get(r.Config, "loss.margin")
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5 + m.(float64)/10 + float64(r.Seed)/100}}, nil
	})
	root, spec := writeSpec(t, cliSpec)
	code, stdout, stderr := runCLI("reproduce", spec, "--scale", "smoke", "--workers", "2", "--quiet")
	if code != 0 {
		t.Fatalf("reproduce: code %d\n%s\n%s", code, stdout, stderr)
	}
	if calls != 8 || !strings.Contains(stdout, "8 runs selected, 0 already stored, 8 ran, 0 failed") {
		t.Fatalf("%d calls; stdout:\n%s", calls, stdout)
	}
	// Table: contrastive/0.2 over seeds 0, 1: R@1 = 0.52, 0.53 → 52.50 ± 0.71 (std 0.00707).
	// Smoke is not the committed scale: everything goes to out/toy/smoke/ and the spec's own
	// directory (the committed results, tables and README) and figures/toy are left untouched.
	scratch := filepath.Join(root, "out", "toy", "smoke")
	if got := treeFiles(t, filepath.Join(root, "reproductions")); strings.Join(got, " ") != "toy/spec.yaml" {
		t.Errorf("smoke reproduce wrote into reproductions/: %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "figures")); !os.IsNotExist(err) {
		t.Errorf("smoke reproduce created figures/: %v", err)
	}
	if _, err := os.Stat(filepath.Join(scratch, "results", "smoke.jsonl")); err != nil {
		t.Error(err)
	}
	md, err := os.ReadFile(filepath.Join(scratch, "tables", "main.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| contrastive | 0.2 | 52.50 ± 0.71 | — | 2 |") ||
		!strings.Contains(string(md), "| rsk | 0.5 | 55.50 ± 0.71 | 70.50 [1] | 2 |") {
		t.Errorf("main.md:\n%s", md)
	}
	f, err := os.Open(filepath.Join(scratch, "figures", "bars.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	// A column-wide figure: 3.3 in at 300 dpi = 990 px wide (plots' print style).
	if err != nil || img.Bounds().Dx() != 990 || img.Bounds().Dy() < 690 {
		t.Fatalf("bars.png: %v %v", err, img.Bounds())
	}
	// Again: everything is stored, nothing runs; shards and dry runs agree.
	code, stdout, _ = runCLI("run", spec, "--scale", "smoke", "--index", "1", "--of", "3")
	if code != 0 || calls != 8 || !strings.Contains(stdout, "3 runs selected, 3 already stored, 0 ran") {
		t.Fatalf("second run: code %d, calls %d, stdout %s", code, calls, stdout)
	}
	code, stdout, _ = runCLI("run", spec, "--scale", "smoke", "--dry-run", "--only", "loss.name=rsk")
	if code != 0 || !strings.Contains(stdout, "4 of 8 runs (scale \"smoke\") selected, 4 stored") {
		t.Fatalf("dry run: code %d, stdout %s", code, stdout)
	}
	// figures and tables alone regenerate from the store.
	os.RemoveAll(filepath.Join(scratch, "figures"))
	if code, _, stderr := runCLI("figures", spec, "--scale", "smoke", "--formats", "png"); code != 0 {
		t.Fatalf("figures: %s", stderr)
	}
	if _, err := os.Stat(filepath.Join(scratch, "figures", "bars.png")); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runCLI("tables", spec, "--scale", "smoke"); code != 0 || !strings.Contains(stdout, "52.50 ± 0.71") {
		t.Fatalf("tables: %d %s", code, stdout)
	}
	if got := treeFiles(t, filepath.Join(root, "reproductions")); strings.Join(got, " ") != "toy/spec.yaml" {
		t.Errorf("smoke figures/tables wrote into reproductions/: %v", got)
	}
	// The committed scale (small) still writes the paper's own directories.
	if code, stdout, stderr := runCLI("reproduce", spec, "--scale", "small", "--workers", "2", "--quiet"); code != 0 {
		t.Fatalf("reproduce small: %d\n%s\n%s", code, stdout, stderr)
	}
	for _, p := range []string{"reproductions/toy/results/small.jsonl", "reproductions/toy/tables/main.md", "figures/toy/bars.png"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("reproduce --scale small: %v", err)
		}
	}
}

// treeFiles lists the regular files under dir, relative to it, sorted (slash-separated).
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunEmitK8s(t *testing.T) {
	toyExperiments(t)
	_, spec := writeSpec(t, cliSpec)
	code, stdout, stderr := runCLI("run", spec, "--emit", "k8s", "--scale", "small")
	if code != 0 {
		t.Fatal(stderr)
	}
	job := k8sObjects(t, k8sManifests(t, stdout))["Job"]
	s := job["spec"].(map[string]any)
	if s["completionMode"] != "Indexed" || s["completions"] != 12 {
		t.Fatalf("job spec %v", s)
	}
	if code, _, _ := runCLI("run", spec, "--emit", "mesos"); code != 1 {
		t.Fatalf("--emit mesos: code %d", code)
	}
}

func TestShardIndexFromEnvironment(t *testing.T) {
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("SLURM_ARRAY_TASK_ID", "4")
	if i, err := shardIndex(-1, 6); err != nil || i != 4 {
		t.Fatalf("SLURM index: %d %v", i, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "2")
	if i, err := shardIndex(-1, 6); err != nil || i != 2 {
		t.Fatalf("k8s index: %d %v", i, err)
	}
	if i, err := shardIndex(5, 6); err != nil || i != 5 {
		t.Fatalf("explicit index: %d %v", i, err)
	}
	t.Setenv("JOB_COMPLETION_INDEX", "")
	t.Setenv("SLURM_ARRAY_TASK_ID", "")
	if _, err := shardIndex(-1, 6); err == nil {
		t.Fatal("no index accepted")
	}
}

// TestRunRejectsSilentNoOps: an --only key that no run has (a typo), a negative --of, an --index
// outside the shards and --workers 0 are errors naming the flag, exit 1, before anything runs;
// so is an --only value no run has, with the values that exist (issue 43: through --dry-run it was
// "0 of 2 runs selected", exit 0, and --emit wrote a job whose tasks selected nothing).
func TestRunRejectsSilentNoOps(t *testing.T) {
	toyExperiments(t)
	calls := 0
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		calls++
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
	})
	_, spec := writeSpec(t, cliSpec)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--only", "los.name=rsk"}, `--only los.name: no run of scale "smoke" has the configuration key "los.name"`},
		{[]string{"--only", "loss.name=rsk", "--only", "train.sed=0"}, `"train.sed"`},
		{[]string{"--dry-run", "--only", "los.name=rsk"}, `"los.name"`},
		{[]string{"--of", "-1"}, "--of -1"},
		{[]string{"--index", "3", "--of", "3"}, "--index 3"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--workers", "-2"}, "--workers -2"},
		{[]string{"--only", "loss.name=rsq"}, `--only loss.name=rsq: no run of scale "smoke" has loss.name = rsq (its values: contrastive, rsk)`},
		{[]string{"--dry-run", "--only", "loss.name=rsq"}, `loss.name = rsq`},
		{[]string{"--emit", "slurm", "--only", "loss.name=rsq"}, `loss.name = rsq`},
		{[]string{"--shards", "3"}, "--shards 3 without --emit"},
		{[]string{"--out", "job.sh"}, "--out without --emit"},
		{[]string{"--emit", "slurm", "--index", "0", "--of", "2"}, "--index/--of with --emit"},
		{[]string{"--emit", "slurm", "--shards", "-3"}, "--shards -3: want at least 1"},
		{[]string{"--phase", "-1"}, "--phase -1"},
		{[]string{"--memory", "4Gi"}, "use them with --emit"},
		{[]string{"--emit", "slurm", "--phase", "1"}, "--phase with --emit"},
	} {
		code, _, stderr := runCLI(append([]string{"run", spec, "--scale", "smoke"}, tc.args...)...)
		if code != 1 || !strings.Contains(stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 naming %q", tc.args, code, stderr, tc.msg)
		}
	}
	if calls != 0 {
		t.Errorf("%d runs executed", calls)
	}
	// More shards than a phase has runs: one task per run, none that selects nothing.
	if code, sh, stderr := runCLI("run", spec, "--scale", "smoke", "--emit", "slurm", "--shards", "1000"); code != 0 || !strings.Contains(sh, " --array=0-7 ") {
		t.Errorf("--shards 1000: exit %d, %s; want one array task per run (0-7)", code, stderr)
	}
}

// TestRunRefusesABusyResultsDirectory: a sweep on a results directory another sweep holds fails
// at once naming the directory and the holder's PID; with --wait it waits and then runs.
func TestRunRefusesABusyResultsDirectory(t *testing.T) {
	toyExperiments(t)
	n := 0
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		n++
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
	})
	_, spec := writeSpec(t, cliSpec)
	results := filepath.Join(t.TempDir(), "results")
	lock, err := sweep.NewStore(results).LockSweep(context.Background(), sweep.LockOptions{})
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI("run", spec, "--scale", "smoke", "--results", results, "--workers", "1")
	if code != 1 || n != 0 || !strings.Contains(stderr, results) || !strings.Contains(stderr, fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(stderr, "--wait") {
		t.Fatalf("busy directory: code %d, %d runs, stderr %q", code, n, stderr)
	}
	go func() { time.Sleep(300 * time.Millisecond); lock.Unlock() }()
	code, _, stderr = runCLI("run", spec, "--scale", "smoke", "--results", results, "--workers", "1", "--wait")
	if code != 0 || n != 8 || !strings.Contains(stderr, "waiting for "+results) {
		t.Fatalf("--wait: code %d, %d runs, stderr %q", code, n, stderr)
	}
}

// TestRunStoresFailedRunsAndRetriesThemOnRequest: a diverged run (runner's *RunFailure) leaves a
// failed record: the sweep exits 1, a resume skips it (exit 0, saying so), --dry-run shows it as
// failed, and --retry-failed runs it again.
func TestRunStoresFailedRunsAndRetriesThemOnRequest(t *testing.T) {
	toyExperiments(t)
	var mu sync.Mutex
	calls, diverge := 0, true
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if m, _ := sweep.Get(r.Config, "loss.margin"); m == 0.2 && r.Seed == 1 && diverge {
			return nil, &sweep.RunFailure{Step: 2, Err: fmt.Errorf("train: diverged at step 2: loss is NaN")}
		}
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
	})
	_, spec := writeSpec(t, cliSpec)
	results := filepath.Join(t.TempDir(), "results")
	args := []string{"run", spec, "--scale", "smoke", "--results", results, "--workers", "1", "--quiet"}
	code, stdout, stderr := runCLI(args...)
	if code != 1 || calls != 8 || !strings.Contains(stderr, "stored as failed") {
		t.Fatalf("first sweep: code %d, %d calls\n%s%s", code, calls, stdout, stderr)
	}
	code, stdout, stderr = runCLI(args...)
	if code != 0 || calls != 8 || !strings.Contains(stdout, "2 of the stored runs are stored as failed") {
		t.Fatalf("resume: code %d, %d calls\n%s%s", code, calls, stdout, stderr)
	}
	if code, stdout, _ = runCLI(append(args, "--dry-run")...); code != 0 || strings.Count(stdout, " failed ") != 2 {
		t.Fatalf("--dry-run:\n%s", stdout)
	}
	diverge = false
	code, stdout, stderr = runCLI(append(args, "--retry-failed")...)
	if code != 0 || calls != 10 || !strings.Contains(stdout, "6 already stored, 2 ran, 0 failed") {
		t.Fatalf("--retry-failed: code %d, %d calls\n%s%s", code, calls, stdout, stderr)
	}
}
