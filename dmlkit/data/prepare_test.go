package data

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// prepImages: n classes (labels 10, 11, …) of per images each, 1×1 pixels whose value is the
// image's index, so every image can be traced through a preparation.
func prepImages(name string, n, per int) *Images {
	s := &Images{Name: name, N: n * per, H: 1, W: 1, C: 1}
	for c := 0; c < n; c++ {
		for i := 0; i < per; i++ {
			s.Labels = append(s.Labels, int32(10+c))
			s.Pix = append(s.Pix, uint8(len(s.Pix)))
		}
	}
	return s
}

// TestValClassSplit: ⌈frac·K⌉ classes, deterministic in the seed, a function of the class set
// only, never all classes.
func TestValClassSplit(t *testing.T) {
	cl := []int32{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	a, err := ValClassSplit(cl, 0.25, 3)
	if err != nil || len(a) != 3 { // ⌈2.5⌉ = 3
		t.Fatalf("%v %v", a, err)
	}
	b, _ := ValClassSplit(cl, 0.25, 3)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("not deterministic")
	}
	for _, c := range []struct {
		frac float64
		want string
	}{{0.95, "leaves none"}, {1, "want a fraction"}, {0, "want a fraction"}} {
		if _, err := ValClassSplit(cl, c.frac, 1); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("frac %g: %v", c.frac, err)
		}
	}
}

