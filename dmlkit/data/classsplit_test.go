package data

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"testing"
)

// This file proves that SelectClassSplit, the one class-selection function, chooses the same
// classes, in the same order, as the two paths it replaced (issue 44): the image path of
// Prepare (oldPrepare below, a verbatim copy of Prepare before the change) and the path that
// train applied to feature and file-backed ("set") datasets (oldSetPath below: SelectClasses,
// then firstClasses for max_train_classes, ClassFractionCount + firstClasses for class_fraction,
// firstClasses on the test set, ValClassSplit; translated from train's Set subsets to index
// lists). Both old paths are kept here as references only.

// oldPrepare is Prepare as it stood before SelectClassSplit (commit 69620f0).
func oldPrepare(s *Split, o PrepareOptions) (*Prepared, error) {
	if s == nil || s.Train == nil || s.Test == nil {
		return nil, fmt.Errorf("data: prepare: no train or test set")
	}
	out := &Prepared{Train: s.Train, Val: s.Val, Test: s.Test}
	if o.TrainClasses != nil || o.TrainClassList != nil {
		sel, err := SelectClasses(out.Train.Classes(), o.TrainClasses, o.TrainClassList)
		if err != nil {
			return nil, err
		}
		out.Train = out.Train.FilterClasses(func(l int32) bool { return sel[l] })
	}
	if p := o.TrainClassFraction; p != 0 {
		if o.MaxTrainClasses > 0 {
			return nil, fmt.Errorf("data.class_fraction: %g together with data.max_train_classes %d: set one of them", p, o.MaxTrainClasses)
		}
		n, err := ClassFractionCount(p, out.Train.NumClasses())
		if err != nil {
			return nil, fmt.Errorf("data.class_fraction: %w", err)
		}
		limited, c, err := LimitClasses(out.Train, n)
		if err != nil {
			return nil, fmt.Errorf("data.class_fraction: %w", err)
		}
		c.Fraction = p
		out.Train = limited
		out.Corruptions = append(out.Corruptions, c)
	}
	if n := o.MaxTrainClasses; n > 0 && n < out.Train.NumClasses() {
		limited, c, err := LimitClasses(out.Train, n)
		if err != nil {
			return nil, fmt.Errorf("data.max_train_classes: %w", err)
		}
		out.Train = limited
		out.Corruptions = append(out.Corruptions, c)
	}
	if n := o.MaxTestClasses; n > 0 {
		if cl := out.Test.Classes(); n < len(cl) {
			last := cl[n-1]
			out.Test = out.Test.FilterClasses(func(l int32) bool { return l <= last })
		}
	}
	split := func() error {
		if !(o.ValClasses > 0) {
			return nil
		}
		val, err := ValClassSplit(out.Train.Classes(), o.ValClasses, o.ValSeed)
		if err != nil {
			return err
		}
		tr := out.Train
		out.Val = tr.FilterClasses(func(l int32) bool { return val[l] })
		out.Train = tr.FilterClasses(func(l int32) bool { return !val[l] })
		out.ValClasses = nil
		for l := range val {
			out.ValClasses = append(out.ValClasses, l)
		}
		slices.Sort(out.ValClasses)
		return nil
	}
	if !o.ValAfterCorruption {
		if err := split(); err != nil {
			return nil, err
		}
	}
	if o.LabelNoise > 0 {
		noisy, c, err := LabelNoiseImages(out.Train, o.LabelNoise, o.CorruptSeed, o.LabelNoiseOther)
		if err != nil {
			return nil, fmt.Errorf("data.corrupt.label_noise: %w", err)
		}
		out.Train = noisy
		out.Corruptions = append(out.Corruptions, c)
	}
	if o.ValAfterCorruption {
		if err := split(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// oldSetPath is the class selection train applied to feature and file-backed datasets before
// SelectClassSplit (then dmlkit/train/data.go, loadData's !out.prepared branch), on index lists: it
// returns the input indices of the train, val and test views (val nil without ValClasses).
func oldSetPath(trainLabels, testLabels []int32, o PrepareOptions) (train, val, test []int, err error) {
	all := func(n int) []int {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return idx
	}
	train, test = all(len(trainLabels)), all(len(testLabels))
	classesOf := func(labels []int32, idx []int) []int32 {
		seen := map[int32]bool{}
		var out []int32
		for _, i := range idx {
			if !seen[labels[i]] {
				seen[labels[i]] = true
				out = append(out, labels[i])
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	newSubset := func(labels []int32, idx []int, keep func(int32) bool) []int {
		var out []int
		for _, i := range idx {
			if keep(labels[i]) {
				out = append(out, i)
			}
		}
		return out
	}
	firstClasses := func(labels []int32, idx []int, n int) []int {
		cl := classesOf(labels, idx)
		if n >= len(cl) {
			return idx
		}
		keep := map[int32]bool{}
		for _, c := range cl[:n] {
			keep[c] = true
		}
		return newSubset(labels, idx, func(l int32) bool { return keep[l] })
	}
	if o.TrainClasses != nil || o.TrainClassList != nil {
		sel, err := SelectClasses(classesOf(trainLabels, train), o.TrainClasses, o.TrainClassList)
		if err != nil {
			return nil, nil, nil, err
		}
		train = newSubset(trainLabels, train, func(l int32) bool { return sel[l] })
	}
	if n := o.MaxTrainClasses; n > 0 {
		train = firstClasses(trainLabels, train, n)
	}
	if p := o.TrainClassFraction; p > 0 {
		n, err := ClassFractionCount(p, len(classesOf(trainLabels, train)))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("data.class_fraction: %w", err)
		}
		train = firstClasses(trainLabels, train, n)
	}
	if n := o.MaxTestClasses; n > 0 {
		test = firstClasses(testLabels, test, n)
	}
	if f := o.ValClasses; f > 0 {
		v, err := ValClassSplit(classesOf(trainLabels, train), f, o.ValSeed)
		if err != nil {
			return nil, nil, nil, err
		}
		tr := train
		val = newSubset(trainLabels, tr, func(l int32) bool { return v[l] })
		train = newSubset(trainLabels, tr, func(l int32) bool { return !v[l] })
	}
	return train, val, test, nil
}

// newSetPath is how train applies SelectClassSplit to a set dataset, on index lists.
func newSetPath(trainLabels, testLabels []int32, o PrepareOptions) (train, val, test []int, err error) {
	cs, err := SelectClassSplit(trainLabels, testLabels, ClassOptions{TrainClasses: o.TrainClasses, TrainClassList: o.TrainClassList,
		TrainClassFraction: o.TrainClassFraction, MaxTrainClasses: o.MaxTrainClasses, MaxTestClasses: o.MaxTestClasses,
		ValClasses: o.ValClasses, ValSeed: o.ValSeed})
	if err != nil {
		return nil, nil, nil, err
	}
	pick := func(labels []int32, keep func(int32) bool) []int {
		var out []int
		for i, l := range labels {
			if keep(l) {
				out = append(out, i)
			}
		}
		return out
	}
	train, test = pick(trainLabels, keepAll), pick(testLabels, keepAll)
	if cs.TrainLimited || cs.Val != nil {
		train = pick(trainLabels, In(cs.Train))
	}
	if cs.TestLimited {
		test = pick(testLabels, In(cs.Test))
	}
	if cs.Val != nil {
		val = pick(trainLabels, In(cs.Val))
	}
	return train, val, test, nil
}

func keepAll(int32) bool { return true }

// equivLabels are the label layouts of the equivalence test: contiguous classes in order
// (Omniglot-like), shuffled sparse labels with uneven class sizes, and a single class.
func equivLabels(kind string, seed uint64) (train, test []int32) {
	r := rand.New(rand.NewPCG(seed, 44))
	switch kind {
	case "contiguous":
		for c := int32(0); c < 40; c++ {
			for j := 0; j < 3; j++ {
				train = append(train, c)
			}
		}
		for c := int32(40); c < 60; c++ {
			test = append(test, c, c)
		}
	case "sparse":
		for i := 0; i < 300; i++ {
			train = append(train, int32(r.IntN(57))*7+3)
		}
		for i := 0; i < 120; i++ {
			test = append(test, 1000+int32(r.IntN(23))*5)
		}
	case "few":
		train = []int32{9, 2, 9, 4, 2, 2, 4, 11}
		test = []int32{5, 1, 5, 1, 3}
	}
	return train, test
}

func equivImages(name string, labels []int32) *Images {
	s := &Images{Name: name, N: len(labels), H: 1, W: 2, C: 1, Labels: labels}
	for i := range labels {
		s.Pix = append(s.Pix, uint8(i), uint8(i>>8)) // pixels = image index
	}
	return s
}

// TestSelectClassSplitMatchesOldPaths runs both old paths and the new function over a grid of
// (label layout, class selection, max classes, class fraction, validation fraction, seed, label
// noise and its order) and requires identical inputs (by index), labels, validation classes and
// records, or the same error.
func TestSelectClassSplitMatchesOldPaths(t *testing.T) {
	kinds := []string{"contiguous", "sparse", "few"}
	selections := []struct{ rng, list []int }{{nil, nil}, {[]int{0, 2}, nil}, {[]int{1, 3}, nil}, {nil, []int{2, 0}}, {[]int{0, 999}, nil}}
	maxes := []int{0, 1, 2, 3, 16, 39, 40, 100}
	fracs := []float64{0, 0.07, 0.3, 0.5, 0.999, 1}
	vals := []float64{0, 0.1, 0.25, 0.5, 0.9}
	seeds := []uint64{0, 1, 7, 42}
	cases, errs := 0, 0
	for _, kind := range kinds {
		for _, seed := range seeds {
			trL, teL := equivLabels(kind, seed)
			for _, sel := range selections {
				for _, mx := range maxes {
					for _, mt := range []int{0, 1, 5, 100} {
						for _, fr := range fracs {
							if fr > 0 && mx > 0 {
								continue // rejected by train's Config.Validate for every kind
							}
							for _, vf := range vals {
								o := PrepareOptions{TrainClasses: sel.rng, TrainClassList: sel.list, MaxTrainClasses: mx, MaxTestClasses: mt,
									TrainClassFraction: fr, ValClasses: vf, ValSeed: seed}
								cases++
								// the set path
								ot, ov, oe, oerr := oldSetPath(trL, teL, o)
								nt, nv, ne, nerr := newSetPath(trL, teL, o)
								if (oerr != nil) != (nerr != nil) || (oerr != nil && oerr.Error() != nerr.Error()) {
									t.Fatalf("set %s %+v: error %v, want %v", kind, o, nerr, oerr)
								}
								if oerr != nil {
									errs++
								} else if !reflect.DeepEqual(ot, nt) || !reflect.DeepEqual(ov, nv) || !reflect.DeepEqual(oe, ne) {
									t.Fatalf("set %s %+v:\n train %v val %v test %v\nwant train %v val %v test %v", kind, o, nt, nv, ne, ot, ov, oe)
								}
								// the image path, clean and with label noise before/after the split
								for _, noise := range []struct {
									p     float64
									after bool
								}{{0, false}, {0.2, false}, {0.3, true}} {
									o.LabelNoise, o.ValAfterCorruption, o.CorruptSeed = noise.p, noise.after, seed+3
									sp := &Split{Train: equivImages("tr", trL), Test: equivImages("te", teL)}
									want, werr := oldPrepare(sp, o)
									got, gerr := Prepare(sp, o)
									if (werr != nil) != (gerr != nil) || (werr != nil && werr.Error() != gerr.Error()) {
										t.Fatalf("images %s %+v: error %v, want %v", kind, o, gerr, werr)
									}
									if werr != nil {
										continue
									}
									if oerr == nil && !noise.after && noise.p == 0 {
										// both kinds pick the same inputs
										if fmt.Sprint(got.Train.Pix) != fmt.Sprint(indexPix(nt)) {
											t.Fatalf("images %s %+v: train %v, set path %v", kind, o, got.Train.Pix, nt)
										}
									}
									if !sameImages(got.Train, want.Train) || !sameImages(got.Val, want.Val) || !sameImages(got.Test, want.Test) ||
										!reflect.DeepEqual(got.ValClasses, want.ValClasses) || !reflect.DeepEqual(got.Corruptions, want.Corruptions) {
										t.Fatalf("images %s %+v: prepared sets differ\n got %+v %v\nwant %+v %v", kind, o, got, got.Corruptions, want, want.Corruptions)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d configurations compared (%d rejected alike)", cases, errs)
	if cases < 10000 || errs == 0 {
		t.Errorf("%d cases, %d errors: the grid lost its coverage", cases, errs)
	}
}

func indexPix(idx []int) []uint8 {
	out := make([]uint8, 0, 2*len(idx))
	for _, j := range idx {
		out = append(out, uint8(j), uint8(j>>8))
	}
	return out
}

func sameImages(a, b *Images) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && a.N == b.N && a.H == b.H && a.W == b.W && a.C == b.C &&
		slices.Equal(a.Labels, b.Labels) && slices.Equal(a.Coarse, b.Coarse) && slices.Equal(a.Pix, b.Pix)
}
