package report

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestLabelMapTexts: texts by "key=value", then value, then as written; the map keeps its order
// and groups sort by it; an empty text is an error naming the entry.
func TestLabelMapTexts(t *testing.T) {
	s := mustParse(t, `
paper: toy
labels:
  rsk+tcm: RS@k + TCM
  rsk: RS@k
  "batch=64": small batch
  batch: batch size
  "[16,32]": CNN-S
`)
	lm := s.Labels
	if got := strings.Join(lm.Keys, "|"); got != "rsk+tcm|rsk|batch=64|batch|[16,32]" {
		t.Errorf("order %q", got)
	}
	for _, c := range []struct {
		key  string
		v    any
		want string
	}{
		{"loss", "rsk", "RS@k"}, {"batch", 64, "small batch"}, {"batch", 128, "128"},
		{"model.channels", []any{16, 32}, "CNN-S"}, {"loss", "other", "other"},
	} {
		if got := lm.Of(c.key, c.v); got != c.want {
			t.Errorf("Of(%s, %v) = %q, want %q", c.key, c.v, got, c.want)
		}
	}
	if lm.Name("batch") != "batch size" || lm.Name("R@1") != "R@1" {
		t.Errorf("names %q %q", lm.Name("batch"), lm.Name("R@1"))
	}
	recs := []sweep.Record{
		{Scale: "small", Config: map[string]any{"loss": "rsk"}}, {Scale: "small", Config: map[string]any{"loss": "aaa"}},
		{Scale: "small", Config: map[string]any{"loss": "rsk+tcm"}},
	}
	var got []string
	for _, g := range lm.SortGroups(sweep.GroupBy(recs, []string{"loss"})) {
		got = append(got, lm.GroupName(g))
	}
	if strings.Join(got, "|") != "RS@k + TCM|RS@k|aaa" {
		t.Errorf("group order %q", got)
	}
	if _, err := sweep.Parse([]byte("paper: x\nlabels: {rsk: \"\"}\n"), "bad.yaml"); err == nil || !strings.Contains(err.Error(), `"labels.rsk": empty text`) {
		t.Errorf("empty label: %v", err)
	}
}

// slotRecords: losses a, b, c, d over two figures: {a, b} and {a, c, d}, 2 seeds each.
func slotRecords() []sweep.Record {
	var out []sweep.Record
	for _, l := range []string{"a", "b", "c", "d"} {
		for seed := int64(0); seed < 2; seed++ {
			out = append(out, sweep.Record{Scale: "small", Seed: seed, Config: map[string]any{"loss": l, "fig": map[string]bool{"a": true, "b": true}[l]},
				Metrics: sweep.Metrics{"R@1": 0.5 + 0.1*float64(seed)}, Series: sweep.Series{"curve": {0.1, 0.2 + 0.1*float64(seed)}}})
		}
	}
	return out
}

// TestPaperSlots: a method keeps one slot across figures; slots follow the labels map, then first
// appearance; a name avoids the colours of the names it shares a figure with (with a 2-colour
// palette d skips slot 2, whose colour is a's, and takes slot 3).
func TestPaperSlots(t *testing.T) {
	s := mustParse(t, `
paper: toy
labels: {c: C, a: A}
figures:
  - {name: f1, kind: line, series: [curve], group: [loss], where: {loss: [a, b]}}
  - {name: f2, kind: line, series: [curve], group: [loss], where: {loss: [a, c, d]}}
`)
	slots := PaperSlots(s, slotRecords(), "small")
	if slots["C"] != 0 || slots["A"] != 1 || slots["b"] != 2 || slots["d"] != 3 {
		t.Errorf("slots %v, want C 0, A 1, b 2, d 3", slots)
	}
	st := plots.DefaultStyle()
	st.Slots = slots
	fig, err := BuildFigureWith(s.Figures[1], sweep.Select(slotRecords(), "small", s.Figures[1].Where), st, s.Labels)
	if err != nil {
		t.Fatal(err)
	}
	ch := fig.(*plots.Chart)
	var names []string
	for _, e := range ch.Entries {
		names = append(names, e.Text)
	}
	if strings.Join(names, "|") != "C|A|d" { // the labels map's order, then the others
		t.Errorf("legend %q", names)
	}
}

