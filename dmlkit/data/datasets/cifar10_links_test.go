package datasets

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// tarMember is one entry of a synthetic archive: a regular file with data, or (typ set) a
// link to link, or a directory.
type tarMember struct {
	name string
	data []byte
	typ  byte
	link string
}

// writeTarGz writes members as a .tar.gz named file in dir, with a SHA256SUMS beside it that
// lists it (so the loaders' checksum check passes), and returns its path.
func writeTarGz(t *testing.T, dir, file string, members []tarMember) string {
	t.Helper()
	var b bytes.Buffer
	z := gzip.NewWriter(&b)
	tw := tar.NewWriter(z)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(m.data))}
		switch {
		case m.typ == tar.TypeXGlobalHeader: // as git archive writes it
			h = &tar.Header{Typeflag: m.typ, PAXRecords: map[string]string{"comment": "0123456789abcdef"}}
		case m.typ != 0:
			h.Typeflag, h.Linkname, h.Size = m.typ, m.link, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.typ == 0 {
			tw.Write(m.data)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	z.Close()
	p := filepath.Join(dir, file)
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b.Bytes())
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), []byte(hex.EncodeToString(sum[:])+"  "+file+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCIFAR10ArchiveLinks: a member of a CIFAR-10 archive that is a link is an error naming the
// archive, the member and what it links to (ErrFormat), in the JPEG archive (a symbolic link
// standing for one training image, which was skipped without a word before) and in the binary
// archive (a hard link); the same archives without the link load (1 + 1 JPEG images per class,
// directories and a pax global header passed over).
func TestCIFAR10ArchiveLinks(t *testing.T) {
	jpegMembers := func() []tarMember {
		ms := []tarMember{{name: "pax_global_header", typ: tar.TypeXGlobalHeader}, {name: "cifar10/", typ: tar.TypeDir}}
		for i, c := range readmeClasses {
			for _, side := range []string{"train", "test"} {
				ms = append(ms, tarMember{name: "cifar10/" + side + "/" + c + "/0000.jpg", data: jpegBytes(i)})
			}
		}
		return ms
	}
	binMembers := func() []tarMember {
		ms := []tarMember{{name: "cifar-10-batches-bin/batches.meta.txt", data: []byte(strings.Join(readmeClasses, "\n") + "\n\n")}}
		for f, name := range cifarBatchFiles {
			rec := make([]byte, cifarRecord)
			rec[0] = byte(f) // labels 0–4 train, 5 in the test batch
			ms = append(ms, tarMember{name: "cifar-10-batches-bin/" + name, data: rec})
		}
		return ms
	}
	for _, tc := range []struct {
		name, file, format string
		members            []tarMember
		bad                tarMember
		want               []string
	}{
		{
			name: "jpeg symlink", file: CIFAR10JPEGFile, format: "jpeg", members: jpegMembers(),
			bad:  tarMember{name: "cifar10/train/cat/0001.jpg", typ: tar.TypeSymlink, link: "0000.jpg"},
			want: []string{CIFAR10JPEGFile, "cifar10/train/cat/0001.jpg", "symbolic link", "0000.jpg"},
		},
		{
			name: "jpeg symlink outside", file: CIFAR10JPEGFile, format: "jpeg", members: jpegMembers(),
			bad:  tarMember{name: "cifar10/test/dog/0001.jpg", typ: tar.TypeSymlink, link: "/etc/passwd"},
			want: []string{CIFAR10JPEGFile, "cifar10/test/dog/0001.jpg", "symbolic link", "/etc/passwd"},
		},
		{
			name: "binary hard link", file: CIFAR10BinaryFile, format: "binary", members: binMembers(),
			bad:  tarMember{name: "cifar-10-batches-bin/data_batch_6.bin", typ: tar.TypeLink, link: "cifar-10-batches-bin/data_batch_1.bin"},
			want: []string{CIFAR10BinaryFile, "cifar-10-batches-bin/data_batch_6.bin", "hard link", "data_batch_1.bin"},
		},
		{
			name: "jpeg fifo", file: CIFAR10JPEGFile, format: "jpeg", members: jpegMembers(),
			bad:  tarMember{name: "cifar10/train/cat/0002.jpg", typ: tar.TypeFifo},
			want: []string{CIFAR10JPEGFile, "cifar10/train/cat/0002.jpg", "not a regular file"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTarGz(t, dir, tc.file, tc.members)
			if _, err := CIFAR10(CIFAR10Options{Root: dir, Format: tc.format, Workers: 1}); err != nil {
				t.Fatalf("the archive without the link: %v", err)
			}
			dir = t.TempDir()
			writeTarGz(t, dir, tc.file, append(tc.members, tc.bad))
			_, err := CIFAR10(CIFAR10Options{Root: dir, Format: tc.format, Workers: 1})
			if err == nil {
				t.Fatalf("the archive with %s loaded", tc.bad.name)
			}
			if !errors.Is(err, data.ErrFormat) {
				t.Errorf("error %q is not ErrFormat", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}
