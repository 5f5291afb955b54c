package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// phaseCLIEnv makes the test binary act as dmlkit with phaseRunner (a deterministic fake
// runner), so that the emitted job's tasks can run it from a stub dmlkit on PATH.
const phaseCLIEnv = "DMLKIT_TEST_PHASE_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(phaseCLIEnv) == "1" {
		sweep.SetValidator(nil)
		sweep.SetRunner(phaseRunner)
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// phaseRunner: validation accuracy best at lr 0.3, then at margin 2; it appends each run's hash
// to $DMLKIT_TEST_CALLS, and fails (no record) the tuning run whose lr is $DMLKIT_TEST_FAIL_LR.
func phaseRunner(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
	lr, _ := sweep.Get(r.Config, "opt.lr")
	m, _ := sweep.Get(r.Config, "loss.m")
	l, _ := sweep.Numeric(lr)
	mf, _ := sweep.Numeric(m)
	if f := os.Getenv("DMLKIT_TEST_FAIL_LR"); f != "" && sweep.FormatValue(lr) == f {
		return nil, fmt.Errorf("injected failure at lr %s", f)
	}
	if p := os.Getenv("DMLKIT_TEST_CALLS"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		fmt.Fprintln(f, r.Hash)
		f.Close()
	}
	acc := 1 - (l-0.3)*(l-0.3) + mf/10
	return &sweep.Outcome{Metrics: map[string]float64{"val/acc": acc, "R@1": acc / 2}}, nil
}

// phaseSpec: an lr step, a margin step tuned at the selected lr, and points tuned at nothing
// (phase 1), at lr (phase 2) and at both (phase 3): 5 + 4 + 2 runs.
const phaseSpec = `paper: toy
base: {opt: {lr: 1}, loss: {name: a}}
scales:
  small: {}
tune:
  - name: lr
    point: {data.val: 0.1}
    grid: {opt.lr: [0.1, 0.3, 1.0]}
    select: {metric: val/acc}
  - name: margin
    point: {data.val: 0.1, loss.name: b, tuned: lr}
    grid: {loss.m: [1, 2]}
    select: {metric: val/acc}
sweep:
  list:
    - {loss.name: a, tuned: lr}
    - {loss.name: b, tuned: [lr, margin]}
    - {loss.name: c}
  seeds: [0, 1]
`

type phaseTask struct{ phase, index, of int }

// slurmTasks reads the phases the submit part of an emitted SLURM script submits.
func slurmTasks(t *testing.T, sh string) (tasks []phaseTask, phases [][3]int) {
	t.Helper()
	for _, m := range regexp.MustCompile(`--array=0-(\d+) [^\n]*"\$self" --phase (\d+) (\d+) (\d+)\)`).FindAllStringSubmatch(sh, -1) {
		last, _ := strconv.Atoi(m[1])
		k, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		g, _ := strconv.Atoi(m[4])
		if last != n-1 {
			t.Fatalf("phase %d: array 0-%d for %d tasks", k, last, n)
		}
		phases = append(phases, [3]int{k, n, g})
		for i := range n {
			tasks = append(tasks, phaseTask{k, i, n})
		}
	}
	return tasks, phases
}

