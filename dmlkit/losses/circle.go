package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "circle",
		Paper:   "Sun et al., Circle Loss: A Unified Perspective of Pair Similarity Optimization, CVPR 2020, Eq. 6",
		Summary: "self-paced pair weighting: softplus(LSE_n γα_n(s_n−Δ_n) + LSE_p −γα_p(s_p−Δ_p))",
		New:     func() Loss { return DefaultCircle() },
	})
}

// CircleConfig is the circle loss on cosine similarities. For anchor i with positives P_i and
// negatives N_i,
//
//	L_i = log(1 + Σ_{n∈N_i} e^{γ α_n (s_n − Δ_n)} · Σ_{p∈P_i} e^{−γ α_p (s_p − Δ_p)})
//	α_p = [1 + m − s_p]₊,  α_n = [s_n + m]₊  (weights without gradient),  Δ_p = 1 − m,  Δ_n = m
//
// computed as softplus(LSE_n + LSE_p). L is the mean of L_i over the anchors that have at least
// one positive and one negative (0 if none); pytorch-metric-learning's AvgNonZero reducer gives
// the same value unless an L_i underflows to exactly 0.
//
// Defaults: m = 0.4, γ = 80 (paper's fine-grained retrieval setting; pytorch-metric-learning).
type CircleConfig struct {
	Margin float64 `yaml:"m" doc:"m: relaxation margin"`
	Gamma  float64 `yaml:"gamma" doc:"γ: scale"`
}

// DefaultCircle returns the defaults.
func DefaultCircle() *CircleConfig { return &CircleConfig{Margin: 0.4, Gamma: 80} }

// Name implements Loss.
func (c *CircleConfig) Name() string { return "circle" }

// Validate implements Validator.
func (c *CircleConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("m = %g: want ≥ 0", c.Margin)
	}
	if c.Gamma <= 0 {
		return fmt.Errorf("gamma = %g: want > 0", c.Gamma)
	}
	return nil
}

// Build implements Loss.
func (c *CircleConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	s := CosineSim(in.Emb, refEmb)
	pos, neg := PairMasks(in)
	alphaP := StopGradient(relu(Sub(ScalarLike(s, 1+c.Margin), s)))
	alphaN := StopGradient(relu(AddScalar(s, c.Margin)))
	logitP := MulScalar(Mul(alphaP, AddScalar(s, -(1-c.Margin))), -c.Gamma)
	logitN := MulScalar(Mul(alphaN, AddScalar(s, -c.Margin)), c.Gamma)
	per := Softplus(Add(blMaskedLogSumExp(logitN, neg), blMaskedLogSumExp(logitP, pos)))
	valid := LogicalAnd(ReduceLogicalOr(pos, -1), ReduceLogicalOr(neg, -1))
	return MaskedMean(per, valid)
}
