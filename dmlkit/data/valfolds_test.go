package data

import (
	"slices"
	"testing"
)

// TestValSplitFolds: 10 classes in 4 folds are held out in parts of 2, 3, 2 and 3 classes (fold f
// takes the shuffled classes [⌊10f/4⌋, ⌊10(f+1)/4⌋)), disjoint, together every class once; seed 4
// is fold 0 again; and SelectClassSplit trains on the other classes.
func TestValSplitFolds(t *testing.T) {
	classes := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	seen := map[int32]int{}
	for seed, want := range []int{2, 3, 2, 3} {
		val, err := ValSplit(classes, 0, 4, uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		if len(val) != want {
			t.Errorf("fold %d holds %d classes, want %d", seed, len(val), want)
		}
		for c := range val {
			seen[c]++
		}
	}
	for _, c := range classes {
		if seen[c] != 1 {
			t.Errorf("class %d held out %d times over the 4 folds, want once", c, seen[c])
		}
	}
	a, _ := ValSplit(classes, 0, 4, 0)
	b, _ := ValSplit(classes, 0, 4, 4)
	if len(a) != len(b) {
		t.Errorf("seed 4 is not fold 0: %v vs %v", a, b)
	}
	for c := range a {
		if !b[c] {
			t.Errorf("seed 4 is not fold 0: %v vs %v", a, b)
		}
	}
	if _, err := ValSplit(classes, 0, 11, 0); err == nil {
		t.Error("11 folds of 10 classes: no error")
	}
	labels := make([]int32, 0, 30)
	for _, c := range classes {
		labels = append(labels, c, c, c)
	}
	cs, err := SelectClassSplit(labels, []int32{100, 101}, ClassOptions{ValFolds: 4, ValSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Val) != 3 || len(cs.Train) != 7 || slices.ContainsFunc(cs.Train, func(c int32) bool { return slices.Contains(cs.Val, c) }) {
		t.Errorf("fold 1: val %v, train %v", cs.Val, cs.Train)
	}
}
