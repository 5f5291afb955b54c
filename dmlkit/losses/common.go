package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// refs returns the reference embeddings and labels, and whether the queries are among them (the
// references are the batch itself, or Inputs.QueryIndex places each query in RefEmb).
func refs(in Inputs) (refEmb, refLabels *Node, self bool) {
	if in.RefEmb == nil {
		if in.QueryIndex != nil {
			panic("losses: QueryIndex given without RefEmb")
		}
		return in.Emb, in.Labels, true
	}
	if in.RefLabels == nil {
		panic("losses: RefEmb given without RefLabels")
	}
	return in.RefEmb, in.RefLabels, in.QueryIndex != nil
}

// selfPairs returns the [B, R] boolean mask of (query, itself) pairs: the diagonal when the
// references are the batch, (i, QueryIndex[i]) with QueryIndex, nil when no query is a reference.
func selfPairs(in Inputs) *Node {
	g := in.Emb.Graph()
	b := in.Emb.Shape().Dim(0)
	if in.RefEmb == nil {
		return Diagonal(g, b)
	}
	if in.QueryIndex == nil {
		return nil
	}
	r := in.RefEmb.Shape().Dim(0)
	qi := ConvertDType(in.QueryIndex, dtypes.Int32)
	if qi.Rank() != 1 || qi.Shape().Dim(0) != b {
		panic(fmt.Sprintf("losses: QueryIndex has shape %s, want [%d]", in.QueryIndex.Shape(), b))
	}
	return Equal(InsertAxes(qi, 1), Iota(g, shapes.Make(dtypes.Int32, 1, r), 1))
}

// asSets returns labels as [N, S] (S=1 for plain [N] labels).
func asSets(labels *Node) *Node {
	switch labels.Rank() {
	case 1:
		return InsertAxes(labels, 1)
	case 2:
		return labels
	}
	panic(fmt.Sprintf("losses: labels must be [N] or [N, S] label sets, got shape %s", labels.Shape()))
}

// SameLabel returns the boolean [B, R] matrix "a and b share a label". For label sets ([N, S],
// −1 = empty slot) two samples share a label if any non-empty slot of a equals any of b.
func SameLabel(a, b *Node) *Node {
	sa, sb := asSets(a), asSets(b)
	if sa.DType() != sb.DType() {
		sb = ConvertDType(sb, sa.DType())
	}
	// [B, 1, Sa, 1] == [1, R, 1, Sb] -> [B, R, Sa, Sb]
	x := InsertAxes(sa, 1, -1)
	y := InsertAxes(sb, 0, 1)
	eq := Equal(x, y)
	valid := LogicalAnd(GreaterOrEqual(x, ScalarZero(x.Graph(), x.DType())), GreaterOrEqual(y, ScalarZero(y.Graph(), y.DType())))
	return ReduceLogicalOr(LogicalAnd(eq, valid), 2, 3)
}

// PairMasks returns the boolean [B, R] positive and negative masks of a batch against its
// references. A query's pair with itself (the diagonal when the references are the batch itself,
// (i, QueryIndex[i]) with Inputs.QueryIndex) is in neither mask.
func PairMasks(in Inputs) (pos, neg *Node) {
	_, refLabels, _ := refs(in)
	same := SameLabel(in.Labels, refLabels)
	pos, neg = same, LogicalNot(same)
	if sp := selfPairs(in); sp != nil {
		notSelf := LogicalNot(sp)
		pos = LogicalAnd(pos, notSelf)
		neg = LogicalAnd(neg, notSelf)
	}
	return pos, neg
}

// NotSelf returns the [B, R] boolean mask that is false only on the (query, itself) pairs: (i, i)
// when the references are the batch itself, (i, QueryIndex[i]) with Inputs.QueryIndex; all true
// otherwise.
func NotSelf(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	if sp := selfPairs(in); sp != nil {
		return LogicalNot(sp)
	}
	return BroadcastToDims(Const(in.Emb.Graph(), true), in.Emb.Shape().Dim(0), refEmb.Shape().Dim(0))
}

// CosineSim returns the [B, R] cosine similarities between the rows of a [B, D] and b [R, D]
// (rows are L2-normalised with a small epsilon, so zero rows give 0, not NaN).
func CosineSim(a, b *Node) *Node {
	return MatMul(normalizeRows(a), Transpose(normalizeRows(b), 0, 1))
}

// normalizeRows divides each row by max(‖row‖, 1e-12): exact for non-degenerate rows, and a zero
// row stays zero (with a finite gradient) instead of becoming NaN.
func normalizeRows(x *Node) *Node {
	sq := ReduceSum(Square(x), -1)
	inv := Inverse(Sqrt(Max(sq, ScalarLike(sq, 1e-24))))
	return Mul(x, InsertAxes(inv, -1))
}

// SquaredDistances returns ‖a_i − b_j‖² as [B, R], clamped at 0 against rounding.
func SquaredDistances(a, b *Node) *Node {
	aa := ReduceSum(Square(a), -1)
	bb := ReduceSum(Square(b), -1)
	d := Sub(Add(InsertAxes(aa, 1), InsertAxes(bb, 0)), MulScalar(MatMul(a, Transpose(b, 0, 1)), 2))
	return Max(d, ZerosLike(d))
}

// Distances returns the Euclidean distances ‖a_i − b_j‖ as [B, R]. The value is exact; where the
// squared distance is below 1e-12 (e.g. a sample with itself) the distance and its gradient are 0
// instead of the NaN/∞ of sqrt at 0.
func Distances(a, b *Node) *Node {
	d2 := SquaredDistances(a, b)
	ok := GreaterThan(d2, ScalarLike(d2, 1e-12))
	safe := Where(ok, d2, OnesLike(d2))
	return Where(ok, Sqrt(safe), ZerosLike(d2))
}

// MaskedMean returns the mean of x over mask, or 0 when the mask is empty (never NaN).
func MaskedMean(x, mask *Node) *Node {
	n := ReduceAllSum(ConvertDType(mask, x.DType()))
	s := MaskedReduceAllSum(x, mask)
	return Div(s, Max(n, OnesLike(n)))
}

// Count returns the number of true entries of a boolean mask, as dtype.
func Count(mask *Node, dtype dtypes.DType) *Node {
	return ReduceAllSum(ConvertDType(mask, dtype))
}

// relu returns max(x, 0) (gradient 0 at the kink).
func relu(x *Node) *Node { return Max(x, ZerosLike(x)) }
