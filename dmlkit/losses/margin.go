package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "margin",
		Paper:   "Wu, Manmatha, Smola & Krähenbühl, Sampling Matters in Deep Embedding Learning, ICCV 2017, Eq. 4 with distance-weighted sampling (§4)",
		Summary: "[α + y·(D − β)]₊ on pairs, negatives drawn by distance-weighted sampling",
		New:     func() Loss { return DefaultMargin() },
	})
}

// MarginConfig is the margin loss with distance-weighted sampling. With D_ij the Euclidean
// distance between L2-normalised embeddings and y_ij = +1 (same label) / −1 (different),
//
//	ℓ(i, j) = [α + y_ij (D_ij − β)]₊
//	L = (Σ_{(a,p)} ℓ(a,p) + Σ_{(a,n) sampled} ℓ(a,n)) / #{terms with ℓ > 0}   (0 if none)
//
// Pairs come from triplets (a, p, n): every positive pair (a, p) of an anchor that has at least
// one negative, each with one negative n drawn for it (Wu et al.'s sampler; a negative drawn twice
// counts twice). With Sampling "distance", n is drawn with probability ∝ min(λ, q(D)⁻¹) over the
// negatives with D < NonzeroLossCutoff (uniformly over all negatives if there is none), where
// q(D) ∝ D^{n−2} (1 − D²/4)^{(n−3)/2} is the density of distances between uniform points on the
// unit sphere in R^n (n = embedding dimension) and D is clipped below at Cutoff (this clip plays the
// role of λ). The draw uses Inputs.Scope's RNG (inverse CDF, one uniform per positive pair), so it is
// deterministic given the store's RNG state, and carries no gradient. With Sampling "all" every
// negative pair of an anchor is used once (no RNG).
//
// β is the constant Beta, or with LearnBeta a learnable class-specific β_{y_a} (variable "beta"
// [NumClasses] in Inputs.Scope, initialised to Beta; needs plain [B] labels). The paper's optional
// β regulariser ν·β is not included (ν = 0 in the authors' and pytorch-metric-learning's defaults).
//
// Defaults: α = 0.2, β = 1.2, Cutoff = 0.5, NonzeroLossCutoff = 1.4 (authors' code), constant β
// (pytorch-metric-learning's learn_beta = false), distance-weighted sampling.
type MarginConfig struct {
	Margin            float64 `yaml:"margin" doc:"α: margin around the boundary β"`
	Beta              float64 `yaml:"beta" doc:"β: boundary between positive and negative distances (initial value if learned)"`
	LearnBeta         bool    `yaml:"learn_beta" doc:"learnable class-specific β (variable 'beta')"`
	Sampling          string  `yaml:"sampling" doc:"distance (distance-weighted negative per positive pair) or all"`
	Cutoff            float64 `yaml:"cutoff" doc:"distances are clipped below at this value when weighting"`
	NonzeroLossCutoff float64 `yaml:"nonzero_loss_cutoff" doc:"only negatives closer than this are sampled (if any)"`
}

// DefaultMargin returns the defaults.
func DefaultMargin() *MarginConfig {
	return &MarginConfig{Margin: 0.2, Beta: 1.2, Sampling: "distance", Cutoff: 0.5, NonzeroLossCutoff: 1.4}
}

// Name implements Loss.
func (c *MarginConfig) Name() string { return "margin" }

// Validate implements Validator.
func (c *MarginConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin = %g: want ≥ 0", c.Margin)
	}
	if c.Sampling != "distance" && c.Sampling != "all" {
		return fmt.Errorf("sampling %q: want distance or all", c.Sampling)
	}
	if c.Cutoff <= 0 {
		return fmt.Errorf("cutoff = %g: want > 0", c.Cutoff)
	}
	return nil
}

// marginDistances returns the [B, R] Euclidean distances of the normalised embeddings.
func marginDistances(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	return Distances(normalizeRows(in.Emb), normalizeRows(refEmb))
}

// Build implements Loss.
func (c *MarginConfig) Build(in Inputs) *Node {
	var counts *Node
	switch c.Sampling {
	case "distance":
		counts = c.SampleNegatives(in)
	case "all":
		_, neg := PairMasks(in)
		counts = ConvertDType(neg, in.Emb.DType())
	default:
		panic(fmt.Sprintf("losses: margin: sampling %q: want distance or all", c.Sampling))
	}
	return c.BuildWithNegatives(in, counts)
}

// BuildWithNegatives returns the margin loss for a given [B, R] matrix of negative-pair counts
// (how often (a, n) was drawn; 0 for non-negatives), e.g. from [MarginConfig.SampleNegatives].
// Positive pairs are used for the anchors with a non-zero count row. Exposed for tests and for
// callers with their own sampler.
func (c *MarginConfig) BuildWithNegatives(in Inputs, counts *Node) *Node {
	return c.marginFromDistances(in, marginDistances(in), counts)
}

