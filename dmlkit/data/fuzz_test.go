package data

import (
	"bytes"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data/internal/datatest"
)

// FuzzNPYHeader: arbitrary headers never panic.
func FuzzNPYHeader(f *testing.F) {
	f.Add(datatest.NPYBytes("|b1", []int{2, 20, 105, 105}, nil))
	f.Add(datatest.NPYBytes("<i8", []int{3}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		readNPYHeader(bytes.NewReader(b))
	})
}
