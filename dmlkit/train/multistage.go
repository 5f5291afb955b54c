package train

import (
	"fmt"
	"math"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Blockwise loss stage of multistage backprop (seed 003, Algorithm 1, lines 10–12).
//
// The whole-batch stage 2 (msLossGraph, device-resident: see engine.multistageAccumulate) builds the loss on all B embeddings at once, so its
// pairwise matrices are B×B (1.5 GB each in float32 for Omniglot's 19,280 background images). With
// multistage.loss_block = K > 0 and a loss that decomposes over anchors ([losses.Blockwise]) stage 2
// runs instead in blocks of K anchors, each scored against all B embeddings:
//
//	pass 1, per block:  counts += BlockCounts(block)              whole-batch normalisers [m]
//	pass 2, per block:  L += BuildBlock(block, counts),  G += ∂BuildBlock/∂E   (E: all B rows)
//
// Each block graph gathers its anchor rows from E, so the gradient reaches both the anchors and
// the reference rows, and the loss excludes (anchor, itself) through Inputs.QueryIndex exactly as
// the whole-batch loss does. Memory is O(K·B) per block plus the B×D embeddings and gradient;
// the result is the whole-batch loss and ∂L/∂E up to floating-point summation order.

// blockStage holds the compiled graphs of the blockwise loss stage (created on first use).
type blockStage struct {
	counts *model.Exec // (E [B,D], y, q [K] int32) → block counts [m]
	block  *model.Exec // (E, y, q, counts [m]) → (block loss, ∂/∂E [B,D]); accumulates loss-variable grads
	m      int         // length of the count vector (≥ 1: a single zero slot when no term has counts)
	// passTimes are the wall times of the count pass and the loss/gradient pass of the last step.
	passTimes [2]time.Duration
}

// validateLossBlock checks multistage.loss_block against the rest of the configuration.
func (c *Config) validateLossBlock() error {
	k := c.Multistage.LossBlock
	if k < 0 {
		return fmt.Errorf("multistage.loss_block: %d: want ≥ 0 (0 = whole-batch loss stage)", k)
	}
	if k == 0 {
		return nil
	}
	if c.Multistage.Chunk == 0 {
		return fmt.Errorf("multistage.loss_block: %d needs multistage backprop (multistage.chunk > 0)", k)
	}
	terms, err := c.lossTerms()
	if err != nil {
		return err
	}
	for i, t := range terms {
		if err := losses.CheckBlockwise(t.loss); err != nil {
			if len(terms) == 1 {
				return fmt.Errorf("multistage.loss_block: %w", err)
			}
			return fmt.Errorf("multistage.loss_block: loss.terms[%d]: %w", i, err)
		}
	}
	return nil
}

// lossStage is stage 2 on the chunks' loss embeddings embs (device tensors [r_k, D] from stage 1)
// with labels y: it returns the loss and G_k = ∂L/∂E_k per chunk, and sets e.embFinite; gradients
// of loss variables are accumulated. It runs the whole-batch graph (msLossGraph: all on the
// device), or the blockwise stage when multistage.loss_block > 0: the chunks are concatenated on
// the device, each block's ∂L/∂E [B, D] comes back to the host and is summed in float64 (the
// precision the blockwise tests rely on), and the sum goes back as one tensor per chunk.
func (e *engine) lossStage(embs []*tensors.Tensor, y *tensors.Tensor) (float64, []*tensors.Tensor, error) {
	if e.cfg.Multistage.LossBlock <= 0 {
		args := make([]any, 0, len(embs)+1)
		args = append(args, y)
		for _, t := range embs {
			args = append(args, t)
		}
		out, err := e.msLoss.Call(args...)
		if err != nil {
			return 0, nil, err
		}
		e.embFinite = isFinite(scalarValue(out[1]))
		return scalarValue(out[0]), out[2:], nil
	}
	bs, err := e.blockStage()
	if err != nil {
		return 0, nil, err
	}
	args := make([]any, len(embs))
	for i, t := range embs {
		args[i] = t
	}
	cat, err := e.msCat.Call(args...)
	if err != nil {
		return 0, nil, err
	}
	embT := cat[0]
	defer func() { _ = embT.FinalizeAll() }()
	e.embFinite = isFinite(scalarValue(cat[1]))
	n, d := embT.Shape().Dim(0), embT.Shape().Dim(1)
	k := e.cfg.Multistage.LossBlock
	queries := func(s int) *tensors.Tensor {
		q := make([]int32, min(k, n-s))
		for i := range q {
			q[i] = int32(s + i)
		}
		return tensors.FromFlatDataAndDimensions(q, len(q))
	}
	t0 := time.Now()
	counts := make([]float64, bs.m)
	for s := 0; s < n; s += k {
		out, err := bs.counts.Call(embT, y, queries(s))
		if err != nil {
			return 0, nil, err
		}
		for i, v := range tensors.MustCopyFlatData[float64](out[0]) {
			counts[i] += v
		}
	}
	countsT := tensors.FromFlatDataAndDimensions(counts, bs.m)
	t1 := time.Now()
	loss := 0.0
	acc := make([]float64, n*d)
	for s := 0; s < n; s += k {
		out, err := bs.block.Call(embT, y, queries(s), countsT)
		if err != nil {
			return 0, nil, err
		}
		loss += scalarValue(out[0])
		for i, v := range tensors.MustCopyFlatData[float32](out[1]) {
			acc[i] += float64(v)
		}
		_ = out[1].FinalizeAll()
	}
	gs := make([]*tensors.Tensor, len(embs))
	row := 0
	for i, t := range embs {
		r := t.Shape().Dim(0)
		g := make([]float32, r*d)
		for j := range g {
			g[j] = float32(acc[row*d+j])
		}
		gs[i] = tensors.FromFlatDataAndDimensions(g, r, d)
		row += r
	}
	bs.passTimes = [2]time.Duration{t1.Sub(t0), time.Since(t1)}
	return loss, gs, nil
}

// isFinite reports whether v is neither NaN nor ±Inf.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// blockStage returns the compiled blockwise graphs, creating them on first use.
func (e *engine) blockStage() (*blockStage, error) {
	if e.blocks != nil {
		return e.blocks, nil
	}
	bs := &blockStage{}
	for _, t := range e.terms {
		b, ok := t.loss.(losses.Blockwise)
		if !ok {
			return nil, fmt.Errorf("train: multistage.loss_block: %w", losses.CheckBlockwise(t.loss))
		}
		bs.m += b.NumBlockCounts()
	}
	bs.m = max(bs.m, 1)
	var err error
	if bs.counts, err = model.NewExec(e.backend, e.store, e.msCountsGraph); err != nil {
		return nil, fmt.Errorf("train: creating the blockwise count graph: %w", err)
	}
	if bs.block, err = model.NewExec(e.backend, e.store, e.msBlockGraph); err != nil {
		return nil, fmt.Errorf("train: creating the blockwise loss graph: %w", err)
	}
	e.blocks = bs
	return bs, nil
}

// blockInputs returns, per loss term, the Inputs of the block of anchors q ([K] int32 rows of emb)
// against the whole batch emb [B, D] with labels y ([B] or [B, S]), in the term's scope (as
// buildLoss).
func (e *engine) blockInputs(scope *model.Scope, emb, y, q *Node) []losses.Inputs {
	idx := InsertAxes(q, -1)
	base := losses.Inputs{Emb: Gather(emb, idx), Labels: Gather(y, idx), RefEmb: emb, RefLabels: y, QueryIndex: q, NumClasses: e.nClass, ClassBound: e.classBound(y.Rank())}
	out := make([]losses.Inputs, len(e.terms))
	for i := range e.terms {
		ls := scope.At(lossScope)
		if len(e.terms) > 1 {
			ls = ls.At("term_%d", i)
		}
		out[i] = base
		out[i].Scope = ls
	}
	return out
}

// msCountsGraph is pass 1 of the blockwise stage for one block: the terms' counts, concatenated
// ([m] Float64; a single 0 when no term has counts).
func (e *engine) msCountsGraph(scope *model.Scope, emb, y, q *Node) *Node {
	liveVariables(scope, emb.Graph())
	ins := e.blockInputs(scope, emb, y, q)
	var parts []*Node
	for i, t := range e.terms {
		b := t.loss.(losses.Blockwise)
		if b.NumBlockCounts() > 0 {
			parts = append(parts, ConvertDType(b.BlockCounts(ins[i]), dtypes.Float64))
		}
	}
	if len(parts) == 0 {
		return Zeros(emb.Graph(), shapes.Make(dtypes.Float64, 1))
	}
	return Concatenate(parts, 0)
}

// msBlockGraph is pass 2 of the blockwise stage for one block: Σ wᵢ·BuildBlockᵢ(block, countsᵢ)
// and its gradient w.r.t. all B embeddings; gradients of the loss's own variables are accumulated.
func (e *engine) msBlockGraph(scope *model.Scope, emb, y, q, counts *Node) (*Node, *Node) {
	liveVariables(scope, emb.Graph())
	ins := e.blockInputs(scope, emb, y, q)
	var total *Node
	off := 0
	for i, t := range e.terms {
		b := t.loss.(losses.Blockwise)
		m := b.NumBlockCounts()
		l := b.BuildBlock(ins[i], Slice(counts, AxisRange(off, off+m)))
		off += m
		if l.DType() != emb.DType() {
			l = ConvertDType(l, emb.DType())
		}
		l = MulScalar(l, t.weight)
		if total == nil {
			total = l
		} else {
			total = Add(total, l)
		}
	}
	return total, e.embGradAccumulating(total, emb)
}
