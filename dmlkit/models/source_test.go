package models

import (
	"testing"
	"testing/fstest"
)

// TestEmbeddedDigest: the source digest changes with one byte of a non-test file and with a
// file's name, not with a test file; the package's own digest is a SHA-256.
func TestEmbeddedDigest(t *testing.T) {
	fs := fstest.MapFS{
		"a.go":      {Data: []byte("package a\nconst x = 6\n")},
		"b.go":      {Data: []byte("package a\n")},
		"a_test.go": {Data: []byte("package a\n")},
	}
	d0 := EmbeddedDigest(fs)
	fs["a_test.go"] = &fstest.MapFile{Data: []byte("package a // changed\n")}
	if d := EmbeddedDigest(fs); d != d0 {
		t.Errorf("a test file changed the digest")
	}
	fs["a.go"] = &fstest.MapFile{Data: []byte("package a\nconst x = 7\n")}
	d1 := EmbeddedDigest(fs)
	if d1 == d0 {
		t.Errorf("one changed byte left the digest %s", d0)
	}
	fs["c.go"], fs["b.go"] = fs["b.go"], nil
	delete(fs, "b.go")
	if d := EmbeddedDigest(fs); d == d1 {
		t.Errorf("a renamed file left the digest %s", d1)
	}
	if d := SourceDigest(); len(d) != 64 || d == EmbeddedDigest(fstest.MapFS{}) {
		t.Errorf("SourceDigest() = %q, want the SHA-256 of this package's source", d)
	}
}