// TestPrepareOrder: by default the validation classes are carved before the corruptions, so the
// validation images are the original ones and the noise touches ⌊frac·N_train⌋ training images;
// with ValAfterCorruption the noise is drawn over all training images first.
func TestPrepareOrder(t *testing.T) {
	s := &Split{Train: prepImages("tr", 10, 4), Test: prepImages("te", 6, 2)}
	o := PrepareOptions{MaxTrainClasses: 8, MaxTestClasses: 3, ValClasses: 0.25, ValSeed: 3, LabelNoise: 0.5, CorruptSeed: 9}
	p, err := Prepare(s, o)
	if err != nil {
		t.Fatal(err)
	}
	// Limited to the 8 smallest training classes (10–17, 32 images), then 2 of them (⌈0.25·8⌉)
	// held out; the test set keeps its 3 smallest classes.
	val, _ := ValClassSplit([]int32{10, 11, 12, 13, 14, 15, 16, 17}, 0.25, 3)
	if len(p.ValClasses) != 2 || p.Val.N != 8 || p.Train.N != 24 || p.Test.N != 6 || fmt.Sprint(p.Test.Classes()) != "[10 11 12]" {
		t.Fatalf("val classes %v, sizes val %d train %d test %d", p.ValClasses, p.Val.N, p.Train.N, p.Test.N)
	}
	for _, c := range p.ValClasses {
		if !val[c] {
			t.Errorf("val class %d not chosen by ValClassSplit", c)
		}
	}
	// The validation images are untouched originals: their labels are their classes' labels.
	for i, l := range p.Val.Labels {
		if want := int32(10 + int(p.Val.Pix[i])/4); l != want || !val[l] {
			t.Errorf("val image %d (pixel %d): label %d, want %d", i, p.Val.Pix[i], l, want)
		}
	}
	// Records: limited classes, then label noise over the 24 training images (12 changed).
	if len(p.Corruptions) != 2 || p.Corruptions[0].Kind != "limited-classes" || p.Corruptions[1].Kind != "label-noise" || len(p.Corruptions[1].Indices) != 12 {
		t.Fatalf("corruptions %+v", p.Corruptions)
	}
	for _, i := range p.Corruptions[1].Indices {
		if i >= 24 {
			t.Errorf("noise index %d outside the 24 training images", i)
		}
	}
	// After corruption: the noise is drawn over the 32 images of the 8 kept classes (16 changed),
	// then the split; the validation set holds whatever labels the noise left.
	o.ValAfterCorruption = true
	q, err := Prepare(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(q.Corruptions[1].Indices); n != 16 || q.Val.N+q.Train.N != 32 {
		t.Errorf("after corruption: %d changed, %d + %d images", n, q.Val.N, q.Train.N)
	}
	// The input split is not modified.
	if s.Train.N != 40 || !slices.Equal(s.Train.Labels, prepImages("tr", 10, 4).Labels) {
		t.Error("Prepare modified its input")
	}
	// Image noise needs a pool; errors name the option.
	if _, err := Prepare(s, PrepareOptions{ImageNoise: 0.1}); err == nil || !strings.Contains(err.Error(), "data.corrupt.image_pool") {
		t.Errorf("image noise without pool: %v", err)
	}
	pool := prepImages("pool", 2, 3)
	pool.Pix = []uint8{200, 201, 202, 203, 204, 205}
	r, err := Prepare(&Split{Train: prepImages("tr", 4, 2), Test: prepImages("te", 2, 2)}, PrepareOptions{ImageNoise: 0.5, ImagePool: pool, CorruptSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, v := range r.Train.Pix {
		if v >= 200 {
			changed++
		}
	}
	if changed != 4 || len(r.Corruptions) != 1 || r.Corruptions[0].Kind != "image-noise" {
		t.Errorf("image noise: %d of 8 replaced, records %+v", changed, r.Corruptions)
	}
}

// TestPrepareClassFraction: data.class_fraction keeps the first ⌈p·K⌉ training classes before the
// validation split. By hand: 10 classes (labels 10–19) of 4 images; p = 0.5 keeps 10–14 (20
// images), then ⌈0.2·5⌉ = 1 class is held out → 16 training images; p = 0.07 of 100 classes keeps 7
// (0.07·100 = 7.000000000000001 in floating point: a naive ceiling would keep 8); p = 0.55 of 10
// keeps ⌈5.5⌉ = 6; p = 1 keeps all. p outside (0, 1] and p with max_train_classes are errors.
func TestPrepareClassFraction(t *testing.T) {
	s := &Split{Train: prepImages("tr", 10, 4), Test: prepImages("te", 3, 2)}
	p, err := Prepare(s, PrepareOptions{TrainClassFraction: 0.5, ValClasses: 0.2, ValSeed: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Corruptions[0]
	if c.Kind != "limited-classes" || c.Fraction != 0.5 || fmt.Sprint(c.KeptClasses) != "[10 11 12 13 14]" || c.Kept != 20 {
		t.Fatalf("record %+v", c)
	}
	if len(p.ValClasses) != 1 || p.ValClasses[0] < 10 || p.ValClasses[0] > 14 || p.Val.N != 4 || p.Train.N != 16 {
		t.Fatalf("val classes %v, val %d, train %d images", p.ValClasses, p.Val.N, p.Train.N)
	}
	for _, tc := range []struct {
		p    float64
		k    int
		want int
	}{{0.07, 100, 7}, {0.55, 10, 6}, {0.5, 100, 50}, {0.9, 100, 90}, {1, 10, 10}, {0.01, 10, 1}} {
		if n, err := ClassFractionCount(tc.p, tc.k); err != nil || n != tc.want {
			t.Errorf("⌈%g·%d⌉: %d %v, want %d", tc.p, tc.k, n, err, tc.want)
		}
	}
	big := &Split{Train: prepImages("tr", 100, 1), Test: prepImages("te", 3, 2)}
	if q, err := Prepare(big, PrepareOptions{TrainClassFraction: 0.07}); err != nil || q.Train.NumClasses() != 7 {
		t.Errorf("0.07 of 100 classes: %v", err)
	}
	for _, o := range []PrepareOptions{{TrainClassFraction: 1.5}, {TrainClassFraction: -0.1}, {TrainClassFraction: 0.5, MaxTrainClasses: 3}} {
		if _, err := Prepare(s, o); err == nil || !strings.Contains(err.Error(), "data.class_fraction") {
			t.Errorf("%+v: error %v", o, err)
		}
	}
}

// TestPrepareLabelNoiseDraw: Prepare draws the paper's labels (from all classes) by default and
// the other-classes labels with LabelNoiseOther; the record carries the realised count.
func TestPrepareLabelNoiseDraw(t *testing.T) {
	s := &Split{Train: prepImages("tr", 3, 100), Test: prepImages("te", 2, 2)}
	for _, other := range []bool{false, true} {
		p, err := Prepare(s, PrepareOptions{LabelNoise: 0.5, CorruptSeed: 4, LabelNoiseOther: other})
		if err != nil {
			t.Fatal(err)
		}
		c := p.Corruptions[0]
		recount := 0
		for i, l := range p.Train.Labels {
			if l != s.Train.Labels[i] {
				recount++
			}
		}
		// 150 chosen; from all 3 classes about 50 keep their label, from the others none.
		if c.Other != other || c.Changed != recount || c.N != 300 || (other && recount != 150) || (!other && (recount < 80 || recount > 120)) {
			t.Errorf("other %v: %d changed (record %d of %d)", other, recount, c.Changed, c.N)
		}
	}
}
