package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image/jpeg"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// readmeClasses are the class folder names ../shared/data/cifar10/README.md lists, in its order.
var readmeClasses = []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}

// cifarRecordByte is byte k (0 = label) of record j of synthetic batch file f.
func cifarRecordByte(f, j, k int) byte { return byte(f*31 + j*7 + k*13) }

// syntheticCIFARBinary builds a small archive in the binary release's format: batch file f
// (data_batch_1 … 5, test_batch) holds len(labels[f]) records with those labels and pixel bytes
// cifarRecordByte, plus batches.meta.txt.
func syntheticCIFARBinary(t *testing.T, labels [][]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	tw := tar.NewWriter(z)
	put := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(data)
	}
	put("cifar-10-batches-bin/batches.meta.txt", []byte(strings.Join(readmeClasses, "\n")+"\n\n"))
	for f, name := range cifarBatchFiles {
		var data []byte
		for j, l := range labels[f] {
			rec := make([]byte, 3073)
			for k := range rec {
				rec[k] = cifarRecordByte(f, j, k)
			}
			rec[0] = l
			data = append(data, rec...)
		}
		put("cifar-10-batches-bin/"+name, data)
	}
	tw.Close()
	z.Close()
	return b.Bytes()
}

// TestCIFAR10FetchBinary fetches a synthetic binary-format archive from a local server (its
// sha256 injected as the source's checksum), loads it and checks every pixel: record byte
// 1 + c·1024 + y·32 + x is channel c of pixel (x, y). The default split keeps training-batch
// records of labels 0–4 and test-batch records of labels 5–9; the canonical md5 refuses the
// synthetic archive; Verify reads it and reports the non-standard counts.
func TestCIFAR10FetchBinary(t *testing.T) {
	labels := [][]byte{{0, 5, 9}, {4, 4}, {1}, {7, 2}, {3}, {6, 0, 8, 5}}
	arch := syntheticCIFARBinary(t, labels)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/~kriz/"+CIFAR10BinaryFile {
			http.NotFound(w, r)
			return
		}
		w.Write(arch)
	}))
	defer srv.Close()
	sum := sha256.Sum256(arch)
	src := *Sources["cifar10"]
	src.Remotes = []Remote{{URL: srv.URL + "/~kriz/" + CIFAR10BinaryFile, File: CIFAR10BinaryFile, SHA256: hex.EncodeToString(sum[:])}}
	dir := t.TempDir()
	if _, err := Fetch(context.Background(), &src, dir, srv.Client(), nil); err != nil {
		t.Fatal(err)
	}
	// The records each side should hold, worked out from labels.
	type rec struct{ f, j int }
	var closedTrain, closedTest, openTrain, openTest []rec
	for f, ls := range labels {
		for j, l := range ls {
			if f < 5 {
				closedTrain = append(closedTrain, rec{f, j})
				if l < 5 {
					openTrain = append(openTrain, rec{f, j})
				}
			} else {
				closedTest = append(closedTest, rec{f, j})
				if l >= 5 {
					openTest = append(openTest, rec{f, j})
				}
			}
		}
	}
	check := func(name string, im *data.Images, want []rec) {
		t.Helper()
		if im.N != len(want) || im.H != 32 || im.W != 32 || im.C != 3 || !reflect.DeepEqual(im.ClassNames, readmeClasses) {
			t.Fatalf("%s: %d×%d×%d×%d, classes %v; want %d×32×32×3", name, im.N, im.H, im.W, im.C, im.ClassNames, len(want))
		}
		for i, r := range want {
			if im.Labels[i] != int32(labels[r.f][r.j]) {
				t.Fatalf("%s image %d: label %d, want %d", name, i, im.Labels[i], labels[r.f][r.j])
			}
			px := im.Image(i)
			for y := 0; y < 32; y++ {
				for x := 0; x < 32; x++ {
					for c := 0; c < 3; c++ {
						if got, want := px[(y*32+x)*3+c], cifarRecordByte(r.f, r.j, 1+c*1024+y*32+x); got != want {
							t.Fatalf("%s image %d pixel (%d, %d) channel %d = %d, want %d", name, i, x, y, c, got, want)
						}
					}
				}
			}
		}
	}
	s, err := CIFAR10(CIFAR10Options{Root: dir, Source: &src, Closed: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	check("closed train", s.Train, closedTrain)
	check("closed test", s.Test, closedTest)
	s, err = CIFAR10(CIFAR10Options{Root: dir, Source: &src})
	if err != nil {
		t.Fatal(err)
	}
	check("open-set train", s.Train, openTrain)
	check("open-set test", s.Test, openTest)
	if s, err = CIFAR10(CIFAR10Options{Root: dir, Source: &src, Size: 64}); err != nil || s.Train.H != 64 || s.Train.W != 64 || len(s.Train.Pix) != len(openTrain)*64*64*3 {
		t.Errorf("size 64: %v", err)
	}
	if _, err := CIFAR10(CIFAR10Options{Root: dir}); !errors.Is(err, data.ErrChecksum) {
		t.Errorf("synthetic archive against the published md5: %v, want a checksum error", err)
	}
	rep, err := Verify(&src, dir)
	if err == nil || !strings.Contains(err.Error(), "train has 9 images, the standard split has 50000") {
		t.Errorf("Verify of the 9/4-image archive: %v", err)
	}
	if rep == nil || rep.Counts["train"] != 9 || rep.Counts["test"] != 4 {
		t.Errorf("Verify counts %v, want train 9, test 4", rep)
	}
}

// sharedCIFAR10 returns ../shared/data/cifar10's JPEG archive or skips the test.
func sharedCIFAR10(t *testing.T) string {
	t.Helper()
	dir, err := FindCIFAR10("")
	if err != nil || !isFile(filepath.Join(dir, CIFAR10JPEGFile)) {
		t.Skipf("CIFAR-10 JPEG archive not available: %v", err)
	}
	return dir
}

// TestCIFAR10JPEGShared reads the shared JPEG archive. Its sha256, computed here, is the one
// SHA256SUMS and CIFAR10JPEGSHA256 give; a copy with one byte changed is refused (with or
// without SHA256SUMS beside it). A per-class subset has the README's class names in its order
// as labels 0–9, the README's split (airplane … deer train, dog … truck test), and image 0 is
// the member cifar10/train/airplane/0000.jpg decoded independently (image/jpeg and
// color.Color.RGBA, against the loader's draw.Draw conversion; both use the standard library's
// YCbCr→RGB rounding, so the pixels are equal).
func TestCIFAR10JPEGShared(t *testing.T) {
	dir := sharedCIFAR10(t)
	archive := filepath.Join(dir, CIFAR10JPEGFile)
	raw, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if got := hex.EncodeToString(sum[:]); got != CIFAR10JPEGSHA256 || !strings.Contains(string(sums), got+"  "+CIFAR10JPEGFile) {
		t.Fatalf("sha256 %s; SHA256SUMS %q; CIFAR10JPEGSHA256 %s", got, sums, CIFAR10JPEGSHA256)
	}
	s, err := CIFAR10(CIFAR10Options{Root: dir, Format: "jpeg", PerClass: 3, Closed: true})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.Train.ClassNames, readmeClasses) || s.Train.N != 30 || s.Test.N != 30 {
		t.Fatalf("classes %v, %d train / %d test images; want the README's ten, 30 / 30", s.Train.ClassNames, s.Train.N, s.Test.N)
	}
	for i := 0; i < 30; i++ {
		if s.Train.Labels[i] != int32(i/3) || s.Test.Labels[i] != int32(i/3) {
			t.Fatalf("image %d: labels %d / %d, want %d", i, s.Train.Labels[i], s.Test.Labels[i], i/3)
		}
	}
	want := jpegMember(t, raw, "cifar10/train/airplane/0000.jpg")
	if !bytes.Equal(s.Train.Image(0), want) {
		t.Errorf("train image 0 differs from cifar10/train/airplane/0000.jpg decoded independently")
	}
	open, err := CIFAR10(CIFAR10Options{Root: dir, Format: "jpeg", PerClass: 2})
	if err != nil {
		t.Fatal(err)
	}
	var tr, te []string
	for _, l := range open.Train.Labels {
		tr = append(tr, readmeClasses[l])
	}
	for _, l := range open.Test.Labels {
		te = append(te, readmeClasses[l])
	}
	if w := []string{"airplane", "airplane", "automobile", "automobile", "bird", "bird", "cat", "cat", "deer", "deer"}; !reflect.DeepEqual(tr, w) {
		t.Errorf("open-set training classes %v, want %v", tr, w)
	}
	if w := []string{"dog", "dog", "frog", "frog", "horse", "horse", "ship", "ship", "truck", "truck"}; !reflect.DeepEqual(te, w) {
		t.Errorf("open-set test classes %v, want %v", te, w)
	}
	// A damaged copy: with SHA256SUMS beside it, and alone (the built-in digest).
	bad := t.TempDir()
	raw[len(raw)/2] ^= 1
	os.WriteFile(filepath.Join(bad, CIFAR10JPEGFile), raw, 0o644)
	if _, err := CIFAR10(CIFAR10Options{Root: bad, PerClass: 1}); !errors.Is(err, data.ErrChecksum) || !strings.Contains(err.Error(), CIFAR10JPEGFile) {
		t.Errorf("damaged copy: %v", err)
	}
	os.WriteFile(filepath.Join(bad, "SHA256SUMS"), sums, 0o644)
	if _, err := CIFAR10(CIFAR10Options{Root: bad, PerClass: 1}); !errors.Is(err, data.ErrChecksum) {
		t.Errorf("damaged copy beside SHA256SUMS: %v", err)
	}
}

