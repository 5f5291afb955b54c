package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "simreg",
		Paper:   "Liao et al., Supervised metric learning to rank for retrieval via contextual similarity optimization (seed 004), Eq. 7/30; Table 6 adds it to baselines",
		Summary: "similarity regulariser (s̃ − mean of all cosine similarities)²: pushes the batch's mean similarity toward s̃",
		New:     func() Loss { return DefaultSimReg() },
	})
}

// SimRegConfig is the similarity regulariser of seed 004 (Eq. 7, appendix Eq. 30) as a loss of its
// own, so that [ComboConfig] can add it to any base loss as the paper's Table 6 does:
//
//	L_reg = (s̃ − (1/n²) Σ_{i,j} s_ij)²
//
// with s the [B, B] cosine similarities of the batch ([B, D] embeddings, L2-normalised). The mean
// runs over all n² entries, the diagonal (s_ii = 1) included, exactly as Eq. 30 and the authors'
// code (scores.mean(), losses.py and 224x224/losses.py) and as the γ term of [ContextualConfig],
// which computes it with the same function. Labels are not used. With references (Inputs.RefEmb)
// the mean runs over all B×R query–reference pairs.
//
// Table 6 trains (1 − γ)·L_base + γ·L_reg with γ = 0.1 (main_reg_sim.py), i.e. the combo expression
// "0.9*triplet+0.1*simreg"; s̃ ∈ {0.25, 0.3}.
//
// Default: s̃ = 0.3 (paper §5 fixed value; the 256-px code and Table 6 also use 0.25).
type SimRegConfig struct {
	TargetSim float64 `yaml:"target_sim" doc:"s̃: target mean cosine similarity of all pairs, in [-1, 1]"`
}

// DefaultSimReg returns the paper's default s̃ = 0.3.
func DefaultSimReg() *SimRegConfig { return &SimRegConfig{TargetSim: 0.3} }

// Name implements Loss.
func (c *SimRegConfig) Name() string { return "simreg" }

// Validate implements Validator.
func (c *SimRegConfig) Validate() error {
	if c.TargetSim < -1 || c.TargetSim > 1 {
		return fmt.Errorf("target_sim %g: a mean cosine similarity lies in [-1, 1]", c.TargetSim)
	}
	return nil
}

// Build implements Loss.
func (c *SimRegConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	return similarityRegulariser(CosineSim(in.Emb, refEmb), c.TargetSim)
}

// similarityRegulariser is (target − mean of all entries of s)², Eq. 7 on the similarity matrix s.
func similarityRegulariser(s *Node, target float64) *Node {
	return Square(Sub(ScalarLike(s, target), ReduceAllMean(s)))
}
