package report

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// rawList matches a config list as FormatValue writes it, e.g. "[16,32,64]".
var rawList = regexp.MustCompile(`\[[^\]]*,[^\]]*\]`)

// rawTexts lists the texts of a figure that show raw config keys, series names or lists instead
// of the human labels of the spec's labels map.
func rawTexts(f sweep.FigureSpec, texts []string) []string {
	keys := append([]string{f.X, f.Y, f.Hue, f.Size, f.MarkKey, f.Metric}, f.Group...)
	keys = append(keys, f.Series...)
	for k := range f.Where {
		keys = append(keys, k)
	}
	var out []string
	for _, t := range texts {
		for _, k := range keys {
			if (strings.Contains(k, ".") || strings.Contains(k, "/")) && strings.Contains(t, k) {
				out = append(out, fmt.Sprintf("text %q shows the raw key %q", t, k))
			}
		}
		if rawList.MatchString(t) {
			out = append(out, fmt.Sprintf("text %q shows a raw list", t))
		}
		if strings.Contains(t, " contains ") {
			out = append(out, fmt.Sprintf("text %q shows a raw filter", t))
		}
		for _, p := range sweep.RawTexts(t) {
			out = append(out, fmt.Sprintf("text %q shows %s", t, p))
		}
	}
	return out
}

// crossReference reports whether a problem of [RawTexts] is the name of one of the paper's figures,
// tables or tuning steps (a caption may point the reader to "table tune_margins").
func crossReference(s *sweep.Spec, problem string) bool {
	for _, f := range s.Figures {
		if strings.HasSuffix(problem, fmt.Sprintf("%q", f.Name)) {
			return true
		}
	}
	for _, t := range s.AllTables() {
		if strings.HasSuffix(problem, fmt.Sprintf("%q", t.Name)) {
			return true
		}
	}
	return false
}

// figureProblems renders figure f of spec s from the records at its print size and returns what a
// reviewer would reject: layout problems (plots.CheckLayout) and raw texts.
func figureProblems(t *testing.T, s *sweep.Spec, f sweep.FigureSpec, recs []sweep.Record, st plots.Style) []string {
	t.Helper()
	fst := FigureStyle(f, st)
	fig, err := BuildFigureWith(f, recs, fst, s.Labels)
	if err != nil {
		t.Fatalf("%s: %v", f.Name, err)
	}
	probs, texts := plots.CheckLayout(fig, fst)
	return append(probs, rawTexts(f, texts)...)
}

// loadPaper loads a reproduction's spec and stored records, and the scale its figures are drawn at
// (small when the spec defines it, as `dmlkit figures`).
func loadPaper(t *testing.T, specPath string) (*sweep.Spec, []sweep.Record, string) {
	t.Helper()
	s, err := sweep.Load(specPath)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := sweep.NewStore(filepath.Join(s.Dir, "results")).Load()
	if err != nil {
		t.Fatal(err)
	}
	recs, _ = judge.DropSuperseded(s, recs) // as `dmlkit figures` does
	scale := ""
	if _, ok := s.Scales["small"]; ok {
		scale = "small"
	}
	return s, recs, scale
}

// TestReproductionFiguresLayout renders every figure of every paper under reproductions/ from its
// stored records, as `dmlkit figures` does, and fails on overlapping or clipped text, text under
// 8 pt, a legend or axis text over data, raw config keys or lists in any text, and a figure without
// caption or the paper figure it stands for.
func TestReproductionFiguresLayout(t *testing.T) {
	specs, _ := filepath.Glob(filepath.Join("..", "..", "reproductions", "*", "spec.yaml"))
	if len(specs) == 0 {
		t.Fatal("no reproductions/*/spec.yaml")
	}
	drawn := 0
	for _, sp := range specs {
		s, recs, scale := loadPaper(t, sp)
		st := plots.DefaultStyle()
		st.Slots = PaperSlots(s, recs, scale)
		for _, f := range s.Figures {
			if f.Caption == "" || f.StandsFor == "" {
				t.Errorf("%s: figure %s: caption and stands_for are required (they go into figures/%s/README.md)", s.Paper, f.Name, s.Paper)
			}
			for _, p := range sweep.RawTexts(f.Caption + " " + f.StandsFor) {
				if !crossReference(s, p) {
					t.Errorf("%s: figure %s: the caption shows %s", s.Paper, f.Name, p)
				}
			}
			sel, sc := sweep.SelectFor(recs, f.Scale, scale, f.Where)
			if len(sel) == 0 {
				t.Logf("%s: figure %s: no stored records at scale %q", s.Paper, f.Name, sc)
				continue
			}
			drawn++
			for _, p := range figureProblems(t, s, f, sel, st) {
				t.Errorf("%s: figure %s: %s", s.Paper, f.Name, p)
			}
		}
	}
	if drawn == 0 {
		t.Error("no figure was drawn")
	}
}