// TestFigureBandsAreStandardErrors: bands and error bars are ± std/√n over seeds: R@1 of 0.5 and
// 0.6 has std 0.0707…, SE 0.05; the curve's second point (0.2, 0.3) likewise.
func TestFigureBandsAreStandardErrors(t *testing.T) {
	recs := sweep.Select(slotRecords(), "small", map[string]any{"loss": "a"})
	g := sweep.GroupBy(recs, []string{"loss"})[0]
	if se := stdErr(g.Stat("R@1")); math.Abs(se-0.05) > 1e-12 {
		t.Errorf("SE %v, want 0.05", se)
	}
	vals, _ := seriesOf(g, "curve")
	mean, se := pointwiseSE(vals, 1)
	if math.Abs(mean[1]-0.25) > 1e-12 || se[0] != 0 || math.Abs(se[1]-0.05) > 1e-12 {
		t.Errorf("mean %v, SE %v", mean, se)
	}
}

// TestRenderFiguresTwiceIsByteIdentical: `dmlkit figures` run twice on the stored TCM results gives
// the same bytes in every format and the same README.
func TestRenderFiguresTwiceIsByteIdentical(t *testing.T) {
	s, recs, scale := loadPaper(t, filepath.Join("..", "..", "reproductions", "tcm", "spec.yaml"))
	var dirs []string
	for i := 0; i < 2; i++ {
		dir := t.TempDir()
		res := RenderFigures(nil, s, recs, scale, dir, plots.DefaultStyle())
		if _, err := WriteFigureReadme(nil, s, res, dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	files, _ := os.ReadDir(dirs[0])
	if len(files) < 3*len(s.Figures) {
		t.Fatalf("%d files for %d figures", len(files), len(s.Figures))
	}
	for _, f := range files {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f.Name()))
		b, err := os.ReadFile(filepath.Join(dirs[1], f.Name()))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two renderings (%v)", f.Name(), err)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(dirs[0], "README.md"))
	for _, f := range s.Figures {
		if !bytes.Contains(readme, []byte("## "+f.Name+" — "+f.StandsFor)) || !bytes.Contains(readme, []byte(f.Caption)) {
			t.Errorf("README lacks figure %s with its caption", f.Name)
		}
	}
	if !bytes.Contains(readme, []byte("Scale: small. Seeds 0, 1, 2, 3, 4; 5 runs (seeds) per point. Mean ± standard error")) {
		t.Errorf("README states no scale/seeds/SE for the 5-seed figures:\n%s", readme)
	}
}

// TestLogXAndHighlight: log_x puts the sweep's values as ticks on a log axis; highlight outlines
// the named heatmap cell, and a highlight matching no cell is an error.
func TestLogXAndHighlight(t *testing.T) {
	var recs []sweep.Record
	for _, b := range []int{16, 32, 64} {
		for _, m := range []float64{0.1, 0.2} {
			recs = append(recs, sweep.Record{Scale: "small", Config: map[string]any{"batch": b, "m": m}, Metrics: sweep.Metrics{"R@1": float64(b) / 100}})
		}
	}
	s := mustParse(t, `
paper: toy
figures:
  - {name: sweep, kind: line, x: batch, y: R@1, log_x: true, where: {m: 0.1}}
  - {name: grid, kind: heatmap, x: batch, y: m, metric: R@1, highlight: {batch: 32, m: 0.2}}
  - {name: nogrid, kind: heatmap, x: batch, y: m, metric: R@1, highlight: {batch: 48, m: 0.2}}
`)
	st := plots.DefaultStyle()
	fig, err := BuildFigure(s.Figures[0], sweep.Select(recs, "", s.Figures[0].Where), st)
	if err != nil {
		t.Fatal(err)
	}
	ch := fig.(*plots.Chart)
	ticks := ch.Plot.X.Tick.Marker.Ticks(16, 64)
	if len(ticks) != 3 || ticks[1].Label != "32" || math.Abs(ch.Plot.X.Scale.Normalize(16, 64, 32)-0.5) > 1e-12 {
		t.Errorf("log x: ticks %v, 32 at %v", ticks, ch.Plot.X.Scale.Normalize(16, 64, 32))
	}
	if probs, _ := plots.CheckLayout(ch, st); len(probs) > 0 {
		t.Errorf("log x layout: %q", probs)
	}
	if _, err := BuildFigure(s.Figures[1], recs, st); err != nil {
		t.Errorf("highlight: %v", err)
	}
	if _, err := BuildFigure(s.Figures[2], recs, st); err == nil || !strings.Contains(err.Error(), "no cell has") {
		t.Errorf("highlight of no cell: %v", err)
	}
}

// TestLogY: log_y puts y on a log axis (0.1 halfway between 0.01 and 1 in axis position), clips a
// band whose standard error reaches the mean to one decade below it, and refuses a non-positive
// mean.
func TestLogY(t *testing.T) {
	var recs []sweep.Record
	for _, b := range []int{16, 32, 64} {
		// two seeds: 0.01 and 0.19 at batch 16 (mean 0.1, SE 0.08), 1 and 1 elsewhere
		for seed, v := range map[int][]float64{16: {0.01, 0.19}, 32: {1, 1}, 64: {1, 1}}[b] {
			recs = append(recs, sweep.Record{Scale: "small", Seed: int64(seed), Config: map[string]any{"batch": b}, Metrics: sweep.Metrics{"u": v}})
		}
	}
	s := mustParse(t, `
paper: toy
figures:
  - {name: sweep, kind: line, x: batch, y: u, log_y: true}
`)
	st := plots.DefaultStyle()
	fig, err := BuildFigure(s.Figures[0], recs, st)
	if err != nil {
		t.Fatal(err)
	}
	ch := fig.(*plots.Chart)
	if got := ch.Plot.Y.Scale.Normalize(0.01, 1, 0.1); math.Abs(got-0.5) > 1e-12 {
		t.Errorf("log y: 0.1 normalised to %v between 0.01 and 1, want 0.5", got)
	}
	if probs, _ := plots.CheckLayout(ch, st); len(probs) > 0 {
		t.Errorf("log y layout: %q", probs)
	}
	series := []plots.Series{{Name: "a", X: []float64{1, 2}, Y: []float64{0.1, 2}, Err: []float64{0.09, 0.5}}}
	if err := logYSeries(series); err != nil {
		t.Fatal(err)
	}
	if e := series[0].Err; math.Abs(e[0]-0.09) > 1e-15 || e[1] != 0.5 { // 0.09 is not above 0.9 × 0.1: kept
		t.Errorf("errors %v, want [0.09 0.5] unchanged", e)
	}
	series = []plots.Series{{Name: "b", X: []float64{1, 2}, Y: []float64{0.1, 0.099}, Err: []float64{0.095, 0}}}
	if logYSeries(series); math.Abs(series[0].Err[0]-0.09) > 1e-15 {
		t.Errorf("SE 0.095 of mean 0.1 clipped to %v, want 0.09", series[0].Err[0])
	}
	recs = append(recs, sweep.Record{Scale: "small", Config: map[string]any{"batch": 128}, Metrics: sweep.Metrics{"u": 0}})
	if _, err := BuildFigure(s.Figures[0], recs, st); err == nil || !strings.Contains(err.Error(), "not positive") {
		t.Errorf("log y with a zero mean: %v, want an error", err)
	}
}
