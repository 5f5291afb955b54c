package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "multisimilarity",
		Paper:   "Wang, Han, Huang, Dong & Scott, Multi-Similarity Loss with General Pair Weighting, CVPR 2019, Eq. 15 (mining: Eq. 12-13)",
		Summary: "soft-weighted positive and negative pairs: (1/α)·log(1+Σe^{−α(s−λ)}) + (1/β)·log(1+Σe^{β(s−λ)})",
		New:     func() Loss { return DefaultMultiSimilarity() },
	})
}

// MultiSimilarityConfig is the multi-similarity loss. With cosine similarities S_ik,
//
//	L = 1/B · Σ_i [ 1/α · log(1 + Σ_{k∈P_i} e^{−α(S_ik − λ)}) + 1/β · log(1 + Σ_{k∈N_i} e^{β(S_ik − λ)}) ]
//
// where the mean runs over all B anchors (an anchor without positives/negatives contributes 0 for
// that term, as log 1 = 0). With Mining, P_i and N_i are reduced by the paper's MS miner (Eq. 12-13,
// computed without gradient): a negative is kept if S_in > min_{k∈P_i} S_ik − ε and a positive if
// S_ip < max_{k∈N_i} S_ik + ε (an anchor with no negatives keeps no positive, and vice versa:
// the min/max over an empty set is ±∞).
//
// Defaults: α = 2, β = 50, λ = 0.5 (paper and pytorch-metric-learning), no mining
// (pytorch-metric-learning's loss alone; the paper trains with the miner, ε = 0.1).
type MultiSimilarityConfig struct {
	Alpha   float64 `yaml:"alpha" doc:"α: positive scale"`
	Beta    float64 `yaml:"beta" doc:"β: negative scale"`
	Base    float64 `yaml:"base" doc:"λ: similarity offset"`
	Mining  bool    `yaml:"mining" doc:"apply the MS pair miner (Eq. 12-13)"`
	Epsilon float64 `yaml:"epsilon" doc:"ε: margin of the MS miner"`
}

// DefaultMultiSimilarity returns the defaults.
func DefaultMultiSimilarity() *MultiSimilarityConfig {
	return &MultiSimilarityConfig{Alpha: 2, Beta: 50, Base: 0.5, Epsilon: 0.1}
}

// Name implements Loss.
func (c *MultiSimilarityConfig) Name() string { return "multisimilarity" }

// Validate implements Validator.
func (c *MultiSimilarityConfig) Validate() error {
	if c.Alpha <= 0 || c.Beta <= 0 {
		return fmt.Errorf("alpha %g, beta %g: scales must be > 0", c.Alpha, c.Beta)
	}
	if c.Epsilon < 0 {
		return fmt.Errorf("epsilon = %g: want ≥ 0", c.Epsilon)
	}
	return nil
}

// Build implements Loss.
func (c *MultiSimilarityConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	s := CosineSim(in.Emb, refEmb)
	pos, neg := PairMasks(in)
	if c.Mining {
		pos, neg = msMine(s, pos, neg, c.Epsilon)
	}
	posTerm := MulScalar(blLogOnePlusSumExp(MulScalar(AddScalar(s, -c.Base), -c.Alpha), pos), 1/c.Alpha)
	negTerm := MulScalar(blLogOnePlusSumExp(MulScalar(AddScalar(s, -c.Base), c.Beta), neg), 1/c.Beta)
	return ReduceAllMean(Add(posTerm, negTerm))
}

// msMine applies the multi-similarity miner to the [B, R] masks.
func msMine(s, pos, neg *Node, eps float64) (minedPos, minedNeg *Node) {
	s = StopGradient(s)
	big := ScalarLike(s, 1e6)
	minPos := InsertAxes(ReduceMin(Where(pos, s, BroadcastToShape(big, s.Shape())), -1), -1)      // +big if none
	maxNeg := InsertAxes(ReduceMax(Where(neg, s, BroadcastToShape(Neg(big), s.Shape())), -1), -1) // −big if none
	minedNeg = LogicalAnd(neg, GreaterThan(s, AddScalar(minPos, -eps)))
	minedPos = LogicalAnd(pos, LessThan(s, AddScalar(maxNeg, eps)))
	return minedPos, minedNeg
}

// blLogOnePlusSumExp returns log(1 + Σ_{k: mask} e^{x_k}) along the last axis, computed
// stably (shift by max(0, max x)); 0 for an empty mask.
func blLogOnePlusSumExp(x, mask *Node) *Node {
	neg := BroadcastToShape(ScalarLike(x, -1e30), x.Shape())
	xm := Where(mask, x, neg)
	m := StopGradient(Max(ReduceMax(xm, -1), ScalarLike(x, 0))) // [B], ≥ 0
	sum := ReduceSum(Exp(Sub(xm, InsertAxes(m, -1))), -1)
	return Add(Log(Add(sum, Exp(Neg(m)))), m)
}
