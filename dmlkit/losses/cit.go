package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "cit",
		Paper:   "Fang et al., Concordance-Induced Triplet loss (seed 001), Eq. 4, 7, 8",
		Summary: "triplet concordance loss: exponential discordance penalty plus partial-likelihood term, no margin",
		New:     func() Loss { return DefaultCIT() },
	})
}

// CITConfig is the Concordance-Induced Triplet loss of seed 001:
//
//	L_e = (1/N_T) Σ_T [1 − e^{−(S_an − S_ap)}]₊                        (Eq. 4)
//	L_p = −(1/N_T) Σ_T { S_ap − log(e^{S_an} + e^{S_pn}) }              (Eq. 7; not clamped, can be < 0)
//	L   = γ L_e + (1 − γ) L_p                                            (Eq. 8)
//
// S is the cosine-similarity matrix of the batch ([B, D] embeddings) and T runs over every valid
// in-batch triplet (a, p, n): a ≠ p, y_p = y_a, y_n ≠ y_a (both orders of (a, p); no mining, as the
// authors' code with PML's t_per_anchor="all"); S_pn = S[p, n]. Labels [B] or [B, S] label sets
// (p shares a label with a, n shares none). Output: scalar; 0 for a batch without triplets.
//
// Reduction: the paper averages over all N_T triplets (default). AvgNonZero is the authors' code
// (PML AvgNonZeroReducer): the mean over the triplets whose combined loss γ·l_e + (1−γ)·l_p is > 0,
// which for γ < 1 also drops triplets with a negative l_p (papers-vs-code §3: code 0.257 vs paper
// 0.108 on its test batch).
//
// Default γ = 1 (the authors' code default and the paper's choice for Market1501; the paper calls
// γ = 0.5 a general trade-off and uses γ < 1 for In-shop, Table 3). References (Inputs.RefEmb)
// are not supported.
//
// Memory is O(B³): the whole [B, B, B] triplet cube. AnchorBlock = K (0 < K < B) builds it in
// ⌈B/K⌉ blocks of K anchors ([K, B, B] each, the last block smaller; static shapes), adds their
// masked sums and counts and divides once at the end: the same value, gradient and diagnostics
// (summed in another order), with O(K·B²) per block. Measured on the Go backend on a shared 2-core
// CPU (float32, D = 128, 4 samples per class, γ = 0.5, forward + backward, best of 5):
// B = 128: 141 ms whole, 85 ms with K = 32 (peak RSS 67 → 56 MB); B = 256: 1.15 s whole, 0.83 s
// with K = 32 (peak RSS 528 → 252 MB). Blocks are unrolled in the graph, so very small K makes
// a large graph.
type CITConfig struct {
	Gamma      float64 `yaml:"gamma" doc:"γ: weight of the exponential term L_e; 1-γ weights the partial-likelihood term L_p"`
	AvgNonZero bool    `yaml:"avg_nonzero" doc:"authors' code: average over triplets with a positive loss only (paper: all triplets)"`
	// AnchorBlock, when > 0 and < B, builds the triplet cube in blocks of this many anchors.
	AnchorBlock int `yaml:"anchor_block" doc:"if > 0: build the B×B×B triplet cube in blocks of this many anchors (memory O(K·B²)); same loss and gradient"`
}

// DefaultCIT returns the defaults (γ = 1, paper reduction).
func DefaultCIT() *CITConfig { return &CITConfig{Gamma: 1} }

// Name implements Loss.
func (c *CITConfig) Name() string { return "cit" }

// Validate implements Validator.
func (c *CITConfig) Validate() error {
	if c.Gamma < 0 || c.Gamma > 1 {
		return fmt.Errorf("gamma %g: want a value in [0, 1]", c.Gamma)
	}
	if c.AnchorBlock < 0 {
		return fmt.Errorf("anchor_block %d: want ≥ 0 (0: the whole batch at once)", c.AnchorBlock)
	}
	return nil
}

// Build implements Loss.
func (c *CITConfig) Build(in Inputs) *Node {
	loss, _ := c.build(in, false)
	return loss
}

// BuildDiagnosed implements Diagnoser. Beside L (the node Build returns) it gives, as scalars:
//
//   - "L_e", "L_p": the two terms of Eq. 8 averaged over the triplets the reduction averages
//     (all valid triplets; with AvgNonZero those of positive combined loss), so that
//     L = γ·L_e + (1 − γ)·L_p for either reduction (up to rounding);
//   - "hard_triplets": the number of valid triplets with S_an > S_ap, the discordant ones whose
//     L_e term is positive (the paper's Fig. 5 counts these "hard triplets" over training);
//   - "triplets": the number N_T of valid triplets.
//
// The counts are Int32 (exact up to 2³¹ triplets), L_e and L_p have the dtype of Inputs.Emb.
func (c *CITConfig) BuildDiagnosed(in Inputs) (*Node, []Diagnostic) {
	return c.build(in, true)
}

