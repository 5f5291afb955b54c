package data

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data/internal/datatest"
)

// TestVerifySidecarOncePerFile: a verified file is not hashed again while its size and
// modification time stay the same (the documented cache: bytes changed with the time restored pass
// unseen), and is hashed again when either changes.
func TestVerifySidecarOncePerFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f.bin")
	os.WriteFile(p, []byte("0123456789"), 0o644)
	datatest.WriteSidecar(t, p)
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	os.Chtimes(p, t0, t0)
	if err := VerifySidecar("x", p); err != nil {
		t.Fatal(err)
	}
	datatest.FlipBytes(t, p, 0, t0) // same size, same time: cached
	if err := VerifySidecar("x", p); err != nil {
		t.Fatalf("same size and time: hashed again (%v)", err)
	}
	os.Chtimes(p, t0.Add(time.Second), t0.Add(time.Second))
	if err := VerifySidecar("x", p); !errors.Is(err, ErrChecksum) {
		t.Fatalf("new modification time: got %v, want ErrChecksum", err)
	}
}
