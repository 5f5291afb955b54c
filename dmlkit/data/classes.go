package data

import (
	"fmt"
	"slices"
)

// ClassOptions are the class-level choices of a data configuration. They mean the same for every
// dataset kind (in-memory images, feature vectors, files decoded on demand), and [SelectClassSplit]
// is the one place that applies them. Zero values switch a step off.
type ClassOptions struct {
	// TrainClasses [lo, hi) or TrainClassList (not both; nil = all) select training classes by
	// their index in label order, before every other step ([SelectClasses]).
	TrainClasses   []int
	TrainClassList []int
	// TrainClassFraction keeps the first ⌈p·K⌉ of the K selected training classes
	// ([ClassFractionCount]); MaxTrainClasses the first n (not both). MaxTestClasses keeps the
	// first n test classes.
	TrainClassFraction              float64
	MaxTrainClasses, MaxTestClasses int
	// ValClasses holds out ⌈ValClasses·K⌉ of the K kept training classes ([ValClassSplit] with
	// ValSeed).
	ValClasses float64
	ValSeed    uint64
	// ValFolds ≥ 2 holds out fold ValSeed mod ValFolds of ValFolds class-disjoint folds instead
	// ([ValSplit]).
	ValFolds int
}

// ClassSplit is the outcome of [SelectClassSplit]: which labels each set keeps. All slices are
// ascending.
type ClassSplit struct {
	// Kept are the training classes after the selection and the class limits, before the
	// validation split; Train = Kept minus Val.
	Kept, Train []int32
	// Val are the held-out validation classes (nil without ValClasses).
	Val []int32
	// Test are the kept test classes.
	Test []int32
	// TrainLimited says Kept is a strict subset of the training classes (the training set must
	// be filtered); TestLimited the same of Test.
	TrainLimited, TestLimited bool
	// Limits are the "limited-classes" records of TrainClassFraction and MaxTrainClasses, in the
	// order applied (Kept: the training images they keep).
	Limits []*Corruption
}

// SelectClassSplit chooses the classes of a run from the training and test labels (one entry per
// input, any order), in this order: the class selection (TrainClasses or TrainClassList), the
// class limits (TrainClassFraction or MaxTrainClasses; MaxTestClasses), the validation split
// (ValClasses). It is the one class-selection function of every dataset kind. Errors name the
// option.
func SelectClassSplit(trainLabels, testLabels []int32, o ClassOptions) (*ClassSplit, error) {
	all := Distinct(trainLabels)
	kept := all
	if o.TrainClasses != nil || o.TrainClassList != nil {
		sel, err := SelectClasses(all, o.TrainClasses, o.TrainClassList)
		if err != nil {
			return nil, err
		}
		kept = slices.DeleteFunc(slices.Clone(all), func(l int32) bool { return !sel[l] })
	}
	out := &ClassSplit{}
	limit := func(n int) *Corruption {
		kept = kept[:n:n]
		last := kept[n-1]
		c := &Corruption{Kind: "limited-classes", KeptClasses: slices.Clone(kept)}
		in := In(kept)
		for _, l := range trainLabels {
			if l <= last && in(l) {
				c.Kept++
			}
		}
		out.Limits = append(out.Limits, c)
		return c
	}
	if p := o.TrainClassFraction; p != 0 {
		if o.MaxTrainClasses > 0 {
			return nil, fmt.Errorf("data.class_fraction: %g together with data.max_train_classes %d: set one of them", p, o.MaxTrainClasses)
		}
		n, err := ClassFractionCount(p, len(kept))
		if err != nil {
			return nil, fmt.Errorf("data.class_fraction: %w", err)
		}
		if n > len(kept) {
			return nil, fmt.Errorf("data.class_fraction: data: limited classes: n = %d, want 1..%d (no training classes)", n, len(kept))
		}
		limit(n).Fraction = p
	}
	if n := o.MaxTrainClasses; n > 0 && n < len(kept) {
		limit(n)
	}
	out.Kept = kept
	out.TrainLimited = len(kept) < len(all)
	out.Test = Distinct(testLabels)
	if n := o.MaxTestClasses; n > 0 && n < len(out.Test) {
		out.Test = out.Test[:n:n]
		out.TestLimited = true
	}
	out.Train = kept
	if o.ValClasses > 0 || o.ValFolds >= 2 {
		val, err := ValSplit(kept, o.ValClasses, o.ValFolds, o.ValSeed)
		if err != nil {
			return nil, err
		}
		out.Train = nil
		for _, l := range kept {
			if val[l] {
				out.Val = append(out.Val, l)
			} else {
				out.Train = append(out.Train, l)
			}
		}
	}
	return out, nil
}

// In returns the membership test of classes (ascending), for FilterClasses and class subsets.
func In(classes []int32) func(label int32) bool {
	return func(l int32) bool {
		_, ok := slices.BinarySearch(classes, l)
		return ok
	}
}
