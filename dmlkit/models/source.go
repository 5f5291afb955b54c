package models

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"sort"
	"strings"
	"sync"
)

// source is this package's Go source, embedded so that a binary can name the code it was built
// from ([SourceDigest]).
//
//go:embed *.go
var source embed.FS

// SourceDigest returns the SHA-256 (hex) of this package's Go source as built into the binary:
// every non-test .go file's name and bytes, in name order. Any change to the code that builds a
// backbone's graph or reads its weights changes it (and so do changes elsewhere in the package:
// it errs on the side of a new value). Caches of what a backbone computes key on it.
var SourceDigest = sync.OnceValue(func() string { return EmbeddedDigest(source) })

// EmbeddedDigest returns the SHA-256 (hex) of the non-test .go files at the root of fsys: each
// file's name, a zero byte, its length and bytes, in name order.
func EmbeddedDigest(fsys fs.FS) string {
	names, err := fs.Glob(fsys, "*.go")
	if err != nil {
		panic(err) // the pattern is valid
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		b, err := fs.ReadFile(fsys, n)
		if err != nil {
			panic(err) // embedded files are readable
		}
		h.Write([]byte(n))
		h.Write([]byte{0})
		var l [8]byte
		for i := range l {
			l[i] = byte(len(b) >> (8 * i))
		}
		h.Write(l[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}
