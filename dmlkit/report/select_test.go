package report

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestSelectWhere: scalar, alternatives, list-valued keys and null (= key absent).
func TestSelectWhere(t *testing.T) {
	recs := []sweep.Record{
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a+t", "ch": []any{16, 32}}},
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a+t", "ch": []any{16, 32}, "o": map[string]any{"m": 0.8}}},
		{Scale: "small", Seed: 0, Config: map[string]any{"e": "a", "ch": []any{8, 16}}},
		{Scale: "full", Seed: 0, Config: map[string]any{"e": "a"}},
	}
	for _, tc := range []struct {
		where map[string]any
		want  []int
	}{
		{map[string]any{"e": "a+t"}, []int{0, 1}},
		{map[string]any{"e": "a+t", "o.m": nil}, []int{0}},
		{map[string]any{"o.m": 0.8}, []int{1}},
		{map[string]any{"ch": []any{[]any{16, 32}}}, []int{0, 1}},
		{map[string]any{"e": []any{"a", "a+t"}, "ch": []any{[]any{8, 16}}}, []int{2}},
		{map[string]any{"e": "a+t", "o.m": []any{nil, 0.8}}, []int{0, 1}},
		{map[string]any{"o.m": []any{nil, 0.5}}, []int{0, 2}},
	} {
		got := sweep.Select(recs, "small", tc.where)
		if len(got) != len(tc.want) {
			t.Errorf("where %v: %d records, want %d", tc.where, len(got), len(tc.want))
			continue
		}
		for i, j := range tc.want {
			if sweep.FormatValue(got[i].Config) != sweep.FormatValue(recs[j].Config) {
				t.Errorf("where %v: record %d is %v, want %v", tc.where, i, got[i].Config, recs[j].Config)
			}
		}
	}
}

// TestParetoPointsSizeAndMark: marker radius ∝ √(batch / smallest batch) (so area ∝ batch), filled
// markers for the groups whose loss contains "tcm", means over seeds per group with their SE.
func TestParetoPointsSizeAndMark(t *testing.T) {
	rec := func(expr string, batch int, seed int64, r1, opis float64) sweep.Record {
		return sweep.Record{Scale: "small", Seed: seed, Config: map[string]any{"loss": map[string]any{"expr": expr}, "batch": batch},
			Metrics: sweep.Metrics{"R@1": r1, "OPIS": opis}}
	}
	recs := []sweep.Record{
		rec("sap", 64, 0, 0.5, 0.02), rec("sap", 64, 1, 0.7, 0.04),
		rec("sap+tcm", 256, 0, 0.8, 0.01),
	}
	f := sweep.FigureSpec{Kind: "pareto", X: "R@1", Y: "OPIS", Group: []string{"loss.expr", "batch"}, Hue: "batch",
		Size: "batch", Mark: "tcm", MarkKey: "loss.expr", NoLabels: true}
	pts, mark, err := paretoPoints(f, recs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || mark != "with tcm" {
		t.Fatalf("points %+v, mark %q", pts, mark)
	}
	want := []struct {
		x, y, size float64
		marked     bool
	}{{0.6, 0.03, 1, false}, {0.8, 0.01, 2, true}} // √(256/64) = 2
	for i, w := range want {
		p := pts[i]
		if math.Abs(p.X-w.x) > 1e-12 || math.Abs(p.Y-w.y) > 1e-12 || math.Abs(p.Size-w.size) > 1e-12 || p.Marked != w.marked || p.Label != "" {
			t.Errorf("point %d = %+v, want %+v", i, p, w)
		}
	}
	// Two seeds: SE = std/√2 (R@1 0.5, 0.7: std 0.1414…, SE 0.1; OPIS 0.02, 0.04: SE 0.01); one seed: none.
	if math.Abs(pts[0].XErr-0.1) > 1e-12 || math.Abs(pts[0].YErr-0.01) > 1e-12 || pts[1].XErr != 0 || pts[1].YErr != 0 {
		t.Errorf("error bars %+v", pts)
	}
	f.Size = "loss.expr"
	if _, _, err := paretoPoints(f, recs, 1); err == nil {
		t.Error("a non-numeric size key was accepted")
	}
}
