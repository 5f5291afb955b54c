package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

func init() {
	register("figures", "regenerate a paper's figures (PNG, SVG, PDF) and their captions (figures/PAPER/README.md) from its stored results, without training", runFigures)
}

func runFigures(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("figures", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit figures PAPER|SPEC [flags]")
		fs.PrintDefaults()
	}
	scale := fs.String("scale", "", "use the records of this scale (default: small when the spec defines it)")
	results := fs.String("results", "", "results directory (default: SPECDIR/results at scale small, out/PAPER/SCALE/results at the others)")
	out := fs.String("out", "", "output directory (default: figures/PAPER at the repository root at scale small, out/PAPER/SCALE/figures at the others)")
	formats := fs.String("formats", "png,svg,pdf", "comma-separated file formats")
	skipTorn := fs.Bool("skip-torn", false, skipTornUsage)
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
	if err := resultsGiven(*results, sc); err != nil {
		return err
	}
	recs, err := loadRecords(spec, sc, *results, *skipTorn, stderr)
	if err != nil {
		return err
	}
	w, held := atomicfile.NewBatch(), &bytes.Buffer{}
	if err := makeFigures(w, spec, sc, recs, *out, strings.Split(*formats, ","), held, stderr); err != nil {
		return err
	}
	return commitOutputs(w, held, stdout)
}

// skipTornUsage is the help of the report commands' --skip-torn.
const skipTornUsage = "leave out result lines that do not parse (a line torn by a crash, an edited record) with a warning, instead of failing"

// loadRecords reads the store of results (default: the scale's, see resultsDir). A line of the
// store that does not parse (sweep.LoadReport.Bad: torn by a crash, or edited) is an error
// naming file and line, unless skipTorn: then a warning, and the record is left out — what a
// sweep wants (`dmlkit run` counts the run as not stored and runs it again), and what the report
// commands do only when told (--skip-torn), so that a report never silently drops a record.
// resultsGiven refuses a --results directory that does not exist or holds no store of the scale: a
// report of nothing would look like success (every table "skipped", every claim inconclusive),
// where the path was mistyped or the gather step did not run (issue 47).
func resultsGiven(results, scale string) error {
	if results == "" {
		return nil
	}
	fi, err := os.Stat(results)
	if err != nil {
		return fmt.Errorf("--results %s: %w", results, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("--results %s: not a directory", results)
	}
	if f := sweep.NewStore(results).File(scale); !fileExists(f) {
		return fmt.Errorf("--results %s: no records of scale %q (%s does not exist)", results, scale, f)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func loadRecords(spec *sweep.Spec, scale, results string, skipTorn bool, stderr io.Writer) ([]sweep.Record, error) {
	return loadRecordsFrom(sweep.NewStore(resultsDir(spec, scale, results)), spec, skipTorn, stderr)
}

// loadPlanRecords is [loadRecords] for a sweep's planning (`dmlkit run`, --dry-run): torn lines
// skipped with a warning, and the records without their series, which planning never reads and
// which are most of a store's bytes.
func loadPlanRecords(spec *sweep.Spec, scale, results string, stderr io.Writer) ([]sweep.Record, error) {
	return loadRecordsFrom(&sweep.Store{Dir: resultsDir(spec, scale, results), SkipSeries: true}, spec, true, stderr)
}

// loadRecordsFrom is [loadRecords] reading st.
func loadRecordsFrom(st *sweep.Store, spec *sweep.Spec, skipTorn bool, stderr io.Writer) ([]sweep.Record, error) {
	recs, rep, err := st.Load()
	if err != nil {
		return nil, err
	}
	if len(rep.Bad) > 0 && !skipTorn {
		return nil, fmt.Errorf("unreadable record line(s), which a report would leave out:\n  %s\n"+
			"delete the line (`dmlkit run` then runs its configuration again) or pass --skip-torn to leave it out with a warning",
			strings.Join(rep.Bad, "\n  "))
	}
	for _, b := range rep.Bad {
		fmt.Fprintf(stderr, "warning: skipped unreadable record %s (not counted as stored: a sweep runs it again)\n", b)
	}
	for _, d := range rep.Duplicates {
		fmt.Fprintf(stderr, "warning: skipped duplicate record %s\n", d)
	}
	// Records of runs the spec no longer produces stay in the store but out of tables, figures
	// and verdicts (judge.DropSuperseded).
	recs, _ = judge.DropSuperseded(spec, recs)
	return recs, nil
}

// makeFigures draws the spec's figures from recs (loaded once by the caller, see loadRecords), and
// the leaderboard's (report.RenderLeaderboardFigures): leaderboard and leaderboard_pareto
// beside them, the rank agreement of each pair of regimes in the first regime's figures directory
// (with --out, beside them), each with its caption in the README of the directory it is in. Files
// go through w.
func makeFigures(w atomicfile.Writer, spec *sweep.Spec, scale string, recs []sweep.Record, out string, formats []string, stdout, stderr io.Writer) error {
	if len(spec.Figures) == 0 && spec.Leaderboard == nil {
		fmt.Fprintf(stdout, "%s declares no figures\n", spec.Path)
		return nil
	}
	if err := judge.CheckSelections(spec, recs); err != nil {
		return err
	}
	agree := out // the leaderboard's rank agreement: beside the figures with --out
	if out == "" {
		out = figuresDir(spec, scale)
		agree = leaderboardAgreeDir(spec, figuresDir, out)
	}
	st := plots.DefaultStyle()
	var failed []string
	rendered := report.RenderFigures(w, spec, recs, scale, out, st, formats...)
	var drawn []report.FigureResult // also those not in out's README (the rank agreement of another directory)
	if spec.Leaderboard != nil {
		per, ras, err := report.RenderLeaderboardFigures(w, spec, recs, scale, out, agree, formats...)
		if err != nil {
			return err
		}
		rendered = append(rendered, per...)
		if agree == out {
			rendered = append(rendered, ras...)
		} else {
			drawn = append(drawn, ras...)
		}
	}
	for _, r := range append(slices.Clone(rendered), drawn...) {
		switch {
		case errors.Is(r.Err, report.ErrNoRecords):
			fmt.Fprintf(stderr, "skipped %s: %v\n", r.Name, r.Err)
		case r.Err != nil:
			failed = append(failed, r.Err.Error())
		default:
			fmt.Fprintf(stdout, "wrote %s\n", strings.Join(r.Files, " "))
		}
	}
	if readme, err := report.WriteFigureReadme(w, spec, rendered, out); err != nil {
		failed = append(failed, "README: "+err.Error())
	} else {
		fmt.Fprintf(stdout, "wrote %s\n", readme)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d figure(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}
