package data

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// classSelImages: 11 images whose labels are out of order and not contiguous; in label order the
// classes are 5, 7, 12, 30, 99 (indices 0–4) with 3, 2, 2, 3, 1 images. Pixel = image index.
func classSelImages() *Images {
	labels := []int32{30, 5, 12, 5, 30, 7, 12, 7, 99, 5, 30}
	s := &Images{Name: "sel", N: len(labels), H: 1, W: 1, C: 1, Labels: labels}
	for i := range labels {
		s.Pix = append(s.Pix, uint8(i))
	}
	return s
}

// TestPrepareTrainClasses: data.train_classes / data.train_class_list select training classes by
// their index in label order, before the class limits and the validation split; the expected
// classes and image counts are counted by hand from classSelImages' table. The test set is never
// touched.
func TestPrepareTrainClasses(t *testing.T) {
	cases := []struct {
		name      string
		o         PrepareOptions
		classes   string // training classes after Prepare
		n         int    // training images
		pix       string // their pixels (image indices), in order
		valSubset []int32
	}{
		{"range [1, 3)", PrepareOptions{TrainClasses: []int{1, 3}}, "[7 12]", 4, "[2 5 6 7]", nil},
		{"range [0, 5): all", PrepareOptions{TrainClasses: []int{0, 5}}, "[5 7 12 30 99]", 11, "[0 1 2 3 4 5 6 7 8 9 10]", nil},
		{"range [3, 5)", PrepareOptions{TrainClasses: []int{3, 5}}, "[30 99]", 4, "[0 4 8 10]", nil},
		{"list [4, 0]", PrepareOptions{TrainClassList: []int{4, 0}}, "[5 99]", 4, "[1 3 8 9]", nil},
		{"range then max_train_classes 1", PrepareOptions{TrainClasses: []int{1, 4}, MaxTrainClasses: 1}, "[7]", 2, "[5 7]", nil},
		{"range then class_fraction 0.5", PrepareOptions{TrainClasses: []int{1, 4}, TrainClassFraction: 0.5}, "[7 12]", 4, "[2 5 6 7]", nil},
	}
	for _, tc := range cases {
		test := prepImages("te", 3, 2)
		p, err := Prepare(&Split{Train: classSelImages(), Test: test}, tc.o)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := fmt.Sprint(p.Train.Classes()); got != tc.classes || p.Train.N != tc.n || fmt.Sprint(p.Train.Pix) != tc.pix {
			t.Errorf("%s: classes %s, %d images %v; want %s, %d images %s", tc.name, got, p.Train.N, p.Train.Pix, tc.classes, tc.n, tc.pix)
		}
		if p.Test != test {
			t.Errorf("%s: the test set changed", tc.name)
		}
		for _, c := range p.Corruptions {
			if c.Kind != "limited-classes" {
				t.Errorf("%s: unexpected corruption %s", tc.name, c.Kind)
			}
		}
	}
	// The validation classes come from the selected ones: [1, 4) = {7, 12, 30}, ⌈0.5·3⌉ = 2 held out.
	p, err := Prepare(&Split{Train: classSelImages(), Test: prepImages("te", 3, 2)}, PrepareOptions{TrainClasses: []int{1, 4}, ValClasses: 0.5, ValSeed: 4})
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(p.ValClasses), p.Train.Classes()...)
	slices.Sort(all)
	if len(p.ValClasses) != 2 || fmt.Sprint(all) != "[7 12 30]" {
		t.Errorf("val classes %v, train classes %v: want 2 + 1 of [7 12 30]", p.ValClasses, p.Train.Classes())
	}
}

// TestPrepareTrainClassesErrors: bad ranges and lists are refused with errors naming the option.
func TestPrepareTrainClassesErrors(t *testing.T) {
	cases := []struct {
		o    PrepareOptions
		want string
	}{
		{PrepareOptions{TrainClasses: []int{3, 3}}, "data.train_classes: [3 3]"},
		{PrepareOptions{TrainClasses: []int{0, 6}}, "data.train_classes: [0 6]: want [lo, hi) with 0 ≤ lo < hi ≤ 5"},
		{PrepareOptions{TrainClasses: []int{-1, 2}}, "data.train_classes"},
		{PrepareOptions{TrainClasses: []int{2}}, "data.train_classes: [2]"},
		{PrepareOptions{TrainClassList: []int{5}}, "data.train_class_list: index 5"},
		{PrepareOptions{TrainClassList: []int{1, 2, 1}}, "data.train_class_list: index 1 repeated"},
		{PrepareOptions{TrainClassList: []int{}}, "data.train_class_list: empty"},
		{PrepareOptions{TrainClasses: []int{0, 2}, TrainClassList: []int{1}}, "set one of them"},
	}
	for _, tc := range cases {
		_, err := Prepare(&Split{Train: classSelImages(), Test: prepImages("te", 3, 2)}, tc.o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.o, err, tc.want)
		}
	}
}
