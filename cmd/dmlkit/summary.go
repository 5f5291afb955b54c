package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/benchreport"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

func init() {
	register("summary", "evaluate every paper's claims and regenerate the cross-paper summary (reproductions/README.md, README.md)", runSummary)
}

// paperOrder is the order of the papers in the summary: the seeds' (000 TCM … 004 contextual);
// papers not listed follow, by name.
var paperOrder = []string{"tcm", "cit", "idml", "rsk", "contextual"}

// paperInfo names each paper on the front page and its notebook (under notebooks/).
var paperInfo = map[string]struct{ title, notebook string }{
	"tcm":        {"TCM + OPIS — Threshold-Consistent Margin Loss for Open-World Deep Metric Learning (seed 000)", "tcm_opis.ipynb"},
	"cit":        {"CIT — Triplet Similarity Learning on Concordance Constraint (seed 001)", "cit.ipynb"},
	"idml":       {"IDML — Introspective Deep Metric Learning (seed 002)", "idml.ipynb"},
	"rsk":        {"RS@k + SiMix — Three Things to Know about Deep Metric Learning (seed 003)", "rsk.ipynb"},
	"contextual": {"Contextual loss — Supervised Metric Learning to Rank for Retrieval via Contextual Similarity Optimization (seed 004)", "contextual.ipynb"},
	"benchmark":  {"The reality check — every loss of the five papers under one protocol, in two regimes", "benchmark.ipynb"},
}

// centralFigure is the front page's figure, relative to the repository root (without extension).
const centralFigure = "figures/summary/central_claims"

// frontPage is what `dmlkit summary` and `dmlkit tables` write outside the papers' directories:
// the summary table and the findings (central claims) for reproductions/README.md and README.md.
type frontPage struct {
	reports []*judge.ClaimsReport
	summary string
	// leaderboard is the "leaderboard" block: per spec with a leaderboard section (the benchmark),
	// its title and report.LeaderboardSummary; "" when no spec has one.
	leaderboard string
	// performance is the "performance" block: the CPU benchmarks' stored reports
	// (reproductions/bench/*.json, benchreport.Markdown).
	performance string
}

// findings is the "findings" block for the page at dir (relative to the repository root: "" or
// "reproductions"), with links relative to it.
func (f *frontPage) findings(dir string) string {
	up := ""
	if dir != "" {
		up = "../"
	}
	links := map[string]report.PaperLinks{}
	for _, r := range f.reports {
		info := paperInfo[r.Paper]
		l := report.PaperLinks{Title: info.title, Readme: up + "reproductions/" + r.Paper + "/README.md"}
		if dir == "reproductions" {
			l.Readme = r.Paper + "/README.md"
		}
		if info.notebook != "" {
			l.Notebook = up + "notebooks/" + info.notebook
		}
		links[r.Paper] = l
	}
	return report.FindingsMarkdown(f.reports, links, up+centralFigure+".png")
}

// writeFrontPage refreshes the "summary" and "findings" blocks of reproductions/README.md and
// README.md under root and draws the central-claims figure (figures/summary/), through w; with
// check it writes nothing and returns the blocks and files that are not current. It returns the
// files it changed.
func writeFrontPage(w atomicfile.Writer, root string, f *frontPage, check bool) (changed, stale []string, err error) {
	for _, page := range []struct{ dir, path string }{{"reproductions", filepath.Join(root, "reproductions", "README.md")}, {"", filepath.Join(root, "README.md")}} {
		if _, err := os.Stat(page.path); err != nil {
			continue
		}
		for _, blk := range []struct{ name, md string }{{"summary", f.summary}, {"findings", f.findings(page.dir)}, {"leaderboard", f.leaderboard},
			{"performance", f.performance}} {
			if blk.name != "summary" { // optional: a page without the block keeps none
				if has, err := report.HasMarked(page.path, blk.name); err != nil {
					return nil, nil, err
				} else if !has {
					continue
				}
			}
			if check {
				ok, err := report.MarkedIs(page.path, blk.name, blk.md)
				if err != nil {
					return nil, nil, err
				}
				if !ok {
					stale = append(stale, page.path+" ("+blk.name+")")
				}
				continue
			}
			ch, err := report.UpdateMarked(w, page.path, blk.name, blk.md)
			if err != nil {
				return nil, nil, err
			}
			if ch && !slices.Contains(changed, page.path) {
				changed = append(changed, page.path)
			}
		}
	}
	files, st, err := drawCentralFigure(w, root, f.reports, check)
	if err != nil {
		return nil, nil, err
	}
	return append(changed, files...), append(stale, st...), nil
}

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit summary [flags]")
		fs.PrintDefaults()
	}
	root := fs.String("root", "", "repository root holding reproductions/ (default: the current directory or a parent)")
	check := fs.Bool("check", false, "write nothing; fail when a summary block is not current")
	skipTorn := fs.Bool("skip-torn", false, skipTornUsage)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("summary takes no arguments (got %q)", fs.Arg(0))
	}
	dir, err := reproductionsRoot(*root)
	if err != nil {
		return err
	}
	fp, err := crossPaperSummary(filepath.Join(dir, "reproductions"), nil, *skipTorn, stderr)
	if err != nil {
		return err
	}
	// Both pages and the figure are computed first and written only when all succeeded.
	w := atomicfile.NewBatch()
	changed, stale, err := writeFrontPage(w, dir, fp, *check)
	if err != nil {
		return err
	}
	if _, err := w.Commit(); err != nil {
		return err
	}
	for _, f := range changed {
		fmt.Fprintf(stdout, "wrote %s\n", f)
	}
	if len(stale) > 0 {
		return fmt.Errorf("not current: %s: run dmlkit summary", strings.Join(stale, ", "))
	}
	fmt.Fprint(stdout, fp.summary)
	return nil
}