// TestEmittedPhasesRunInOrder emits `run --emit slurm` for a spec with a tuning chain and runs
// the script's array tasks with bash (dmlkit is this test binary with a fake runner): in phase
// order every task succeeds and the store ends complete, each run once; in a shuffled order a
// task of a later phase that starts before the previous phases finished fails, naming the
// missing selection, and succeeds when run again after them; a phase whose run failed makes the
// next phase's tasks fail. The submit part chains the phases with afterok (a stub sbatch).
func TestEmittedPhasesRunInOrder(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	toyExperiments(t)
	root, _ := writeSpec(t, phaseSpec)
	t.Chdir(root)
	code, sh, stderr := runCLI("run", "toy", "--emit", "slurm")
	if code != 0 {
		t.Fatalf("emit: %s", stderr)
	}
	tasks, phases := slurmTasks(t, sh)
	if want := [][3]int{{1, 5, 0}, {2, 4, 0}, {3, 2, 0}}; !slices.Equal(phases, want) {
		t.Fatalf("phases (K, tasks, GPUs) %v, want %v:\n%s", phases, want, sh)
	}
	for _, want := range []string{
		"11 runs of paper \"toy\", scale \"small\", in 3 phases, counted on an empty store",
		"#   phase 1: 5 runs (tuning step lr; 2 runs of sweep points) in 5 array tasks, each 2 CPUs, 4Gi, 02:00:00",
		"#   phase 2: 4 runs (tuning step margin; 2 runs of sweep points)",
		"#   phase 3: 2 runs (2 runs of sweep points)",
	} {
		if !strings.Contains(sh, want) {
			t.Errorf("script lacks %q:\n%s", want, sh[:min(len(sh), 2500)])
		}
	}
	if strings.Contains(sh, "--gres") {
		t.Errorf("a small-scale job asks for a GPU:\n%s", sh)
	}
	script := filepath.Join(root, "job.sh")
	os.WriteFile(script, []byte(sh), 0o755)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	stub := filepath.Join(root, "stub")
	os.MkdirAll(stub, 0o755)
	os.WriteFile(filepath.Join(stub, "dmlkit"), []byte("#!/bin/sh\n"+phaseCLIEnv+"=1 exec "+self+" \"$@\"\n"), 0o755)
	// sbatch: logs its arguments, answers job ids 101, 102, … as --parsable does ("id;cluster").
	os.WriteFile(filepath.Join(stub, "sbatch"), []byte("#!/bin/sh\nn=$(( $(wc -l < \"$SBATCH_LOG\" 2>/dev/null || echo 0) + 101 ))\necho \"$*\" >> \"$SBATCH_LOG\"\necho \"$n;local\"\n"), 0o755)

	type result struct {
		code int
		out  string
	}
	runTask := func(results string, tk phaseTask, extra ...string) result {
		cmd := exec.Command(bash, script, "--phase", strconv.Itoa(tk.phase), strconv.Itoa(tk.of), "0")
		cmd.Dir = t.TempDir() // sbatch runs the script from its spool: it must cd to the submit directory
		cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "SLURM_ARRAY_TASK_ID="+strconv.Itoa(tk.index), "SLURM_SUBMIT_DIR="+root,
			"DMLKIT_RESULTS="+results, "DMLKIT_TEST_CALLS="+filepath.Join(results, "calls"), "SLURM_JOB_ID=7")
		cmd.Env = append(cmd.Env, extra...)
		out, err := cmd.CombinedOutput()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		return result{code, string(out)}
	}
	spec, err := sweep.Load(filepath.Join(root, "reproductions", "toy", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	checkComplete := func(name, results string) {
		t.Helper()
		recs, _, err := sweep.NewStore(filepath.Join(results, "toy", "results")).Load()
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.PlanWith("small", recs)
		if err != nil {
			t.Fatal(err)
		}
		done := sweep.Done(recs, "small")
		if len(plan.Pending) > 0 || len(plan.Runs) != 11 || len(recs) != 11 || len(done) != 11 {
			t.Errorf("%s: %d records (%d distinct) for %d planned runs, %d pending; want 11 stored once, none pending", name, len(recs), len(done), len(plan.Runs), len(plan.Pending))
		}
		calls, _ := os.ReadFile(filepath.Join(results, "calls"))
		lines := strings.Fields(string(calls))
		slices.Sort(lines)
		if len(lines) != 11 || len(slices.Compact(lines)) != 11 {
			t.Errorf("%s: the runner ran %d times (%d distinct runs), want each of the 11 runs once", name, len(strings.Fields(string(calls))), len(lines))
		}
	}

	// In phase order.
	ordered := t.TempDir()
	for _, tk := range tasks {
		if r := runTask(ordered, tk); r.code != 0 {
			t.Fatalf("in order: task %+v exit %d:\n%s", tk, r.code, r.out)
		}
	}
	checkComplete("in order", ordered)
	// A task run again (a requeued one) skips its stored runs and succeeds.
	if r := runTask(ordered, tasks[len(tasks)-1]); r.code != 0 || !strings.Contains(r.out, "1 already stored, 0 ran") {
		t.Errorf("rerun: exit %d:\n%s", r.code, r.out)
	}
	checkComplete("rerun", ordered)

	// Shuffled: a task fails exactly when an earlier phase is not complete yet, naming what is
	// missing; the failed ones succeed when run again in phase order.
	shuffled := t.TempDir()
	order := slices.Clone(tasks)
	rand.New(rand.NewSource(47)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if order[0].phase == 1 { // a later phase's task starts first
		i := slices.IndexFunc(order, func(x phaseTask) bool { return x.phase > 1 })
		order[0], order[i] = order[i], order[0]
	}
	left := map[int]int{} // phase → tasks not yet succeeded
	for _, tk := range tasks {
		left[tk.phase]++
	}
	var failed []phaseTask
	early := 0
	for _, tk := range order {
		ready := true
		for k := 1; k < tk.phase; k++ {
			ready = ready && left[k] == 0
		}
		r := runTask(shuffled, tk)
		switch {
		case ready && r.code != 0:
			t.Errorf("shuffled: task %+v, its earlier phases complete, exit %d:\n%s", tk, r.code, r.out)
		case !ready && r.code == 0:
			t.Errorf("shuffled: task %+v started before its earlier phases finished and exited 0:\n%s", tk, r.out)
		case !ready:
			early++
			if !strings.Contains(r.out, fmt.Sprintf("phase %d cannot run", tk.phase)) || !strings.Contains(r.out, "is missing") {
				t.Errorf("shuffled: task %+v: the failure does not say what is missing:\n%s", tk, r.out)
			}
			failed = append(failed, tk)
		default:
			left[tk.phase]--
		}
	}
	if early == 0 {
		t.Fatal("shuffled: no task started early: the order does not exercise the check")
	}
	slices.SortStableFunc(failed, func(a, b phaseTask) int { return a.phase - b.phase })
	for _, tk := range failed {
		if r := runTask(shuffled, tk); r.code != 0 {
			t.Errorf("shuffled: task %+v run again after the earlier phases: exit %d:\n%s", tk, r.code, r.out)
		}
	}
	checkComplete("shuffled", shuffled)

	// A run of phase 1 fails (no record): its task fails, and phase 2's tasks fail naming the
	// selection of lr, which cannot exist.
	broken := t.TempDir()
	var p2 []result
	for _, tk := range tasks {
		if tk.phase > 2 {
			break
		}
		r := runTask(broken, tk, "DMLKIT_TEST_FAIL_LR=1")
		if tk.phase == 1 && r.code != 0 && !strings.Contains(r.out, "have no record") {
			t.Errorf("broken: task %+v failed without saying a run has no record:\n%s", tk, r.out)
		}
		if tk.phase == 2 {
			p2 = append(p2, r)
		}
	}
	for _, r := range p2 {
		if r.code == 0 || !strings.Contains(r.out, `the selection of tuning step "lr" (phase 1: 2 of 3 runs stored)`) {
			t.Errorf("broken: a phase-2 task after a failed phase 1: exit %d:\n%s", r.code, r.out)
		}
	}

	// The submit part: one sbatch per phase, each after the previous one (afterok), run by bash
	// (under sbatch it refuses).
	log := filepath.Join(root, "sbatch.log")
	cmd := exec.Command(bash, script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "SBATCH_LOG="+log, "SLURM_JOB_ID=", "DMLKIT_RESULTS="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "phase 3: job 103 (2 array tasks, 2 runs)") {
		t.Fatalf("submit: %v\n%s", err, out)
	}
	// After the queue: where the phases' states and the store's pending runs are read.
	for _, want := range []string{
		"submitted 3 phases: jobs 101 102 103; watch: squeue --me --name=dmlkit-toy-small-p1,dmlkit-toy-small-p2,dmlkit-toy-small-p3\n",
		"sacct -j 101,102,103 (or scontrol show job ID)",
		"dmlkit run toy --scale small --dry-run --results ",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("submit output lacks %q:\n%s", want, out)
		}
	}
	b, _ := os.ReadFile(log)
	subs := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(subs) != 3 {
		t.Fatalf("sbatch calls:\n%s", b)
	}
	for i, s := range subs {
		dep := fmt.Sprintf("--dependency=afterok:%d --kill-on-invalid-dep=yes ", 100+i)
		if !strings.HasPrefix(s, "--parsable ") || (i == 0) == strings.Contains(s, "--dependency") || i > 0 && !strings.Contains(s, dep) ||
			!strings.HasSuffix(s, fmt.Sprintf("%s --phase %d %d 0", script, i+1, phases[i][1])) {
			t.Errorf("sbatch call %d: %s", i+1, s)
		}
	}
	cmd = exec.Command(bash, script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+stub+":/usr/bin:/bin", "SBATCH_LOG="+log, "SLURM_JOB_ID=9")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "not with sbatch") {
		t.Errorf("under sbatch without --phase: %v\n%s", err, out)
	}
}

