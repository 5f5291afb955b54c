package datasets

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"testing"
)

// npyBytes builds a .npy v1.0 stream with a 128-byte-aligned header.
func npyBytes(descr string, shape []int, data []byte) []byte {
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

// writeOmniglotNPZ writes an Omniglot-format archive with nChar characters whose images.npy
// header declares [nChar, 20, 105, 105] but holds only nImages images. All pixels are 255
// (background) except pixel 0 of image 0, which is 0 (ink); if stray != 0, pixel 1 of image 0
// is set to stray.
func writeOmniglotNPZ(t *testing.T, path string, nChar, nImages int, stray uint8) {
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
	w.Write(npyBytes("|b1", []int{nChar, 20, 105, 105}, pix))
	lab := make([]byte, 0, nChar*20*8)
	for c := 0; c < nChar; c++ {
		for d := 0; d < 20; d++ {
			lab = binary.LittleEndian.AppendUint64(lab, uint64(c))
		}
	}
	w, _ = zw.Create("labels.npy")
	w.Write(npyBytes("<i8", []int{nChar, 20}, lab))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
}
