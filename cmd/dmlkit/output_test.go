//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// TestOutputToDevFull: a command whose standard output (or --grad file) is /dev/full fails with
// exit 1 naming the error, and /dev/full stays a device (it was replaced by a regular file when
// run as root).
func TestOutputToDevFull(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full:", err)
	}
	defer full.Close()
	var errb bytes.Buffer
	if code := run([]string{"data", "list"}, full, &errb); code != 1 || !strings.Contains(errb.String(), "no space left") {
		t.Fatalf("data list > /dev/full: exit %d, stderr %q", code, errb.String())
	}

	t.Setenv("GOMLX_BACKEND", "go")
	dir := t.TempDir()
	emb, labels := filepath.Join(dir, "e.npy"), filepath.Join(dir, "y.npy")
	if err := npy.Write(emb, []float32{1, 0, 0, 1, -1, 0}, 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := npy.Write(labels, []int32{0, 0, 1}); err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	var out bytes.Buffer
	code := run([]string{"loss", "--name", "triplet", "--emb", emb, "--labels", labels, "--grad", "/dev/full"}, &out, &errb)
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is now %v (%v)", st.Mode(), err)
	}
	if code != 1 || !strings.Contains(errb.String(), "no space left") {
		t.Fatalf("loss --grad /dev/full: exit %d, stderr %q", code, errb.String())
	}
}
