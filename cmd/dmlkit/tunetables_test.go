package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestTuneTablesWithoutSpecTables: a spec with tuning steps but no tables: section (the contextual
// reproduction before its tables were written) still gets its tune_<step> selection tables;
// before, `dmlkit tables` said "declares no tables" and wrote none. The point's list value (eval.ks)
// is one value, not a list of alternatives (a [] there selected nothing).
func TestTuneTablesWithoutSpecTables(t *testing.T) {
	spec, err := sweep.Parse([]byte(`
paper: toy
base: {data: {name: omniglot}, loss: {name: contrastive}}
scales: {small: {}}
sweep:
  list: [{loss.name: contrastive, tuned: lr}]
  seeds: [0]
  seed_key: seed
tune:
  - name: lr
    point: {data.val_classes: 0.1, eval.ks: [1, 4]}
    grid: {optimizer.lr: [0.001, 0.003]}
    select: {metric: val/acc}
`), "spec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := spec.PlanWith("small", nil)
	if err != nil {
		t.Fatal(err)
	}
	var recs []sweep.Record
	for i, r := range p.Runs {
		recs = append(recs, sweep.Record{Hash: r.Hash, Scale: "small", Seed: r.Seed, Config: r.Config,
			Metrics: sweep.Metrics{"val/acc": 0.5 + 0.1*float64(i)}})
	}
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := makeTables(nil, spec, "small", recs, out, false, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "tune_lr.md"))
	if err != nil {
		t.Fatalf("tune_lr.md not written: %v (stdout %q)", err, stdout.String())
	}
	if !strings.Contains(string(b), "Selected") {
		t.Errorf("tune_lr.md has no selection:\n%s", b)
	}
}
