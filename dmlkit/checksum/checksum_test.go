package checksum

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// A listed file whose bytes changed is refused with the file, the list and both digests; an
// intact one gives its digest.
func TestFileMismatch(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.tflite")
	good := []byte("some weights \x00\x01\x02")
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	sums := filepath.Join(dir, SumsFile)
	if err := os.WriteFile(sums, []byte(fmt.Sprintf("%s  other.bin\n%s *w.tflite\n", sum([]byte("x")), sum(good))), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := File(p)
	if err != nil || d != sum(good) {
		t.Fatalf("intact file: %q, %v; want %s", d, err, sum(good))
	}
	bad := append([]byte(nil), good...)
	bad[3] ^= 0x01
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	// Same size: make sure the modification time differs from the cached one.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	_, err = File(p)
	var me *MismatchError
	if !errors.As(err, &me) || !errors.Is(err, ErrMismatch) {
		t.Fatalf("flipped byte: err %v, want a *MismatchError", err)
	}
	for _, s := range []string{p, sums, sum(good), sum(bad)} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
}

// A file the list does not name, or without a list, is not checked but has its digest; a
// malformed line is an error naming the list and the line.
func TestFileUnlisted(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.onnx")
	b := []byte("onnx bytes")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := File(p); err != nil || d != sum(b) {
		t.Fatalf("no list: %q, %v", d, err)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte(sum([]byte("y"))+"  sub/w.onnx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := File(p); err != nil || d != sum(b) {
		t.Fatalf("listed only in a subdirectory: %q, %v", d, err)
	}
	if err := os.WriteFile(filepath.Join(dir, SumsFile), []byte("\nabc  w.onnx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := File(p); err == nil || !strings.Contains(err.Error(), SumsFile+":2") {
		t.Fatalf("malformed list: err %v, want one naming %s:2", err, SumsFile)
	}
}