// TestEmittedK8sPhases renders `run --emit k8s` for the spec with a tuning chain and decodes the
// manifests the script holds strictly against the Kubernetes API types: one Indexed Job per
// phase with as many completions as runs, each running its phase; CPU only at scale small.
func TestEmittedK8sPhases(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	toyExperiments(t)
	root, _ := writeSpec(t, phaseSpec)
	t.Chdir(root)
	code, text, stderr := runCLI("run", "toy", "--emit", "k8s", "--memory", "3Gi")
	if code != 0 {
		t.Fatalf("emit: %s", stderr)
	}
	f := filepath.Join(root, "job-k8s.sh")
	os.WriteFile(f, []byte(text), 0o755)
	if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	out, err := exec.Command(bash, f, "manifests").Output()
	if err != nil {
		t.Fatal(err)
	}
	var jobs []batchv1.Job
	kinds := map[string]int{}
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var meta struct{ Kind string }
		if err := k8syaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatalf("manifest: %v\n%s", err, doc)
		}
		kinds[meta.Kind]++
		var obj any
		switch meta.Kind {
		case "Job":
			jobs = append(jobs, batchv1.Job{})
			obj = &jobs[len(jobs)-1]
		case "Pod":
			obj = &corev1.Pod{}
		case "PersistentVolumeClaim":
			obj = &corev1.PersistentVolumeClaim{}
		default:
			t.Fatalf("unexpected object %q", meta.Kind)
		}
		if err := k8syaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			t.Errorf("%s does not decode strictly: %v\n%s", meta.Kind, err, doc)
		}
	}
	if kinds["Job"] != 3 || kinds["Pod"] != 1 || kinds["PersistentVolumeClaim"] != 1 {
		t.Fatalf("objects %v, want 3 jobs, the files pod and the claim", kinds)
	}
	for i, j := range jobs {
		k, n := i+1, []int32{5, 4, 2}[i]
		c := j.Spec.Template.Spec.Containers[0]
		args := strings.Join(c.Args, " ")
		if j.Name != fmt.Sprintf("dmlkit-toy-small-p%d", k) || j.Labels["dmlkit/phase"] != strconv.Itoa(k) ||
			*j.Spec.CompletionMode != batchv1.IndexedCompletion || *j.Spec.Completions != n ||
			!strings.HasSuffix(args, fmt.Sprintf("--phase %d --index $(JOB_COMPLETION_INDEX) --of %d", k, n)) {
			t.Errorf("job %d: %s %v completions %d args %q", k, j.Name, j.Labels, *j.Spec.Completions, args)
		}
		if _, gpu := c.Resources.Limits["nvidia.com/gpu"]; gpu || c.Resources.Limits.Memory().String() != "3Gi" || c.Resources.Limits.Cpu().String() != "2" {
			t.Errorf("job %d: resources %v, want 2 CPUs, 3Gi (--memory), no GPU", k, c.Resources.Limits)
		}
	}
	for _, want := range []string{
		`kubectl wait --for=condition=complete --timeout=60s "job/$job"`,
		"  phase 1 dmlkit-toy-small-p1\n  phase 2 dmlkit-toy-small-p2\n  phase 3 dmlkit-toy-small-p3\n",
		"memory set on the command line",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("script lacks %q", want)
		}
	}
	// Phases of an unknown number, a phase with --wait-pending, and --phase with --emit are refused.
	for _, args := range [][]string{
		{"run", "toy", "--phase", "4", "--dry-run=false", "--results", t.TempDir()},
		{"run", "toy", "--phase", "1", "--of", "2", "--index", "0", "--wait-pending"},
		{"run", "toy", "--emit", "slurm", "--phase", "1"},
	} {
		if code, _, _ := runCLI(args...); code == 0 {
			t.Errorf("%v: exit 0", args)
		}
	}
}
