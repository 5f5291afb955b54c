package losses

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "smoothap",
		Paper:   "Brown, Xie, Kalogeiton & Zisserman, Smooth-AP, ECCV 2020, Eq. 9-10 (code: Andrew-Brown1/Smooth_AP 59927ec)",
		Summary: "1 − mean smoothed AP: ranks with sigmoid(Δs/τ) in place of the Heaviside step",
		New:     func() Loss { return DefaultSmoothAP() },
	})
}

// SmoothAPConfig is the Smooth-AP loss (Brown et al. 2020).
//
// For query i with positive set P_i and retrieval set Ω_i (the other samples of the batch, or the
// references), with cosine similarities s_ij and G(x) = sigmoid(x/τ):
//
//	AP_i = 1/|P_i| · Σ_{p∈P_i} (1 + Σ_{k∈P_i, k≠p} G(s_ik − s_ip)) / (1 + Σ_{k∈Ω_i, k≠p} G(s_ik − s_ip))
//	L = 1 − mean_i AP_i
//
// The mean runs over the queries with at least one positive; a batch where no query has a positive
// gives L = 0 (nothing to rank). Shapes: Emb [B, D], Labels [B] or [B, S]; any batch order (the
// authors' code needs class-sorted batches with equal class counts because it works by index; this
// implementation uses label masks and gives the same value on such batches).
//
// QueryAsPositive reproduces the authors' code (Smooth_AP_loss.py): its masks only remove k = p,
// so the query itself is both in Ω_i and in P_i (s_ii = 1 ranks first). papers-vs-code.md §7 gives
// "code 0.4915 vs paper-style 0.7235" on one batch; TestSmoothAPCodeReference checks it against a
// transcription of the authors' code to 1e-12 (0.2725 vs the paper form's 0.6923 there). It applies
// only when the references are the batch itself.
//
// Cost: the rank tensor t[i, p, k] is [B, B, B]. MaxClassSize = c > 0 bounds the number of batch
// samples per label (the samples-per-class of a PK sampler): each query's positives are gathered
// into c − 1 slots (c with QueryAsPositive) and the tensor is [B, c, B], with the same value and
// gradient; a batch with a larger class gives NaN (loud, not silently wrong). The loss is
// [Blockwise]: a block of K anchors against the whole batch needs [K, R, R], or [K, c, R] with
// MaxClassSize.
//
// Defaults: τ = 0.01 (paper and code), query excluded (paper), MaxClassSize 0 (all pairs).
type SmoothAPConfig struct {
	Tau             float64 `yaml:"tau" doc:"sigmoid temperature τ"`
	QueryAsPositive bool    `yaml:"query_as_positive" doc:"count the query as its own positive and retrieved item (authors' code)"`
	MaxClassSize    int     `yaml:"max_class_size" doc:"upper bound on batch samples per label: rank only each query's positives, [B, c, B] instead of [B, B, B] (0 = all pairs; NaN loss if exceeded)"`
}

// DefaultSmoothAP returns the paper's defaults.
func DefaultSmoothAP() *SmoothAPConfig { return &SmoothAPConfig{Tau: 0.01} }

// Name implements Loss.
func (c *SmoothAPConfig) Name() string { return "smoothap" }

// Validate implements Validator.
func (c *SmoothAPConfig) Validate() error {
	if c.Tau <= 0 {
		return fmt.Errorf("tau = %g: want > 0", c.Tau)
	}
	if c.MaxClassSize < 0 {
		return fmt.Errorf("max_class_size %d: must be ≥ 0", c.MaxClassSize)
	}
	return nil
}

// Build implements Loss.
func (c *SmoothAPConfig) Build(in Inputs) *Node {
	ap, valid, overflow := c.perQuery(in)
	l := MaskedMean(OneMinus(ap), valid)
	if overflow != nil {
		l = Where(overflow, ScalarLike(l, math.NaN()), l)
	}
	return l
}

// perQuery returns AP_i [B], the [B] mask of queries with at least one positive and, with
// MaxClassSize, the scalar flag "a query has more positives than slots" (nil otherwise).
func (c *SmoothAPConfig) perQuery(in Inputs) (ap, valid, overflow *Node) {
	refEmb, _, self := refs(in)
	s := CosineSim(in.Emb, refEmb)
	cand, pos := rankAPMasks(in, c.QueryAsPositive)
	g := func(t *Node) *Node { return Sigmoid(MulScalar(t, 1/c.Tau)) }
	if c.MaxClassSize <= 0 {
		ap, valid = rankAPPerQuery(s, cand, pos, g, nil)
		return ap, valid, nil
	}
	slots := c.MaxClassSize - 1
	if c.QueryAsPositive && self {
		slots = c.MaxClassSize
	}
	return rankAPSlots(s, cand, pos, g, min(slots, refEmb.Shape().Dim(0)))
}

// BlockwiseSupport implements Blockwise: AP_i depends only on query i's row of similarities.
func (c *SmoothAPConfig) BlockwiseSupport() error { return nil }

// NumBlockCounts implements Blockwise: the number of queries with a positive.
func (c *SmoothAPConfig) NumBlockCounts() int { return 1 }

// BlockCounts implements Blockwise: [number of the block's queries with at least one positive]
// (labels only).
func (c *SmoothAPConfig) BlockCounts(in Inputs) *Node {
	_, pos := rankAPMasks(in, c.QueryAsPositive)
	return stackCounts(blockCount(ReduceLogicalOr(pos, -1)))
}

