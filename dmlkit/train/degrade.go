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

// degradedSet is a test set whose images come out of Fill degraded; the noise of image i is
// seeded by (seed, i), so it does not depend on the batch the image is embedded in.
type degradedSet struct {
	Set
	d    data.Degradation
	seed uint64
}

func (s degradedSet) Fill(idx []int, dst []float32) {
	s.Set.Fill(idx, dst)
	h, w, c := s.Dims()
	sz := h * w * c
	for k, i := range idx {
		s.d.Apply(dst[k*sz:(k+1)*sz], h, w, c, i, s.seed)
	}
}

// degradedUncertainty embeds the test set under each eval.degrade degradation and returns the mean
// ‖u‖ of its uncertainty embeddings (seeded by the run's seed).
func (r *runner) degradedUncertainty(bs int) ([]DegradedUnc, error) {
	var out []DegradedUnc
	for _, d := range r.cfg.Eval.Degrade {
		outs, dims, err := r.eng.embedAllWith(r.eng.embDual, degradedSet{Set: r.split.test, d: d, seed: uint64(r.cfg.Seed)}, nil, bs)
		if err != nil {
			return nil, fmt.Errorf("train: test embeddings under %s: %w", d.Key(), err)
		}
		out = append(out, DegradedUnc{Degradation: d, MeanNorm: evaluate.MeanRowNorm(outs[1], dims[1])})
	}
	return out, nil
}
