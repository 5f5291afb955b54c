package train

import (
	"fmt"
	"strings"
	"testing"
)

// TestDataTrainClasses: data.train_classes / data.train_class_list reach data.Prepare through
// loadData (the selected classes are those of the unselected training set at those indices in
// label order), and bad values are refused by Validate naming the field.
func TestDataTrainClasses(t *testing.T) {
	base := testConfig()
	all, err := loadData(&base)
	if err != nil {
		t.Fatal(err)
	}
	cl := classesOf(all.train)
	if len(cl) < 4 {
		t.Fatalf("synthetic set has %d classes, want ≥ 4", len(cl))
	}
	for _, tc := range []struct {
		rng, list []int
		want      string
	}{
		{[]int{1, 3}, nil, fmt.Sprint(cl[1:3])},
		{nil, []int{3, 0}, fmt.Sprint([]int32{cl[0], cl[3]})},
	} {
		cfg := testConfig()
		cfg.Data.TrainClasses, cfg.Data.TrainClassList = tc.rng, tc.list
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		s, err := loadData(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(classesOf(s.train)); got != tc.want {
			t.Errorf("train_classes %v, train_class_list %v: classes %s, want %s", tc.rng, tc.list, got, tc.want)
		}
	}
	for _, tc := range []struct {
		rng, list []int
		want      string
	}{
		{[]int{3, 1}, nil, "data.train_classes: [3 1]"},
		{[]int{0, 2, 4}, nil, "data.train_classes: [0 2 4]"},
		{[]int{0, 2}, []int{1}, "together with data.train_class_list"},
	} {
		cfg := testConfig()
		cfg.Data.TrainClasses, cfg.Data.TrainClassList = tc.rng, tc.list
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("train_classes %v, train_class_list %v: error %v, want one containing %q", tc.rng, tc.list, err, tc.want)
		}
	}
	cfg := testConfig()
	cfg.Data.TrainClasses = []int{0, len(cl) + 1}
	if _, err := loadData(&cfg); err == nil || !strings.Contains(err.Error(), "data.train_classes") {
		t.Errorf("range past the classes: error %v, want one naming data.train_classes", err)
	}
}
