package sweep

import (
	"context"
	"testing"
)

// TestRecordKeepsDigests: the weights digests a runner returns reach each stored record (after
// a reload), and the record's hash stays the hash of its configuration alone.
func TestRecordKeepsDigests(t *testing.T) {
	s := mustParse(t, specYAML)
	plan, err := s.Resolve("small")
	if err != nil {
		t.Fatal(err)
	}
	store := NewStore(t.TempDir())
	const d = "7aad0c74c5e3c06e5eb3c827e13304fdd68a83da6087d92ee169c24ff9fd4776"
	runner := func(ctx context.Context, r RunSpec, p func(string)) (*Outcome, error) {
		return &Outcome{Metrics: map[string]float64{"R@1": 0.5}, Digests: map[string]string{"model.pretrained": d}}, nil
	}
	if _, err := Execute(bg(), plan, plan.Runs[:2], ExecOptions{Runner: runner, Store: store, WorkDir: t.TempDir()}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Digests["model.pretrained"] != d {
			t.Errorf("record %s: digests %v, want model.pretrained %s", r.Hash, r.Digests, d)
		}
		if h, err := Hash(r.Config); err != nil || h != r.Hash {
			t.Errorf("record hash %s, Hash(config) %s", r.Hash, h)
		}
	}
}
