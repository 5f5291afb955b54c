package experiments

import (
	"math"
	"slices"
	"testing"
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
