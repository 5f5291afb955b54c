package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
)

// Event reports the progress of [Execute].
type Event struct {
	Kind    string  // "skip" (already stored), "start", "progress", "done", "fail"
	Run     Run     // the run concerned
	Done    int     // runs finished so far (skipped ones included)
	Total   int     // runs in this execution
	Message string  // the runner's message for "progress"
	Err     error   // the failure for "fail"
	Seconds float64 // wall time for "done" and "fail"
}

// ExecOptions configures [Execute].
type ExecOptions struct {
	Runner   Runner         // required
	Store    *Store         // required: where records go and which runs are done
	WorkDir  string         // run directories are WorkDir/<scale>/<hash>; default: a temporary directory
	Workers  int            // runs executed at once; default 1
	Env      map[string]any // environment description stored in every record
	FailFast bool           // stop starting runs after the first failure
	// RetryFailed runs again the runs whose stored record is marked failed ([Record.Failed]);
	// by default a resumed sweep skips them like any stored run.
	RetryFailed bool
	Progress    func(Event) // optional; called from worker goroutines, one call at a time
	Now         func() time.Time
}

// Summary counts what [Execute] did.
type Summary struct {
	Total   int      // runs given
	Skipped int      // already in the store
	Ran     int      // finished and stored now
	Failed  []string // "hash (label): error" of runs that failed now
	// StoredFailed of them left a record marked failed (a [*RunFailure], e.g. diverged), which a
	// resume skips unless RetryFailed; the others left no record and run again on resume.
	StoredFailed  int
	SkippedFailed int       // of Skipped: stored as failed by an earlier sweep
	Pending       []Pending // RunSweep: points still waiting for a tuning step's selection
}

// Execute runs every run of runs (a plan's runs, possibly filtered or sharded) whose (scale, hash)
// is not yet in the store, up to Workers at a time, appending one record per finished run.
//
// Resume: a run is done exactly when its record is in the store. A run that fails, panics or is
// cancelled (process killed, ctx cancelled) writes nothing, and its working directory is wiped
// when it starts again, so re-executing the same plan after any interruption runs each missing
// configuration once and never duplicates a stored one. The exception is a run whose runner
// returns a [*RunFailure] (a failure a rerun would repeat, e.g. training diverged): it stores a
// record marked failed, which later executions skip unless RetryFailed (the retry's record then
// replaces it, see [Store.Load]).
//
// Execute returns an error when some runs failed (the summary lists them) or ctx was cancelled.
func Execute(ctx context.Context, plan *Plan, runs []Run, opt ExecOptions) (*Summary, error) {
	if opt.Runner == nil {
		return nil, ErrNoRunner
	}
	if opt.Store == nil {
		return nil, errors.New("experiments: Execute needs a Store")
	}
	stored, _, err := opt.Store.Load()
	if err != nil {
		return nil, err
	}
	return execute(ctx, plan, runs, opt, stored)
}

