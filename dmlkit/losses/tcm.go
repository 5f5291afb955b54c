package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "tcm",
		Paper:   "Zhang et al., Threshold-Consistent Margin loss (seed 000), Eq. 5; variants Eq. 15–17 (Table 9)",
		Summary: "regulariser: pull hard positives above m+ and push hard negatives below m- (cosine), averaged over hard pairs",
		New:     func() Loss { return DefaultTCM() },
	})
}

// TCMConfig is the Threshold-Consistent Margin regulariser of seed 000, Eq. 5:
//
//	L = λ₊ · Σ_{s∈S₊} (m₊ − s)·1[s ≤ m₊] / |S^{m₊}|  +  λ₋ · Σ_{s∈S₋} (s − m₋)·1[s ≥ m₋] / |S^{m₋}|
//
// S₊ / S₋ are the cosine similarities of the raw (not pre-normalised) embeddings over all ordered
// positive / negative pairs (i, j), i ≠ j, of the batch against its references (each unordered pair
// counts twice, as in pytorch-metric-learning's ThresholdConsistentMarginLoss, which matches the paper).
// |S^{m₊}| = #{s ∈ S₊ : s ≤ m₊} and |S^{m₋}| = #{s ∈ S₋ : s ≥ m₋} are the hard counts; a term whose
// hard set is empty is 0. Embeddings: [B, D]; labels [B] or [B, S] label sets. Output: scalar.
//
// TCM is a regulariser: the paper adds it to a base loss (Eq. 6, L_base + L_TCM); combine it with
// another loss by summing (the package's combiner).
//
// Design variants of seed 000 Table 9 / Table 8:
//   - L_TCM⁺ (Eq. 16, positive term only): λ₋ = 0. L_TCM⁻ (Eq. 15, negative term only): λ₊ = 0.
//   - L_TCM' (Eq. 17, NoIndicator): every pair contributes (m₊ − s) resp. (s − m₋), also easy pairs
//     with a negative contribution, but the normaliser stays the hard count |S^{m±}| as Eq. 17 writes
//     it (max(|S^{m±}|, 1) so that an empty hard set gives a finite value). Read literally the
//     loss is unbounded below (easy pairs lower it without limit as the hard count shrinks).
//   - NoIndicator with TotalCount: Eq. 17's sum over all pairs divided by the number of all pairs
//     |S₊| (|S₋|) — the other reading of Eq. 17's normaliser, a plain mean λ₊(m₊ − mean S₊) +
//     λ₋(mean S₋ − m₋), bounded like the paper's Eq. 5.
//   - TotalCount: the indicator is kept but each sum is divided by the total number of positive
//     (negative) pairs |S₊| (|S₋|) instead of the hard count — the ROADMAP-calibration-style
//     normalisation the paper contrasts TCM with (App. A.2.2, Table 8).
//
// Defaults: λ₊ = λ₋ = 1, m₊ = 0.9, m₋ = 0.5 (paper; PML 2.8.1 uses the same).
type TCMConfig struct {
	PosWeight   float64 `yaml:"lambda_pos" doc:"λ+: weight of the hard-positive term (0 = negative term only, Eq. 15)"`
	NegWeight   float64 `yaml:"lambda_neg" doc:"λ-: weight of the hard-negative term (0 = positive term only, Eq. 16)"`
	PosMargin   float64 `yaml:"pos_margin" doc:"m+: positives with cosine ≤ m+ are hard"`
	NegMargin   float64 `yaml:"neg_margin" doc:"m-: negatives with cosine ≥ m- are hard"`
	NoIndicator bool    `yaml:"no_indicator" doc:"Eq. 17 variant TCM': sum over all pairs (no indicator), divided by the hard count (with total_count: by all pairs)"`
	TotalCount  bool    `yaml:"total_count" doc:"divide each term by the total positive/negative pair count instead of the hard count (ROADMAP-style; with no_indicator: Eq. 17 as a mean over all pairs)"`
}

// DefaultTCM returns the paper's defaults.
func DefaultTCM() *TCMConfig {
	return &TCMConfig{PosWeight: 1, NegWeight: 1, PosMargin: 0.9, NegMargin: 0.5}
}

// Name implements Loss.
func (c *TCMConfig) Name() string { return "tcm" }

