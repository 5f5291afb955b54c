package main

import (
	"path/filepath"
	"slices"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// CommittedScale is the scale whose results, tables, figures and README verdict blocks are
// committed for the papers in reproductions/: reproductions/PAPER/{results,tables,README.md} and
// figures/PAPER. Every other scale of such a spec (smoke, full) writes by default to the
// git-ignored scratch directory out/PAPER/SCALE/{results,tables,figures} at the repository root,
// so that trying a reproduction never rewrites the stored one, leaves `git status` clean and can
// be repeated. --results, --tables/--out and --figures still choose any directory.
const CommittedScale = "small"

// PretrainedScale is the second committed scale: the regime near the papers' (an
// ImageNet-pretrained backbone on natural images, frozen or fine-tuned; issue 30). Its records
// share SPECDIR/results (the store keeps one file per scale, pretrained.jsonl); its tables and
// figures go to SPECDIR/tables/pretrained and figures/PAPER/pretrained. Claims are evaluated at
// their own scale (claims.yaml's, default small) whichever scale `dmlkit tables` is asked for,
// into the one claims.md.
const PretrainedScale = "pretrained"

// committed reports whether scale's results, tables and figures are committed (see
// [CommittedScale], [PretrainedScale]; a spec may commit further scales, [sweep.Spec].Committed).
func committed(spec *sweep.Spec, scale string) bool {
	return scale == CommittedScale || scale == PretrainedScale || spec != nil && slices.Contains(spec.Committed, scale)
}

// scaleSubdir is the subdirectory of the committed tables and figures directories a committed
// scale writes to: "" for small, the scale's name for the others (e.g. "pretrained").
func scaleSubdir(spec *sweep.Spec, scale string) string {
	if scale != CommittedScale && committed(spec, scale) {
		return scale
	}
	return ""
}

// scratchDir is out/PAPER/SCALE at the repository root for a spec in reproductions/PAPER/ run at
// a scale other than [CommittedScale]; "" when the spec's own directories are the default (the
// committed scale, or a spec outside reproductions/).
func scratchDir(spec *sweep.Spec, scale string) string {
	repro := filepath.Dir(spec.Dir)
	if committed(spec, scale) || filepath.Base(repro) != "reproductions" {
		return ""
	}
	if scale == "" {
		scale = "default"
	}
	return filepath.Join(filepath.Dir(repro), "out", spec.Paper, scale)
}

// resultsDir is flagValue when given, else the scale's default results directory: SPECDIR/results
// or, for a scratch scale, out/PAPER/SCALE/results.
func resultsDir(s *sweep.Spec, scale, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if d := scratchDir(s, scale); d != "" {
		return filepath.Join(d, "results")
	}
	return filepath.Join(s.Dir, "results")
}

// tablesDir is the default tables directory of a scale: SPECDIR/tables, or out/PAPER/SCALE/tables.
func tablesDir(s *sweep.Spec, scale string) string {
	if d := scratchDir(s, scale); d != "" {
		return filepath.Join(d, "tables")
	}
	return filepath.Join(s.Dir, "tables", scaleSubdir(s, scale))
}

// figuresDir is the default figures directory of a scale: figures/PAPER next to the reproductions/
// directory holding the spec (under the current directory when the spec lives elsewhere), or
// out/PAPER/SCALE/figures for a scratch scale.
func figuresDir(spec *sweep.Spec, scale string) string {
	if d := scratchDir(spec, scale); d != "" {
		return filepath.Join(d, "figures")
	}
	repro := filepath.Dir(spec.Dir)
	if filepath.Base(repro) == "reproductions" {
		return filepath.Join(filepath.Dir(repro), "figures", spec.Paper, scaleSubdir(spec, scale))
	}
	return filepath.Join("figures", spec.Paper, scaleSubdir(spec, scale))
}
