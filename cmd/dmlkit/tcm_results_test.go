package main

import "testing"

// TestTCMStoredResultsMatchSpec: the committed small-scale store is exactly the spec's plan —
// resolved from the store itself (the tuning steps' selections come from the stored tuning runs),
// nothing pending, every planned run stored once, no stray record of another configuration — and
// every record carries the commit it was produced from and a clean tree, so every verdict uses it.
func TestTCMStoredResultsMatchSpec(t *testing.T) {
	checkStoredResultsMatchSpec(t, mustLoadSpec(t, tcmSpecPath), tcmSpecPath, false)
}
