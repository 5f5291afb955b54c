package main

import (
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/experiments"
)

// TestTCMStoredResultsMatchSpec: the committed small-scale store is exactly the spec's plan —
// resolved from the store itself (the tuning steps' selections come from the stored tuning runs),
// nothing pending, every planned run stored once, no stray record of another configuration — and
// every record carries the commit it was produced from and a clean tree, so every verdict uses it.
func TestTCMStoredResultsMatchSpec(t *testing.T) {
	s := loadTCMSpec(t)
	recs, rep, err := experiments.NewStore(filepath.Join(filepath.Dir(tcmSpecPath), "results")).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bad) > 0 || len(rep.Duplicates) > 0 {
		t.Errorf("store: %d unreadable, %d duplicate records", len(rep.Bad), len(rep.Duplicates))
	}
	p, err := s.PlanWith("small", recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range p.Pending {
		t.Errorf("pending: %s (%s)", x.Point, x.Reason)
	}
	planned := map[string]bool{}
	for _, r := range p.Runs {
		planned[r.Hash] = true
	}
	stored := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Scale != "small" {
			continue
		}
		stored[r.Hash] = true
		if !planned[r.Hash] {
			t.Errorf("record %s (seed %d) is not a run of the spec", r.Hash, r.Seed)
		}
		if c, _ := r.Env["git_commit"].(string); len(c) != 40 || r.Dirty() {
			t.Errorf("record %s: commit %q, dirty %v", r.Hash, c, r.Dirty())
		}
	}
	for _, r := range p.Runs {
		if !stored[r.Hash] {
			t.Errorf("run %s (%s) is not stored", r.Hash, r.Label())
		}
	}
}
