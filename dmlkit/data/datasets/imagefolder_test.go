package datasets

import (
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// writeTwoTonePNG writes a w×h PNG whose left half is (a, a, a) and right half (b, 0, 255−b).
func writeTwoTonePNG(t *testing.T, path string, w, h int, a, b uint8) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	im := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			c := color.NRGBA{a, a, a, 255}
			if x >= w/2 {
				c = color.NRGBA{b, 0, 255 - b, 255}
			}
			im.Set(x, y, c)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, im); err != nil {
		t.Fatal(err)
	}
}

// makeFolder writes one 2×2 two-tone PNG per name "split/class/file" under a new root; the
// image's left value a is its index in files (so each image is recognisable) and b = 200.
func makeFolder(t *testing.T, files ...string) string {
	root := t.TempDir()
	for i, f := range files {
		writeTwoTonePNG(t, filepath.Join(root, filepath.FromSlash(f)), 2, 2, uint8(10*i), 200)
	}
	return root
}

// classesOfFiles returns the class names of f's images, one per image.
func classesOfFiles(f *data.Files) []string {
	var out []string
	for _, l := range f.Labels {
		out = append(out, f.ClassNames[l])
	}
	return out
}

// TestListImageFolderSplits checks the stated split rules on hand-made folders.
func TestListImageFolderSplits(t *testing.T) {
	// Split folders sharing classes (the CIFAR-10 shape): labels are the classes in name order
	// (ant 0, bee 1, cat 2, dog 3); the sorted rule trains on the first K − ⌈K/2⌉ = 2 (ant,
	// bee): Train = train/ images of ant and bee, Test = test/ images of cat and dog.
	shared := makeFolder(t, "train/dog/1.png", "train/ant/1.png", "train/ant/2.png", "train/bee/1.png", "train/cat/1.png",
		"test/ant/1.png", "test/cat/1.png", "test/dog/1.png", "test/dog/2.PNG", "test/.trash/x.png")
	os.WriteFile(filepath.Join(shared, "test", "dog", ".hidden"), []byte("x"), 0o644)
	// Class folders only, five classes: the sorted rule with test fraction 0.4 tests the last
	// ⌈0.4·5⌉ = 2 (d, e).
	flat := makeFolder(t, "a/1.png", "b/1.png", "c/1.png", "d/1.png", "e/1.png", "e/2.png")
	// Split folders already class-disjoint: used as they are.
	disj := makeFolder(t, "train/x/1.png", "train/y/1.png", "test/z/1.png")
	for _, tc := range []struct {
		name              string
		root              string
		o                 ImageFolderOptions
		train, test, vals []string
	}{
		{"shared/sorted", shared, ImageFolderOptions{}, []string{"ant", "ant", "bee"}, []string{"cat", "dog", "dog"}, nil},
		{"shared/train_classes", shared, ImageFolderOptions{TrainClasses: []string{"dog"}}, []string{"dog"}, []string{"ant", "cat"}, nil},
		{"shared/closed", shared, ImageFolderOptions{Closed: true}, []string{"ant", "ant", "bee", "cat", "dog"}, []string{"ant", "cat", "dog", "dog"}, nil},
		{"shared/per_class", shared, ImageFolderOptions{PerClass: 1}, []string{"ant", "bee"}, []string{"cat", "dog"}, nil},
		{"flat/sorted", flat, ImageFolderOptions{TestFraction: 0.4}, []string{"a", "b", "c"}, []string{"d", "e", "e"}, nil},
		{"disjoint", disj, ImageFolderOptions{}, []string{"x", "y"}, []string{"z"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, val, err := ListImageFolder(tc.root, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := classesOfFiles(s.Train); !reflect.DeepEqual(got, tc.train) {
				t.Errorf("train classes %v, want %v", got, tc.train)
			}
			if got := classesOfFiles(s.Test); !reflect.DeepEqual(got, tc.test) {
				t.Errorf("test classes %v, want %v", got, tc.test)
			}
			if val != nil {
				t.Errorf("validation set without ValClasses")
			}
		})
	}
	s, _, err := ListImageFolder(shared, ImageFolderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{0, 0, 1}; !reflect.DeepEqual(s.Train.Labels, want) || s.Test.Labels[0] != 2 {
		t.Errorf("labels train %v test %v, want train %v and test starting 2 (classes in name order)", s.Train.Labels, s.Test.Labels, want)
	}
	if got := filepath.Base(s.Train.Paths[1]); got != "2.png" || !strings.Contains(s.Train.Paths[1], filepath.Join("train", "ant")) {
		t.Errorf("second training file %s, want train/ant/2.png (files in name order)", s.Train.Paths[1])
	}
}

// TestListImageFolderRandomSplit: the random rule is class-disjoint, tests ⌈f·K⌉ classes, is a
// function of the seed, and different seeds give different splits (10 classes, test fraction
// 0.3: C(10, 3) = 120 possible test sets, so 8 seeds all alike would be a broken shuffle).
func TestListImageFolderRandomSplit(t *testing.T) {
	var files []string
	for _, c := range "abcdefghij" {
		files = append(files, string(c)+"/1.png")
	}
	root := makeFolder(t, files...)
	seen := map[string]bool{}
	for seed := uint64(0); seed < 8; seed++ {
		o := ImageFolderOptions{Split: FolderSplitRandom, TestFraction: 0.3, SplitSeed: seed}
		s, _, err := ListImageFolder(root, o)
		if err != nil {
			t.Fatal(err)
		}
		again, _, _ := ListImageFolder(root, o)
		if !reflect.DeepEqual(s, again) {
			t.Fatalf("seed %d: two listings differ", seed)
		}
		tr, te := classesOfFiles(s.Train), classesOfFiles(s.Test)
		if len(te) != 3 || len(tr) != 7 {
			t.Fatalf("seed %d: %d training and %d test classes, want 7 and 3", seed, len(tr), len(te))
		}
		for _, c := range te {
			for _, d := range tr {
				if c == d {
					t.Fatalf("seed %d: class %s on both sides", seed, c)
				}
			}
		}
		seen[strings.Join(te, ",")] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 seeds gave %d distinct test sets", len(seen))
	}
}

// TestListImageFolderValClasses: ValClasses holds out ⌈0.5·2⌉ = 1 of the 2 training classes,
// class-disjointly, as ValClassSplit chooses it.
func TestListImageFolderValClasses(t *testing.T) {
	root := makeFolder(t, "a/1.png", "a/2.png", "b/1.png", "c/1.png", "d/1.png")
	s, val, err := ListImageFolder(root, ImageFolderOptions{ValClasses: 0.5, ValSeed: 7})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := data.ValClassSplit([]int32{0, 1}, 0.5, 7)
	if val == nil || len(data.Distinct(val.Labels)) != 1 || !want[val.Labels[0]] || len(data.Distinct(s.Train.Labels)) != 1 || want[s.Train.Labels[0]] {
		t.Fatalf("train %v val %v; ValClassSplit holds out %v", s.Train.Labels, val, want)
	}
}

// TestLoadImageFolderPixels: a 2×2 image with columns (0, 0, 0) and (200, 0, 55) resized to
// 4×4 by the antialiased bilinear filter (upsampling by 2: output x has centre (x+½)/2 in input
// pixels, so output columns 0 and 3 are the input columns, 1 is ¾·left + ¼·right and 2 is
// ¼·left + ¾·right): R runs 0, 50, 150, 200 and B 0, 13.75 → 14, 41.25 → 41, 55 on every row.
// At Size 2 the pixels are the file's.
func TestLoadImageFolderPixels(t *testing.T) {
	root := t.TempDir()
	writeTwoTonePNG(t, filepath.Join(root, "train", "a", "1.png"), 2, 2, 0, 200)
	writeTwoTonePNG(t, filepath.Join(root, "test", "b", "1.png"), 2, 2, 30, 200)
	s, err := LoadImageFolder(root, ImageFolderOptions{Size: 4, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.N != 1 || s.Train.H != 4 || s.Train.W != 4 || s.Train.C != 3 || s.Test.N != 1 || s.Val != nil {
		t.Fatalf("train %d×%d×%d×%d, test %d", s.Train.N, s.Train.H, s.Train.W, s.Train.C, s.Test.N)
	}
	if !reflect.DeepEqual(s.Train.ClassNames, []string{"a", "b"}) || s.Train.Labels[0] != 0 || s.Test.Labels[0] != 1 {
		t.Errorf("class names %v, labels %v / %v", s.Train.ClassNames, s.Train.Labels, s.Test.Labels)
	}
	wantR, wantB := []uint8{0, 50, 150, 200}, []uint8{0, 14, 41, 55}
	im := s.Train.Image(0)
	for y := 0; y < 4; y++ {
		for x := 0; x < 4; x++ {
			p := (y*4 + x) * 3
			if im[p] != wantR[x] || im[p+1] != 0 || im[p+2] != wantB[x] {
				t.Fatalf("pixel (%d, %d) = %v, want [%d 0 %d]", x, y, im[p:p+3], wantR[x], wantB[x])
			}
		}
	}
	n, err := LoadImageFolder(root, ImageFolderOptions{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint8{30, 30, 30, 200, 0, 55, 30, 30, 30, 200, 0, 55}; !reflect.DeepEqual(n.Test.Pix, want) {
		t.Errorf("native test pixels %v, want %v", n.Test.Pix, want)
	}
}

// TestImageFolderErrorsNameTheFile: a stray file, a truncated PNG and an undecodable image are
// errors naming the offending file.
func TestImageFolderErrorsNameTheFile(t *testing.T) {
	root := makeFolder(t, "train/a/1.png", "test/b/1.png")
	stray := filepath.Join(root, "train", "a", "notes.txt")
	os.WriteFile(stray, []byte("x"), 0o644)
	if _, _, err := ListImageFolder(root, ImageFolderOptions{}); err == nil || !strings.Contains(err.Error(), stray) || !errors.Is(err, data.ErrFormat) {
		t.Errorf("stray file: %v", err)
	}
	os.Remove(stray)
	bad := filepath.Join(root, "test", "b", "1.png")
	os.WriteFile(bad, []byte("\x89PNG\r\n\x1a\nbroken"), 0o644)
	if _, _, err := ListImageFolder(root, ImageFolderOptions{}); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, data.ErrTruncated) {
		t.Errorf("truncated PNG: %v", err)
	}
	// With the marker check off the listing passes and the decode names the file.
	if _, err := LoadImageFolder(root, ImageFolderOptions{Check: CheckNone}); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, data.ErrFormat) {
		t.Errorf("undecodable PNG: %v", err)
	}
	only := makeFolder(t, "train/a/1.png")
	if _, _, err := ListImageFolder(only, ImageFolderOptions{}); err == nil || !errors.Is(err, data.ErrMissing) {
		t.Errorf("train/ without test/: %v", err)
	}
}
