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
