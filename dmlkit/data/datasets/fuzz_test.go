package datasets

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzUnpickle: arbitrary bytes never panic the pickle decoder. The seeds run with every
// `go test`; `go test -fuzz FuzzUnpickle` explores further.
func FuzzUnpickle(f *testing.F) {
	f.Add(pickleBin([][]byte{jpegBytes(1), pngBytes()}, []bool{true}, true))
	f.Add(pickleBin([][]byte{[]byte("ab"), []byte("cd")}, []bool{false}, false))
	f.Add([]byte("\x80\x02]q\x00(h\x00h\x05e."))
	f.Add([]byte("(I01\nI00\nl."))
	for _, name := range []string{"insightface_numpy_p2.bin", "insightface_numpy_p4.bin"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		unpickle(b)
	})
}
