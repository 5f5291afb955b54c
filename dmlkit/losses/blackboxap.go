package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "blackboxap",
		Paper:   "Rolínek, Musil, Paulus, Vlastelica, Michaelis & Martius, Optimizing Rank-based Metrics with Blackbox Differentiation, CVPR 2020, Eq. 3-5, §4",
		Summary: "1 − mAP from exact ranks; gradient by blackbox differentiation of the ranking (λ-interpolation)",
		New:     func() Loss { return DefaultBlackboxAP() },
	})
}

// BlackboxAPConfig is the blackbox-differentiated AP loss. With cosine similarities, negatives
// shifted up by a margin α, and exact ranks (strictly greater scores ranked ahead)
//
//	rank(i,p) = 1 + #{k ∈ Ω_i : s̃_ik > s̃_ip},  rank⁺(i,p) = 1 + #{k ∈ P_i : s_ik > s_ip}
//	AP_i = 1/|P_i| Σ_{p∈P_i} rank⁺(i,p)/rank(i,p),   L = 1 − mean_i AP_i
//
// (queries without positives skipped; 0 if none). The value is the exact AP (of the shifted
// scores). Ranks are piecewise constant; their gradient is replaced by the blackbox rule
// ∂L/∂s = −(rank(s + λ·∂L/∂rank) − rank(s))/λ, applied to the two ranking calls separately.
//
// Our reading: λ = 4, α = 0.02 (the values of the paper's retrieval experiments as we read them;
// not cross-checked against the authors' code). The gradient is not a finite-difference gradient
// (the value is piecewise constant), so it is tested against a brute-force implementation of the
// rule above.
type BlackboxAPConfig struct {
	Lambda float64 `yaml:"lambda" doc:"λ: interpolation strength of the blackbox gradient"`
	Margin float64 `yaml:"margin" doc:"α: score margin added to negatives before ranking"`
}

// DefaultBlackboxAP returns the defaults.
func DefaultBlackboxAP() *BlackboxAPConfig { return &BlackboxAPConfig{Lambda: 4, Margin: 0.02} }

// Name implements Loss.
func (c *BlackboxAPConfig) Name() string { return "blackboxap" }

// Validate implements Validator.
func (c *BlackboxAPConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin = %g: want ≥ 0", c.Margin)
	}
	if c.Lambda <= 0 {
		return fmt.Errorf("lambda = %g: want > 0", c.Lambda)
	}
	return nil
}

// Build implements Loss.
func (c *BlackboxAPConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	s := CosineSim(in.Emb, refEmb)
	pos, neg := PairMasks(in)
	cand := NotSelf(in)
	shifted := Add(s, Where(neg, BroadcastToShape(ScalarLike(s, c.Margin), s.Shape()), ZerosLike(s)))
	rankAll := bbRank(shifted, cand, c.Lambda)
	rankPos := bbRank(s, pos, c.Lambda)
	npos := ReduceSum(ConvertDType(pos, s.DType()), -1)
	ap := Div(MaskedReduceSum(Div(rankPos, rankAll), pos, -1), Max(npos, OnesLike(npos)))
	return MaskedMean(OneMinus(ap), GreaterThan(npos, ZerosLike(npos)))
}

// bbRank returns, per row, the rank of each entry among the entries of mask (1 + number of
// masked entries with a strictly larger score), with the blackbox gradient of Rolínek et al.
func bbRank(s, mask *Node, lambda float64) *Node {
	rankOf := func(x *Node) *Node {
		ahead := LogicalAnd(GreaterThan(InsertAxes(x, 1), InsertAxes(x, 2)), InsertAxes(mask, 1)) // [i, p, k]: x_k > x_p, k ∈ mask
		return AddScalar(ReduceSum(ConvertDType(ahead, x.DType()), -1), 1)
	}
	y := IdentityWithCustomGradient(s, func(x, v *Node) *Node {
		x, v = StopGradient(x), StopGradient(v)
		g := MulScalar(Sub(rankOf(Add(x, MulScalar(v, lambda))), rankOf(x)), -1/lambda)
		return Where(mask, g, ZerosLike(g)) // only the ranked entries have a score in this ranking
	})
	// Value rank(s); gradient w.r.t. y is the identity, so y's custom VJP receives ∂L/∂rank.
	return Add(StopGradient(rankOf(y)), Sub(y, StopGradient(y)))
}
