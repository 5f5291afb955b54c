package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func noTemp(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if filepath.Ext(e.Name()) != "" && e.Name()[0] == '.' {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func TestRegularFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.md")
	if err := WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(p)
	if b, _ := os.ReadFile(p); string(b) != "two" || st.Mode().Perm() != 0o600 {
		t.Fatalf("replaced file: %q, mode %v", b, st.Mode())
	}
	link := filepath.Join(dir, "link.md")
	if err := os.Symlink("a.md", link); err != nil {
		t.Skip(err)
	}
	if err := WriteFile(link, []byte("three"), 0o644); err != nil {
		t.Fatal(err)
	}
	if lst, _ := os.Lstat(link); lst.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link became %v", lst.Mode())
	}
	if b, _ := os.ReadFile(p); string(b) != "three" {
		t.Fatalf("through the link: %q", b)
	}
	if err := WriteFile(dir, []byte("x"), 0o644); err == nil {
		t.Fatal("writing a directory succeeded")
	}
	noTemp(t, dir)
}

func TestFIFOIsWrittenThrough(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs")
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFile(p, []byte("through the pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(p); st.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("the FIFO became %v", st.Mode())
	}
	select {
	case s := <-got:
		if s != "through the pipe" {
			t.Fatalf("reader got %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader got nothing")
	}
	noTemp(t, dir)
}

func TestDevFullReportsENOSPC(t *testing.T) {
	st, err := os.Stat("/dev/full")
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Skip("no /dev/full")
	}
	err = WriteFile("/dev/full", []byte("data"), 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err %v, want ENOSPC", err)
	}
	if st, err := os.Stat("/dev/full"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/full is now %v (%v)", st.Mode(), err)
	}
}

// TestCreateCommitAbort: a streamed file appears at its path only on Commit (a new file with the
// given mode, an existing one keeping its mode, through a link that stays a link); Abort leaves the
// old content and no temporary file; a device is written directly.
func TestCreateCommitAbort(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	f, err := Create(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("abc"))
	if _, err := os.Stat(p); err == nil {
		t.Fatal("the path exists before Commit")
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "abc" {
		t.Fatalf("content %q", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	if f.Commit() == nil {
		t.Error("a second Commit: want an error")
	}
	os.Chmod(p, 0o640)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	g, err := Create(link, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	g.Write([]byte("new"))
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Error("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("target content %q, want new", b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the old 0640", st.Mode().Perm())
	}
	h, err := Create(p, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("discarded"))
	h.Abort()
	h.Abort() // no-op
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("after Abort: %q, want new", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the directory: %v (want out.bin and link)", ents)
	}
	if _, err := Create(dir, 0o600); err == nil {
		t.Error("a directory: want an error")
	}
	d, err := Create(os.DevNull, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	d.Write([]byte("x"))
	if err := d.Commit(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(os.DevNull); st.Mode().IsRegular() {
		t.Fatal(os.DevNull + " became a regular file")
	}
}
