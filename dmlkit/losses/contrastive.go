package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "contrastive",
		Paper:   "Hadsell, Chopra & LeCun, CVPR 2006; pair form and defaults as in pytorch-metric-learning ContrastiveLoss",
		Summary: "pull positives within pos_margin, push negatives beyond neg_margin (L2 or cosine)",
		New:     func() Loss { return DefaultContrastive() },
	})
}

// ContrastiveConfig is the pair-based contrastive loss.
//
// With Distance "l2" (on L2-normalised embeddings, d ∈ [0, 2]):
//
//	L = reduce{ relu(d_ap − m₊) : positive pairs } + reduce{ relu(m₋ − d_an) : negative pairs }
//
// With Distance "cosine" (similarity s ∈ [−1, 1]; the contrastive term of seed 004 §3, δ₊ = m₊, δ₋ = m₋):
//
//	L = reduce{ relu(m₊ − s_ap) } + reduce{ relu(s_an − m₋) }
//
// Pairs are all ordered (i, j), i ≠ j, of the batch against its references. "reduce" is the mean
// over the pairs with a non-zero term when AvgNonZero is true (pytorch-metric-learning's
// AvgNonZeroReducer, applied to the positive and negative terms separately, as in seed 004's
// "/ #active pairs"), else the mean over all positive (resp. negative) pairs. A term with no
// (active) pairs contributes 0. Squared squares each hinge (Hadsell et al.'s original form).
//
// Defaults: l2, m₊ = 0, m₋ = 1, AvgNonZero (pytorch-metric-learning 2.8.1).
type ContrastiveConfig struct {
	Distance   string  `yaml:"distance" doc:"l2 (on normalised embeddings) or cosine"`
	PosMargin  float64 `yaml:"pos_margin" doc:"m+: distance below which (l2) / similarity above which (cosine) positives cost nothing"`
	NegMargin  float64 `yaml:"neg_margin" doc:"m-: distance above which (l2) / similarity below which (cosine) negatives cost nothing"`
	AvgNonZero bool    `yaml:"avg_nonzero" doc:"average each term over its active (non-zero) pairs only"`
	Squared    bool    `yaml:"squared" doc:"square each hinge, as in Hadsell et al. 2006"`
}

// DefaultContrastive returns pytorch-metric-learning's defaults.
func DefaultContrastive() *ContrastiveConfig {
	return &ContrastiveConfig{Distance: "l2", PosMargin: 0, NegMargin: 1, AvgNonZero: true}
}

// Name implements Loss.
func (c *ContrastiveConfig) Name() string { return "contrastive" }

// Validate implements Validator.
func (c *ContrastiveConfig) Validate() error {
	if c.Distance != "l2" && c.Distance != "cosine" {
		return fmt.Errorf("distance %q: want l2 or cosine", c.Distance)
	}
	if c.Distance == "l2" && (c.PosMargin < 0 || c.NegMargin < 0) {
		return fmt.Errorf("pos_margin %g, neg_margin %g: l2 distances are ≥ 0, so the margins must be too", c.PosMargin, c.NegMargin)
	}
	if c.Distance == "cosine" && (c.PosMargin < -1 || c.PosMargin > 1 || c.NegMargin < -1 || c.NegMargin > 1) {
		return fmt.Errorf("pos_margin %g, neg_margin %g: cosine margins must lie in [-1, 1]", c.PosMargin, c.NegMargin)
	}
	return nil
}

// Build implements Loss.
func (c *ContrastiveConfig) Build(in Inputs) *Node {
	posTerm, negTerm, posMask, negMask := c.pairTerms(in)
	return Add(MaskedMean(posTerm, posMask), MaskedMean(negTerm, negMask))
}

// pairTerms returns the [B, R] positive and negative terms and the masks they are averaged over
// (all positive / negative pairs, or only those with a non-zero term when AvgNonZero).
func (c *ContrastiveConfig) pairTerms(in Inputs) (posTerm, negTerm, posMask, negMask *Node) {
	refEmb, _, _ := refs(in)
	pos, neg := PairMasks(in)
	switch c.Distance {
	case "l2":
		d := Distances(normalizeRows(in.Emb), normalizeRows(refEmb))
		posTerm = relu(AddScalar(d, -c.PosMargin))
		negTerm = relu(Sub(ScalarLike(d, c.NegMargin), d))
	case "cosine":
		s := CosineSim(in.Emb, refEmb)
		posTerm = relu(Sub(ScalarLike(s, c.PosMargin), s))
		negTerm = relu(AddScalar(s, -c.NegMargin))
	default:
		panic(fmt.Sprintf("losses: contrastive: distance %q: want l2 or cosine", c.Distance))
	}
	if c.Squared {
		posTerm, negTerm = Square(posTerm), Square(negTerm)
	}
	if c.AvgNonZero {
		pos = LogicalAnd(pos, GreaterThan(posTerm, ZerosLike(posTerm)))
		neg = LogicalAnd(neg, GreaterThan(negTerm, ZerosLike(negTerm)))
	}
	return posTerm, negTerm, pos, neg
}

// BlockwiseSupport implements Blockwise: every configuration decomposes over anchors.
func (c *ContrastiveConfig) BlockwiseSupport() error { return nil }

// NumBlockCounts implements Blockwise: the numbers of (active) positive and negative pairs.
func (c *ContrastiveConfig) NumBlockCounts() int { return 2 }

// BlockCounts implements Blockwise: [#positive pairs, #negative pairs] of the block's anchors
// (only pairs with a non-zero term when AvgNonZero).
func (c *ContrastiveConfig) BlockCounts(in Inputs) *Node {
	_, _, posMask, negMask := c.pairTerms(in)
	return stackCounts(blockCount(posMask), blockCount(negMask))
}

// BuildBlock implements Blockwise: Σ_block pos terms / N₊ + Σ_block neg terms / N₋ with the
// whole-batch counts N± (an empty set counts as 1, matching the 0 of an empty mean).
func (c *ContrastiveConfig) BuildBlock(in Inputs, counts *Node) *Node {
	posTerm, negTerm, posMask, negMask := c.pairTerms(in)
	dt := posTerm.DType()
	return Add(Div(MaskedReduceAllSum(posTerm, posMask), countAt(counts, 0, dt)),
		Div(MaskedReduceAllSum(negTerm, negMask), countAt(counts, 1, dt)))
}

// reducePairs averages term over mask, or over the entries of mask where term > 0 when nonZero.
// An empty set gives 0.
func reducePairs(term, mask *Node, nonZero bool) *Node {
	if nonZero {
		mask = LogicalAnd(mask, GreaterThan(term, ZerosLike(term)))
	}
	return MaskedMean(term, mask)
}

// ScalarLike returns a scalar constant with x's dtype and graph.
func ScalarLike(x *Node, v float64) *Node { return Scalar(x.Graph(), x.DType(), v) }
