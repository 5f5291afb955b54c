package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
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
	results := fs.String("results", "", "results directory (default: SPECDIR/results at scale small, out/PAPER/SCALE/results at the others)")
	out := fs.String("out", "", "output directory (default: SPECDIR/tables at scale small, out/PAPER/SCALE/tables at the others)")
	quiet := fs.Bool("quiet", false, "print neither the Markdown tables nor the files written (only errors and the claims' verdict counts)")
	includeDirty := fs.Bool("include-dirty", false, "count records written from a tree with uncommitted changes in the claims' verdicts (marked provisional)")
	skipTorn := fs.Bool("skip-torn", false, skipTornUsage)
	baseline := fs.String("baseline", "", "first record the claims table of this git commit (SPECDIR/tables/claims.md there) as SPECDIR/"+judge.BaselineFile+": the fixed point the README's \"What changed and why\" compares the verdicts with")
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
	// Every file is computed first and written only when all succeeded (see commitOutputs).
	w, held := atomicfile.NewBatch(), &bytes.Buffer{}
	if *baseline != "" {
		if err := stageBaseline(w, spec, *baseline); err != nil {
			return err
		}
	}
	if err := makeTables(w, spec, sc, recs, *out, !*quiet, held, stderr); err != nil {
		return err
	}
	if err := makeClaims(w, spec, sc, recs, *out, *includeDirty, *skipTorn, !*quiet, held); err != nil {
		return err
	}
	return commitOutputs(w, held, stdout)
}

// commitOutputs writes the files staged in w (atomicfile.Batch.Commit) and then copies held, the
// report's output so far (tables, "wrote" lines), to stdout: a command whose outputs are not all
// computed returns before this and leaves every file as it was.
func commitOutputs(w *atomicfile.Batch, held *bytes.Buffer, stdout io.Writer) error {
	if _, err := w.Commit(); err != nil {
		return err
	}
	_, err := io.Copy(stdout, held)
	return err
}

// leaderboardAgreeDir is where the leaderboard's rank agreements go by default: the directory dir
// (tablesDir or figuresDir) of the spec's first regime, so that every regime's run of `dmlkit
// tables` and `dmlkit figures` writes them to one place; dflt when the spec has no leaderboard.
func leaderboardAgreeDir(spec *sweep.Spec, dir func(*sweep.Spec, string) string, dflt string) string {
	if spec.Leaderboard == nil || len(spec.Leaderboard.Regimes) == 0 {
		return dflt
	}
	return dir(spec, spec.Leaderboard.Regimes[0].Scale)
}

// makeClaims evaluates SPECDIR/claims.yaml (when there is one) on the stored records recs, writes
// claims.md / claims.tex beside the tables and refreshes the "claims" block of SPECDIR/README.md,
// all through w. skipTorn is loadRecords' for the other papers' stores the cross-paper summary reads.
func makeClaims(w atomicfile.Writer, spec *sweep.Spec, scale string, recs []sweep.Record, out string, includeDirty, skipTorn, print bool, stdout io.Writer) error {
	path := filepath.Join(spec.Dir, "claims.yaml")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	cs, err := judge.LoadClaims(path)
	if err != nil {
		return err
	}
	if committed(spec, scale) {
		// Every committed scale's claims in one claims.md: each claim at its own scale (claims.yaml's,
		// default the committed small scale).
		scale = CommittedScale
	}
	// Typos (paper, scale, where keys and values, metrics) and NaN metrics are refused here, by
	// judge.CheckClaims, rather than read as claims not run yet.
	if err := judge.CheckClaims(cs, spec, recs, scale); err != nil {
		return err
	}
	// The paper's README block is refreshed only when the claims go to the paper's own tables
	// directory: a run with --out elsewhere (e.g. a test at smoke scale) leaves the README alone.
	// Likewise at a scratch scale (see scratchDir): the README's block shows the committed scale.
	readme := ""
	if out == "" {
		out = tablesDir(spec, scale)
		if scratchDir(spec, scale) == "" {
			readme = filepath.Join(spec.Dir, "README.md")
		}
	}
	rep, files, err := report.RenderClaims(w, cs, recs, judge.ClaimOptions{Scale: scale, IncludeDirty: includeDirty, Spec: spec}, out, readme)
	if err != nil {
		return err
	}
	// The claims tested in two regimes, side by side (figures/PAPER/regimes), with the paper's own files.
	if readme != "" {
		figs, err := drawRegimeFigure(w, figuresDir(spec, CommittedScale), rep)
		if err != nil {
			return err
		}
		files = append(files, figs...)
	}
	if print {
		fmt.Fprintf(stdout, "%s\n", rep.Markdown())
	}
	// The cross-paper summary (reproductions/README.md, README.md) when the paper's own directories
	// were written.
	if readme != "" && filepath.Base(filepath.Dir(spec.Dir)) == "reproductions" {
		root := filepath.Dir(filepath.Dir(spec.Dir))
		// This paper's report is the summary's when computed the same way (its committed scale, dirty
		// records left out); the other papers are evaluated from their stores.
		known := map[string]*judge.ClaimsReport{}
		if !includeDirty {
			known[spec.Paper] = rep
		}
		fp, err := crossPaperSummary(filepath.Join(root, "reproductions"), known, skipTorn, io.Discard)
		if err != nil {
			return err
		}
		changed, _, err := writeFrontPage(w, root, fp, false)
		if err != nil {
			return err
		}
		files = append(files, changed...)
	}
	if !print { // --quiet: the verdict counts only
		fmt.Fprintf(stdout, "claims: %s\n", rep.OutcomeText())
		return nil
	}
	fmt.Fprintf(stdout, "claims: %s; wrote %s\n", rep.OutcomeText(), strings.Join(files, " "))
	return nil
}