// reproductionsRoot is root, or the current directory or the nearest parent holding reproductions/.
func reproductionsRoot(root string) (string, error) {
	if root != "" {
		if _, err := os.Stat(filepath.Join(root, "reproductions")); err != nil {
			return "", fmt.Errorf("--root %s: no reproductions/ directory", root)
		}
		return root, nil
	}
	dir, _ := os.Getwd()
	for {
		if st, err := os.Stat(filepath.Join(dir, "reproductions")); err == nil && st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no reproductions/ directory here or in a parent directory (give --root)")
		}
		dir = parent
	}
}

// crossPaperSummary evaluates the claims of every paper under dir (a directory per paper with
// spec.yaml and claims.yaml) at its default scale, as `dmlkit tables` does, and renders the
// summary. known holds reports already computed that way (paper → report), which are not
// evaluated again. skipTorn is loadRecords'.
func crossPaperSummary(dir string, known map[string]*judge.ClaimsReport, skipTorn bool, stderr io.Writer) (*frontPage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var papers []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(dir, e.Name(), "claims.yaml")); e.IsDir() && err == nil {
			papers = append(papers, e.Name())
		}
	}
	slices.SortFunc(papers, func(a, b string) int {
		ia, ib := slices.Index(paperOrder, a), slices.Index(paperOrder, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	var reps []*judge.ClaimsReport
	for _, p := range papers {
		if rep, ok := known[p]; ok {
			reps = append(reps, rep)
			continue
		}
		spec, err := sweep.Load(filepath.Join(dir, p, "spec.yaml"))
		if err != nil {
			return nil, err
		}
		sc, err := defaultScale(spec, "")
		if err != nil {
			return nil, err
		}
		cs, err := judge.LoadClaims(filepath.Join(dir, p, "claims.yaml"))
		if err != nil {
			return nil, err
		}
		recs, err := loadRecords(spec, sc, "", skipTorn, stderr)
		if err != nil {
			return nil, err
		}
		// As `dmlkit tables` does: typos and NaN metrics are errors, not claims without records.
		if err := judge.CheckClaims(cs, spec, recs, sc); err != nil {
			return nil, err
		}
		rep, err := cs.Report(recs, judge.ClaimOptions{Scale: sc, Spec: spec})
		if err != nil {
			return nil, err
		}
		reps = append(reps, rep)
	}
	board, err := leaderboardBlock(dir, papers, skipTorn, stderr)
	if err != nil {
		return nil, err
	}
	bench, err := benchreport.Load(filepath.Join(dir, benchDir))
	if err != nil {
		return nil, err
	}
	return &frontPage{reports: reps, summary: report.SummaryMarkdown(reps), leaderboard: board,
		performance: benchreport.Markdown(bench, "reproductions/"+benchDir)}, nil
}

// benchDir is the folder of reproductions/ that holds the CPU benchmarks' stored reports.
const benchDir = "bench"

// leaderboardBlock renders the front page's "leaderboard" block: for each paper under dir whose
// spec has a leaderboard section, a line naming it with a link to its README, then
// report.LeaderboardSummary over the stored records of every regime (superseded ones left
// out). Links are relative to the repository root; the block reads the same from README.md and
// reproductions/README.md because it names files by their repository path. skipTorn is loadRecords'.
func leaderboardBlock(dir string, papers []string, skipTorn bool, stderr io.Writer) (string, error) {
	var b strings.Builder
	for _, p := range papers {
		spec, err := sweep.Load(filepath.Join(dir, p, "spec.yaml"))
		if err != nil {
			return "", err
		}
		if spec.Leaderboard == nil {
			continue
		}
		recs, err := loadRecords(spec, CommittedScale, "", skipTorn, stderr)
		if err != nil {
			return "", err
		}
		by := map[string][]sweep.Record{}
		for _, r := range recs {
			by[r.Scale] = append(by[r.Scale], r)
		}
		sum, err := report.LeaderboardSummary(spec, by)
		if err != nil {
			return "", err
		}
		floor := ""
		if l := spec.Leaderboard; len(l.Floor) > 0 {
			floor = fmt.Sprintf(" The zero-shot floor is what the regime's network gives with no optimiser step (each arm a floor row of the leaderboard, not ranked); %s.", report.FloorRule(spec.Labels.Key(l.Metrics[0])))
		}
		fmt.Fprintf(&b, "Generated by `dmlkit tables %s` or `dmlkit summary` from the stored records; do not edit. Every loss at its own tuned rate and main option, the same steps, batch and sampler (`reproductions/%s/README.md`, `reproductions/%s/tables/leaderboard.md`).%s\n\n%s", p, p, p, floor, sum)
	}
	return b.String(), nil
}
