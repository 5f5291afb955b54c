package datasets

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data/internal/datatest"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// TestLoadVerifiesSidecarChecksum: an Omniglot archive and an IDX file with a .sha256 beside them
// load while they match it; with two bytes flipped in place (same size; for the archive in the
// zip header's modification time, which the loader never reads, so only the checksum can tell)
// they are refused with ErrChecksum naming the file. No checksum file is no check; a malformed one
// is an error naming it.
func TestLoadVerifiesSidecarChecksum(t *testing.T) {
	dir := t.TempDir()
	later := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	npz := func(name string) string {
		p := filepath.Join(dir, name)
		datatest.WriteOmniglotNPZ(t, p, 2, 40, 0)
		return p
	}
	loadNPZ := func(p string) error { _, err := data.LoadOmniglotFile(p, 28, 0); return err }
	idx := func(name string) string {
		p := filepath.Join(dir, name)
		b := binary.BigEndian.AppendUint32(nil, 0x801)
		b = binary.BigEndian.AppendUint32(b, 4)
		b = append(b, 3, 1, 4, 1)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	loadIDX := func(p string) error { _, _, _, err := readIDX("mnist", p, 0x801); return err }
	for _, tc := range []struct {
		name  string
		setup func() (path string, load func(string) error)
		kind  error // nil: loads
		names string
	}{
		{"npz without checksum file", func() (string, func(string) error) {
			p := npz("plain.npz")
			datatest.FlipBytes(t, p, 10, later)
			return p, loadNPZ
		}, nil, ""},
		{"npz matching", func() (string, func(string) error) {
			p := npz("ok.npz")
			datatest.WriteSidecar(t, p)
			return p, loadNPZ
		}, nil, ""},
		{"npz changed in place", func() (string, func(string) error) {
			p := npz("flipped.npz")
			datatest.WriteSidecar(t, p)
			datatest.FlipBytes(t, p, 10, later)
			return p, loadNPZ
		}, data.ErrChecksum, "flipped.npz"},
		{"idx changed in place", func() (string, func(string) error) {
			p := idx("labels.idx")
			datatest.WriteSidecar(t, p)
			datatest.FlipBytes(t, p, 8, later)
			return p, loadIDX
		}, data.ErrChecksum, "labels.idx"},
		{"idx matching", func() (string, func(string) error) {
			p := idx("ok.idx")
			datatest.WriteSidecar(t, p)
			return p, loadIDX
		}, nil, ""},
		{"malformed checksum file", func() (string, func(string) error) {
			p := npz("badsum.npz")
			os.WriteFile(p+".sha256", []byte("abc  badsum.npz\n"), 0o644)
			return p, loadNPZ
		}, data.ErrFormat, "badsum.npz.sha256"},
		{"checksum file of another file", func() (string, func(string) error) {
			p := npz("other.npz")
			datatest.WriteSidecar(t, p)
			b, _ := os.ReadFile(p + ".sha256")
			os.WriteFile(p+".sha256", []byte(strings.Replace(string(b), "other.npz", "images_background.npz", 1)), 0o644)
			return p, loadNPZ
		}, data.ErrFormat, "images_background.npz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, load := tc.setup()
			err := load(p)
			if tc.kind == nil {
				if err != nil {
					t.Fatalf("want a load, got %v", err)
				}
				return
			}
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("got %v; want %v naming %s", err, tc.kind, tc.names)
			}
		})
	}
}