// jpegMember decodes one member of the JPEG archive to [32, 32, 3] bytes through image.At.
func jpegMember(t *testing.T, archive []byte, name string) []byte {
	t.Helper()
	z, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(z)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			t.Fatalf("%s not in the archive", name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != name {
			continue
		}
		im, err := jpeg.Decode(tr)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, 0, 32*32*3)
		for y := 0; y < 32; y++ {
			for x := 0; x < 32; x++ {
				r, g, b, _ := im.At(x, y).RGBA()
				out = append(out, byte(r>>8), byte(g>>8), byte(b>>8))
			}
		}
		return out
	}
}

// TestCIFAR10JPEGSharedCounts loads the whole shared archive at its native 32 px (about 5 s on
// two cores) and counts the README's 5,000 training and 1,000 test images per class.
func TestCIFAR10JPEGSharedCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("loads all 60,000 images")
	}
	dir := sharedCIFAR10(t)
	s, err := CIFAR10(CIFAR10Options{Root: dir, Format: "jpeg", Closed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, side := range []struct {
		im   *data.Images
		want int
	}{{s.Train, 5000}, {s.Test, 1000}} {
		count := make([]int, 10)
		for _, l := range side.im.Labels {
			count[l]++
		}
		for c, n := range count {
			if n != side.want {
				t.Errorf("%s: class %s has %d images, want %d", side.im.Name, readmeClasses[c], n, side.want)
			}
		}
	}
}