// makeTables renders the spec's tables from recs (loaded once by the caller, see loadRecords), and
// its leaderboard (report.RenderLeaderboard): leaderboard.md / .tex beside the tables and,
// at a scale of the leaderboard's regimes, the rank agreement of each pair of regimes
// (rank_agreement.md, then rank_agreement-<a>-<b>.md for a third regime's pairs) in the first
// regime's tables directory (SPECDIR/tables for the committed scales; with --out, beside the
// tables). Files go through w.
func makeTables(w atomicfile.Writer, spec *sweep.Spec, scale string, recs []sweep.Record, out string, print bool, stdout, stderr io.Writer) error {
	if len(spec.Tables) == 0 && len(spec.Tune) == 0 && spec.Leaderboard == nil {
		fmt.Fprintf(stdout, "%s declares no tables\n", spec.Path)
		return nil
	}
	// A where key, row key, value or metric that nothing has is a typo: refused before anything
	// is written, not rendered as an empty table.
	if err := judge.CheckSelections(spec, recs); err != nil {
		return err
	}
	agree := out // the rank agreement of the leaderboard's regimes: beside the tables with --out
	if out == "" {
		out = tablesDir(spec, scale)
		agree = leaderboardAgreeDir(spec, tablesDir, out)
	}
	if spec.Leaderboard != nil {
		lb, files, err := report.RenderLeaderboard(w, spec, recs, scale, out, agree)
		if err != nil {
			return err
		}
		if print {
			fmt.Fprintf(stdout, "%s\n", lb.Markdown(spec.Labels))
			fmt.Fprintf(stdout, "wrote %s\n", strings.Join(files, " "))
		}
	}
	var failed []string
	for _, r := range report.RenderTables(w, spec, recs, scale, out) {
		switch {
		case errors.Is(r.Err, report.ErrNoRecords):
			if print { // --quiet: a table without records is not an error
				fmt.Fprintf(stderr, "skipped %s: %v\n", r.Name, r.Err)
			}
		case r.Err != nil:
			failed = append(failed, r.Err.Error())
		default:
			if print { // not with --quiet
				fmt.Fprintf(stdout, "%s\n", r.Table.Markdown())
				fmt.Fprintf(stdout, "wrote %s\n", strings.Join(r.Files, " "))
			}
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d table(s) failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

// stageBaseline stages SPECDIR/baseline-verdicts.tsv in w: the verdicts of the claims table
// (SPECDIR/tables/claims.md) at git commit rev, read with `git show`.
func stageBaseline(w atomicfile.Writer, spec *sweep.Spec, rev string) error {
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", append([]string{"-C", spec.Dir}, args...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("--baseline %s: git %s: %v: %s", rev, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
		}
		return out, nil
	}
	short, err := git("rev-parse", "--short", rev+"^{commit}")
	if err != nil {
		return err
	}
	commit := strings.TrimSpace(string(short))
	md, err := git("show", commit+":./tables/claims.md")
	if err != nil {
		return err
	}
	vs, err := judge.ParseClaimsTable(string(md))
	if err != nil {
		return fmt.Errorf("--baseline %s: tables/claims.md: %w", rev, err)
	}
	var buf bytes.Buffer
	if err := judge.WriteBaseline(&buf, &judge.Baseline{Commit: commit, Verdicts: vs}); err != nil {
		return err
	}
	return w.WriteFile(filepath.Join(spec.Dir, judge.BaselineFile), buf.Bytes(), 0o644)
}