// execute is [Execute] with the store's records already read (stored): [RunSweep] has just read
// them to plan the round, under the sweep's lock, and a large store takes seconds to read again.
func execute(ctx context.Context, plan *Plan, runs []Run, opt ExecOptions, stored []Record) (*Summary, error) {
	if opt.Runner == nil {
		return nil, ErrNoRunner
	}
	if opt.Store == nil {
		return nil, errors.New("experiments: Execute needs a Store")
	}
	workers := opt.Workers
	if workers < 1 {
		workers = 1
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	workDir := opt.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "dmlkit-runs-")
		if err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
		workDir = d
	}
	done := Done(stored, plan.Scale)
	failedBefore := FailedRuns(stored, plan.Scale)

	sum := &Summary{Total: len(runs)}
	var mu sync.Mutex // guards sum, finished, and serialises Progress calls and appends
	finished := 0
	emit := func(ev Event) {
		if opt.Progress != nil {
			opt.Progress(ev)
		}
	}
	var todo []Run
	for _, r := range runs {
		if done[r.Hash] && !(opt.RetryFailed && failedBefore[r.Hash] != "") {
			sum.Skipped++
			if failedBefore[r.Hash] != "" {
				sum.SkippedFailed++
			}
			finished++
			emit(Event{Kind: "skip", Run: r, Done: finished, Total: len(runs)})
			continue
		}
		todo = append(todo, r)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mem := newMemWatch(residentBytes, memSampleEvery)
	runPool(ctx, workers, todo, func(r Run) {
		start := now()
		mu.Lock()
		emit(Event{Kind: "start", Run: r, Done: finished, Total: len(runs)})
		mu.Unlock()
		span := mem.begin()
		rec, err := executeOne(ctx, plan, r, filepath.Join(workDir, scaleDir(plan.Scale), r.Hash), opt, func(msg string) {
			mu.Lock()
			emit(Event{Kind: "progress", Run: r, Done: finished, Total: len(runs), Message: msg})
			mu.Unlock()
		})
		peakMB, conc := mem.end(span)
		if err == nil && rec != nil && peakMB > 0 {
			if rec.Metrics == nil {
				rec.Metrics = Metrics{}
			}
			rec.Metrics[MetricPeakRSS] = peakMB
			rec.Metrics[metricConcurrent] = float64(conc)
		}
		secs := now().Sub(start).Seconds()
		var rf *RunFailure
		storedFailed := false
		if err == nil || errors.As(err, &rf) && ctx.Err() == nil {
			if rf != nil {
				rec = failedRecord(plan, r, opt, err, rf.Step)
			}
			rec.Start = start.UTC()
			rec.Seconds = secs
			mu.Lock()
			aerr := opt.Store.Append(rec)
			mu.Unlock()
			if rf == nil {
				err = aerr
			} else if aerr != nil {
				err = fmt.Errorf("%w (and its failed record could not be stored: %v)", err, aerr)
			} else {
				storedFailed = true
			}
		}
		mu.Lock()
		finished++
		if storedFailed {
			sum.StoredFailed++
		}
		if err != nil {
			sum.Failed = append(sum.Failed, fmt.Sprintf("%s (%s): %v", r.Hash, r.Label(), err))
			emit(Event{Kind: "fail", Run: r, Done: finished, Total: len(runs), Err: err, Seconds: secs})
			if opt.FailFast {
				cancel()
			}
		} else {
			sum.Ran++
			emit(Event{Kind: "done", Run: r, Done: finished, Total: len(runs), Seconds: secs})
		}
		mu.Unlock()
	})
	if err := ctx.Err(); err != nil && len(sum.Failed) == 0 {
		return sum, fmt.Errorf("experiments: sweep interrupted after %d of %d runs: %w", sum.Ran+sum.Skipped, sum.Total, err)
	}
	if len(sum.Failed) > 0 {
		again := "they will run again on resume"
		switch sum.StoredFailed {
		case len(sum.Failed):
			again = "stored as failed: a resume skips them unless told to retry failed runs"
		case 0:
		default:
			again = fmt.Sprintf("%d stored as failed, which a resume skips unless told to retry failed runs; the others will run again on resume", sum.StoredFailed)
		}
		return sum, fmt.Errorf("experiments: %d of %d runs failed (%s); first: %s", len(sum.Failed), sum.Total, again, sum.Failed[0])
	}
	return sum, nil
}

// RunFailure is the error a [Runner] returns (or wraps) for a run that failed in a way a rerun
// would repeat — training diverged at a step — rather than by an accident of the machine:
// [Execute] then stores a record marked failed ([Record.Failed] = the error's text, FailedStep =
// Step), so the sweep says what happened to that configuration and a resume does not train it
// again (unless RetryFailed).
type RunFailure struct {
	Step int   // the step it failed at (0: unknown)
	Err  error // the cause
}

func (e *RunFailure) Error() string { return e.Err.Error() }

func (e *RunFailure) Unwrap() error { return e.Err }

