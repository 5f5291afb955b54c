package data

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// writeSidecar writes path.sha256 in sha256sum's format for path's current content.
func writeSidecar(t *testing.T, path string) {
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

// flipBytes flips two bytes of path in place (same size) and gives the file modification time
// mtime.
func flipBytes(t *testing.T, path string, at int, mtime time.Time) {
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

// TestVerifySidecarOncePerFile: a verified file is not hashed again while its size and
// modification time stay the same (the documented cache: bytes changed with the time restored pass
// unseen), and is hashed again when either changes.
func TestVerifySidecarOncePerFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.bin")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	writeSidecar(t, p)
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(p, t0, t0)
	if err := VerifySidecar("x", p); err != nil {
		t.Fatal(err)
	}
	flipBytes(t, p, 0, t0) // same size, same time: cached
	if err := VerifySidecar("x", p); err != nil {
		t.Fatalf("same size and time: hashed again (%v)", err)
	}
	os.Chtimes(p, t0.Add(time.Second), t0.Add(time.Second))
	if err := VerifySidecar("x", p); !errors.Is(err, ErrChecksum) {
		t.Fatalf("new modification time: got %v, want ErrChecksum", err)
	}
}
