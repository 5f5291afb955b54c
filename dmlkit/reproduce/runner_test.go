package reproduce

import (
	"reflect"
	"testing"
)

// TestEmb2dSeries: 7 points under a cap of 3 keep every third (indices 0, 3, 6), with their labels.
func TestEmb2dSeries(t *testing.T) {
	emb := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	labels := []int64{5, 5, 6, 6, 7, 7, 8}
	got := map[string][]float64{}
	old := emb2dMaxForTest(3)
	defer emb2dMaxForTest(old)
	emb2dSeries(emb, 7, labels, got)
	want := map[string][]float64{"emb2d/x": {0, 6, 12}, "emb2d/y": {1, 7, 13}, "emb2d/label": {5, 6, 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// emb2dMaxForTest sets emb2dMax and returns the previous value.
func emb2dMaxForTest(n int) int { old := emb2dMax; emb2dMax = n; return old }
