package data

import (
	"bytes"
	"testing"
)

// FuzzNPYHeader: arbitrary headers never panic.
func FuzzNPYHeader(f *testing.F) {
	f.Add(npyBytes("|b1", []int{2, 20, 105, 105}, nil))
	f.Add(npyBytes("<i8", []int{3}, nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		readNPYHeader(bytes.NewReader(b))
	})
}
