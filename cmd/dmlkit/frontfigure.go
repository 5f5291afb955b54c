package main

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/atomicfile"
	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/report"
)

// verdictGroups: held bluish green, contradicted vermillion, the method that did not train reddish
// purple (Okabe–Ito), each a filled circle; the inconclusive causes in greys, each with its own
// marker, so that they are told apart in print and by readers who cannot tell greys apart: the
// interval a filled dark circle, unequal arms a filled square, an arm that did not train a filled
// triangle, training not recorded a hollow ring.
var verdictGroups = []plots.ForestGroup{
	{Name: "held", Color: plots.OkabeIto[2]},
	{Name: "contradicted", Color: plots.OkabeIto[5]},
	{Name: "the method did not train", Color: plots.OkabeIto[6]},
	{Name: "inconclusive (interval)", Color: color.Gray{Y: 60}},
	{Name: "inconclusive (unequal arms)", Color: color.Gray{Y: 120}, Shape: plots.FilledGlyph(1)},
	{Name: "inconclusive (did not train)", Color: color.Gray{Y: 120}, Shape: plots.FilledGlyph(2)},
	{Name: "inconclusive (training not recorded)", Color: color.Gray{Y: 100}, Shape: plots.OpenGlyph(0)},
}

// labelWrap is the longest line of a row label in the front page's forest plots: longer labels
// wrap, whole, onto more lines (a cut label made a pretrained row read like its from-scratch
// twin).
const labelWrap = 64

// paperShort is a paper's name in the figure's row labels.
var paperShort = map[string]string{"tcm": "TCM", "cit": "CIT", "idml": "IDML", "rsk": "RS@k", "contextual": "Contextual"}

// verdictGroup is the figure's colour group of a central claim.
func verdictGroup(e report.CentralEffect) string {
	if e.Verdict != judge.VerdictInconclusive {
		return e.Verdict
	}
	switch e.Cause {
	case judge.CauseUnequal:
		return "inconclusive (unequal arms)"
	case judge.CauseUntrained:
		return "inconclusive (did not train)"
	case judge.CauseMethodUntrained:
		return "the method did not train"
	case judge.CauseNotRecorded:
		return "inconclusive (training not recorded)"
	}
	return "inconclusive (interval)"
}

// drawRegimeFigure draws the claims of rep tested in two regimes ([judge.ClaimsReport.RegimePairs])
// as a forest plot at dir/regimes.{png,svg}: two rows per claim (the original regime, then the
// re-test), effects as % of the baseline's mean in the claimed direction, coloured by verdict.
// It returns the files written through w (none when no claim has a twin).
func drawRegimeFigure(w atomicfile.Writer, dir string, rep *judge.ClaimsReport) ([]string, error) {
	// Each original claim once, followed by its re-tests; a re-test's label ends with what its claim
	// text adds after its last ";" (e.g. "pretrained backbone, CIFAR-10"), else its regime.
	var rows []plots.ForestRow
	add := func(v *judge.ClaimVerdict, where string) {
		e, ok := report.RelativeEffect(rep.Paper, v, "")
		if !ok {
			return
		}
		if where == "" {
			where = e.Regime
		}
		label := e.Compared + " · " + where
		rows = append(rows, plots.ForestRow{Label: label, Group: verdictGroup(e), X: e.Effect, Lo: e.Lo, Hi: e.Hi})
	}
	drawn := map[string]bool{}
	pairs := rep.RegimePairs()
	for _, p := range pairs {
		if drawn[p.Original.Claim.ID] {
			continue
		}
		drawn[p.Original.Claim.ID] = true
		add(p.Original, "")
		for _, q := range pairs {
			if q.Original.Claim.ID == p.Original.Claim.ID {
				add(q.Retest, retestWhere(q.Retest))
			}
		}
	}
	if len(rows) == 0 {
		return nil, nil
	}
	st := plots.PageStyle()
	st.Height = 0.7 * 72
	st.Legend = plots.LegendBelow
	ch, err := plots.ForestWith(st, plots.Labels{X: "effect in the claimed direction, % of the baseline's mean (95 % interval)"}, rows, verdictGroups, plots.ForestOptions{Wrap: labelWrap})
	if err != nil {
		return nil, err
	}
	return plots.SaveTo(w, ch, ch.Style, filepath.Join(dir, "regimes"), "png", "svg")
}

// retestWhere is the end of a re-test's row label: its regime, then what its claim text adds after
// its last ";" once the regime's own words are dropped ("pretrained backbone, fine-tuned,
// Omniglot" under the regime "pretrained, fine-tuned (last block)" gives "pretrained, fine-tuned
// (last block), Omniglot"); "" (the regime alone, see add) when the text has no ";".
func retestWhere(v *judge.ClaimVerdict) string {
	i := strings.LastIndex(v.Claim.Paper, ";")
	if i < 0 {
		return ""
	}
	var rest []string
	for _, w := range strings.Split(v.Claim.Paper[i+1:], ",") {
		switch w = strings.TrimSpace(w); w {
		case "", "pretrained backbone", "fine-tuned", "frozen":
		default:
			rest = append(rest, w)
		}
	}
	return strings.Join(append([]string{v.Regime()}, rest...), ", ")
}

// drawCentralFigure draws the central claims' effects ([report.CentralEffects]) as a forest
// plot at root/figures/summary/central_claims.{png,svg}, through w. With check it draws into a
// temporary directory and returns the files that differ from the committed ones instead.
func drawCentralFigure(w atomicfile.Writer, root string, reports []*judge.ClaimsReport, check bool) (written, stale []string, err error) {
	effects := report.CentralEffects(reports)
	if len(effects) == 0 {
		return nil, nil, nil
	}
	rows := make([]plots.ForestRow, len(effects))
	for i, e := range effects {
		label := paperShort[e.Paper]
		if label == "" {
			label = e.Paper
		}
		label += " · " + e.Compared
		rows[i] = plots.ForestRow{Label: label, Group: verdictGroup(e), X: e.Effect, Lo: e.Lo, Hi: e.Hi}
	}
	st := plots.PageStyle()
	st.Height = 0.7 * 72 // points: the axis and its label; each row adds its own height
	st.Legend = plots.LegendBelow
	ch, err := plots.ForestWith(st, plots.Labels{X: "effect in the claimed direction, % of the baseline's mean (95 % interval)"}, rows, verdictGroups, plots.ForestOptions{Wrap: labelWrap})
	if err != nil {
		return nil, nil, err
	}
	stem := filepath.Join(root, filepath.FromSlash(centralFigure))
	formats := []string{"png", "svg"}
	if !check {
		files, err := plots.SaveTo(w, ch, ch.Style, stem, formats...)
		return files, nil, err
	}
	tmp, err := os.MkdirTemp("", "dmlkit-front")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	files, err := plots.Save(ch, ch.Style, filepath.Join(tmp, "f"), formats...)
	if err != nil {
		return nil, nil, err
	}
	for i, f := range files {
		want, _ := os.ReadFile(f)
		have, err := os.ReadFile(stem + "." + formats[i])
		if err != nil || !bytes.Equal(want, have) {
			stale = append(stale, fmt.Sprintf("%s.%s", stem, formats[i]))
		}
	}
	return nil, stale, nil
}
