package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
)

func init() {
	register("reproduce", "run a paper's sweep at a scale, then regenerate its figures and tables", runReproduce)
}

func runReproduce(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reproduce", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit reproduce PAPER|SPEC [--scale S] [flags]\n\nRuns the missing runs of the sweep (resumable), then writes figures and tables from all stored results.")
		fs.PrintDefaults()
	}
	o := addSweepFlags(fs)
	figOut := fs.String("figures", "", "figures directory (default: figures/PAPER at the repository root at scale small, out/PAPER/SCALE/figures at the others)")
	tabOut := fs.String("tables", "", "tables directory (default: SPECDIR/tables at scale small, out/PAPER/SCALE/tables at the others)")
	specArg, err := parseWithPositional(fs, args)
	if err != nil {
		return err
	}
	spec, err := loadSpec(specArg)
	if err != nil {
		return err
	}
	scale, err := defaultScale(spec, *o.scale)
	if err != nil {
		return err
	}
	*o.scale = scale
	if _, err := runSweep(spec, o, stdout, stderr); err != nil {
		return err
	}
	figStdout, figStderr := stdout, stderr
	if *o.quiet { // no "wrote" or "skipped" lines, no tables: the summary, the claims' counts and errors only
		figStdout, figStderr = io.Discard, io.Discard
	}
	// The sweep above counted an unreadable (torn) line's run as not stored and ran it again, so
	// such lines are skipped with a warning here, as `dmlkit run` does.
	recs, err := loadRecords(spec, scale, *o.results, true, stderr)
	if err != nil {
		return err
	}
	// Figures, tables and README blocks are computed first and written only when all succeeded.
	w, held := atomicfile.NewBatch(), &bytes.Buffer{}
	if figStdout != io.Discard {
		figStdout = held
	}
	if err := makeFigures(w, spec, scale, recs, *figOut, plots.Formats, figStdout, figStderr); err != nil {
		return err
	}
	if err := makeTables(w, spec, scale, recs, *tabOut, !*o.quiet, held, stderr); err != nil {
		return err
	}
	if err := makeClaims(w, spec, scale, recs, *tabOut, false, true, !*o.quiet, held); err != nil {
		return err
	}
	return commitOutputs(w, held, stdout)
}
