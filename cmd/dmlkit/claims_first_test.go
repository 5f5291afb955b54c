package main

import (
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
)

// TestRSKClaimsParse: seed 003's claims, written before its spec and runs, parse and expand to 34
// claims (2 + 2 + 1 + 2 + 1 + 6 + 3 + 4 + 2 + 4 + 1 + 1 + 5 by hand from the for lists), and 10 more
// in the pretrained regime (frozen: c1p, c2p, c2p-simix-small-batch, c3p, c5p and c14p for two starts;
// fine-tuned: c1f, c2f, c3f).
func TestRSKClaimsParse(t *testing.T) {
	cs, err := judge.LoadClaims(filepath.Join("..", "..", "reproductions", "rsk", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 44 {
		t.Errorf("%d claims, want 44", len(cs.Claims))
	}
}

// TestIDMLClaimsParse: seed 002's claims, written before its spec and runs, parse and expand to 40
// claims (counted by hand from the for lists: c1 7, c2 1, c3 4, c4 4, c5 2 + 2, c6-c14 9, c17 2,
// c19 2; c20 4 and c21 3, added with their runs after Table 1), and 4 in the pretrained regime (frozen c1p 3,
// fine-tuned c1f-proxyanchor).
func TestIDMLClaimsParse(t *testing.T) {
	cs, err := judge.LoadClaims(filepath.Join("..", "..", "reproductions", "idml", "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 44 {
		t.Errorf("%d claims, want 44", len(cs.Claims))
	}
}