// failedRecord is the record of a run that ended in a [*RunFailure].
func failedRecord(plan *Plan, r Run, opt ExecOptions, err error, step int) *Record {
	return &Record{
		Hash:       r.Hash,
		Paper:      plan.Spec.Paper,
		Scale:      plan.Scale,
		Seed:       r.Seed,
		Params:     r.Params,
		Config:     r.Config,
		Metrics:    Metrics{},
		Failed:     err.Error(),
		FailedStep: step,
		Env:        opt.Env,
	}
}

func scaleDir(scale string) string {
	if scale == "" {
		return "default"
	}
	return scale
}

// executeOne prepares a clean run directory and calls the runner, converting a panic into an error.
func executeOne(ctx context.Context, plan *Plan, r Run, dir string, opt ExecOptions, progress func(string)) (rec *Record, err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("cleaning run directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating run directory: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			rec, err = nil, fmt.Errorf("runner panicked: %v\n%s", p, debug.Stack())
		}
	}()
	// A run that starts from another run gets that run's directory (the record keeps run:<hash>).
	cfg, err := runPaths(Clone(r.Config), filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	out, err := opt.Runner(ctx, RunSpec{Hash: r.Hash, Config: cfg, Seed: r.Seed, Dir: dir, Diagnostics: plan.Spec.Diagnostics}, progress)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, errors.New("runner returned no outcome")
	}
	if err := ctx.Err(); err != nil {
		// Cancelled while finishing: do not record a result that may be partial.
		return nil, err
	}
	// A NaN or infinite metric (say, the uncertainty of images under a noise level of 1e300)
	// would be averaged into tables and claims as a number: the run is stored as failed, naming
	// the metrics, as a rerun would give them again.
	var bad []string
	for _, k := range SortedKeys(out.Metrics) {
		if v := out.Metrics[k]; math.IsNaN(v) || math.IsInf(v, 0) {
			bad = append(bad, fmt.Sprintf("%s = %v", k, v))
		}
	}
	if len(bad) > 0 {
		return nil, &RunFailure{Err: fmt.Errorf("non-finite metrics: %s", strings.Join(bad, ", "))}
	}
	return &Record{
		Hash:    r.Hash,
		Paper:   plan.Spec.Paper,
		Scale:   plan.Scale,
		Seed:    r.Seed,
		Params:  r.Params,
		Config:  r.Config,
		Metrics: Metrics(out.Metrics),
		Series:  Series(out.Series),
		Timings: Metrics(out.Timings),
		Notes:   out.Notes,
		Env:     opt.Env,
		Digests: out.Digests,
	}, nil
}

// SweepOptions selects and executes part of a spec's sweep; see [RunSweep].
type SweepOptions struct {
	Scale string
	Only  map[string][]string // see [Filter]
	Index int                 // shard index (with Of > 0)
	Of    int                 // number of shards; 0 or 1: no sharding
	// WaitLock waits for another sweep holding the results directory ([Store.LockSweep]) instead
	// of failing; Waiting, if set, is told once whom it waits for.
	WaitLock bool
	Waiting  func(*LockedError)
	// WaitPending, for a shard (Of > 1), waits for the points that wait for another shard's tuning
	// runs instead of returning with them pending: while another shard of the sweep is running
	// and not itself waiting ([Store.OtherShardsRunning]), the store is read again every
	// PendingPoll (default 30 s) and the points resolved meanwhile run in this shard. When every
	// other shard has ended or waits too at two polls in a row (the store read again between), no
	// stored run can change any more and the points still pending are returned in Summary.Pending (a later sweep, e.g. the job submitted again, runs
	// them). A cluster job's shards need it: the runs after a tuning step are spread over all
	// shards.
	WaitPending bool
	PendingPoll time.Duration
	// PendingWaiting, if set, is called before each wait with the number of pending points and
	// of other shards running.
	PendingWaiting func(pending, running int)
	// Phase (from 1; 0: every phase) runs only the runs of that phase of the sweep (see
	// phase.go), sharded by their position in it (Index of Of, [PhaseShard]): the task of a
	// cluster job whose phases run one after the other. What the phase needs from earlier
	// phases (tuning steps' selections, source runs) must be stored, else RunSweep fails with a
	// [*PhaseError] naming what is missing, before running anything; and it fails when a run of
	// its selection is left without a record. A run stored as failed (diverged) is a result: the
	// phase completes with it. Not with WaitPending.
	Phase int
	ExecOptions
}

