package data

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
	sidecar string // the algorithm and the digest checked against
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
	return verifyCached(dataset, path, "sha256", sha256.New(), want, func(got string) error {
		return ferr(dataset, path, 0, ErrChecksum, "sha256 %s, but %s.sha256 says %s (the file changed since its checksum was taken; restore it, e.g. with `dmlkit data fetch`)",
			got, filepath.Base(path), want)
	})
}

// VerifyDigest checks the file at path against the hex digest want of algo ("sha256" or "md5").
// A mismatch is a *FileError wrapping [ErrChecksum] naming the file and both digests. As
// [VerifySidecar], a file verified once is not hashed again in this process while its size and
// modification time stay the same.
func VerifyDigest(dataset, path, algo, want string) error {
	var h hash.Hash
	switch algo {
	case "sha256":
		h = sha256.New()
	case "md5":
		h = md5.New()
	default:
		return fmt.Errorf("data: %s: %s: unknown checksum algorithm %q", dataset, path, algo)
	}
	want = strings.ToLower(want)
	return verifyCached(dataset, path, algo, h, want, func(got string) error {
		return ferr(dataset, path, 0, ErrChecksum, "%s %s, want %s (a damaged or different file; fetch it again)", algo, got, want)
	})
}

// verifyCached hashes the file at path with h and compares the hex digest with want, returning
// mismatch(got) when they differ. A file verified once (same algo and want) is not hashed again
// in this process while its size and modification time stay the same.
func verifyCached(dataset, path, algo string, h hash.Hash, want string, mismatch func(got string) error) error {
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
	stamp := checkStamp{size: st.Size(), mtime: st.ModTime(), sidecar: algo + ":" + want}
	if v, ok := checked.Load(abs); ok && v.(checkStamp) == stamp {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return ferr(dataset, path, 0, nil, "%v", err)
	}
	defer f.Close()
	if _, err := io.Copy(h, f); err != nil {
		return ferr(dataset, path, 0, nil, "reading for its checksum: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		checked.Delete(abs)
		return mismatch(got)
	}
	checked.Store(abs, stamp)
	return nil
}

// SumsEntry returns the sha256 that the sha256sum-format file sums ("<64 hex digits>  <name>"
// per line, "*" marking binary mode) lists for name; ok is false when sums does not exist or
// does not list name. A malformed line is an error naming it.
func SumsEntry(dataset, sums, name string) (digest string, ok bool, err error) {
	b, err := os.ReadFile(sums)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, ferr(dataset, sums, 0, nil, "%v", err)
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 || len(f[0]) != 64 {
			return "", false, ferr(dataset, sums, i+1, ErrFormat, "want \"<64 hex digits>  <file name>\"")
		}
		if _, err := hex.DecodeString(f[0]); err != nil {
			return "", false, ferr(dataset, sums, i+1, ErrFormat, "digest %q is not hexadecimal", f[0])
		}
		if filepath.Base(strings.TrimPrefix(f[1], "*")) == name {
			return strings.ToLower(f[0]), true, nil
		}
	}
	return "", false, nil
}
