package models

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
)

// damagedCopy writes src's bytes to a temporary directory under its own name, beside a
// SHA256SUMS that lists the intact bytes' digest, then flips one bit of byte at (0 < at < size)
// in the copy. It returns the copy's path, the list's path and both digests (crypto/sha256 over
// the bytes, independent of the code under test).
func damagedCopy(t *testing.T, src string, at int) (path, sums, want, got string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("no %s: %v", src, err)
	}
	dir := t.TempDir()
	path = filepath.Join(dir, filepath.Base(src))
	sums = filepath.Join(dir, checksum.SumsFile)
	w := sha256.Sum256(b)
	if err := os.WriteFile(sums, []byte(fmt.Sprintf("%x  %s\n", w, filepath.Base(src))), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), b...)
	bad[at%len(bad)] ^= 0x10
	g := sha256.Sum256(bad)
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, sums, hex.EncodeToString(w[:]), hex.EncodeToString(g[:])
}

// wantMismatch fails unless err names every one of the strings.
func wantMismatch(t *testing.T, what string, err error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: damaged file accepted", what)
	}
	for _, s := range names {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not name %s", what, err, s)
		}
	}
}

// TestDamagedWeightsRefused: one flipped bit in a copy of a Coral .tflite file (listed in the
// SHA256SUMS beside it) or of the ONNX fixture makes every reader refuse it, naming the file,
// the list and both digests; the intact bytes load.
func TestDamagedWeightsRefused(t *testing.T) {
	p, sums, want, got := damagedCopy(t, filepath.Join(coralDir, tfliteV2), 1<<20)
	_, err := ReadTFLite(p)
	wantMismatch(t, "ReadTFLite", err, p, sums, want, got)
	_, err = CachedTFLite(p)
	wantMismatch(t, "CachedTFLite", err, p, sums, want, got)

	p, sums, want, got = damagedCopy(t, "testdata/onnx_backbone.onnx", 5000)
	_, err = ReadONNXWeights(p)
	wantMismatch(t, "ReadONNXWeights", err, p, sums, want, got)
	_, err = OpenONNXBackbone(Config{Backbone: "onnx", Pretrained: p})
	wantMismatch(t, "OpenONNXBackbone", err, "model.pretrained", p, sums, want, got)

	// The intact file under the same list loads.
	good, err := os.ReadFile("testdata/onnx_backbone.onnx")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, good, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour) // same size: no cached digest or parse applies
	if err := os.Chtimes(p, later, later); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenONNXBackbone(Config{Backbone: "onnx", Pretrained: p}); err != nil {
		t.Errorf("intact copy: %v", err)
	}
}
