package data

import (
	"path/filepath"
	"reflect"
	"testing"
)

func toyImages(n, classes int) *Images {
	s := &Images{Name: "toy", N: n, H: 2, W: 2, C: 1, Pix: make([]uint8, n*4), Labels: make([]int32, n)}
	for i := 0; i < n; i++ {
		s.Labels[i] = int32(i % classes)
		for p := 0; p < 4; p++ {
			s.Pix[i*4+p] = uint8(i)
		}
	}
	return s
}

// TestLabelNoise: exactly round(frac·N) labels change, each to a different class present in
// the set, only at the recorded indices; the result is a function of the seed.
func TestLabelNoise(t *testing.T) {
	s := toyImages(1000, 7)
	out, c, err := LabelNoiseImages(s, 0.1, 42)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Indices) != 100 {
		t.Fatalf("%d indices, want round(0.1·1000) = 100", len(c.Indices))
	}
	changed := 0
	rec := map[int]int{}
	for j, i := range c.Indices {
		rec[i] = j
	}
	for i := range out.Labels {
		j, isRec := rec[i]
		if out.Labels[i] != s.Labels[i] {
			changed++
			if !isRec || c.NewLabels[j] != out.Labels[i] || c.OldLabels[j] != s.Labels[i] {
				t.Fatalf("index %d changed but not recorded correctly", i)
			}
			if out.Labels[i] < 0 || out.Labels[i] > 6 {
				t.Fatalf("new label %d not a class of the set", out.Labels[i])
			}
		}
	}
	if changed != 100 {
		t.Errorf("%d labels changed, want 100 (each chosen sample must get a different label)", changed)
	}
	if s.Labels[c.Indices[0]] != int32(c.Indices[0]%7) {
		t.Error("input modified")
	}
	_, c2, _ := LabelNoiseImages(s, 0.1, 42)
	_, c3, _ := LabelNoiseImages(s, 0.1, 43)
	if !reflect.DeepEqual(c, c2) || reflect.DeepEqual(c.Indices, c3.Indices) {
		t.Error("not deterministic in the seed")
	}
	// New labels should be spread over the other 6 classes: with 100 draws each class appears.
	seen := map[int32]bool{}
	for _, l := range c.NewLabels {
		seen[l] = true
	}
	if len(seen) != 7 {
		t.Errorf("new labels cover %d classes, want 7", len(seen))
	}
	if _, _, err := LabelNoise([]int32{1, 1}, 0.5, 1); err == nil {
		t.Error("one-class label noise accepted")
	}
	if _, _, err := LabelNoise([]int32{1, 2}, 1.5, 1); err == nil {
		t.Error("fraction 1.5 accepted")
	}
}

// TestImageNoise: round(frac·N) images are replaced by the recorded pool images, labels kept.
func TestImageNoise(t *testing.T) {
	s := toyImages(200, 4)
	pool := toyImages(50, 1)
	for i := range pool.Pix {
		pool.Pix[i] = 255 - uint8(i/4) // pool image j has all pixels 255-j, disjoint from 0..199
	}
	pool.Name = "pool"
	out, c, err := ImageNoise(s, pool, 0.2, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Indices) != 40 || len(c.Sources) != 40 || c.Pool != "pool" {
		t.Fatalf("record %+v", c)
	}
	rep := map[int]int{}
	for j, i := range c.Indices {
		rep[i] = c.Sources[j]
	}
	srcSeen := map[int]bool{}
	for i := 0; i < out.N; i++ {
		want := uint8(i)
		if src, ok := rep[i]; ok {
			want = 255 - uint8(src)
			srcSeen[src] = true
		}
		if out.Image(i)[3] != want || out.Labels[i] != s.Labels[i] {
			t.Fatalf("image %d: pixel %d label %d, want %d label %d", i, out.Image(i)[3], out.Labels[i], want, s.Labels[i])
		}
	}
	if len(srcSeen) != 40 {
		t.Errorf("%d distinct pool images, want 40 (without replacement)", len(srcSeen))
	}
	big := &Images{Name: "big", N: 1, H: 3, W: 3, C: 1, Pix: make([]uint8, 9), Labels: []int32{0}}
	if _, _, err := ImageNoise(s, big, 0.1, 1); err == nil {
		t.Error("size mismatch accepted")
	}
}

// TestLimitClassesAndRecord checks class limiting and the run-directory record round trip.
func TestLimitClassesAndRecord(t *testing.T) {
	s := toyImages(100, 10)
	out, c, err := LimitClasses(s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if out.N != 30 || out.NumClasses() != 3 || !reflect.DeepEqual(c.KeptClasses, []int32{0, 1, 2}) || c.Kept != 30 {
		t.Fatalf("kept %d images of %d classes, record %+v", out.N, out.NumClasses(), c)
	}
	if _, _, err := LimitClasses(s, 11); err == nil {
		t.Error("n > classes accepted")
	}
	_, ln, _ := LabelNoiseImages(s, 0.05, 1)
	dir := t.TempDir()
	if err := SaveCorruptions(dir, ln, c); err != nil {
		t.Fatal(err)
	}
	back, err := LoadCorruptions(filepath.Join(dir, CorruptionFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || !reflect.DeepEqual(back[0], ln) || !reflect.DeepEqual(back[1], c) {
		t.Errorf("round trip: %+v", back)
	}
}

// TestResizeImages: 4×4 → 2×2 on 2 channels averages 2×2 blocks per channel.
func TestResizeImages(t *testing.T) {
	s := &Images{Name: "x", N: 1, H: 4, W: 4, C: 2, Labels: []int32{3}, Pix: make([]uint8, 32)}
	for p := 0; p < 16; p++ {
		s.Pix[2*p] = uint8(p * 10) // channel 0: 10·(4y+x)
		s.Pix[2*p+1] = 200
	}
	out, err := ResizeImages(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	// block (0,0): pixels 0,1,4,5 → 10·2.5 = 25; (0,1): 2,3,6,7 → 45; (1,0): 8,9,12,13 → 105; (1,1): 125.
	want := []uint8{25, 200, 45, 200, 105, 200, 125, 200}
	if !reflect.DeepEqual(out.Pix, want) || out.Labels[0] != 3 {
		t.Errorf("got %v, want %v", out.Pix, want)
	}
}