// Validate implements Validator.
func (c *TCMConfig) Validate() error {
	if c.PosWeight < 0 || c.NegWeight < 0 {
		return fmt.Errorf("lambda_pos %g, lambda_neg %g: weights must be ≥ 0", c.PosWeight, c.NegWeight)
	}
	if c.PosMargin < -1 || c.PosMargin > 1 || c.NegMargin < -1 || c.NegMargin > 1 {
		return fmt.Errorf("pos_margin %g, neg_margin %g: cosine margins must lie in [-1, 1]", c.PosMargin, c.NegMargin)
	}
	return nil
}

// Build implements Loss.
func (c *TCMConfig) Build(in Inputs) *Node {
	posTerm, negTerm, posSum, posDen, negSum, negDen := c.parts(in)
	loss := ScalarLike(posTerm, 0)
	if c.PosWeight != 0 {
		loss = Add(loss, MulScalar(tcmReduce(posTerm, posSum, posDen), c.PosWeight))
	}
	if c.NegWeight != 0 {
		loss = Add(loss, MulScalar(tcmReduce(negTerm, negSum, negDen), c.NegWeight))
	}
	return loss
}

// parts returns the [B, R] terms m₊ − s and s − m₋, and for each the mask of the pairs summed in
// the numerator and the mask counted in the denominator:
//
//	default      Σ over hard pairs / |hard|
//	NoIndicator              Σ over all pairs  / |hard|   (Eq. 17 as written)
//	NoIndicator, TotalCount  Σ over all pairs  / |all|    (Eq. 17 as a mean)
//	TotalCount               Σ over hard pairs / |all|    (Table 8)
func (c *TCMConfig) parts(in Inputs) (posTerm, negTerm, posSum, posDen, negSum, negDen *Node) {
	refEmb, _, _ := refs(in)
	pos, neg := PairMasks(in)
	s := CosineSim(in.Emb, refEmb)
	posTerm = Sub(ScalarLike(s, c.PosMargin), s) // m+ − s
	negTerm = AddScalar(s, -c.NegMargin)         // s − m−
	hardPos := LogicalAnd(pos, LessOrEqual(s, ScalarLike(s, c.PosMargin)))
	hardNeg := LogicalAnd(neg, GreaterOrEqual(s, ScalarLike(s, c.NegMargin)))
	switch {
	case c.NoIndicator && c.TotalCount:
		return posTerm, negTerm, pos, pos, neg, neg
	case c.NoIndicator:
		return posTerm, negTerm, pos, hardPos, neg, hardNeg
	case c.TotalCount:
		return posTerm, negTerm, hardPos, pos, hardNeg, neg
	}
	return posTerm, negTerm, hardPos, hardPos, hardNeg, hardNeg
}

// tcmReduce is Σ_{sum} term / max(|den|, 1) (0 for an empty set).
func tcmReduce(term, sum, den *Node) *Node {
	n := Count(den, term.DType())
	return Div(MaskedReduceAllSum(term, sum), Max(n, OnesLike(n)))
}

// BlockwiseSupport implements Blockwise: every variant decomposes over anchors.
func (c *TCMConfig) BlockwiseSupport() error { return nil }

// NumBlockCounts implements Blockwise: the positive and negative normalisers.
func (c *TCMConfig) NumBlockCounts() int { return 2 }

// BlockCounts implements Blockwise: the block's [|S^{m₊}|, |S^{m₋}|] (hard counts; the total
// positive / negative pair counts with TotalCount).
func (c *TCMConfig) BlockCounts(in Inputs) *Node {
	_, _, _, posDen, _, negDen := c.parts(in)
	return stackCounts(blockCount(posDen), blockCount(negDen))
}

// BuildBlock implements Blockwise: λ₊ Σ_block (m₊ − s) / N₊ + λ₋ Σ_block (s − m₋) / N₋ with the
// whole-batch normalisers N± (an empty set counts as 1).
func (c *TCMConfig) BuildBlock(in Inputs, counts *Node) *Node {
	posTerm, negTerm, posSum, _, negSum, _ := c.parts(in)
	dt := posTerm.DType()
	loss := ScalarLike(posTerm, 0)
	if c.PosWeight != 0 {
		loss = Add(loss, MulScalar(Div(MaskedReduceAllSum(posTerm, posSum), countAt(counts, 0, dt)), c.PosWeight))
	}
	if c.NegWeight != 0 {
		loss = Add(loss, MulScalar(Div(MaskedReduceAllSum(negTerm, negSum), countAt(counts, 1, dt)), c.NegWeight))
	}
	return loss
}
