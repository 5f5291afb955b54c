package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"github.com/dmlkit/dmlkit/dmlkit/sweep/jobs"
)

func init() {
	register("run", "run an experiment spec's sweep (resumable; --index/--of for one shard; --emit k8s|slurm)", runRun)
}

// multiFlag collects a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit run SPEC|PAPER [flags]\n\nSPEC is a spec.yaml (or its directory); PAPER means reproductions/PAPER/spec.yaml.\nFlags may follow SPEC.")
		fs.PrintDefaults()
	}
	o := addSweepFlags(fs)
	emit := fs.String("emit", "", "write a cluster job instead of running: k8s (Indexed Job) or slurm (array script)")
	shards := fs.Int("shards", 0, "with --emit: most array tasks per phase (default: one per run of the phase)")
	fromStore := fs.Bool("emit-from-store", false, "with --emit: the job's volume holds the records of --results (default: it starts empty): count the phases' runs without the stored ones")
	cpus := fs.Int("cpus", 0, "with --emit: CPUs per task (default: 2 at smoke/small, else launch.cpus)")
	gpus := fs.Int("gpus", -1, "with --emit: GPUs per task (default: none at smoke/small, at least 1 at full, else launch.gpus)")
	memory := fs.String("memory", "", "with --emit: memory per task, e.g. 4Gi (default: from the measured runs at smoke/small, else launch.memory)")
	timeLimit := fs.String("time", "", "with --emit: time limit per task, HH:MM:SS (default: from the measured runs at smoke/small, else launch.time)")
	out := fs.String("out", "", "with --emit: write to this file instead of stdout")
	dry := fs.Bool("dry-run", false, "list the selected runs and whether each is stored, without running")
	measure := fs.String("measure", "", "rerun stored records to add a measurement, stored beside them only when the rerun reproduces their metrics bit for bit: train (R@1 on 2,000 training images after training and at step 0, the loss of every step); by default the records held or contradicted verdicts rest on")
	measureAll := fs.Bool("measure-all", false, "with --measure: every stored sweep record of the selection, not only those behind held or contradicted verdicts")
	specArg, err := parseWithPositional(fs, args)
	if err != nil {
		return err
	}
	spec, err := loadSpec(specArg)
	if err != nil {
		return err
	}
	// Flags that would be ignored are refused: the job sets each task's shard itself, and
	// --shards and --out only shape an emitted job.
	switch {
	case *emit != "" && (o.set("index") || o.set("of")):
		return errors.New("--index/--of with --emit: the job gives each task its shard; set their number with --shards")
	case *emit == "" && o.set("shards"):
		return fmt.Errorf("--shards %d without --emit: to run one shard here use --index I --of N", *shards)
	case *emit == "" && o.set("out"):
		return errors.New("--out without --emit: a sweep writes its records to --results")
	case *emit == "" && (o.set("emit-from-store") || o.set("cpus") || o.set("gpus") || o.set("memory") || o.set("time")):
		return errors.New("--emit-from-store, --cpus, --gpus, --memory and --time shape an emitted job: use them with --emit")
	case *emit != "" && o.set("phase"):
		return errors.New("--phase with --emit: the job gives each task its phase")
	case *o.phase > 0 && *o.waitPending:
		return errors.New("--phase with --wait-pending: a phase's task does not wait (the job runs the phases in order)")
	case o.set("shards") && *shards <= 0:
		return fmt.Errorf("--shards %d: want at least 1", *shards)
	case *measure != "" && (*emit != "" || *dry):
		return errors.New("--measure reruns stored records here: not with --emit or --dry-run")
	case *measure == "" && *measureAll:
		return errors.New("--measure-all without --measure")
	case *measure != "" && *measure != sweep.MeasureTrain:
		return fmt.Errorf("--measure %q: unknown measurement (known: %s)", *measure, sweep.MeasureTrain)
	}
	if *measure != "" {
		return runMeasure(spec, o, *measure, *measureAll, stdout, stderr)
	}
	if *emit != "" {
		res := jobs.EmitOptions{CPUs: *cpus, Memory: *memory, Time: *timeLimit}
		if *gpus >= 0 {
			res.GPUs = gpus
		}
		return emitJob(spec, o, *emit, *shards, *fromStore, res, *out, stdout)
	}
	if *dry {
		return dryRun(spec, o, stdout, stderr)
	}
	_, err = runSweep(spec, o, stdout, stderr)
	return err
}