// oldOpisByLoss is the opis_by_loss figure as the TCM spec declared it before the print style:
// raw config values as bar categories, horizontal, no labels map. Its x tick labels overprint.
const oldOpisByLoss = `
paper: tcm
figures:
  - {name: opis_by_loss, kind: bar, x: loss.set.expr, y: OPIS, factor: 1000, ylabel: "OPIS x1e-3",
     where: {data.name: omniglot, data.val_classes: null, eval.every_steps: null, sampler.batch_size: 128, model.channels: [[16, 32, 64]], loss.set.options: null}}
`

// TestLayoutFlagsOldOpisByLoss: the checker fails the old opis_by_loss figure (drawn from the
// stored TCM records) on its overprinted tick labels, and passes the spec's current one.
func TestLayoutFlagsOldOpisByLoss(t *testing.T) {
	s, recs, scale := loadPaper(t, filepath.Join("..", "..", "reproductions", "tcm", "spec.yaml"))
	old := mustParse(t, oldOpisByLoss)
	f := old.Figures[0]
	sel, _ := sweep.SelectFor(recs, "", scale, f.Where)
	if len(sel) == 0 {
		t.Fatal("no stored TCM records for opis_by_loss")
	}
	probs := figureProblems(t, old, f, sel, plots.DefaultStyle())
	overlap := 0
	for _, p := range probs {
		if strings.Contains(p, " overlaps ") {
			overlap++
		}
	}
	if overlap == 0 {
		t.Errorf("old opis_by_loss: no overlapping text flagged; problems: %q", probs)
	}
	t.Logf("old opis_by_loss: %d problems, %d overlaps, e.g. %q", len(probs), overlap, probs[0])

	checkCurrentFigure(t, s, recs, scale, "opis_by_loss")
}

// checkCurrentFigure fails when the spec has no figure name or the figure, drawn from recs, has
// layout or text problems.
func checkCurrentFigure(t *testing.T, s *sweep.Spec, recs []sweep.Record, scale, name string) {
	t.Helper()
	for _, g := range s.Figures {
		if g.Name != name {
			continue
		}
		sel, _ := sweep.SelectFor(recs, g.Scale, scale, g.Where)
		if probs := figureProblems(t, s, g, sel, plots.DefaultStyle()); len(probs) > 0 {
			t.Errorf("current %s: %q", name, probs)
		}
		return
	}
	t.Errorf("the %s spec has no figure %s", s.Paper, name)
}

// oldFig9Batch is contextual's fig9_batch as the spec declared it before issue 32: grouped by λ
// alone, with the legend text "λ = 1 (L_context alone)".
const oldFig9Batch = `
paper: contextual
labels:
  "loss.set.lambda=1": "λ = 1 (L_context alone)"
  "loss.set.lambda=0": "λ = 0 (contrastive term alone)"
figures:
  - {name: fig9_batch, kind: line, x: sampler.batch_size, y: R@1, group: [loss.set.lambda], factor: 100, log_x: true,
     xlabel: "batch size", ylabel: "test R@1 (%)", where: {name: batch}}
`

// TestLayoutFlagsOldRawTexts: the figure check fails the old contextual fig9_batch (drawn from
// the stored records) on its legend's identifier "L_context", and passes the spec's current one.
func TestLayoutFlagsOldRawTexts(t *testing.T) {
	s, recs, scale := loadPaper(t, filepath.Join("..", "..", "reproductions", "contextual", "spec.yaml"))
	old := mustParse(t, oldFig9Batch)
	f := old.Figures[0]
	sel, _ := sweep.SelectFor(recs, "", scale, f.Where)
	if len(sel) == 0 {
		t.Fatal("no stored contextual records for fig9_batch")
	}
	probs := figureProblems(t, old, f, sel, plots.DefaultStyle())
	if !hasText(probs, `an identifier with an underscore "L_context"`) {
		t.Errorf("old fig9_batch: L_context not flagged; problems: %q", probs)
	}
	checkCurrentFigure(t, s, recs, scale, "fig9_batch")
}

func hasText(probs []string, sub string) bool {
	for _, p := range probs {
		if strings.Contains(p, sub) {
			return true
		}
	}
	return false
}
