// Test helpers copied from package sweep's tests (spec_test.go): a package's tests cannot call another package's.

package report

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

const specYAML = `
paper: toy
description: a toy sweep
base:
  data: {name: omniglot, limit_classes: 0}
  loss: {name: contrastive, margin: 0.5}
  train: {epochs: 10, lr: 0.001}
scales:
  smoke: {train.epochs: 1, data: {limit_classes: 20}, seeds: [7]}
  small: {train.epochs: 3}
  full:  {data.name: inat, grid: {loss.name: [rsk]}}
sweep:
  grid: {loss.name: [contrastive, rsk], loss.margin: [0.2, 0.5]}
  seeds: [0, 1, 2]
  seed_key: train.seed
reference:
  - {match: {loss.name: rsk}, metric: R@1, value: 70.5, source: "seed 003 Table 1, CUB row"}
tables:
  - {name: main, rows: [loss.name, loss.margin], metrics: [R@1], factor: 100}
figures:
  - {name: curve, kind: line, series: [val_r1], group: [loss.name]}
`

func mustParse(t *testing.T, y string) *sweep.Spec {
	t.Helper()
	s, err := sweep.Parse([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}