// RunSweep resolves and validates the whole plan of the scale (so that a bad value anywhere fails
// before any training), keeps the runs of the shard and the filter, and executes them. Tuning
// steps ([TuneSpec]) run first: after each round the plan is resolved again from the store
// ([Spec.PlanWith]) and the points whose selections became available run next, until nothing
// new can run. Points still waiting (e.g. for a tuning run in another shard) are listed in
// Summary.Pending; they are not failures.
//
// The sweep holds the results directory's lock ([Store.LockSweep]) from before it reads the store
// until it returns: a second sweep on the same directory (another process, or another Store in
// this one) fails at once with a [*LockedError] naming the directory and the holder's PID, or
// with WaitLock waits. Shards of one sharded sweep (Of > 1) run side by side; a shard whose Of
// differs from that of the shards holding the directory fails at once with a [*ShardCountError].
func RunSweep(ctx context.Context, s *Spec, opt SweepOptions) (*Plan, *Summary, error) {
	if opt.Store == nil {
		return nil, nil, errors.New("experiments: RunSweep needs a Store")
	}
	lock, err := opt.Store.LockSweep(ctx, LockOptions{Index: opt.Index, Of: opt.Of, Wait: opt.WaitLock, Waiting: opt.Waiting})
	if err != nil {
		return nil, nil, err
	}
	defer lock.Unlock()
	if opt.Phase > 0 {
		return runPhase(ctx, s, opt)
	}
	total := &Summary{}
	var plan *Plan
	ran := map[string]bool{}
	var runErr error // the first round's failure, reported after the last round
	quiet := 0       // WaitPending: consecutive polls that found every other shard ended or waiting
	for round := 0; ; round++ {
		recs, _, err := opt.Store.Load()
		if err != nil {
			return plan, nil, err
		}
		if plan, err = s.PlanWith(opt.Scale, recs); err != nil {
			return nil, nil, err
		}
		if round == 0 && len(opt.Only) > 0 && len(Filter(plan.Runs, opt.Only)) == 0 && len(plan.Pending) == 0 {
			// Checked on the whole plan: one shard may legitimately hold none of the selected runs.
			return plan, nil, fmt.Errorf("experiments: %s: the --only filter %v matches none of the %d runs of scale %q", s.Name(), opt.Only, len(plan.Runs), opt.Scale)
		}
		runs := plan.Runs
		if opt.Of > 1 {
			if runs, err = Shard(runs, opt.Index, opt.Of); err != nil {
				return plan, nil, err
			}
		} else if opt.Of == 1 && opt.Index != 0 {
			return plan, nil, fmt.Errorf("experiments: shard --index %d --of 1: need index 0", opt.Index)
		}
		var todo []Run
		for _, r := range Filter(runs, opt.Only) {
			if !ran[r.Hash] {
				ran[r.Hash] = true
				todo = append(todo, r)
			}
		}
		if round > 0 && len(todo) == 0 {
			if !opt.WaitPending || opt.Of <= 1 || len(plan.Pending) == 0 {
				break
			}
			lock.setWaiting(true)
			running := opt.Store.OtherShardsRunning(opt.Index, opt.Of)
			// Every other shard has ended or waits too: nothing can change any more — unless one of
			// them is between storing its last run and reading the store again. So this shard ends
			// only after it has seen that twice, a poll apart, with the store read again between.
			if running == 0 {
				quiet++
				if quiet >= 2 {
					break
				}
			} else {
				quiet = 0
			}
			if opt.PendingWaiting != nil {
				opt.PendingWaiting(len(plan.Pending), running)
			}
			poll := opt.PendingPoll
			if poll <= 0 {
				poll = 30 * time.Second
			}
			select {
			case <-ctx.Done():
				total.Pending = plan.Pending
				return plan, total, ctx.Err()
			case <-time.After(poll):
			}
			continue
		}
		lock.setWaiting(false)
		quiet = 0
		sum, err := execute(ctx, plan, todo, opt.ExecOptions, recs)
		if sum != nil {
			total.Total += sum.Total
			total.Skipped += sum.Skipped
			total.Ran += sum.Ran
			total.Failed = append(total.Failed, sum.Failed...)
			total.StoredFailed += sum.StoredFailed
			total.SkippedFailed += sum.SkippedFailed
		}
		// A failed run does not hold up the points a new selection unblocks: the next round runs
		// them, and the failures are reported at the end. Cancellation stops at once.
		if err != nil && (sum == nil || ctx.Err() != nil) {
			total.Pending = plan.Pending
			return plan, total, err
		}
		if err != nil && runErr == nil {
			runErr = err
		}
		if len(plan.Pending) == 0 {
			break
		}
	}
	total.Pending = plan.Pending
	return plan, total, runErr
}

