package data

import (
	"reflect"
	"testing"
)

func TestImagesHelpers(t *testing.T) {
	s := toyImages(30, 6) // labels i%6, pixels i
	s.Coarse = make([]int32, 30)
	for i := range s.Coarse {
		s.Coarse[i] = int32(i % 2)
	}
	sub := s.Subset([]int{5, 0})
	if sub.N != 2 || sub.Labels[0] != 5 || sub.Image(0)[0] != 5 || sub.Coarse[0] != 1 || sub.Validate() != nil {
		t.Errorf("Subset: %+v", sub)
	}
	tr, va, err := HoldOutClasses(s, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if tr.NumClasses() != 4 || va.NumClasses() != 2 || tr.N+va.N != 30 {
		t.Errorf("HoldOutClasses: %d + %d classes, %d + %d images", tr.NumClasses(), va.NumClasses(), tr.N, va.N)
	}
	for _, l := range va.Classes() {
		for _, m := range tr.Classes() {
			if l == m {
				t.Fatal("train and val share a class")
			}
		}
	}
	tr2, _, _ := HoldOutClasses(s, 2, 3)
	if !reflect.DeepEqual(tr.Labels, tr2.Labels) {
		t.Error("not deterministic")
	}
	if _, _, err := HoldOutClasses(s, 6, 1); err == nil {
		t.Error("holding out every class accepted")
	}
	c, err := Concat("c", s, sub)
	if err != nil || c.N != 32 || c.Labels[31] != 0 || len(c.Coarse) != 32 {
		t.Errorf("Concat: %v %+v", err, c)
	}
	f := sub.Float32()
	if f[0] != 5.0/255 {
		t.Errorf("Float32: %v", f[0])
	}
	o := OpenSet(&Split{Train: s, Test: s}, func(l int32) bool { return l < 3 })
	if o.Train.N != 15 || o.Test.N != 15 || o.Test.Classes()[0] != 3 {
		t.Errorf("OpenSet: %v", o)
	}
}
