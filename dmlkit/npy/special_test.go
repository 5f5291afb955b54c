//go:build linux

package npy

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestWriteToFIFO: a named pipe is written through, not replaced by a regular file.
func TestWriteToFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "grad.npy")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- b
	}()
	data := []float32{1, 2, 3}
	werr := Write(p, data, 3)
	st, err := os.Lstat(p)
	if err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after Write (err %v) the FIFO is %v (stat err %v)", werr, st.Mode(), err)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	var want bytes.Buffer
	_ = Encode(&want, data, 3)
	select {
	case b := <-got:
		if !bytes.Equal(b, want.Bytes()) {
			t.Fatalf("reader got %d bytes, want %d", len(b), want.Len())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader got nothing")
	}
	if _, err := os.Stat(p + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("left %s.tmp behind: %v", p, err)
	}
}

// TestWriteToDevFull: a device is written in place (never replaced, even as root) and its error
// (ENOSPC) is returned.
func TestWriteToDevFull(t *testing.T) {
	before, err := os.Stat("/dev/full")
	if err != nil || before.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/full character device")
	}
	err = Write("/dev/full", []float32{1, 2, 3}, 3)
	after, serr := os.Stat("/dev/full")
	if serr != nil || after.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is now %v (%v)", after.Mode(), serr)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Write to /dev/full: %v, want ENOSPC", err)
	}
	if _, err := os.Stat("/dev/full.tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("left /dev/full.tmp behind: %v", err)
	}
}
