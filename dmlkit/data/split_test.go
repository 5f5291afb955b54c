package data

import (
	"reflect"
	"strings"
	"testing"
)

// featuresOf is a feature set whose one value per input is the input's index.
func featuresOf(labels []int32) *Features {
	f := &Features{N: len(labels), F: 1, Label: labels}
	for i := range labels {
		f.X = append(f.X, float32(i))
	}
	return f
}

// inputsOf lists the input indices a set holds (image sets: the two index bytes of equivImages;
// feature sets: the value).
func inputsOf(s Set) []int {
	if s == nil {
		return nil
	}
	h, w, c := s.Dims()
	buf := make([]float32, s.Len()*h*w*c)
	idx := make([]int, s.Len())
	for i := range idx {
		idx[i] = i
	}
	s.Fill(idx, buf)
	out := make([]int, s.Len())
	for i := range out {
		if h*w*c == 2 {
			out[i] = int(buf[2*i]*255+0.5) + 256*int(buf[2*i+1]*255+0.5)
		} else {
			out[i] = int(buf[i])
		}
	}
	return out
}

// TestPrepareSetsKindsAgree: in-memory images and feature sets with the same labels get the
// same inputs in every set, the same validation classes and, for images only, the limit records.
func TestPrepareSetsKindsAgree(t *testing.T) {
	trL, teL := equivLabels("sparse", 3)
	for _, o := range []PrepareOptions{
		{},
		{MaxTrainClasses: 20, MaxTestClasses: 7, ValClasses: 0.25, ValSeed: 9},
		{TrainClasses: []int{5, 40}, TrainClassFraction: 0.5, ValClasses: 0.1, ValSeed: 2},
		{TrainClassList: []int{3, 1, 30}, MaxTestClasses: 2},
	} {
		im, err := PrepareSets(Loaded{Images: &Split{Train: equivImages("tr", trL), Test: equivImages("te", teL)}}, SetOptions{PrepareOptions: o})
		if err != nil {
			t.Fatal(err)
		}
		fe, err := PrepareSets(Loaded{Sets: &SetSplit{Train: featuresOf(trL), Test: featuresOf(teL)}}, SetOptions{PrepareOptions: o})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name string
			a, b Set
		}{{"train", im.Train, fe.Train}, {"val", im.Val, fe.Val}, {"test", im.Test, fe.Test}} {
			if a, b := inputsOf(p.a), inputsOf(p.b); !reflect.DeepEqual(a, b) {
				t.Errorf("%+v: %s: images hold inputs %v, features %v", o, p.name, a, b)
			}
		}
		if !reflect.DeepEqual(im.ValClasses, fe.ValClasses) {
			t.Errorf("%+v: validation classes %v and %v", o, im.ValClasses, fe.ValClasses)
		}
		if want := o.TrainClassFraction > 0 || o.MaxTrainClasses > 0; (len(im.Corruptions) > 0) != want || len(fe.Corruptions) > 0 {
			t.Errorf("%+v: records %d (images), %d (features)", o, len(im.Corruptions), len(fe.Corruptions))
		}
	}
}

// TestPrepareSetsAugmentAndErrors: the augmentation wraps the prepared training images only;
// errors name the option or the dataset.
func TestPrepareSetsAugmentAndErrors(t *testing.T) {
	trL, teL := equivLabels("contiguous", 1)
	src := func() Loaded {
		return Loaded{Images: &Split{Train: equivImages("tr", trL), Test: equivImages("te", teL)}}
	}
	p, err := PrepareSets(src(), SetOptions{PrepareOptions: PrepareOptions{ValClasses: 0.25, ValSeed: 1}, Augment: &AugmentOptions{Augment: "flip"}, AugmentSeed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := p.Train.(*AugmentedImages); !ok || a.Options().Augment != "flip" || a.seed != 3 {
		t.Errorf("training set %T, want *AugmentedImages (flip, seed 3)", p.Train)
	}
	if _, ok := p.Val.(ImageSet); !ok {
		t.Errorf("validation set %T, want ImageSet", p.Val)
	}
	fs := Loaded{Sets: &SetSplit{Train: featuresOf(trL), Test: featuresOf(teL)}}
	bad := featuresOf(trL)
	bad.N++
	for _, tc := range []struct {
		src  Loaded
		o    SetOptions
		want string
	}{
		{Loaded{}, SetOptions{Name: "x"}, "data x: loader returned no train or test set"},
		{Loaded{Images: &Split{Train: equivImages("tr", trL)}}, SetOptions{Name: "x"}, "no train or test set"},
		{fs, SetOptions{Name: "f", PrepareOptions: PrepareOptions{LabelNoise: 0.1}}, "data.corrupt"},
		{fs, SetOptions{Name: "f", Augment: &AugmentOptions{Augment: "flip"}}, "data.options.augment"},
		{Loaded{Sets: &SetSplit{Train: bad, Test: featuresOf(teL)}}, SetOptions{Name: "f"}, "data f: inconsistent features"},
		{fs, SetOptions{PrepareOptions: PrepareOptions{TrainClassFraction: 0.5, MaxTrainClasses: 3}}, "data.class_fraction"},
		{src(), SetOptions{Name: "g", Augment: &AugmentOptions{Augment: "random_resized_crop"}}, "data g: data.options.augment: random_resized_crop needs RGB"},
		{src(), SetOptions{PrepareOptions: PrepareOptions{ImageNoise: 0.1}}, "data.corrupt.image_pool"},
	} {
		if _, err := PrepareSets(tc.src, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}
