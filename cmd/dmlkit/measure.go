package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// runMeasure reruns stored records to add a measurement (sweep.Remeasure), e.g. --measure train:
// the training evidence of reproducing.md §1. Which records: of the scale's plan, selected by
// --only and the shard (--index/--of) and lacking the measurement, those that a held or
// contradicted verdict of the paper's claims rests on (the interval rule's verdict, before the
// training rule reads the evidence; tuning runs too where a claim reads a tuning grid), and with
// all every sweep point besides.
func runMeasure(spec *sweep.Spec, o *sweepFlags, measure string, all bool, stdout, stderr io.Writer) error {
	scale, err := defaultScale(spec, *o.scale)
	if err != nil {
		return err
	}
	only, err := sweep.ParseOnly(o.only)
	if err != nil {
		return err
	}
	if err := o.check(); err != nil {
		return err
	}
	index, err := shardIndex(*o.index, *o.of)
	if err != nil {
		return err
	}
	results := resultsDir(spec, scale, *o.results)
	recs, err := loadRecords(spec, scale, *o.results, false, stderr)
	if err != nil {
		return err
	}
	plan, err := spec.PlanWith(scale, recs)
	if err != nil {
		return err
	}
	if err := checkOnlyKeys(plan, only); err != nil {
		return err
	}
	runs := sweep.Filter(plan.Runs, only)
	if *o.of > 1 {
		if runs, err = sweep.Shard(runs, index, *o.of); err != nil {
			return err
		}
	}
	// The records the held or contradicted verdicts rest on (tuning runs too, where a claim reads a
	// tuning grid); with all, every sweep point besides.
	decisive, err := decisiveRecords(spec, scale, recs)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, r := range runs {
		if decisive[r.Hash] || all && r.Tune == "" {
			keep[r.Hash] = true
		}
	}
	var sel []sweep.Record
	for _, r := range recs {
		if keep[r.Hash] && !r.Dirty() {
			sel = append(sel, r)
		}
	}
	runner, err := sweep.RegisteredRunner()
	if err != nil {
		return err
	}
	env, err := provenance(results, *o.allowDirty)
	if err != nil {
		return err
	}
	workdir := *o.workdir
	if workdir == "" {
		workdir = runsDir(spec)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	quiet := *o.quiet
	sum, err := sweep.Remeasure(ctx, plan, sel, sweep.RemeasureOptions{Measure: []string{measure}, ExecOptions: sweep.ExecOptions{
		Runner: runner, Store: sweep.NewStore(results), WorkDir: workdir, Workers: *o.workers, Env: env,
		Progress: func(e sweep.Event) {
			switch {
			case e.Kind == "fail":
				fmt.Fprintf(stderr, "[%d/%d] FAILED %s %s (%.1fs): %v\n", e.Done, e.Total, e.Run.Hash, e.Run.Label(), e.Seconds, e.Err)
			case e.Kind == "done" && !quiet:
				fmt.Fprintf(stderr, "[%d/%d] measured %s %s (%.1fs)\n", e.Done, e.Total, e.Run.Hash, e.Run.Label(), e.Seconds)
			}
		},
	}})
	if sum != nil {
		what := "records behind held or contradicted verdicts"
		if all {
			what = "sweep records"
		}
		fmt.Fprintf(stdout, "%s scale %q: %d %s selected, %d already measured, %d measured now, %d failed; measurements in %s\n",
			spec.Paper, scale, sum.Total, what, sum.Skipped, sum.Ran, len(sum.Failed), sweep.NewStore(results).MeasurementFile(scale))
	}
	return err
}

// decisiveRecords returns the hashes of the records the held or contradicted verdicts (the
// interval rule's, every form) of the paper's claims rest on; none when the spec has no claims.
func decisiveRecords(spec *sweep.Spec, scale string, recs []sweep.Record) (map[string]bool, error) {
	path := filepath.Join(spec.Dir, "claims.yaml")
	out := map[string]bool{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	cs, err := judge.LoadClaims(path)
	if err != nil {
		return nil, err
	}
	vs, err := cs.Evaluate(recs, judge.ClaimOptions{Scale: scale, Spec: spec})
	if err != nil {
		return nil, err
	}
	for _, v := range vs {
		forms := v.Forms
		if len(forms) == 0 {
			forms = []judge.ClaimVerdict{v}
		}
		for _, f := range forms {
			if f.Scale != scale || !slices.Contains([]string{judge.VerdictHeld, judge.VerdictContradicted}, f.Raw) {
				continue
			}
			for _, a := range f.Facts {
				for _, h := range a.Records {
					out[h] = true
				}
			}
		}
	}
	return out, nil
}
