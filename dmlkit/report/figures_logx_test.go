package report

import (
	"math"
	"slices"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestDecadesIn: an ROC's false accept rates 1e-5 … 1 get a tick at every power of ten; a range
// inside one decade falls back to its own values.
func TestDecadesIn(t *testing.T) {
	got := decadesIn([]float64{1e-5, 3e-3, 0.5, 1})
	want := []float64{1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1}
	if len(got) != len(want) {
		t.Fatalf("decadesIn = %v, want %v", got, want)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*want[i] {
			t.Errorf("tick %d = %g, want %g", i, got[i], want[i])
		}
	}
	if got := decadesIn([]float64{2, 5, 2}); !slices.Equal(got, []float64{2, 5}) {
		t.Errorf("within one decade: %v, want [2 5]", got)
	}
	// 0.02 … 3: the decades 0.1 and 1 lie inside.
	if got := decadesIn([]float64{0.02, 3}); len(got) != 2 || math.Abs(got[0]-0.1) > 1e-15 || got[1] != 1 {
		t.Errorf("0.02..3: %v, want [0.1 1]", got)
	}
}

// TestNormalizeFirst: each run's series divided by its own first finite non-zero value (a leading
// NaN and 0 are skipped): [NaN, 0, 4, 2, 1] → [NaN, 0, 1, 0.5, 0.25]; a series of zeros is an error;
// a normalize other than "first" or on a figure without one series is refused.
func TestNormalizeFirst(t *testing.T) {
	nan := math.NaN()
	got, err := normalizeFirst([][]float64{{nan, 0, 4, 2, 1}, {10, 5}})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{nan, 0, 1, 0.5, 0.25}, {1, 0.5}}
	for i := range want {
		for j := range want[i] {
			if g, w := got[i][j], want[i][j]; !(g == w || (math.IsNaN(g) && math.IsNaN(w))) {
				t.Errorf("[%d][%d] = %v, want %v", i, j, g, w)
			}
		}
	}
	if _, err := normalizeFirst([][]float64{{0, 0}}); err == nil {
		t.Error("all zeros: want an error")
	}
	for _, f := range []sweep.FigureSpec{
		{Name: "a", Kind: "line", Series: []string{"s"}, Normalize: "max"},
		{Name: "b", Kind: "line", X: "x", Y: "y", Normalize: "first"},
	} {
		if err := f.Check(); err == nil {
			t.Errorf("%s: normalize %q accepted", f.Name, f.Normalize)
		}
	}
}