// BuildBlock implements Blockwise: Σ_{block queries with a positive} (1 − AP_i) / N. The block's
// rank tensor is [block, R, R], or [block, c, R] with MaxClassSize c (whole batch: [B, B, B]).
func (c *SmoothAPConfig) BuildBlock(in Inputs, counts *Node) *Node {
	ap, valid, overflow := c.perQuery(in)
	l := Div(MaskedReduceAllSum(OneMinus(ap), valid), countAt(counts, 0, ap.DType()))
	if overflow != nil {
		l = Where(overflow, ScalarLike(l, math.NaN()), l)
	}
	return l
}

// rankAPMasks returns the [B, R] retrieval-set and positive masks of rank-based AP losses: all
// references except the query itself, or (queryIn, queries among the references) all of them, the
// query being its own positive.
func rankAPMasks(in Inputs, queryIn bool) (cand, pos *Node) {
	refEmb, refLabels, self := refs(in)
	if queryIn && self {
		return BroadcastToDims(Const(in.Emb.Graph(), true), in.Emb.Shape().Dim(0), refEmb.Shape().Dim(0)),
			SameLabel(in.Labels, refLabels)
	}
	pos, _ = PairMasks(in)
	return NotSelf(in), pos
}

// rankAPPerQuery returns the smoothed AP of each query, [B], and the [B] mask of queries with at
// least one positive. s [B, R] are the scores, cand ⊇ pos [B, R] the retrieval and positive sets.
// With t = s_ik − s_ip, hPos(t) replaces the step for positives k and hNeg(t) (nil: the same
// function as hPos, evaluated once) for the other retrieved items:
//
//	rank⁺(i,p) = 1 + Σ_{k∈P_i, k≠p} hPos(t),  rank(i,p) = rank⁺(i,p) + Σ_{k∈Ω_i∖P_i} hNeg(t)
//	AP_i = Σ_{p∈P_i} rank⁺/rank / |P_i|
func rankAPPerQuery(s, cand, pos *Node, hPos, hNeg func(*Node) *Node) (ap, valid *Node) {
	dtype := s.DType()
	// diff[i, p, k] = s[i, k] − s[i, p]
	diff := Sub(InsertAxes(s, 1), InsertAxes(s, 2))
	posF := ConvertDType(pos, dtype)                               // [B, R]
	negF := ConvertDType(LogicalAnd(cand, LogicalNot(pos)), dtype) // [B, R]
	// The masks are separable: k ∈ P_i (resp. Ω_i∖P_i) and k ≠ p. So the masked sums over k are
	// batched matrix–vector products Σ_k h[i,p,k]·mask[i,k], minus the k = p term h(0)·mask[i,p]
	// — much cheaper than selecting over [B, R, R] boolean masks, forward and backward.
	hp := hPos(diff) // [B, R, R]
	hn := hp
	if hNeg != nil {
		hn = hNeg(diff)
	} else {
		hNeg = hPos
	}
	sumOver := func(hd *Node, h func(*Node) *Node, mask *Node) *Node {
		total := Einsum("ipk,ik->ip", hd, mask)       // Σ_k h[i,p,k]·mask[i,k]
		return Sub(total, Mul(h(ZerosLike(s)), mask)) // remove k = p: h(0)·mask[i,p]
	}
	rankPos := AddScalar(sumOver(hp, hPos, posF), 1)
	rankAll := Add(rankPos, sumOver(hn, hNeg, negF))
	ratio := Div(rankPos, rankAll) // [B, R]
	npos := ReduceSum(posF, -1)
	ap = Div(MaskedReduceSum(ratio, pos, -1), Max(npos, OnesLike(npos)))
	return ap, GreaterThan(npos, ZerosLike(npos))
}

// rankAPSlots is rankAPPerQuery with h = hPos = hNeg, evaluated only at the positives: each query's
// positives are gathered into numSlots slots (posIdx, as rskCompactSlots), so the tensor
// t[i, p, k] = s_ik − s_ip is [B, numSlots, R] instead of [B, R, R]. Since p ∈ P_i, the k = p term
// removed from rank⁺ is h(0) and the negative sum has no k = p term. It returns AP_i [B], the [B]
// mask of queries with a positive and the scalar overflow flag (a query with more positives than
// slots, whose extra positives would be lost).
func rankAPSlots(s, cand, pos *Node, h func(*Node) *Node, numSlots int) (ap, valid, overflow *Node) {
	g := s.Graph()
	dt := s.DType()
	n := s.Shape().Dim(0)
	posF := ConvertDType(pos, dt)
	negF := ConvertDType(LogicalAnd(cand, LogicalNot(pos)), dt)
	posIdx, slotF, npos := rskCompactSlots(posF, nil, numSlots)
	p := posIdx.Shape().Dim(1)
	rows := BroadcastToDims(InsertAxes(Iota(g, shapes.Make(dtypes.Int32, n), 0), 1), n, p)
	sx := Gather(s, Stack([]*Node{rows, posIdx}, -1))  // [B, P]: s_ip
	hd := h(Sub(InsertAxes(s, 1), InsertAxes(sx, -1))) // [B, P, R]: h(s_ik − s_ip)
	rankPos := AddScalar(Sub(Einsum("ipk,ik->ip", hd, posF), h(ZerosLike(sx))), 1)
	rankAll := Add(rankPos, Einsum("ipk,ik->ip", hd, negF))
	ap = Div(ReduceSum(Mul(slotF, Div(rankPos, rankAll)), -1), Max(npos, OnesLike(npos)))
	return ap, GreaterThan(npos, ZerosLike(npos)), GreaterThan(ReduceMax(npos), Scalar(g, dt, float64(numSlots)))
}
