package data

import (
	"context"
	"testing"
)

// TestFrozenStage: the stage computes each distinct input once, in batches, caches it on disk,
// and a second stage on the same cache directory computes nothing; every set becomes Features
// (or CutMaps) with the extractor's values and the set's labels.
func TestFrozenStage(t *testing.T) {
	trL, teL := equivLabels("few", 0)
	p, err := PrepareSets(Loaded{Images: &Split{Train: equivImages("tr", trL), Test: equivImages("te", teL)}}, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	calls, computed := 0, 0
	stage := func(cut []int) *FrozenStage {
		cache, err := OpenFeatureCache(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &FrozenStage{Field: "model.freeze_backbone", Cache: cache, Batch: 4, Cut: cut,
			Extractor: func() (func([]float32, int) ([]float32, int, error), error) {
				calls++
				return func(in []float32, n int) ([]float32, int, error) {
					computed += n
					out := make([]float32, 0, 4*2)
					for i := 0; i < 4; i++ { // features: the two pixels, reversed
						out = append(out, in[2*i+1], in[2*i])
					}
					return out, 2, nil
				}, nil
			}}
	}
	f, err := stage(nil).Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// The inputs' pixels are their indices, so train and test share digests (index i of each).
	if calls != 1 || computed != len(trL) {
		t.Errorf("extractor built %d times, %d inputs computed; want 1, %d (distinct inputs)", calls, computed, len(trL))
	}
	tr, ok := f.Train.(*Features)
	if !ok || tr.N != len(trL) || tr.F != 2 || f.Val != nil || f.Test.Len() != len(teL) {
		t.Fatalf("train %T, val %v, test %d inputs", f.Train, f.Val, f.Test.Len())
	}
	for i := range trL {
		if tr.Label[i] != trL[i] || tr.X[2*i] != 0 || tr.X[2*i+1] != float32(i)*(1.0/255) {
			t.Errorf("train input %d: label %d features %v", i, tr.Label[i], tr.X[2*i:2*i+2])
		}
	}
	c, err := stage([]int{1, 1, 2}).Apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("a second stage on the cache built the extractor again")
	}
	if h, w, ch := c.Test.Dims(); h != 1 || w != 1 || ch != 2 {
		t.Errorf("cut maps %d×%d×%d, want 1×1×2", h, w, ch)
	}
	fresh := &Images{Name: "new", N: 1, H: 1, W: 2, C: 1, Labels: []int32{1}, Pix: []uint8{200, 201}} // not cached
	if _, err := stage([]int{1, 1, 3}).Apply(context.Background(), &PreparedSets{Train: ImageSet{fresh}, Test: p.Test}); err == nil {
		t.Errorf("a prefix width that is not the cut's was accepted")
	}
}
