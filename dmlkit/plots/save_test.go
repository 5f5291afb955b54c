package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestSaveThroughSymlink: saving over a figure that is a symbolic link writes the file the link
// points to and keeps the link (dmlkit/atomicfile), and leaves no temporary file behind.
func TestSaveThroughSymlink(t *testing.T) {
	st := DefaultStyle()
	dir := t.TempDir()
	var p *Chart
	for _, c := range fixtures(t, st) {
		p = c
		break
	}
	real := filepath.Join(dir, "real.svg")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "fig.svg")
	if err := os.Symlink("real.svg", link); err != nil {
		t.Skip(err)
	}
	if _, err := Save(p, st, filepath.Join(dir, "fig"), "svg"); err != nil {
		t.Fatal(err)
	}
	if lst, err := os.Lstat(link); err != nil || lst.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("fig.svg is no longer a link: %v %v", lst.Mode(), err)
	}
	b, err := os.ReadFile(real)
	if err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Fatalf("the linked file was not rewritten: %q… %v", b[:min(len(b), 40)], err)
	}
	if st, _ := os.Stat(real); st.Mode().Perm() != 0o600 {
		t.Errorf("the linked file's mode changed to %v", st.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want fig.svg and real.svg only", names)
	}
}
