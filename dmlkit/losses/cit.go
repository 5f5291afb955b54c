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
// γ = 0.5 a general trade-off and uses γ < 1 for In-shop, Table 3). Memory is O(B³).
// References (Inputs.RefEmb) are not supported.
type CITConfig struct {
	Gamma      float64 `yaml:"gamma" doc:"γ: weight of the exponential term L_e; 1-γ weights the partial-likelihood term L_p"`
	AvgNonZero bool    `yaml:"avg_nonzero" doc:"authors' code: average over triplets with a positive loss only (paper: all triplets)"`
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
	sap := InsertAxes(s, 2) // [a, p, 1]
	san := InsertAxes(s, 1) // [a, 1, n]
	spn := InsertAxes(s, 0) // [1, p, n]
	valid := LogicalAnd(InsertAxes(pos, 2), InsertAxes(neg, 1))
	le := relu(OneMinus(Exp(Sub(sap, san))))
	lp := Sub(Log(Add(Exp(san), Exp(spn))), sap)
	loss := Add(MulScalar(le, c.Gamma), MulScalar(lp, 1-c.Gamma))
	b := s.Shape().Dim(0)
	loss = BroadcastToDims(loss, b, b, b)
	reduced := valid
	if c.AvgNonZero {
		reduced = LogicalAnd(valid, GreaterThan(loss, ZerosLike(loss)))
	}
	out := MaskedMean(loss, reduced)
	if !diag {
		return out, nil
	}
	hard := LogicalAnd(valid, GreaterThan(san, sap))
	return out, []Diagnostic{
		{Name: "L_e", Value: MaskedMean(BroadcastToDims(le, b, b, b), reduced)},
		{Name: "L_p", Value: MaskedMean(BroadcastToDims(lp, b, b, b), reduced)},
		{Name: "hard_triplets", Value: Count(hard, dtypes.Int32)},
		{Name: "triplets", Value: Count(valid, dtypes.Int32)},
	}
}
