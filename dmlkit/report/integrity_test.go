package report

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

func mustBuildTable(t *testing.T, spec sweep.TableSpec, recs []sweep.Record, refs []sweep.Reference) *Table {
	t.Helper()
	tab, err := BuildTable(spec, recs, refs)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// seedRecords are the runs of loss.name=rsk for seeds 0–2 plus, when tuning, a tuning run of
// seed 0 on a held-out class split (data.val_classes=0.1): a where without the split key catches
// it in the same row.
func seedRecords(tuning bool) []sweep.Record {
	cfg := func(seed int64, extra map[string]any) map[string]any {
		c := map[string]any{"loss": map[string]any{"name": "rsk"}, "train": map[string]any{"seed": seed}}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	recs := []sweep.Record{
		{Hash: "aaa0", Scale: "small", Seed: 0, Config: cfg(0, nil), Metrics: sweep.Metrics{"R@1": 0.50}},
		{Hash: "aaa1", Scale: "small", Seed: 1, Config: cfg(1, nil), Metrics: sweep.Metrics{"R@1": 0.52}},
		{Hash: "aaa2", Scale: "small", Seed: 2, Config: cfg(2, nil), Metrics: sweep.Metrics{"R@1": 0.54}},
	}
	if tuning {
		recs = append(recs, sweep.Record{Hash: "tun0", Scale: "small", Seed: 0,
			Config: cfg(0, map[string]any{"data": map[string]any{"val_classes": 0.1}}), Metrics: sweep.Metrics{"R@1": 0.90}})
	}
	return recs
}

// TestTablesAndFiguresRefuseTwoRecordsOfOneSeed: a table row or a figure point catching two
// records of one seed is an error naming the group, the seed, both records and the keys in which
// they differ; before, the table printed "mean ± std, seeds 4" over three seeds and two
// configurations (0.615 ± 0.19), and the figure drew the same mean.
func TestTablesAndFiguresRefuseTwoRecordsOfOneSeed(t *testing.T) {
	tspec := sweep.TableSpec{Name: "main", Rows: []string{"loss.name"}, Metrics: []string{"R@1"}}
	fspec := sweep.FigureSpec{Name: "bars", Kind: "bar", X: "loss.name", Y: "R@1"}
	want := `group "loss.name=rsk" has two records of seed 0 (aaa0 and tun0, which differ in data.val_classes): narrow its where`

	// One record per seed: the row is the mean over three seeds.
	tab := mustBuildTable(t, tspec, seedRecords(false), nil)
	if got := tab.Markdown(); !strings.Contains(got, "| rsk | 0.52 ± 0.02 | 3 |") {
		t.Errorf("table over seeds 0–2:\n%s", got)
	}
	if _, err := BuildFigure(fspec, seedRecords(false), plots.DefaultStyle()); err != nil {
		t.Errorf("figure over seeds 0–2: %v", err)
	}

	_, err := BuildTable(tspec, seedRecords(true), nil)
	if err == nil || err.Error() != `table "main": row `+want {
		t.Errorf("table with two records of seed 0: error %v\nwant: table \"main\": row %s", err, want)
	}
	_, err = BuildFigure(fspec, seedRecords(true), plots.DefaultStyle())
	if err == nil || err.Error() != "point "+want {
		t.Errorf("figure with two records of seed 0: error %v\nwant: point %s", err, want)
	}

	// Through the spec: the table and the figure fail, name themselves, and write nothing.
	s := &sweep.Spec{Paper: "toy", Tables: []sweep.TableSpec{tspec}, Figures: []sweep.FigureSpec{fspec}}
	dir := t.TempDir()
	for _, r := range RenderTables(nil, s, seedRecords(true), "small", dir) {
		if r.Err == nil || errors.Is(r.Err, ErrNoRecords) || !strings.Contains(r.Err.Error(), want) || len(r.Files) > 0 {
			t.Errorf("RenderTables: %s: err %v, files %v", r.Name, r.Err, r.Files)
		}
	}
	for _, r := range RenderFigures(nil, s, seedRecords(true), "small", dir, plots.DefaultStyle(), "png") {
		if r.Err == nil || !strings.Contains(r.Err.Error(), `figure "bars": point `+want) || len(r.Files) > 0 {
			t.Errorf("RenderFigures: %s: err %v, files %v", r.Name, r.Err, r.Files)
		}
	}
}

// TestTableListsFailedRuns: a run stored as failed (diverged) that the table's where selects is
// left out of its row and named below the table, in Markdown and LaTeX; before, the row showed
// one seed fewer without a word.
func TestTableListsFailedRuns(t *testing.T) {
	recs := seedRecords(false)
	recs[2].Metrics, recs[2].Failed, recs[2].FailedStep = nil, "diverged: loss is NaN", 120
	s := &sweep.Spec{Paper: "toy", Tables: []sweep.TableSpec{{Name: "main", Rows: []string{"loss.name"}, Metrics: []string{"R@1"}, Labels: map[string]string{"loss.name": "loss"}}}}
	res := RenderTables(nil, s, recs, "small", t.TempDir())
	if len(res) != 1 || res[0].Err != nil {
		t.Fatalf("%+v", res)
	}
	md, tex := res[0].Table.Markdown(), res[0].Table.LaTeX("")
	const want = "Left out: 1 run stored as failed — loss rsk, seed 2 (aaa2; step 120: diverged: loss is NaN)."
	if !strings.Contains(md, "| rsk | 0.51 ± 0.01 | 2 |") || !strings.Contains(md, want) {
		t.Errorf("markdown:\n%s\nwant the row over seeds 0, 1 and the line %q", md, want)
	}
	if !strings.Contains(tex, `\footnotesize Left out: 1 run stored as failed`) {
		t.Errorf("LaTeX without the failed run:\n%s", tex)
	}
}

// TestFigureNaNMetricNamed: a NaN metric a figure draws is an error naming the record and the
// metric (before: the plotter's "NaN data point").
func TestFigureNaNMetricNamed(t *testing.T) {
	recs := seedRecords(false)
	recs[1].Metrics["R@1"] = math.NaN()
	_, err := BuildFigure(sweep.FigureSpec{Name: "bars", Kind: "bar", X: "loss.name", Y: "R@1"}, recs, plots.DefaultStyle())
	if want := `metric "R@1" is NaN in record aaa1 (seed 1, scale small)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v, want %q", err, want)
	}
}

// TestTableNaNMetricNamed: a NaN metric of a table is an error naming the table, the metric, the
// record and the file and line it was read from (before: a row "NaN ± NaN", written).
func TestTableNaNMetricNamed(t *testing.T) {
	st := sweep.NewStore(t.TempDir())
	recs := seedRecords(false)
	recs[1].Metrics["R@1"] = math.NaN()
	for i := range recs {
		h, err := sweep.Hash(recs[i].Config)
		if err != nil {
			t.Fatal(err)
		}
		recs[i].Hash = h
		if err := st.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	loaded, _, err := st.Load()
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildTable(sweep.TableSpec{Name: "main", Rows: []string{"loss.name"}, Metrics: []string{"R@1"}}, loaded, nil)
	want := fmt.Sprintf(`table "main": metric "R@1" is NaN in record %s (seed 1, scale small) at %s:2`, recs[1].Hash, st.File("small"))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nwant %q", err, want)
	}
}