// build returns L and, when diag, the diagnostics of BuildDiagnosed.
func (c *CITConfig) build(in Inputs, diag bool) (*Node, []Diagnostic) {
	if in.RefEmb != nil {
		panic("losses: cit uses in-batch triplets; Inputs.RefEmb is not supported")
	}
	pos, neg := PairMasks(in)
	s := CosineSim(in.Emb, in.Emb)
	b := s.Shape().Dim(0)
	if k := c.AnchorBlock; k > 0 && k < b {
		return c.buildBlocks(s, pos, neg, k, diag)
	}
	t := c.cube(s, pos, neg, 0, b)
	out := MaskedMean(t.loss, t.reduced)
	if !diag {
		return out, nil
	}
	return out, []Diagnostic{
		{Name: "L_e", Value: MaskedMean(t.le, t.reduced)},
		{Name: "L_p", Value: MaskedMean(t.lp, t.reduced)},
		{Name: "hard_triplets", Value: Count(t.hard, dtypes.Int32)},
		{Name: "triplets", Value: Count(t.valid, dtypes.Int32)},
	}
}

// CITTripletTerms are the per-triplet terms of CIT (seed 001) for similarities S_ap, S_an, S_pn of
// any shapes that broadcast against each other:
//
//	l_e = [1 − e^{−(S_an − S_ap)}]₊                  (Eq. 4, one triplet)
//	l_p = log(e^{S_an} + e^{S_pn}) − S_ap            (Eq. 7, one triplet; not clamped)
//	l   = γ l_e + (1 − γ) l_p                        (Eq. 8)
//
// The loss averages them over triplets ([CITConfig]); seed 001 Fig. 4 plots their derivatives,
// which cmd/dmlkit's TestCITFig4 takes from this function (the paper's Eq. 17-18 have sign errors).
func CITTripletTerms(sap, san, spn *Node, gamma float64) (le, lp, l *Node) {
	le = relu(OneMinus(Exp(Sub(sap, san))))
	lp = Sub(Log(Add(Exp(san), Exp(spn))), sap)
	return le, lp, Add(MulScalar(le, gamma), MulScalar(lp, 1-gamma))
}

// citCube holds the [K, B, B] per-triplet terms of a block of anchors: l_e, l_p, the combined
// loss, the valid triplets, those the reduction averages and the hard ones (S_an > S_ap).
type citCube struct {
	le, lp, loss         *Node
	valid, reduced, hard *Node
}

// cube builds the triplet cube of anchors lo ≤ a < hi (indices (a − lo, p, n)) from the
// cosine similarities s [B, B] and the pair masks [B, B].
func (c *CITConfig) cube(s, pos, neg *Node, lo, hi int) citCube {
	b := s.Shape().Dim(0)
	rows, posR, negR := s, pos, neg
	if lo != 0 || hi != b {
		rows, posR, negR = Slice(s, AxisRange(lo, hi)), Slice(pos, AxisRange(lo, hi)), Slice(neg, AxisRange(lo, hi))
	}
	k := hi - lo
	sap := InsertAxes(rows, 2) // [a, p, 1]
	san := InsertAxes(rows, 1) // [a, 1, n]
	spn := InsertAxes(s, 0)    // [1, p, n]
	var t citCube
	t.valid = LogicalAnd(InsertAxes(posR, 2), InsertAxes(negR, 1))
	le, lp, _ := CITTripletTerms(sap, san, spn, c.Gamma)
	t.le = BroadcastToDims(le, k, b, b)
	t.lp = BroadcastToDims(lp, k, b, b)
	t.loss = Add(MulScalar(t.le, c.Gamma), MulScalar(t.lp, 1-c.Gamma))
	t.reduced = t.valid
	if c.AvgNonZero {
		t.reduced = LogicalAnd(t.valid, GreaterThan(t.loss, ZerosLike(t.loss)))
	}
	t.hard = LogicalAnd(t.valid, GreaterThan(san, sap))
	return t
}

// buildBlocks is build over blocks of k anchors (the last one may be smaller): the masked sums
// and counts of each block's cube are added, and divided once at the end, so only one [k, B, B]
// cube is needed at a time.
func (c *CITConfig) buildBlocks(s, pos, neg *Node, k int, diag bool) (*Node, []Diagnostic) {
	b := s.Shape().Dim(0)
	var sumL, sumE, sumP, n, hard, valid *Node
	add := func(acc **Node, x *Node) {
		if *acc == nil {
			*acc = x
		} else {
			*acc = Add(*acc, x)
		}
	}
	for lo := 0; lo < b; lo += k {
		t := c.cube(s, pos, neg, lo, min(lo+k, b))
		add(&sumL, MaskedReduceAllSum(t.loss, t.reduced))
		add(&n, Count(t.reduced, t.loss.DType()))
		if diag {
			add(&sumE, MaskedReduceAllSum(t.le, t.reduced))
			add(&sumP, MaskedReduceAllSum(t.lp, t.reduced))
			add(&hard, Count(t.hard, dtypes.Int32))
			add(&valid, Count(t.valid, dtypes.Int32))
		}
	}
	den := Max(n, OnesLike(n)) // 0 for a batch without (kept) triplets, as MaskedMean
	out := Div(sumL, den)
	if !diag {
		return out, nil
	}
	return out, []Diagnostic{
		{Name: "L_e", Value: Div(sumE, den)},
		{Name: "L_p", Value: Div(sumP, den)},
		{Name: "hard_triplets", Value: hard},
		{Name: "triplets", Value: valid},
	}
}
