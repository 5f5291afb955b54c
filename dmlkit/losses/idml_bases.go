package losses

import (
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// This file holds the IDML bases beyond the authors' code (seed 002 App. A): semi-hard triplet,
// ProxyNCA, multi-similarity and FastAP on the introspective metric. See [IDMLConfig] for the
// formulas.

// idmlTriplet is Triplet-SH (Eq. 12–13) on the [B, B] introspective distances d: the mean of
// [d(a,p) − d(a,n) + δ]₊ over the mined triplets with a non-zero loss (0 without one).
func (c *IDMLConfig) idmlTriplet(in Inputs, d *Node) *Node {
	b := d.Shape().Dim(0)
	shape := shapes.Make(d.DType(), b, b, b) // [a, p, n]
	pos, neg := PairMasks(in)
	t := AddScalar(Sub(BroadcastToShape(InsertAxes(d, 2), shape), BroadcastToShape(InsertAxes(d, 1), shape)), c.TripletMargin)
	boolShape := shapes.Make(pos.DType(), b, b, b)
	mask := LogicalAnd(BroadcastToShape(InsertAxes(pos, 2), boolShape), BroadcastToShape(InsertAxes(neg, 1), boolShape))
	sd := StopGradient(d)
	dap := BroadcastToShape(InsertAxes(sd, 2), shape) // d(a, p) at [a, p, n]
	dan := BroadcastToShape(InsertAxes(sd, 1), shape) // d(a, n) at [a, p, n]
	switch c.TripletMining {
	case "all":
	case "band":
		gap := Sub(dan, dap)
		mask = LogicalAnd(mask, LogicalAnd(GreaterThan(gap, ZerosLike(gap)), LessThan(gap, AddScalar(ZerosLike(gap), c.TripletMargin))))
	case "semihard":
		// Eq. 13: among the negatives farther than the positive, the closest one.
		mask = LogicalAnd(mask, GreaterThan(dan, dap))
		big := BroadcastToShape(ScalarLike(d, 1e6), shape)
		closest := ReduceMin(Where(mask, dan, big), 2) // [a, p]
		mask = LogicalAnd(mask, Equal(dan, BroadcastToShape(InsertAxes(closest, 2), shape)))
	default:
		panic("losses: idml: triplet_mining " + c.TripletMining + ": want semihard, band or all")
	}
	return reducePairs(relu(t), mask, true)
}

// idmlProxyNCA is ProxyNCA (Eq. 14 with the sign of ProxyNCA) on the introspective distance to
// the proxies: 1/B Σ_i [logΣ_{p∉l_i} e^{−d/T} − logΣ_{p∈l_i} e^{−d/T}].
func (c *IDMLConfig) idmlProxyNCA(in Inputs, sn, u *Node) *Node {
	alpha, cos, dec, member := c.idmlProxyTerms(in, sn, u)
	logits := MulScalar(c.idmlDistIN(alpha, cos, dec, c.NCASquared), -1/c.NCATemperature) // [B, C]
	posLSE := blMaskedLogSumExp(logits, member)
	negLSE := blMaskedLogSumExp(logits, LogicalNot(member))
	return ReduceAllMean(Sub(negLSE, posLSE))
}

// idmlMultiSimilarity is the multi-similarity loss (Eq. 16–17) on the pairwise introspective
// cosine C_IN, with the MS miner when MSMining.
func (c *IDMLConfig) idmlMultiSimilarity(in Inputs, sn, u *Node) *Node {
	_, cos, dec := c.idmlPairs(sn, u)
	s := c.idmlCosIN(cos, dec)
	pos, neg := PairMasks(in)
	if c.MSMining {
		pos, neg = msMine(s, pos, neg, c.MSEpsilon)
	}
	posTerm := MulScalar(blLogOnePlusSumExp(MulScalar(AddScalar(s, -c.MSBase), -c.MSAlpha), pos), 1/c.MSAlpha)
	negTerm := MulScalar(blLogOnePlusSumExp(MulScalar(AddScalar(s, -c.MSBase), c.MSBeta), neg), 1/c.MSBeta)
	return ReduceAllMean(Add(posTerm, negTerm))
}

// idmlFastAP is FastAP on the [B, B] squared introspective distances d ∈ [0, 4] (the histogram
// binning of [FastAPConfig] with d_IN = D_IN² in place of ‖ŝ_q − ŝ_j‖²).
func (c *IDMLConfig) idmlFastAP(in Inputs, d *Node) *Node {
	return fastAPFromDistances(in, d, c.FastAPBins)
}