// marginFromDistances is the margin loss on a given [B, R] distance matrix d (the Euclidean
// distances of the normalised embeddings for "margin"; IDML's introspective distance D_IN for its
// pair base) with negative-pair counts.
func (c *MarginConfig) marginFromDistances(in Inputs, d, counts *Node) *Node {
	pos, neg := PairMasks(in)
	counts = Where(neg, StopGradient(counts), ZerosLike(d))
	hasNeg := GreaterThan(ReduceSum(counts, -1), ZerosLike(ReduceSum(counts, -1)))
	pos = LogicalAnd(pos, InsertAxes(hasNeg, -1))
	beta := ScalarLike(d, c.Beta)
	if c.LearnBeta {
		blPlainLabels(in, "margin")
		if in.Scope == nil {
			panic("losses: margin: learn_beta needs Inputs.Scope")
		}
		nc := in.NumClasses
		if nc <= 0 {
			panic(fmt.Sprintf("losses: margin: learn_beta needs Inputs.NumClasses > 0, got %d", nc))
		}
		var init any
		if d.DType() == dtypes.Float32 {
			v := make([]float32, nc)
			for i := range v {
				v[i] = float32(c.Beta)
			}
			init = v
		} else {
			v := make([]float64, nc)
			for i := range v {
				v[i] = c.Beta
			}
			init = v
		}
		betas := in.Scope.VariableWithValue("beta", init).NodeValue(d.Graph())   // [C]
		classes := ConvertDType(blClassMask(in, nc), d.DType())                  // [B, C]
		beta = InsertAxes(ReduceSum(Mul(classes, InsertAxes(betas, 0)), -1), -1) // [B, 1]
	}
	lPos := relu(AddScalar(Sub(d, beta), c.Margin))
	lNeg := relu(AddScalar(Sub(beta, d), c.Margin))
	zero := ZerosLike(d)
	posTerms := Where(pos, lPos, zero)
	negTerms := Mul(counts, lNeg)
	activePos := Where(LogicalAnd(pos, GreaterThan(lPos, zero)), OnesLike(d), zero)
	activeNeg := Where(GreaterThan(lNeg, zero), counts, zero)
	n := Add(ReduceAllSum(activePos), ReduceAllSum(activeNeg))
	return Div(Add(ReduceAllSum(posTerms), ReduceAllSum(negTerms)), Max(n, OnesLike(n)))
}

// SampleNegatives draws, for every positive pair (a, p) of an anchor with negatives, one negative
// n of a by distance-weighted sampling (see [MarginConfig]) with Inputs.Scope's RNG, and returns
// the [B, R] counts of the drawn (a, n) pairs (no gradient).
func (c *MarginConfig) SampleNegatives(in Inputs) *Node {
	return c.sampleFromDistances(in, marginDistances(in), in.Emb.Shape().Dim(1))
}

// sampleFromDistances draws the negatives by distance-weighted sampling on the [B, R] distances d
// of points on the unit sphere in R^dim (no gradient flows through d).
func (c *MarginConfig) sampleFromDistances(in Inputs, d *Node, dimension int) *Node {
	if in.Scope == nil {
		panic("losses: margin: distance-weighted sampling needs Inputs.Scope (its RNG)")
	}
	d = StopGradient(d)
	g := d.Graph()
	b, r := d.Shape().Dim(0), d.Shape().Dim(1)
	dim := float64(dimension)
	pos, neg := PairMasks(in)
	dc := Max(d, ScalarLike(d, c.Cutoff))
	logW := Sub(MulScalar(Log(dc), 2-dim),
		MulScalar(Log(Max(OneMinus(MulScalar(Square(dc), 0.25)), ScalarLike(d, 1e-8))), (dim-3)/2))
	valid := LogicalAnd(neg, LessThan(d, ScalarLike(d, c.NonzeroLossCutoff)))
	hasValid := BroadcastToShape(InsertAxes(ReduceLogicalOr(valid, -1), -1), d.Shape())
	// Weights of the candidate set: q⁻¹ over the valid negatives, or uniform over all negatives.
	never := BroadcastToShape(ScalarLike(d, -1e30), d.Shape())
	logW = Where(hasValid, Where(valid, logW, never), Where(neg, ZerosLike(d), never))
	w := Exp(Sub(logW, InsertAxes(ReduceMax(logW, -1), -1))) // [B, R], 0 outside the candidates
	// Inverse-CDF draw, one uniform per (a, p): the chosen n is the first with cdf_n ≥ u·cdf_R.
	upper := make([][]bool, r) // upper[k][n]: k ≤ n
	for k := range upper {
		upper[k] = make([]bool, r)
		for n := k; n < r; n++ {
			upper[k][n] = true
		}
	}
	cdf := MatMul(w, ConvertDType(Const(g, upper), d.DType()))               // [B, R]
	total := Slice(cdf, AxisRange(), AxisElem(r-1))                          // [B, 1]
	u := Mul(in.Scope.RandomUniform(g, shapes.Make(d.DType(), b, r)), total) // [B, P]
	below := LessThan(InsertAxes(cdf, 1), InsertAxes(u, -1))                 // [B, P, N]
	choice := ReduceSum(ConvertDType(below, dtypes.Int32), -1)               // [B, P]: index of the draw
	oneHot := OneHot(choice, r, d.DType())                                   // [B, P, N]
	use := LogicalAnd(pos, InsertAxes(ReduceLogicalOr(neg, -1), -1))
	useF := ConvertDType(use, d.DType())
	counts := ReduceSum(Mul(oneHot, InsertAxes(useF, -1)), 1)
	return StopGradient(counts)
}