// sweepFlags are the flags shared by run and reproduce.
type sweepFlags struct {
	scale    *string
	only     multiFlag
	index    *int
	of       *int
	workers  *int
	results  *string
	workdir  *string
	failFast *bool
	quiet    *bool
	wait     *bool
	retry    *bool
	// waitPending: a shard waits for points pending on other shards' tuning runs
	// (sweep.SweepOptions.WaitPending); emitted cluster jobs pass it.
	waitPending *bool
	// phase: run one phase of the sweep (sweep.SweepOptions.Phase); emitted cluster jobs pass it.
	phase *int
	// allowDirty lets a sweep write into reproductions/ from a tree with uncommitted changes;
	// its records are marked (env allow_dirty) and excluded from claim verdicts.
	allowDirty *bool
	fs         *flag.FlagSet
}

// set reports whether the flag name was given on the command line.
func (o *sweepFlags) set(name string) bool {
	found := false
	o.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

func addSweepFlags(fs *flag.FlagSet) *sweepFlags {
	o := &sweepFlags{fs: fs}
	o.scale = fs.String("scale", "", "scale preset: smoke, small or full (default: small when the spec defines it)")
	fs.Var(&o.only, "only", "run only configurations with key=value (repeatable; repeated keys are alternatives)")
	o.index = fs.Int("index", -1, "shard index; default with --of: $JOB_COMPLETION_INDEX or $SLURM_ARRAY_TASK_ID")
	o.of = fs.Int("of", 0, "number of shards (run i runs in shard i mod N)")
	o.workers = fs.Int("workers", runtime.GOMAXPROCS(0), "runs executed at once (default: the cores available)")
	o.results = fs.String("results", "", "results directory (default: SPECDIR/results at scale small, the committed one; out/PAPER/SCALE/results at the other scales)")
	o.workdir = fs.String("workdir", "", "directory for run working directories (default: runs/PAPER at the repository root, git-ignored)")
	o.failFast = fs.Bool("fail-fast", false, "stop starting runs after the first failure")
	o.quiet = fs.Bool("quiet", false, "report only failures and the summary")
	o.retry = fs.Bool("retry-failed", false, "run again the runs stored as failed (diverged); by default a resume skips them")
	o.wait = fs.Bool("wait", false, "when another sweep holds the results directory, wait for it instead of failing")
	o.waitPending = fs.Bool("wait-pending", false, "with --of: wait for the points that wait for tuning runs of other shards while those shards run (cluster jobs pass it)")
	o.phase = fs.Int("phase", 0, "run only phase K (from 1) of the sweep: tuning steps by stage, then the points tuned at them; fails naming what an earlier phase left missing (cluster jobs pass it, with --index/--of)")
	o.allowDirty = fs.Bool("allow-dirty", false, "write into reproductions/ from a tree with uncommitted changes (records are marked and excluded from verdicts)")
	return o
}

// check rejects shard and worker counts that cannot run anything.
func (o *sweepFlags) check() error {
	if *o.of < 0 {
		return fmt.Errorf("--of %d: want a number of shards ≥ 1 (0 or 1: no sharding)", *o.of)
	}
	if *o.index >= 0 && *o.of == 0 {
		return fmt.Errorf("--index %d without --of: give the number of shards (--of N), or leave --index out to run every run", *o.index)
	}
	if *o.of >= 1 && *o.index >= *o.of {
		return fmt.Errorf("--index %d: want a shard in [0, %d) for --of %d", *o.index, *o.of, *o.of)
	}
	if *o.phase < 0 {
		return fmt.Errorf("--phase %d: want a phase ≥ 1", *o.phase)
	}
	if *o.workers < 1 {
		return fmt.Errorf("--workers %d: want ≥ 1", *o.workers)
	}
	return nil
}

// checkOnlyKeys rejects an --only key that no run of the plan has in its configuration (a typo
// such as los.set.expr would otherwise select nothing and exit 0).
func checkOnlyKeys(plan *sweep.Plan, only map[string][]string) error {
	if len(plan.Runs) == 0 {
		return nil // every point waits for tuning: nothing to check the keys against yet
	}
	for k := range only {
		found := false
		for _, r := range plan.Runs {
			if _, ok := sweep.Get(r.Config, k); ok {
				found = true
				break
			}
		}
		// A point still waiting for a tuning step (its label lists its keys, "k=v ...") counts:
		// with the tuning runs stored, the sweep resolves it and --only selects from it.
		for _, p := range plan.Pending {
			if slices.ContainsFunc(strings.Fields(p.Point), func(f string) bool { return strings.HasPrefix(f, k+"=") }) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("--only %s: no run of scale %q has the configuration key %q", k, plan.Scale, k)
		}
		// Each value must select something too: a typo ("loss.name=citt") would otherwise run
		// nothing and exit 0, and an emitted job would hold tasks that select nothing.
		values := map[string]bool{}
		for _, r := range plan.Runs {
			if v, ok := sweep.Get(r.Config, k); ok {
				values[sweep.FormatValue(v)] = true
			}
		}
		for _, p := range plan.Pending {
			for _, f := range strings.Fields(p.Point) {
				if v, ok := strings.CutPrefix(f, k+"="); ok {
					values[v] = true
				}
			}
		}
		for _, v := range only[k] {
			if !values[v] {
				have := make([]string, 0, len(values))
				for x := range values {
					have = append(have, x)
				}
				slices.Sort(have)
				return fmt.Errorf("--only %s=%s: no run of scale %q has %s = %s (its values: %s)", k, v, plan.Scale, k, v, strings.Join(have, ", "))
			}
		}
	}
	return nil
}

// parseWithPositional parses flags placed before or after the single positional argument.
func parseWithPositional(fs *flag.FlagSet, args []string) (string, error) {
	if err := fs.Parse(args); err != nil {
		return "", errUsage
	}
	var pos []string
	rest := fs.Args()
	for len(rest) > 0 {
		pos = append(pos, rest[0])
		if err := fs.Parse(rest[1:]); err != nil {
			return "", errUsage
		}
		rest = fs.Args()
	}
	if len(pos) != 1 {
		fmt.Fprintf(fs.Output(), "dmlkit %s: want exactly one SPEC or PAPER argument, got %d\n", fs.Name(), len(pos))
		fs.Usage()
		return "", errUsage
	}
	return pos[0], nil
}

// loadSpec reads a spec file, a directory holding spec.yaml, or reproductions/PAPER/spec.yaml
// found from the current directory or one of its parents.
func loadSpec(arg string) (*sweep.Spec, error) {
	if _, err := os.Stat(arg); err == nil {
		return sweep.Load(arg)
	}
	if !strings.ContainsAny(arg, `/\`) && !strings.HasSuffix(arg, ".yaml") {
		dir, _ := os.Getwd()
		for {
			p := filepath.Join(dir, "reproductions", arg, "spec.yaml")
			if _, err := os.Stat(p); err == nil {
				return sweep.Load(p)
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		return nil, fmt.Errorf("no spec for paper %q: reproductions/%s/spec.yaml not found here or in a parent directory", arg, arg)
	}
	return nil, fmt.Errorf("spec %s does not exist", arg)
}

// defaultScale is the scale --scale names, which the spec must define (a typo would otherwise
// select no record, and tables and figures would overwrite the committed ones with "not drawn"
// before anything is written); without the flag, small when the spec defines it, else the only
// scale, else none.
func defaultScale(s *sweep.Spec, flagValue string) (string, error) {
	names := s.ScaleNames()
	if flagValue != "" {
		if _, ok := s.Scales[flagValue]; !ok {
			defined := "none"
			if len(names) > 0 {
				defined = strings.Join(names, ", ")
			}
			return "", fmt.Errorf("--scale: unknown scale %q (%s defines: %s)", flagValue, s.Path, defined)
		}
		return flagValue, nil
	}
	switch {
	case len(names) == 0:
		return "", nil
	case s.Scales["small"] != nil:
		return "small", nil
	case len(names) == 1:
		return names[0], nil
	}
	return "", fmt.Errorf("%s defines scales %s: choose one with --scale", s.Path, strings.Join(names, ", "))
}

// runsDir is runs/PAPER next to the reproductions/ directory holding the spec (ignored by git),
// or SPECDIR/runs when the spec lives elsewhere.
func runsDir(spec *sweep.Spec) string {
	repro := filepath.Dir(spec.Dir)
	if filepath.Base(repro) == "reproductions" {
		return filepath.Join(filepath.Dir(repro), "runs", spec.Paper)
	}
	return filepath.Join(spec.Dir, "runs")
}

// shardIndex resolves --index, falling back to the index a cluster scheduler puts in the
// environment when --of is given.
func shardIndex(index, of int) (int, error) {
	if of <= 1 || index >= 0 {
		if index < 0 {
			index = 0
		}
		return index, nil
	}
	for _, v := range []string{"JOB_COMPLETION_INDEX", "SLURM_ARRAY_TASK_ID"} {
		if s := os.Getenv(v); s != "" {
			i, err := strconv.Atoi(s)
			if err != nil {
				return 0, fmt.Errorf("$%s=%q is not an integer", v, s)
			}
			return i, nil
		}
	}
	return 0, errors.New("--of given without --index, and neither $JOB_COMPLETION_INDEX nor $SLURM_ARRAY_TASK_ID is set")
}

// runSweep validates the whole plan, then runs the selected runs with the registered runner.
func runSweep(spec *sweep.Spec, o *sweepFlags, stdout, stderr io.Writer) (*sweep.Summary, error) {
	scale, err := defaultScale(spec, *o.scale)
	if err != nil {
		return nil, err
	}
	only, err := sweep.ParseOnly(o.only)
	if err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	index, err := shardIndex(*o.index, *o.of)
	if err != nil {
		return nil, err
	}
	// Validate every configuration before asking for a runner, so that spec errors surface even
	// in builds that cannot train.
	plan, err := spec.Plan(scale)
	if err != nil {
		return nil, err
	}
	if err := checkOnlyKeys(plan, only); err != nil {
		return nil, err
	}
	runner, err := sweep.RegisteredRunner()
	if err != nil {
		return nil, err
	}
	workdir := *o.workdir
	if workdir == "" {
		workdir = runsDir(spec)
	}
	env, err := provenance(resultsDir(spec, scale, *o.results), *o.allowDirty)
	if err != nil {
		return nil, err
	}
	// The warnings `tables` prints for unreadable (e.g. truncated) result lines: their runs are
	// not stored, so the sweep runs them again — say so rather than rerun them silently.
	if _, err := loadPlanRecords(spec, scale, *o.results, stderr); err != nil {
		return nil, err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quiet := *o.quiet
	opt := sweep.SweepOptions{Scale: scale, Only: only, Index: index, Of: *o.of, WaitLock: *o.wait, Waiting: func(e *sweep.LockedError) {
		fmt.Fprintf(stderr, "waiting for %s (held by %s)\n", e.Dir, strings.Join(e.Holders, "; "))
	}, WaitPending: *o.waitPending, Phase: *o.phase, PendingWaiting: func(pending, running int) {
		if !quiet {
			fmt.Fprintf(stderr, "waiting for %d points pending on tuning runs of %d other running shards\n", pending, running)
		}
	}, ExecOptions: sweep.ExecOptions{
		Runner: runner,
		// The sweep reads its store to plan each round and never reads the records' series.
		Store:       &sweep.Store{Dir: resultsDir(spec, scale, *o.results), SkipSeries: true},
		WorkDir:     workdir,
		Workers:     *o.workers,
		Env:         env,
		FailFast:    *o.failFast,
		RetryFailed: *o.retry,
		Progress: func(e sweep.Event) {
			switch e.Kind {
			case "fail":
				fmt.Fprintf(stderr, "[%d/%d] FAILED %s %s (%.1fs): %v\n", e.Done, e.Total, e.Run.Hash, e.Run.Label(), e.Seconds, e.Err)
			case "done":
				if !quiet {
					fmt.Fprintf(stderr, "[%d/%d] done %s %s (%.1fs)\n", e.Done, e.Total, e.Run.Hash, e.Run.Label(), e.Seconds)
				}
			case "start":
				if !quiet {
					fmt.Fprintf(stderr, "[%d/%d] start %s %s\n", e.Done, e.Total, e.Run.Hash, e.Run.Label())
				}
			case "progress":
				if !quiet {
					fmt.Fprintf(stderr, "        %s %s\n", e.Run.Hash, e.Message)
				}
			}
		},
	}}
	_, sum, err := sweep.RunSweep(ctx, spec, opt)
	var locked *sweep.LockedError
	if errors.As(err, &locked) && !*o.wait {
		err = fmt.Errorf("%w (pass --wait to wait for it)", err)
	}
	if sum != nil {
		fmt.Fprintf(stdout, "%s scale %q: %d runs selected, %d already stored, %d ran, %d failed; results in %s\n",
			spec.Paper, scale, sum.Total, sum.Skipped, sum.Ran, len(sum.Failed), opt.Store.Dir)
		if sum.SkippedFailed > 0 {
			fmt.Fprintf(stdout, "%d of the stored runs are stored as failed (diverged) and left out of tables, figures and verdicts; --retry-failed runs them again\n", sum.SkippedFailed)
		}
		printPending(sum.Pending, stdout)
	}
	return sum, err
}

// printPending lists the sweep points that wait for a tuning step's selection or for the stored
// run they start from (model.init_from: run:…); the reason says which.
func printPending(p []sweep.Pending, w io.Writer) {
	for _, x := range p {
		fmt.Fprintf(w, "pending: %s (%s; run again once those runs are stored)\n", x.Point, x.Reason)
	}
}

// provenance is the environment stored in every record of a sweep writing into results
// ([reproduce.Environment]: backend, CPU model, versions, commit and whether the tree is clean,
// not counting results itself). A sweep that writes into the repository's reproductions/ from a
// tree with uncommitted changes is refused unless allowDirty; then its records carry
// allow_dirty: true and claim verdicts leave them out.
func provenance(results string, allowDirty bool) (map[string]any, error) {
	tree, err := reproduce.TreeState(".", results)
	if err != nil { // not a git checkout (e.g. an unpacked release): nothing to check against
		return reproduce.Environment(reproduce.Tree{}), nil
	}
	env := reproduce.Environment(tree)
	if !tree.Dirty {
		return env, nil
	}
	abs, err := filepath.Abs(results)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	if real, err := filepath.EvalSymlinks(tree.Root); err == nil {
		tree.Root = real
	}
	inRepro := strings.HasPrefix(abs+string(filepath.Separator), filepath.Join(tree.Root, "reproductions")+string(filepath.Separator))
	if inRepro && !allowDirty {
		ch := tree.Changed
		more := ""
		if len(ch) > 5 {
			ch, more = ch[:5], fmt.Sprintf(" and %d more", len(tree.Changed)-5)
		}
		return nil, fmt.Errorf("refusing to write results into %s from a tree with uncommitted changes (%s%s): commit them first, or pass --allow-dirty (the records are then marked and excluded from claim verdicts)", results, strings.Join(ch, ", "), more)
	}
	if allowDirty {
		env["allow_dirty"] = true
	}
	return env, nil
}

func dryRun(spec *sweep.Spec, o *sweepFlags, stdout, stderr io.Writer) error {
	scale, err := defaultScale(spec, *o.scale)
	if err != nil {
		return err
	}
	only, err := sweep.ParseOnly(o.only)
	if err != nil {
		return err
	}
	recs, err := loadPlanRecords(spec, scale, *o.results, stderr)
	if err != nil {
		return err
	}
	plan, err := spec.PlanWith(scale, recs)
	if err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	if err := checkOnlyKeys(plan, only); err != nil {
		return err
	}
	runs := plan.Runs
	if *o.of > 1 {
		index, err := shardIndex(*o.index, *o.of)
		if err != nil {
			return err
		}
		if runs, err = sweep.Shard(runs, index, *o.of); err != nil {
			return err
		}
	}
	runs = sweep.Filter(runs, only)
	done := sweep.Done(recs, scale)
	failed := sweep.FailedRuns(recs, scale)
	n := 0
	for _, r := range runs {
		state := "todo"
		switch {
		case failed[r.Hash] != "" && *o.retry:
			state = "retry" // stored as failed; --retry-failed runs it again
		case failed[r.Hash] != "":
			state, n = "failed", n+1
		case done[r.Hash]:
			state, n = "stored", n+1
		}
		fmt.Fprintf(stdout, "%4d  %s  %-6s  %s\n", r.Index, r.Hash, state, r.Label())
	}
	fmt.Fprintf(stdout, "%d of %d runs (scale %q) selected, %d stored\n", len(runs), len(plan.Runs), scale, n)
	printPending(plan.Pending, stdout)
	return nil
}

func emitJob(spec *sweep.Spec, o *sweepFlags, kind string, shards int, fromStore bool, res jobs.EmitOptions, out string, stdout io.Writer) error {
	scale, err := defaultScale(spec, *o.scale)
	if err != nil {
		return err
	}
	// The records of the results directory size the tasks (their run times and memory) and
	// give the selections where they hold the tuning runs; the counts are those of an empty
	// store (the job's volume) unless --emit-from-store says the volume holds these records.
	recs, _, err := sweep.NewStore(resultsDir(spec, scale, *o.results)).Load()
	if err != nil {
		return err
	}
	plan, err := spec.PlanWith(scale, recs)
	if err != nil {
		return err
	}
	only, err := sweep.ParseOnly(o.only)
	if err != nil {
		return err
	}
	if err := checkOnlyKeys(plan, only); err != nil {
		return err
	}
	var start []sweep.Record
	if fromStore {
		start = recs
	}
	jp, err := jobs.Plan(spec, scale, start, recs, only)
	if err != nil {
		return err
	}
	specPath := spec.Path
	if rel, err := filepath.Rel(mustGetwd(), spec.Path); err == nil && !strings.HasPrefix(rel, "..") {
		specPath = filepath.ToSlash(rel)
	}
	if err := o.check(); err != nil {
		return err
	}
	workers := 0 // the job's own default: the cores of the node it runs on
	if o.set("workers") {
		workers = *o.workers
	}
	// --results / --workdir, when given, are the paths inside the job's containers.
	opt := jobs.EmitOptions{SpecPath: specPath, Scale: scale, Shards: shards, Only: o.only, Workers: workers, Results: *o.results, Workdir: *o.workdir,
		CPUs: res.CPUs, GPUs: res.GPUs, Memory: res.Memory, Time: res.Time}
	jp.Size(opt, recs)
	var text string
	switch kind {
	case "k8s", "kubernetes":
		text, err = jobs.EmitK8s(jp, opt)
	case "slurm":
		text, err = jobs.EmitSlurm(jp, opt)
	default:
		return fmt.Errorf("--emit %q: want k8s or slurm", kind)
	}
	if err != nil {
		return err
	}
	if out == "" {
		_, err = io.WriteString(stdout, text)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, []byte(text), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d phases; submit with: bash %s)\n", out, len(jp.Phases), out)
	return nil
}

func mustGetwd() string {
	d, _ := os.Getwd()
	return d
}
