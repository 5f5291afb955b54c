package main

import (
	"flag"
	"fmt"
	"io"

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
	if _, err := sweep(spec, o, stdout, stderr); err != nil {
		return err
	}
	figStdout, figStderr := stdout, stderr
	if *o.quiet { // no "wrote" or "skipped" lines, no tables: the summary, the claims' counts and errors only
		figStdout, figStderr = io.Discard, io.Discard
	}
	recs, err := loadRecords(spec, scale, *o.results, stderr)
	if err != nil {
		return err
	}
	if err := makeFigures(spec, scale, recs, *figOut, plots.Formats, figStdout, figStderr); err != nil {
		return err
	}
	if err := makeTables(spec, scale, recs, *tabOut, !*o.quiet, stdout, stderr); err != nil {
		return err
	}
	return makeClaims(spec, scale, recs, *tabOut, false, !*o.quiet, stdout)
}
