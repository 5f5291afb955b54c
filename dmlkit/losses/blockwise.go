package losses

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Blockwise is implemented by losses whose whole-batch value decomposes over anchors (query rows),
// so that the loss stage of multistage backprop (seed 003, Algorithm 1) can run one block of
// anchors at a time against the whole batch, with memory O(block·B) instead of O(B²):
//
//	counts = Σ_blocks BlockCounts(block)                        (first pass, forward only)
//	L      = Σ_blocks BuildBlock(block, counts)                 (second pass, with gradients)
//	∂L/∂E  = Σ_blocks ∂BuildBlock(block, counts)/∂E
//
// A block's Inputs hold its query rows in Emb/Labels, the whole batch in RefEmb/RefLabels and the
// queries' rows within the batch in QueryIndex (so self-pairs are excluded exactly as on the
// diagonal of the whole-batch loss). The gradient flows to both the block rows and the reference
// rows. counts are the whole-batch normalisers (numbers of active / hard pairs, of anchors with a
// positive, ...): integer-valued and piecewise constant in the embeddings, so they carry no
// gradient in the whole-batch graph either, and the decomposition is exact — the blocks' sum
// differs from Build only in floating-point summation order.
type Blockwise interface {
	Loss
	// BlockwiseSupport returns nil when this configuration decomposes over anchors, else why not.
	BlockwiseSupport() error
	// NumBlockCounts is m, the length of the count vector (≥ 0).
	NumBlockCounts() int
	// BlockCounts returns the block's [m] Float64 counts; summed over a partition of the batch
	// into blocks they are the whole-batch normalisers.
	BlockCounts(in Inputs) *Node
	// BuildBlock returns the block's share of the loss (a scalar of in.Emb's dtype) given the
	// whole-batch counts [m] (Float64).
	BuildBlock(in Inputs, counts *Node) *Node
}

// CheckBlockwise returns nil if l can be evaluated blockwise in its configuration, else an error
// that says why (not a [Blockwise] loss, or an option that couples anchors).
func CheckBlockwise(l Loss) error {
	b, ok := l.(Blockwise)
	if !ok {
		return fmt.Errorf("loss %s does not decompose over anchors (no blockwise loss stage; blockwise losses: %v)", l.Name(), BlockwiseNames())
	}
	if err := b.BlockwiseSupport(); err != nil {
		return fmt.Errorf("loss %s: %w", l.Name(), err)
	}
	return nil
}

// BlockwiseNames lists the registered losses that implement [Blockwise] with their defaults.
func BlockwiseNames() []string {
	var out []string
	for _, n := range Names() {
		if b, ok := registry[n].New().(Blockwise); ok && (n == "combo" || b.BlockwiseSupport() == nil) {
			out = append(out, n)
		}
	}
	return out
}

// blockCount returns the number of true entries of mask as a Float64 scalar (counted in int32:
// exact up to 2³¹ entries per block).
func blockCount(mask *Node) *Node {
	return ConvertDType(ReduceAllSum(ConvertDType(mask, dtypes.Int32)), dtypes.Float64)
}

// countAt returns counts[i] (a [m] Float64 vector) as a scalar of dtype, floored at 1 so that an
// empty set divides a zero sum by 1 (the 0 of [MaskedMean]).
func countAt(counts *Node, i int, dtype dtypes.DType) *Node {
	n := ConvertDType(Squeeze(Slice(counts, AxisRange(i, i+1))), dtype)
	return Max(n, OnesLike(n))
}

// stackCounts stacks Float64 scalars into the [m] count vector.
func stackCounts(xs ...*Node) *Node { return Stack(xs, 0) }

// EvaluateBlockwise computes a [Blockwise] loss like [Evaluate] (same arguments), but in blocks of
// block anchors against the whole batch: a first pass sums the blocks' counts, a second pass sums
// the blocks' losses and their gradients w.r.t. the whole batch (in float64 on the host). The
// result equals Evaluate's up to summation order. It is the reference driver of the blockwise
// loss stage of multistage backprop (the trainer has its own, on its model store).
func EvaluateBlockwise(backend compute.Backend, l Loss, emb []float64, b, d int, labels []int64, setSize, block int, opt EvalOptions) (res Result, err error) {
	if err := CheckBlockwise(l); err != nil {
		return res, fmt.Errorf("losses: %w", err)
	}
	bl := l.(Blockwise)
	if block <= 0 {
		return res, fmt.Errorf("losses: block size %d: want > 0", block)
	}
	if setSize, err = checkEvalShapes(emb, b, d, labels, setSize); err != nil {
		return res, err
	}
	opt = opt.withDefaults(labels)
	if err := CheckLabels(labels, setSize, opt.NumClasses); err != nil {
		return res, err
	}
	store, err := evalStore(opt.Store, opt.Seed)
	if err != nil {
		return res, err
	}
	defer recoverLossPanic(l, &err)
	embT, labT := evalTensors(emb, b, d, labels, setSize, opt.DType)
	blockIn := func(scope *model.Scope, e, y, qi *Node) Inputs {
		idx := InsertAxes(qi, -1)
		return Inputs{Emb: Gather(e, idx), Labels: Gather(y, idx), RefEmb: e, RefLabels: y,
			QueryIndex: qi, Scope: scope.In("loss"), NumClasses: opt.NumClasses, ClassBound: opt.ClassBound}
	}
	countsExec, err := model.NewExec(backend, store, func(scope *model.Scope, e, y, qi *Node) *Node {
		return bl.BlockCounts(blockIn(scope, e, y, qi))
	})
	if err != nil {
		return res, err
	}
	blockExec, err := model.NewExec(backend, store, func(scope *model.Scope, e, y, qi, counts *Node) []*Node {
		loss := bl.BuildBlock(blockIn(scope, e, y, qi), counts)
		out := []*Node{ConvertDType(loss, dtypes.Float64)}
		if opt.Grad {
			out = append(out, ConvertDType(Gradient(loss, e)[0], dtypes.Float64))
		}
		return out
	})
	if err != nil {
		return res, err
	}
	m := bl.NumBlockCounts()
	counts := make([]float64, m)
	queryIndex := func(s int) *tensors.Tensor {
		qi := make([]int32, min(block, b-s))
		for i := range qi {
			qi[i] = int32(s + i)
		}
		return tensors.FromFlatDataAndDimensions(qi, len(qi))
	}
	if m > 0 {
		for s := 0; s < b; s += block {
			out, err := countsExec.Call(embT, labT, queryIndex(s))
			if err != nil {
				return res, err
			}
			for i, v := range tensors.MustCopyFlatData[float64](out[0]) {
				counts[i] += v
			}
		}
	}
	countsT := tensors.FromFlatDataAndDimensions(counts, m)
	if opt.Grad {
		res.Grad = make([]float64, b*d)
	}
	for s := 0; s < b; s += block {
		out, err := blockExec.Call(embT, labT, queryIndex(s), countsT)
		if err != nil {
			return res, err
		}
		res.Value += tensors.ToScalar[float64](out[0])
		if opt.Grad {
			for i, v := range tensors.MustCopyFlatData[float64](out[1]) {
				res.Grad[i] += v
			}
		}
	}
	return res, nil
}