// runPhase is RunSweep for one phase's shard (SweepOptions.Phase).
func runPhase(ctx context.Context, s *Spec, opt SweepOptions) (*Plan, *Summary, error) {
	if opt.WaitPending {
		return nil, nil, errors.New("experiments: a phase's task does not wait for pending points (the job runs the phases in order): not with WaitPending")
	}
	if opt.Of == 1 && opt.Index != 0 {
		return nil, nil, fmt.Errorf("experiments: shard --index %d --of 1: need index 0", opt.Index)
	}
	recs, _, err := opt.Store.Load()
	if err != nil {
		return nil, nil, err
	}
	plan, err := s.PlanWith(opt.Scale, recs)
	if err != nil {
		return nil, nil, err
	}
	if missing := s.PhaseMissing(plan, recs, opt.Phase); len(missing) > 0 {
		return plan, &Summary{Pending: plan.Pending}, &PhaseError{Phase: opt.Phase, Missing: missing}
	}
	all := plan.PhaseRuns(opt.Phase)
	if len(all) == 0 {
		last := 0
		for _, k := range plan.RunPhases() {
			last = max(last, k)
		}
		return plan, &Summary{Pending: plan.Pending}, fmt.Errorf("experiments: %s: scale %q has no runs in phase %d (its phases: 1 … %d)", s.Name(), opt.Scale, opt.Phase, last)
	}
	runs := Filter(all, opt.Only)
	if opt.Of > 1 {
		if runs, err = PhaseShard(runs, opt.Index, opt.Of); err != nil {
			return plan, nil, err
		}
	}
	sum, err := execute(ctx, plan, runs, opt.ExecOptions, recs)
	if sum == nil || ctx.Err() != nil {
		return plan, sum, err
	}
	// Every run of the selection must have a record now (one marked failed is a result).
	if recs, _, err = opt.Store.Load(); err != nil {
		return plan, sum, err
	}
	done := Done(recs, opt.Scale)
	var left []string
	for _, r := range runs {
		if !done[r.Hash] {
			left = append(left, r.Hash+" "+r.Label())
		}
	}
	if len(left) > 0 {
		if err == nil {
			err = fmt.Errorf("experiments: phase %d: %d runs of this task have no record", opt.Phase, len(left))
		}
		return plan, sum, fmt.Errorf("%w; phase %d is not complete: %d of this task's %d runs have no record (%s)", err, opt.Phase, len(left), len(runs), strings.Join(left[:min(len(left), 4)], "; "))
	}
	// Runs stored as failed (diverged) are results: the phase is complete with them.
	return plan, sum, nil
}
