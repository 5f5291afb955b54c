package main

import (
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/experiments"
)

// TestRSKClaimsParse: seed 003's claims, written before its spec and runs, parse and expand to 34
// claims (2 + 2 + 1 + 2 + 1 + 6 + 3 + 4 + 2 + 4 + 1 + 1 + 5 by hand from the for lists).
func TestRSKClaimsParse(t *testing.T) {
	cs, err := experiments.LoadClaims(filepath.Join("..", "..", "reproductions", "rsk", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 34 {
		t.Errorf("%d claims, want 34", len(cs.Claims))
	}
}
