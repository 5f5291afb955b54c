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
