package report

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestXMissing: the clean runs of a corruption sweep do not set the corruption key; x_missing: 0
// puts them at x = 0 (the x axis then starts at 0, the noisy runs' 0.1 and 0.2 beside them), and
// without it they are an error naming the key.
func TestXMissing(t *testing.T) {
	var recs []sweep.Record
	for seed, r1 := range []float64{0.8, 0.7} {
		recs = append(recs, sweep.Record{Scale: "small", Seed: int64(seed), Config: map[string]any{"loss": "a"}, Metrics: sweep.Metrics{"R@1": r1}})
		for _, p := range []float64{0.1, 0.2} {
			recs = append(recs, sweep.Record{Scale: "small", Seed: int64(seed), Config: map[string]any{"loss": "a", "noise": p}, Metrics: sweep.Metrics{"R@1": r1 - p}})
		}
	}
	s := mustParse(t, `
paper: toy
figures:
  - {name: withdefault, kind: line, x: noise, y: R@1, x_missing: 0}
  - {name: without, kind: line, x: noise, y: R@1}
`)
	st := plots.DefaultStyle()
	fig, err := BuildFigure(s.Figures[0], recs, st)
	if err != nil {
		t.Fatal(err)
	}
	ch := fig.(*plots.Chart)
	if ch.Plot.X.Min > 0 || ch.Plot.X.Max < 0.2 {
		t.Errorf("x axis [%g, %g] does not hold 0 … 0.2", ch.Plot.X.Min, ch.Plot.X.Max)
	}
	// The y range holds the clean mean 0.75 and the 20 % mean 0.55.
	if ch.Plot.Y.Min > 0.55 || ch.Plot.Y.Max < 0.75 {
		t.Errorf("y axis [%g, %g] does not hold 0.55 … 0.75", ch.Plot.Y.Min, ch.Plot.Y.Max)
	}
	if _, err := BuildFigure(s.Figures[1], recs, st); err == nil || !strings.Contains(err.Error(), `"noise"`) {
		t.Errorf("records without x and no x_missing: %v", err)
	}
}

// TestSortByX: the x_missing point (appended last by GroupBy) is moved to its place with its y
// and error bar: (0.1, 1, 0.1), (0.2, 2, 0.2), (0, 0, 0) → x 0, 0.1, 0.2 with y 0, 1, 2.
func TestSortByX(t *testing.T) {
	s := plots.Series{X: []float64{0.1, 0.2, 0}, Y: []float64{1, 2, 0}, Err: []float64{0.1, 0.2, 0}}
	sortByX(&s)
	for i, want := range []float64{0, 0.1, 0.2} {
		if s.X[i] != want || s.Y[i] != float64(i) || s.Err[i] != want {
			t.Errorf("point %d: (%v, %v ± %v), want (%v, %v ± %v)", i, s.X[i], s.Y[i], s.Err[i], want, i, want)
		}
	}
}

// TestTableValueLabels: a table's "key=value" label names a row value (null: the records that do
// not set the key); values without one are written as FormatValue writes them, and a bare value
// entry does not rename values (it is a header label).
func TestTableValueLabels(t *testing.T) {
	recs := []sweep.Record{
		{Scale: "small", Config: map[string]any{"loss": "a"}, Metrics: sweep.Metrics{"R@1": 0.5}},
		{Scale: "small", Config: map[string]any{"loss": "a", "noise": 0.2}, Metrics: sweep.Metrics{"R@1": 0.4}},
		{Scale: "small", Config: map[string]any{"loss": "b", "noise": 0.2}, Metrics: sweep.Metrics{"R@1": 0.3}},
	}
	ts := sweep.TableSpec{Name: "t", Rows: []string{"loss", "noise"}, Metrics: []string{"R@1"},
		Labels: map[string]string{"noise=null": "0 (clean)", "loss=a": "Loss A", "b": "not used"}}
	tab := mustBuildTable(t, ts, recs, nil)
	var got []string
	for _, r := range tab.Rows {
		got = append(got, r[0].Text+"|"+r[1].Text)
	}
	want := []string{"Loss A|0.2", "Loss A|0 (clean)", "b|0.2"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rows %q, want %q", got, want)
	}
}
