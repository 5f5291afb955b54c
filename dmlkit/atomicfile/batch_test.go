package atomicfile

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestBatchCommit(t *testing.T) {
	dir := t.TempDir()
	same := filepath.Join(dir, "same.md")
	old := filepath.Join(dir, "old.md")
	for _, p := range []string{same, old} {
		if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := NewBatch()
	neu := filepath.Join(dir, "sub", "deeper", "new.md")
	for _, w := range []struct{ path, data string }{{old, "first"}, {same, "old"}, {neu, "new"}, {old, "second"}} {
		if err := b.WriteFile(w.path, []byte(w.data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing on disk before Commit; reads see the staged content.
	if got, _ := os.ReadFile(old); string(got) != "old" {
		t.Fatalf("%s written before Commit: %q", old, got)
	}
	if _, err := os.Stat(neu); err == nil {
		t.Fatalf("%s created before Commit", neu)
	}
	if got, err := b.ReadFile(old); err != nil || string(got) != "second" {
		t.Fatalf("ReadFile(staged) = %q, %v; want the last write", got, err)
	}
	if got, err := b.ReadFile(filepath.Join(dir, ".", "same.md")); err != nil || string(got) != "old" {
		t.Fatalf("ReadFile(same) = %q, %v", got, err)
	}
	if got, want := b.Files(), []string{old, same, neu}; !slices.Equal(got, want) {
		t.Fatalf("Files() = %v, want %v", got, want)
	}
	stSame, _ := os.Stat(same)
	changed, err := b.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{old, neu}; !slices.Equal(changed, want) {
		t.Fatalf("Commit() = %v, want %v (the unchanged file is not rewritten)", changed, want)
	}
	for p, want := range map[string]string{old: "second", same: "old", neu: "new"} {
		if got, _ := os.ReadFile(p); string(got) != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o600 {
		t.Errorf("replaced file lost its mode: %v", st.Mode())
	}
	if st, _ := os.Stat(same); !st.ModTime().Equal(stSame.ModTime()) {
		t.Errorf("unchanged file was rewritten")
	}
	noTemp(t, dir)
	if len(b.Files()) != 0 {
		t.Errorf("batch not empty after Commit: %v", b.Files())
	}
}

// A file that cannot be written (its directory's place is taken by a file) fails the commit in
// its first pass: no other file is replaced, no directory is left behind.
func TestBatchCommitFailsWhole(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.md")
	if err := os.WriteFile(a, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocker"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b := NewBatch()
	b.WriteFile(a, []byte("new"), 0o644)
	b.WriteFile(filepath.Join(dir, "fresh", "x.md"), []byte("x"), 0o644)
	b.WriteFile(filepath.Join(dir, "blocker", "y.md"), []byte("y"), 0o644)
	if _, err := b.Commit(); err == nil {
		t.Fatal("Commit succeeded under a file named like a directory")
	}
	if got, _ := os.ReadFile(a); string(got) != "old" {
		t.Errorf("%s = %q after a failed commit, want the old content", a, got)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); err == nil {
		t.Errorf("directory created by a failed commit is left behind")
	}
	noTemp(t, dir)
}

// TestBatchFIFO: a named pipe in a batch is written through at Commit, never read to compare.
func TestBatchFIFO(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no named pipes")
	}
	p := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skip(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	b := NewBatch()
	b.WriteFile(p, []byte("through"), 0o644)
	done := make(chan error, 1)
	go func() { _, err := b.Commit(); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Commit blocked on a named pipe")
	}
	if s := <-got; s != "through" {
		t.Errorf("pipe read %q", s)
	}
	if st, err := os.Lstat(p); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the pipe was replaced: %v %v", st.Mode(), err)
	}
}
