package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Measurements a stored run can gain by being run again ([Remeasure], [RunSpec.Measure]).
const (
	// MeasureTrain is the training evidence of reproducing.md §1 ("Trained arms"): R@1 on an even
	// subset of at most [MeasureTrainImages] training images after training ("train/R@1", as
	// eval.train gives) and before the first step ("init/train/R@1": the untrained model), and
	// the training loss of every step (series "trace/loss", at most [TraceLossPoints] points).
	MeasureTrain = "train"
)

// MeasureTrainImages is the size of the training subset [MeasureTrain] evaluates when the run's
// configuration names none (eval.max_train), as the benchmark's eval.max_train.
const MeasureTrainImages = 2000

// TraceLossPoints is the most points the "trace/loss" series keeps (every ⌈steps/100⌉-th step).
const TraceLossPoints = 100

// Measurement is what a rerun of a stored run added to its record ([Remeasure]): the metrics and
// series the record lacked, with the provenance of the rerun. It is stored beside the records
// (Store.MeasurementFile) and merged into its record by [Store.Load]; the record's own line is
// never rewritten.
type Measurement struct {
	Hash    string   `json:"hash"`
	Scale   string   `json:"scale"`
	Seed    int64    `json:"seed"`
	Measure []string `json:"measure"` // what was measured, e.g. ["train"]
	Metrics Metrics  `json:"metrics"` // added: keys the record did not have
	Series  Series   `json:"series,omitempty"`
	// Verified lists the record's metrics the rerun reproduced bit for bit (every one compared:
	// all but timings, memory, best-over-training and initial-evaluation keys); a rerun that
	// reproduces any compared metric differently, or no R@k, adds nothing.
	Verified []string `json:"verified"`
	// Unchecked lists the record's metrics the rerun no longer computes (a diagnostic its spec
	// stopped asking for): neither verified nor contradicted.
	Unchecked []string       `json:"unchecked,omitempty"`
	Env       map[string]any `json:"env,omitempty"` // the rerun's environment (commit, tree state)
	Start     time.Time      `json:"start"`
	Seconds   float64        `json:"seconds"`
}

// Dirty reports whether the rerun ran from a tree with uncommitted changes ([Record.Dirty]'s rule).
func (m *Measurement) Dirty() bool { return envDirty(m.Env) }

// MeasurementFile is the file of a scale's measurements: "<scale>.measurements" beside the
// scale's records (not a *.jsonl file, so record readers never take it for records).
func (s *Store) MeasurementFile(scale string) string { return s.scaleFile(scale, ".measurements") }

// AppendMeasurement adds m to its scale's measurement file, as [Store.Append] adds a record.
func (s *Store) AppendMeasurement(m *Measurement) error {
	line, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("experiments: encoding measurement of %s: %w", m.Hash, err)
	}
	return appendLine(s.Dir, s.MeasurementFile(m.Scale), line)
}

