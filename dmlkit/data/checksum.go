package data

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ErrChecksum classifies a data file whose content does not match the checksum file beside it.
var ErrChecksum = errors.New("checksum mismatch")

// checked remembers, per absolute path, the file's size, modification time and checksum file
// content at the last successful verification, so a file is hashed once per process unless it
// changes.
var checked sync.Map // string → checkStamp

type checkStamp struct {
	size    int64
	mtime   time.Time
	sidecar string
}

// VerifySidecar checks path against PATH.sha256 when that file exists (sha256sum's format:
// "<64 hex digits>  <name>", or the digits alone). A mismatch is a *FileError wrapping
// [ErrChecksum] that names the file, dataset and both digests; no checksum file is no check. The
// loaders call it before reading, so a data file changed in place (bytes flipped, same size) is
// refused at load as `dmlkit data verify` would refuse it. A file verified once is not hashed
// again in this process while its size, modification time and checksum file stay the same.
func VerifySidecar(dataset, path string) error {
	side, err := os.ReadFile(path + ".sha256")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return ferr(dataset, path+".sha256", 0, nil, "%v", err)
	}
	fields := strings.Fields(string(side))
	if len(fields) == 0 || len(fields[0]) != 64 {
		return ferr(dataset, path+".sha256", 1, ErrFormat, "want \"<64 hex digits>  <file name>\"")
	}
	want := strings.ToLower(fields[0])
	if _, err := hex.DecodeString(want); err != nil {
		return ferr(dataset, path+".sha256", 1, ErrFormat, "digest %q is not hexadecimal", fields[0])
	}
	if len(fields) > 1 {
		if name := strings.TrimPrefix(fields[1], "*"); filepath.Base(name) != filepath.Base(path) {
			return ferr(dataset, path+".sha256", 1, ErrFormat, "names %q, not %s", name, filepath.Base(path))
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return ferr(dataset, path, 0, ErrMissing, "%v", err)
		}
		return ferr(dataset, path, 0, nil, "%v", err)
	}
	stamp := checkStamp{size: st.Size(), mtime: st.ModTime(), sidecar: want}
	if v, ok := checked.Load(abs); ok && v.(checkStamp) == stamp {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return ferr(dataset, path, 0, nil, "%v", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return ferr(dataset, path, 0, nil, "reading for its checksum: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		checked.Delete(abs)
		return ferr(dataset, path, 0, ErrChecksum, "sha256 %s, but %s.sha256 says %s (the file changed since its checksum was taken; restore it, e.g. with `dmlkit data fetch`)",
			got, filepath.Base(path), want)
	}
	checked.Store(abs, stamp)
	return nil
}
