package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "centroidtriplet",
		Paper:   "Wieczorek, Rychalska & Dąbrowski, On the Unreasonable Effectiveness of Centroids in Image Retrieval, ICONIP 2021, Eq. 2 (code: mikwieczorek/centroids-reid)",
		Summary: "triplet loss between each anchor and class centroids: [d(a, c_P) − d(a, c_N) + α]₊",
		New:     func() Loss { return DefaultCentroidTriplet() },
	})
}

// CentroidTripletConfig is the centroid triplet loss (CTL):
//
//	L = mean_a [ d(f_a, c_P(a)) − min_{c ≠ y_a} d(f_a, c_c) + α ]₊
//
// c_P(a) is the centroid of the anchor's class computed without the anchor (the authors split each
// class of the batch into a query and the samples forming its centroid), c_c the centroid of all
// batch samples of class c. The hardest negative centroid is used, as the authors' code feeds
// the centroids to a batch-hard triplet loss. The mean runs over anchors with at least one other
// sample of their class and one other class in the batch (0 if none). d is the squared Euclidean
// distance of the paper's Eq. 2 ("squared_l2") or the Euclidean distance of the authors' code
// ("l2"); Normalize L2-normalises the embeddings first (the authors train on raw features). The
// references (RefEmb) are not used: centroids come from the batch. Labels must be plain [B].
//
// Defaults: α = 0.3 (authors' configuration), squared_l2, no normalisation.
type CentroidTripletConfig struct {
	Margin    float64 `yaml:"margin" doc:"α: margin"`
	Distance  string  `yaml:"distance" doc:"squared_l2 (paper) or l2 (authors' code)"`
	Normalize bool    `yaml:"normalize" doc:"L2-normalise embeddings first"`
}

// DefaultCentroidTriplet returns the defaults.
func DefaultCentroidTriplet() *CentroidTripletConfig {
	return &CentroidTripletConfig{Margin: 0.3, Distance: "squared_l2"}
}

// Name implements Loss.
func (c *CentroidTripletConfig) Name() string { return "centroidtriplet" }

// Validate implements Validator.
func (c *CentroidTripletConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin %g: want ≥ 0", c.Margin)
	}
	if c.Distance != "l2" && c.Distance != "squared_l2" {
		return fmt.Errorf("distance %q: want squared_l2 or l2", c.Distance)
	}
	return nil
}

// Build implements Loss.
func (c *CentroidTripletConfig) Build(in Inputs) *Node {
	blPlainLabels(in, "centroidtriplet")
	e := in.Emb
	if c.Normalize {
		e = normalizeRows(e)
	}
	self := Inputs{Emb: in.Emb, Labels: in.Labels} // centroids come from the batch only
	pos, neg := PairMasks(self)
	same := SameLabel(in.Labels, in.Labels)
	posF := ConvertDType(pos, e.DType())
	sameF := ConvertDType(same, e.DType())
	nPos := ReduceSum(posF, -1) // [B]
	leaveOut := Div(MatMul(posF, e), InsertAxes(Max(nPos, OnesLike(nPos)), -1))
	classMean := Div(MatMul(sameF, e), InsertAxes(ReduceSum(sameF, -1), -1))
	dPos := ReduceSum(Square(Sub(e, leaveOut)), -1) // [B]
	dNeg := SquaredDistances(e, classMean)          // [B, B]: anchor a to the centroid of j's class
	if c.Distance == "l2" {
		dPos, dNeg = ctlSqrt(dPos), ctlSqrt(dNeg)
	}
	// One column per class (its first sample): the min's gradient must not be split over the equal
	// distances to copies of the same centroid.
	bsz := e.Shape().Dim(0)
	earlier := make([][]bool, bsz) // earlier[j][k]: k < j
	for j := range earlier {
		earlier[j] = make([]bool, bsz)
		for k := 0; k < j; k++ {
			earlier[j][k] = true
		}
	}
	first := LogicalNot(ReduceLogicalOr(LogicalAnd(same, Const(e.Graph(), earlier)), -1)) // [B]
	neg = LogicalAnd(neg, InsertAxes(first, 0))
	hardNeg := ReduceMin(Where(neg, dNeg, BroadcastToShape(ScalarLike(dNeg, 1e30), dNeg.Shape())), -1)
	valid := LogicalAnd(GreaterThan(nPos, ZerosLike(nPos)), ReduceLogicalOr(neg, -1))
	term := relu(AddScalar(Sub(dPos, hardNeg), c.Margin))
	return MaskedMean(Where(valid, term, ZerosLike(term)), valid)
}

// ctlSqrt is sqrt with value and gradient 0 below 1e-12 (no NaN at 0).
func ctlSqrt(x *Node) *Node {
	ok := GreaterThan(x, ScalarLike(x, 1e-12))
	return Where(ok, Sqrt(Where(ok, x, OnesLike(x))), ZerosLike(x))
}
