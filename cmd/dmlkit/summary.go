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

	"github.com/dmlkit/dmlkit/dmlkit/experiments"
)

func init() {
	register("summary", "evaluate every paper's claims and regenerate the cross-paper summary (reproductions/README.md, README.md)", runSummary)
}

// paperOrder is the order of the papers in the summary: the seeds' (000 TCM … 004 contextual);
// papers not listed follow, by name.
var paperOrder = []string{"tcm", "cit", "idml", "rsk", "contextual"}

func runSummary(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit summary [flags]")
		fs.PrintDefaults()
	}
	root := fs.String("root", "", "repository root holding reproductions/ (default: the current directory or a parent)")
	check := fs.Bool("check", false, "write nothing; fail when a summary block is not current")
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
	md, err := crossPaperSummary(filepath.Join(dir, "reproductions"), nil, stderr)
	if err != nil {
		return err
	}
	var stale []string
	for _, readme := range []string{filepath.Join(dir, "reproductions", "README.md"), filepath.Join(dir, "README.md")} {
		if *check {
			ok, err := experiments.MarkedIs(readme, "summary", md)
			if err != nil {
				return err
			}
			if !ok {
				stale = append(stale, readme)
			}
			continue
		}
		changed, err := experiments.UpdateMarked(readme, "summary", md)
		if err != nil {
			return err
		}
		if changed {
			fmt.Fprintf(stdout, "wrote %s\n", readme)
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("the summary block of %s is not current: run dmlkit summary", strings.Join(stale, " and "))
	}
	fmt.Fprint(stdout, md)
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
// evaluated again.
func crossPaperSummary(dir string, known map[string]*experiments.ClaimsReport, stderr io.Writer) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
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
	var reps []*experiments.ClaimsReport
	for _, p := range papers {
		if rep, ok := known[p]; ok {
			reps = append(reps, rep)
			continue
		}
		spec, err := experiments.Load(filepath.Join(dir, p, "spec.yaml"))
		if err != nil {
			return "", err
		}
		sc, err := defaultScale(spec, "")
		if err != nil {
			return "", err
		}
		cs, err := experiments.LoadClaims(filepath.Join(dir, p, "claims.yaml"))
		if err != nil {
			return "", err
		}
		recs, err := loadRecords(spec, sc, "", stderr)
		if err != nil {
			return "", err
		}
		rep, err := cs.Report(recs, experiments.ClaimOptions{Scale: sc, Spec: spec})
		if err != nil {
			return "", err
		}
		reps = append(reps, rep)
	}
	return experiments.SummaryMarkdown(reps), nil
}
