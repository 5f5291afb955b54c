package classify

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/checksum"
)

// TestDamagedFilesRefused: a copy of the Coral directory's model, label file and image beside a
// SHA256SUMS of the intact bytes loads and gives the model's digest; with one bit flipped in
// any of them, Load or ReadImage fails naming the file and both digests (worked out here with
// crypto/sha256).
func TestDamagedFilesRefused(t *testing.T) {
	names := []string{v2, "imagenet_labels.txt", "cat.bmp"}
	orig := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(coral(t, n))
		if err != nil {
			t.Fatal(err)
		}
		orig[n] = b
	}
	dir := t.TempDir()
	var list strings.Builder
	for _, n := range names {
		fmt.Fprintf(&list, "%x  %s\n", sha256.Sum256(orig[n]), n)
		if err := os.WriteFile(filepath.Join(dir, n), orig[n], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums := filepath.Join(dir, checksum.SumsFile)
	if err := os.WriteFile(sums, []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, v2)
	c, err := Load(backend.MustShared(), model)
	if err != nil {
		t.Fatalf("intact copy: %v", err)
	}
	if want := fmt.Sprintf("%x", sha256.Sum256(orig[v2])); c.Digest != want {
		t.Errorf("Digest %s, want %s", c.Digest, want)
	}
	if _, err := ReadImage(filepath.Join(dir, "cat.bmp")); err != nil {
		t.Fatalf("intact image: %v", err)
	}
	for _, n := range names {
		bad := append([]byte(nil), orig[n]...)
		bad[len(bad)/2] ^= 0x01
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		stamp(t, p, 1) // same size: a new modification time, so no cached digest applies
		if n == "cat.bmp" {
			_, err = ReadImage(p)
		} else {
			_, err = Load(backend.MustShared(), model)
		}
		if err == nil {
			t.Errorf("%s with a flipped bit accepted", n)
		} else {
			for _, s := range []string{p, sums, fmt.Sprintf("%x", sha256.Sum256(orig[n])), fmt.Sprintf("%x", sha256.Sum256(bad))} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%s: error %q does not name %s", n, err, s)
				}
			}
		}
		if err := os.WriteFile(p, orig[n], 0o644); err != nil {
			t.Fatal(err)
		}
		stamp(t, p, 2)
	}
}

// stamp sets the modification time of p to a fixed time plus k seconds.
func stamp(t *testing.T, p string, k int) {
	t.Helper()
	tm := time.Date(2020, 1, 1, 0, 0, k, 0, time.UTC)
	if err := os.Chtimes(p, tm, tm); err != nil {
		t.Fatal(err)
	}
}
