// Package checksum verifies input files against the SHA256SUMS list beside them and gives their
// digests for run records. It has one job: a weights file, label file or image that a list in its
// directory names is refused when its bytes differ from the listed SHA-256, and every file's
// digest is computed once per process (per path, size and modification time) whether listed or
// not.
package checksum

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// SumsFile is the name of the checksum list looked for in a file's directory, in sha256sum's
// format: one "<64 hex digits>  <name>" per line ("*" before the name marks binary mode).
const SumsFile = "SHA256SUMS"

// ErrMismatch classifies a file whose SHA-256 differs from the one its SumsFile lists.
var ErrMismatch = errors.New("checksum mismatch")

// MismatchError is the error of a file whose SHA-256 is not the one its SumsFile lists. It
// wraps [ErrMismatch].
type MismatchError struct {
	Path string // the file
	Sums string // the list that names it
	Want string // the SHA-256 the list gives (hex)
	Got  string // the SHA-256 of the file's bytes (hex)
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("%s: sha256 %s, but %s lists %s (the file is damaged or was replaced; restore it)", e.Path, e.Got, e.Sums, e.Want)
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }

// stamp is a file's size and modification time when its digest was taken.
type stamp struct {
	size  int64
	mtime time.Time
}

type entry struct {
	stamp
	digest string
}

// digests caches, per absolute path, the SHA-256 of the file as it was at stamp.
var digests sync.Map // string → entry

// File returns the SHA-256 (64 lowercase hex digits) of the file at path. When the directory of
// path holds a [SumsFile] that lists the file's name, the digest must equal the listed one: a
// mismatch is a *[MismatchError] naming the file, the list and both digests. A file without a
// list, or not listed in it, is not checked, but its digest is returned all the same. A
// malformed list line is an error naming the list and the line. The digest is computed once
// per process while the file's size and modification time stay the same; the list is read on
// every call.
func File(path string) (string, error) {
	got, err := Digest(path)
	if err != nil {
		return "", err
	}
	sums := filepath.Join(filepath.Dir(path), SumsFile)
	want, ok, err := Listed(sums, filepath.Base(path))
	if err != nil {
		return "", err
	}
	if ok && want != got {
		return "", &MismatchError{Path: path, Sums: sums, Want: want, Got: got}
	}
	return got, nil
}

// Digest returns the SHA-256 (hex) of the file at path without looking for a list, from the
// per-process cache while the file's size and modification time stay the same.
func Digest(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	st := stamp{fi.Size(), fi.ModTime()}
	if v, ok := digests.Load(abs); ok && v.(entry).stamp == st {
		return v.(entry).digest, nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: reading for its sha256: %w", path, err)
	}
	d := hex.EncodeToString(h.Sum(nil))
	digests.Store(abs, entry{st, d})
	return d, nil
}

// Listed returns the SHA-256 (lowercase hex) that the list sums gives for name (a base name;
// an entry's name is compared without a leading "*" or "./", so entries in subdirectories never
// match); ok is false when
// sums does not exist or does not list name. A malformed line, or name listed twice with
// different digests, is an error naming sums and the line.
func Listed(sums, name string) (digest string, ok bool, err error) {
	b, err := os.ReadFile(sums)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 2 || len(f[0]) != 64 {
			return "", false, fmt.Errorf("%s:%d: want \"<64 hex digits>  <file name>\", got %q", sums, i+1, line)
		}
		d := strings.ToLower(f[0])
		if _, err := hex.DecodeString(d); err != nil {
			return "", false, fmt.Errorf("%s:%d: digest %q is not hexadecimal", sums, i+1, f[0])
		}
		if filepath.Clean(strings.TrimPrefix(f[1], "*")) != name {
			continue
		}
		if ok && d != digest {
			return "", false, fmt.Errorf("%s:%d: %s listed again with another digest (%s, before %s)", sums, i+1, name, d, digest)
		}
		digest, ok = d, true
	}
	return digest, ok, nil
}
