package train

// eval.degrade: the test set's uncertainty under degraded images (seed 002 §4.5).

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
)

// DegradedUnc is the mean uncertainty norm of the test set under one degradation (eval.degrade).
type DegradedUnc struct {
	data.Degradation
	MeanNorm float64
}

// degradedUncertainty embeds the test set under each eval.degrade degradation and returns the mean
// ‖u‖ of its uncertainty embeddings (seeded by the run's seed).
func (r *runner) degradedUncertainty(bs int) ([]DegradedUnc, error) {
	var out []DegradedUnc
	for _, d := range r.cfg.Eval.Degrade {
		outs, dims, err := r.eng.embedAllWith(r.eng.embDual, data.Degraded(r.split.test, d, uint64(r.cfg.Seed)), nil, bs)
		if err != nil {
			return nil, fmt.Errorf("train: test embeddings under %s: %w", d.Key(), err)
		}
		out = append(out, DegradedUnc{Degradation: d, MeanNorm: evaluate.MeanRowNorm(outs[1], dims[1])})
	}
	return out, nil
}