// loadMeasurements reads every *.measurements file of the store, in name order; a line that does
// not parse is reported in rep.Bad.
func (s *Store) loadMeasurements(rep *LoadReport) ([]Measurement, error) {
	files, err := filepath.Glob(filepath.Join(s.Dir, "*.measurements"))
	if err != nil {
		return nil, fmt.Errorf("experiments: %w", err)
	}
	slices.Sort(files)
	var out []Measurement
	for _, path := range files {
		rep.Files = append(rep.Files, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
		rd := bufio.NewReader(bytes.NewReader(b))
		for n := 1; ; n++ {
			line, err := rd.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				var m Measurement
				if jerr := json.Unmarshal(line, &m); jerr != nil || m.Hash == "" {
					if jerr == nil {
						jerr = errors.New("measurement without a hash")
					}
					rep.Bad = append(rep.Bad, fmt.Sprintf("%s:%d: %v", path, n, jerr))
				} else {
					out = append(out, m)
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
		}
	}
	return out, nil
}

// mergeMeasurements adds each measurement's metrics and series to the record of its (scale,
// hash, seed) — only keys the record does not have — and appends it to [Record.Measured]. A
// measurement without its record is reported in rep.Orphans.
func mergeMeasurements(recs []Record, ms []Measurement, rep *LoadReport) {
	at := map[string]int{}
	for i := range recs {
		at[recs[i].Scale+"/"+recs[i].Hash] = i
	}
	for _, m := range ms {
		i, ok := at[m.Scale+"/"+m.Hash]
		if !ok || recs[i].Seed != m.Seed || recs[i].Failed != "" {
			rep.Orphans = append(rep.Orphans, m.Scale+"/"+m.Hash)
			continue
		}
		r := &recs[i]
		if r.Metrics == nil {
			r.Metrics = Metrics{}
		}
		for k, v := range m.Metrics {
			if _, has := r.Metrics[k]; !has {
				r.Metrics[k] = v
			}
		}
		for k, v := range m.Series {
			if r.Series == nil {
				r.Series = Series{}
			}
			if _, has := r.Series[k]; !has {
				r.Series[k] = v
			}
		}
		r.Measured = append(r.Measured, m)
	}
}

// HasMeasure reports whether the record already has what the measurement adds: for
// [MeasureTrain], "train/R@1" (a record whose run evaluated its training split, eval.train, is not
// rerun for the step-0 value alone: the training rule checks that value where it is recorded).
func (r *Record) HasMeasure(measure string) bool {
	switch measure {
	case MeasureTrain:
		_, ok := r.Metrics[TrainMetric]
		return ok
	}
	return false
}

// verifiedKey reports whether a rerun must reproduce the stored metric key bit for bit: every
// metric but wall-clock timings, memory, and the summaries of the evaluation history that an
// added evaluation extends (best over training, its mean, initial evaluation).
func verifiedKey(k string) bool {
	for _, p := range []string{"time/", "mem/", "best/", "curve_mean/", "init/"} {
		if strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

// compareOutcome checks a rerun's metrics against the stored record's: it returns the verified
// keys and those the rerun no longer computes (a diagnostic the spec stopped asking for), sorted,
// or an error naming the first few that differ — or when nothing retrieval-like ("R@…") was
// verified.
func compareOutcome(rec *Record, got map[string]float64) (verified, unchecked []string, err error) {
	var bad []string
	for _, k := range SortedKeys(rec.Metrics) {
		if !verifiedKey(k) {
			continue
		}
		want := rec.Metrics[k]
		g, has := got[k]
		switch {
		case !has:
			unchecked = append(unchecked, k)
		case g != want && !(g != g && want != want):
			bad = append(bad, fmt.Sprintf("%s: stored %v, rerun %v", k, want, g))
		default:
			verified = append(verified, k)
		}
	}
	if len(bad) > 0 {
		more := ""
		if len(bad) > 4 {
			more = fmt.Sprintf(" and %d more", len(bad)-4)
			bad = bad[:4]
		}
		return nil, nil, fmt.Errorf("the rerun does not reproduce the stored record: %s%s", strings.Join(bad, "; "), more)
	}
	if !slices.ContainsFunc(verified, func(k string) bool { return strings.HasPrefix(k, "R@") }) {
		return nil, nil, fmt.Errorf("the rerun reproduces no R@k of the stored record (compared %d metrics; not computed any more: %s)",
			len(verified), strings.Join(unchecked, ", "))
	}
	return verified, unchecked, nil
}

// addedMeasurement keeps, of a rerun's outcome, the metrics and series the record lacks that the
// measurement is for (for [MeasureTrain]: "train/…", "init/train/…" and "trace/…"; the
// evaluation history's summaries of the training split are left out).
func addedMeasurement(rec *Record, out *Outcome, measure []string) (Metrics, Series) {
	keep := func(k string) bool {
		for _, p := range []string{"train/", "init/train/", "trace/"} {
			if strings.HasPrefix(k, p) {
				return true
			}
		}
		return false
	}
	if !slices.Contains(measure, MeasureTrain) {
		keep = func(string) bool { return false }
	}
	m, s := Metrics{}, Series{}
	for k, v := range out.Metrics {
		if _, has := rec.Metrics[k]; !has && keep(k) {
			m[k] = v
		}
	}
	for k, v := range out.Series {
		if _, has := rec.Series[k]; !has && keep(k) {
			s[k] = v
		}
	}
	return m, s
}

// RemeasureOptions configures [Remeasure].
type RemeasureOptions struct {
	Measure []string // what to add, e.g. [MeasureTrain]
	ExecOptions
}

// Remeasure runs the given stored records' configurations again, as their plan's runs, with the
// runner asked for opt.Measure ([RunSpec.Measure]), and stores what each adds as a [Measurement]
// — only when the rerun reproduces every compared metric of the record bit for bit (runs are
// deterministic: same configuration and seed, same numbers). A record whose rerun differs gets no
// measurement, and the summary lists it as failed with the keys that differ. Records already
// measured (every key of opt.Measure present) are skipped, so an interrupted remeasure resumes.
// Workers, Progress and WorkDir are as for [Execute]; the runs are those of plan (records of
// runs the plan does not hold are skipped as not runnable).
func Remeasure(ctx context.Context, plan *Plan, recs []Record, opt RemeasureOptions) (*Summary, error) {
	if opt.Runner == nil {
		return nil, ErrNoRunner
	}
	if opt.Store == nil {
		return nil, errors.New("experiments: Remeasure needs a Store")
	}
	if len(opt.Measure) == 0 {
		return nil, errors.New("experiments: Remeasure: nothing to measure")
	}
	for _, m := range opt.Measure {
		if m != MeasureTrain {
			return nil, fmt.Errorf("experiments: Remeasure: unknown measurement %q (known: %s)", m, MeasureTrain)
		}
	}
	workDir := opt.WorkDir
	if workDir == "" {
		d, err := os.MkdirTemp("", "dmlkit-remeasure-")
		if err != nil {
			return nil, fmt.Errorf("experiments: %w", err)
		}
		defer os.RemoveAll(d)
		workDir = d
	}
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	runs := map[string]Run{}
	for _, r := range plan.Runs {
		runs[r.Hash] = r
	}
	type job struct {
		run Run
		rec *Record
	}
	sum := &Summary{}
	var jobs []job
	for i := range recs {
		rec := &recs[i]
		if rec.Scale != plan.Scale || rec.Failed != "" {
			continue
		}
		run, ok := runs[rec.Hash]
		if !ok {
			continue
		}
		sum.Total++
		if slices.ContainsFunc(opt.Measure, func(m string) bool { return rec.HasMeasure(m) }) {
			sum.Skipped++
			continue
		}
		jobs = append(jobs, job{run, rec})
	}
	var mu sync.Mutex
	finished := sum.Skipped
	emit := func(ev Event) {
		if opt.Progress != nil {
			mu.Lock()
			opt.Progress(ev)
			mu.Unlock()
		}
	}
	runPool(ctx, opt.Workers, jobs, func(j job) {
		start := now()
		emit(Event{Kind: "start", Run: j.run, Done: finished, Total: sum.Total})
		err := remeasureOne(ctx, plan, j.run, j.rec, filepath.Join(workDir, scaleDir(plan.Scale), j.run.Hash), opt, start, now, func(msg string) {
			emit(Event{Kind: "progress", Run: j.run, Done: finished, Total: sum.Total, Message: msg})
		})
		secs := now().Sub(start).Seconds()
		mu.Lock()
		finished++
		if err != nil {
			sum.Failed = append(sum.Failed, fmt.Sprintf("%s (%s): %v", j.run.Hash, j.run.Label(), err))
		} else {
			sum.Ran++
		}
		mu.Unlock()
		kind := "done"
		if err != nil {
			kind = "fail"
		}
		emit(Event{Kind: kind, Run: j.run, Done: finished, Total: sum.Total, Err: err, Seconds: secs})
	})
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("experiments: remeasure interrupted after %d of %d runs: %w", sum.Ran+sum.Skipped, sum.Total, err)
	}
	if len(sum.Failed) > 0 {
		return sum, fmt.Errorf("experiments: %d of %d reruns failed or did not reproduce their record (nothing stored for them); first: %s",
			len(sum.Failed), sum.Total, sum.Failed[0])
	}
	return sum, nil
}

// remeasureOne reruns one record's run and stores its measurement.
func remeasureOne(ctx context.Context, plan *Plan, run Run, rec *Record, dir string, opt RemeasureOptions, start time.Time, now func() time.Time, progress func(string)) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleaning run directory: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating run directory: %w", err)
	}
	defer os.RemoveAll(dir)
	cfg, err := runPaths(Clone(run.Config), filepath.Dir(dir))
	if err != nil {
		return err
	}
	out, err := callRunner(ctx, opt.Runner, RunSpec{Hash: run.Hash, Config: cfg, Seed: run.Seed, Dir: dir,
		Diagnostics: plan.Spec.Diagnostics, Measure: slices.Clone(opt.Measure)}, progress)
	if err != nil {
		return err
	}
	verified, unchecked, err := compareOutcome(rec, out.Metrics)
	if err != nil {
		return err
	}
	m, s := addedMeasurement(rec, out, opt.Measure)
	if len(m) == 0 {
		return fmt.Errorf("the rerun measured nothing the record lacks (measure %s)", strings.Join(opt.Measure, ", "))
	}
	meas := &Measurement{Hash: rec.Hash, Scale: rec.Scale, Seed: rec.Seed, Measure: slices.Clone(opt.Measure), Metrics: m, Series: s,
		Verified: verified, Unchecked: unchecked, Env: maps.Clone(opt.Env), Start: start.UTC(), Seconds: now().Sub(start).Seconds()}
	if len(s) == 0 {
		meas.Series = nil
	}
	return opt.Store.AppendMeasurement(meas)
}

// callRunner calls the runner, converting a panic into an error and a nil outcome into one.
func callRunner(ctx context.Context, runner Runner, rs RunSpec, progress func(string)) (out *Outcome, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("runner panicked: %v", p)
		}
	}()
	out, err = runner(ctx, rs, progress)
	if err == nil && out == nil {
		err = errors.New("runner returned no outcome")
	}
	return out, err
}
