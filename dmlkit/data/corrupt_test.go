package data

import (
	"path/filepath"
	"reflect"
	"slices"
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

// TestLabelNoiseOther: with other (data.corrupt.label_noise_other) exactly round(frac·N) labels
// change, each to a different class present in the set, only at the recorded indices; the result
// is a function of the seed.
func TestLabelNoiseOther(t *testing.T) {
	s := toyImages(1000, 7)
	out, c, err := LabelNoiseImages(s, 0.1, 42, true)
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
	if changed != 100 || c.Changed != 100 || c.ChangedFraction != 0.1 || c.N != 1000 || !c.Other {
		t.Errorf("%d labels changed (record %d, %g of %d), want 100 (each chosen sample must get a different label)", changed, c.Changed, c.ChangedFraction, c.N)
	}
	if s.Labels[c.Indices[0]] != int32(c.Indices[0]%7) {
		t.Error("input modified")
	}
	_, c2, _ := LabelNoiseImages(s, 0.1, 42, true)
	_, c3, _ := LabelNoiseImages(s, 0.1, 43, true)
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

// TestLabelNoisePaperDraw: by default (seed 004 §4.4, "assigning random labels") a chosen sample's
// new label is drawn from ALL classes, so some keep their true label by chance.
//
// By hand: 12 samples of 3 classes (labels i mod 3), fraction 0.5 → round(6) = 6 chosen. A second
// implementation of the draw (the same streams: partial Fisher–Yates for the indices, one IntN(K)
// per chosen sample) gives the labels; the record's Changed equals a recount of the labels that
// differ, the record keeps every chosen sample (changed or not), and the realised fraction is
// Changed/12. At scale: 20,000 samples of 4 classes, fraction 0.5 → 10,000 chosen, of which about
// 1/K = 1/4 (2,500, binomial sd √(10⁴·¾·¼) ≈ 43) keep their label; the old draw kept none.
func TestLabelNoisePaperDraw(t *testing.T) {
	labels := make([]int32, 12)
	for i := range labels {
		labels[i] = int32(i % 3)
	}
	out, c, err := LabelNoise(labels, 0.5, 7)
	if err != nil {
		t.Fatal(err)
	}
	// Second implementation of the draw.
	idx := pickIndices(12, 6, 7)
	r := newRand(7 ^ 0x5bd1e995)
	want := slices.Clone(labels)
	for _, i := range idx {
		want[i] = int32(r.IntN(3)) // classes are 0, 1, 2
	}
	if !slices.Equal(out, want) || !slices.Equal(c.Indices, idx) {
		t.Fatalf("labels %v (indices %v), second implementation %v (indices %v)", out, c.Indices, want, idx)
	}
	recount := 0
	for i := range labels {
		if out[i] != labels[i] {
			recount++
		}
	}
	if c.Changed != recount || c.N != 12 || c.ChangedFraction != float64(recount)/12 || c.Other || len(c.NewLabels) != 6 {
		t.Errorf("record changed %d (%g of %d), recount %d; record %+v", c.Changed, c.ChangedFraction, c.N, recount, c)
	}
	if got := RealisedOf([]*Corruption{c}); got.LabelChanged != recount || got.LabelChangedFrac != float64(recount)/12 || got.ImagesReplaced != 0 {
		t.Errorf("RealisedOf = %+v, want %d labels changed", got, recount)
	}

	big := make([]int32, 20000)
	for i := range big {
		big[i] = int32(i % 4)
	}
	bout, bc, err := LabelNoise(big, 0.5, 11)
	if err != nil {
		t.Fatal(err)
	}
	kept, changed := 0, 0
	for j, i := range bc.Indices {
		if bc.NewLabels[j] == bc.OldLabels[j] {
			kept++
		}
		if bout[i] != big[i] {
			changed++
		}
	}
	if len(bc.Indices) != 10000 || kept+changed != 10000 || bc.Changed != changed {
		t.Fatalf("%d chosen, %d kept, %d changed, record %d", len(bc.Indices), kept, changed, bc.Changed)
	}
	if kept < 2500-4*43 || kept > 2500+4*43 {
		t.Errorf("%d of 10,000 chosen samples kept their label, want ≈ 2,500 (1/K)", kept)
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
	if c.Changed != 40 || c.N != 200 || c.ChangedFraction != 0.2 {
		t.Errorf("record: %d of %d replaced (%g), want 40 of 200", c.Changed, c.N, c.ChangedFraction)
	}
	if got := RealisedOf([]*Corruption{c}); got.ImagesReplaced != 40 || got.ImagesReplacedFrac != 0.2 || got.LabelChanged != 0 {
		t.Errorf("RealisedOf = %+v", got)
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
	_, ln, _ := LabelNoiseImages(s, 0.05, 1, false)
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
