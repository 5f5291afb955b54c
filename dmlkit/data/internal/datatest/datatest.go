// Package datatest holds the fixture writers that the tests of dmlkit/data and its subpackages
// share: .npy streams written independently of dmlkit/npy (so a reader test checks the reader
// against a second implementation, including deliberately inconsistent headers), Omniglot-format
// archives, and sha256 sidecars.
package datatest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NPYBytes builds a .npy v1.0 stream with a 128-byte-aligned header.
func NPYBytes(descr string, shape []int, data []byte) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	sh := strings.Join(dims, ", ")
	if len(shape) == 1 {
		sh += ","
	}
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, sh)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	out := []byte("\x93NUMPY\x01\x00")
	out = binary.LittleEndian.AppendUint16(out, uint16(len(h)))
	out = append(out, h...)
	return append(out, data...)
}

// WriteOmniglotNPZ writes an Omniglot-format archive with nChar characters whose images.npy
// header declares [nChar, 20, 105, 105] but holds only nImages images. All pixels are 255
// (background) except pixel 0 of image 0, which is 0 (ink); if stray != 0, pixel 1 of image 0
// is set to stray.
func WriteOmniglotNPZ(t testing.TB, path string, nChar, nImages int, stray uint8) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	pix := make([]byte, nImages*105*105)
	for i := range pix {
		pix[i] = 255
	}
	pix[0] = 0
	if stray != 0 {
		pix[1] = stray
	}
	w, _ := zw.Create("images.npy")
	w.Write(NPYBytes("|b1", []int{nChar, 20, 105, 105}, pix))
	lab := make([]byte, 0, nChar*20*8)
	for c := 0; c < nChar; c++ {
		for d := 0; d < 20; d++ {
			lab = binary.LittleEndian.AppendUint64(lab, uint64(c))
		}
	}
	w, _ = zw.Create("labels.npy")
	w.Write(NPYBytes("<i8", []int{nChar, 20}, lab))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}

// WriteSidecar writes path.sha256 in sha256sum's format for path's current content.
func WriteSidecar(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	line := fmt.Sprintf("%s  %s\n", hex.EncodeToString(sum[:]), filepath.Base(path))
	if err := os.WriteFile(path+".sha256", []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
}

// FlipBytes flips two bytes of path in place (same size) and gives the file modification time
// mtime.
func FlipBytes(t testing.TB, path string, at int, mtime time.Time) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[at] ^= 0xff
	b[at+1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}
