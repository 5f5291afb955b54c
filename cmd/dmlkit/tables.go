package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/experiments"
)

func init() {
	register("tables", "regenerate a paper's tables (Markdown, LaTeX) from its stored results, without training", runTables)
}

func runTables(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tables", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit tables PAPER|SPEC [flags]")
		fs.PrintDefaults()
	}
	scale := fs.String("scale", "", "use the records of this scale (default: small when the spec defines it)")
	results := fs.String("results", "", "results directory (default: SPECDIR/results)")
	out := fs.String("out", "", "output directory (default: SPECDIR/tables)")
	quiet := fs.Bool("quiet", false, "do not print the Markdown tables")
	specArg, err := parseWithPositional(fs, args)
	if err != nil {
		return err
	}
	spec, err := loadSpec(specArg)
	if err != nil {
		return err
	}
	sc, err := defaultScale(spec, *scale)
	if err != nil {
		return err
	}
	return makeTables(spec, sc, *results, *out, !*quiet, stdout, stderr)
}

func makeTables(spec *experiments.Spec, scale, results, out string, print bool, stdout, stderr io.Writer) error {
	if len(spec.Tables) == 0 {
		fmt.Fprintf(stdout, "%s declares no tables\n", spec.Path)
		return nil
	}
	recs, err := loadRecords(spec, results, stderr)
	if err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(spec.Dir, "tables")
	}
	var failed []string
	for _, r := range experiments.RenderTables(spec, recs, scale, out) {
		switch {
		case errors.Is(r.Err, experiments.ErrNoRecords):
			fmt.Fprintf(stderr, "skipped %s: %v\n", r.Name, r.Err)
		case r.Err != nil:
			failed = append(failed, r.Err.Error())
		default:
			if print {
				fmt.Fprintf(stdout, "%s\n", r.Table.Markdown())
			}
			fmt.Fprintf(stdout, "wrote %s\n", strings.Join(r.Files, " "))
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d table(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}
