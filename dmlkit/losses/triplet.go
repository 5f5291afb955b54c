package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "triplet",
		Paper:   "Schroff, Kalenichenko & Philbin, FaceNet, CVPR 2015, Eq. 1 (semi-hard: §3.2); batch-hard: Hermans, Beyer & Leibe 2017; defaults as in pytorch-metric-learning TripletMarginLoss",
		Summary: "relu(d(a,p) − d(a,n) + margin) over all, semi-hard or batch-hard triplets",
		New:     func() Loss { return DefaultTriplet() },
	})
}

// TripletConfig is the triplet margin loss
//
//	L = reduce{ [d(a,p) − d(a,n) + m]₊ : mined triplets (a, p, n) }
//
// over triplets of an anchor a of the batch, a positive p ≠ a and a negative n of its references.
// d is the Euclidean distance between L2-normalised embeddings ("l2", d ∈ [0, 2]) or its square
// ("squared_l2", FaceNet's form); Normalize false uses the raw embeddings.
//
// Mining (the masks are computed from the distances without gradient):
//   - "all": every valid triplet (batch-all);
//   - "semihard": FaceNet's semi-hard negatives, d(a,p) < d(a,n) < d(a,p) + m (the triplets of
//     pytorch-metric-learning's TripletMarginMiner type "semihard");
//   - "hard": batch-hard (Hermans et al.): per anchor the farthest positive and the closest
//     negative, one triplet per anchor that has both.
//
// reduce is the mean over the triplets with a non-zero loss when AvgNonZero (pytorch-metric-
// learning's AvgNonZeroReducer, its default), else the mean over all mined triplets (the paper's
// average). No (active) triplet gives 0.
//
// Defaults (pytorch-metric-learning 2.8.1): l2 on normalised embeddings, m = 0.05, all triplets,
// AvgNonZero. FaceNet itself uses squared_l2 with m = 0.2 and semi-hard mining.
type TripletConfig struct {
	Margin     float64 `yaml:"margin" doc:"margin m"`
	Distance   string  `yaml:"distance" doc:"l2 or squared_l2"`
	Normalize  bool    `yaml:"normalize" doc:"L2-normalise embeddings before measuring distances"`
	Mining     string  `yaml:"mining" doc:"all, semihard or hard (batch-hard)"`
	AvgNonZero bool    `yaml:"avg_nonzero" doc:"average over triplets with non-zero loss only"`
}

// DefaultTriplet returns pytorch-metric-learning's defaults.
func DefaultTriplet() *TripletConfig {
	return &TripletConfig{Margin: 0.05, Distance: "l2", Normalize: true, Mining: "all", AvgNonZero: true}
}

// Name implements Loss.
func (c *TripletConfig) Name() string { return "triplet" }

// Validate implements Validator.
func (c *TripletConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin %g: want ≥ 0 (a negative margin asks the negative to be closer than the positive)", c.Margin)
	}
	if c.Distance != "l2" && c.Distance != "squared_l2" {
		return fmt.Errorf("distance %q: want l2 or squared_l2", c.Distance)
	}
	switch c.Mining {
	case "all", "semihard", "hard":
	default:
		return fmt.Errorf("mining %q: want all, semihard or hard", c.Mining)
	}
	return nil
}

// tripletDistances returns the [B, R] distance matrix of the configured kind.
func (c *TripletConfig) tripletDistances(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	a, b := in.Emb, refEmb
	if c.Normalize {
		a, b = normalizeRows(a), normalizeRows(b)
	}
	switch c.Distance {
	case "l2":
		return Distances(a, b)
	case "squared_l2":
		return SquaredDistances(a, b)
	}
	panic(fmt.Sprintf("losses: triplet: distance %q: want l2 or squared_l2", c.Distance))
}

// Build implements Loss.
func (c *TripletConfig) Build(in Inputs) *Node {
	d := c.tripletDistances(in)
	pos, neg := PairMasks(in)
	if c.Mining == "hard" {
		big := ScalarLike(d, 1e6)
		hardPos := ReduceMax(Where(pos, d, Neg(OnesLike(d))), -1)                 // [B]
		hardNeg := ReduceMin(Where(neg, d, BroadcastToShape(big, d.Shape())), -1) // [B]
		valid := LogicalAnd(ReduceLogicalOr(pos, -1), ReduceLogicalOr(neg, -1))
		term := relu(AddScalar(Sub(hardPos, hardNeg), c.Margin))
		return reducePairs(term, valid, c.AvgNonZero)
	}
	// t[a, p, n] = d(a,p) − d(a,n) + m
	t := AddScalar(Sub(InsertAxes(d, 2), InsertAxes(d, 1)), c.Margin)
	mask := LogicalAnd(InsertAxes(pos, 2), InsertAxes(neg, 1))
	switch c.Mining {
	case "all":
	case "semihard":
		gap := StopGradient(Sub(InsertAxes(d, 1), InsertAxes(d, 2))) // d(a,n) − d(a,p)
		mask = LogicalAnd(mask, LogicalAnd(GreaterThan(gap, ZerosLike(gap)), LessThan(gap, AddScalar(ZerosLike(gap), c.Margin))))
	default:
		panic(fmt.Sprintf("losses: triplet: mining %q: want all, semihard or hard", c.Mining))
	}
	return reducePairs(relu(t), BroadcastToShape(mask, t.Shape()), c.AvgNonZero)
}
