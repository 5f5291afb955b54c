package sweep_test

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// Records of two losses over seeds, grouped by loss: mean ± sample std of R@1.
func ExampleGroupBy() {
	rec := func(loss string, seed int64, r1 float64) sweep.Record {
		return sweep.Record{Hash: fmt.Sprint(loss, seed), Seed: seed,
			Config:  map[string]any{"loss": map[string]any{"name": loss}, "seed": seed},
			Metrics: sweep.Metrics{"R@1": r1}}
	}
	recs := []sweep.Record{rec("rsk", 0, 0.70), rec("contrastive", 0, 0.61), rec("rsk", 1, 0.74), rec("contrastive", 1, 0.63)}
	for _, g := range sweep.GroupBy(recs, []string{"loss.name"}) {
		s := g.Stat("R@1")
		fmt.Printf("%s: %.3f ± %.4f over seeds %v\n", g.Label(), s.Mean, s.Std, g.Seeds())
	}
	// Output:
	// loss.name=contrastive: 0.620 ± 0.0141 over seeds [0 1]
	// loss.name=rsk: 0.720 ± 0.0283 over seeds [0 1]
}
