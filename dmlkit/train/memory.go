package train

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// StepMemory is the memory account of one direct training step's graph, read from the GoMLX
// graph itself (before any backend compiles it), in bytes. It answers where a step's memory goes
// at the level every backend shares: the variables, the batch, and the activations — the forward
// tensors computed from the batch that the backward pass reads, which must stay alive from the
// forward pass until the backward pass has used them. A compiler (XLA) may fuse elementwise
// producers into their backward consumers and keep their inputs instead, so Saved is what the
// autodiff graph asks for, not XLA's buffer assignment; the same account of a PyTorch step is
// the tensors its autograd graph saves (scripts/gpucheck_torch.py --saved-tensors).
type StepMemory struct {
	Batch int `json:"batch"`
	// Variables are the bytes of every variable the step reads: the model's and the loss's
	// parameters, BatchNorm statistics, the optimiser's state.
	Variables int64 `json:"variables"`
	// Trainable are the bytes of the trainable variables; their gradients take as much again.
	Trainable int64 `json:"trainable"`
	// Inputs are the bytes of the step's batch inputs: images, labels, label weights.
	Inputs int64 `json:"inputs"`
	// Saved are the bytes of the forward tensors computed from the batch that the backward pass
	// reads (a reshape or identity counted once with the tensor it views).
	Saved int64 `json:"saved"`
	// SavedByOp splits Saved by the op that produced each tensor, largest first.
	SavedByOp []OpBytes `json:"saved_by_op"`
	// SavedByDType splits Saved by element type (float32, bfloat16, bool, …), largest first.
	SavedByDType []OpBytes `json:"saved_by_dtype"`
	// SavedFused is Saved if a compiler fuses every cheap producer (elementwise ops, converts,
	// broadcasts, reshapes, slices, transposes) into the backward ops that read it when those are
	// themselves fusible (elementwise ops, reductions, batch-norm-grad, which XLA expands into
	// both), keeping the producer's inputs instead: XLA's fusion does this where it pays. A tensor
	// a convolution, a matmul or another opaque op reads in the backward pass stays. It can exceed
	// Saved where a producer's inputs are larger than the producer. What XLA keeps is decided by
	// its fusion and buffer assignment; Saved and SavedFused are two readings of the graph.
	SavedFused int64 `json:"saved_fused"`
	// SavedFusedByOp splits SavedFused by op, largest first.
	SavedFusedByOp []OpBytes `json:"saved_fused_by_op"`
	// ParamDerived are the bytes of forward tensors computed from variables alone (no batch
	// dependence) that the backward pass reads, e.g. bfloat16 copies of the weights.
	ParamDerived int64 `json:"param_derived"`
	// Largest is the largest single tensor of the step's live graph (forward or backward) and
	// the op that produces it.
	Largest OpBytes `json:"largest"`
	// Forward and Backward count the live nodes built before and by the backward pass.
	Forward  int `json:"forward_nodes"`
	Backward int `json:"backward_nodes"`
}

// OpBytes is a count of tensors and their bytes under one name (an op type or a dtype).
type OpBytes struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
	Bytes int64  `json:"bytes"`
}

// backwardStartKey is the graph state under which [markBackward] records where the backward
// pass starts.
type backwardStartKey struct{}

// markBackward records in g, the first time it is called for g, the id of the next node to be
// built: the first node of the backward pass when called just before Gradient.
func markBackward(g *Graph) {
	if g.State(backwardStartKey{}) == nil {
		g.AttachState(backwardStartKey{}, g.LastNode().Id()+1)
	}
}

// MeasureStepMemory builds the direct training step of cfg for a batch of batch images of
// h×w×c (nClasses training classes) on backend b and accounts for its graph ([StepMemory]).
// Nothing is executed: the variables are created with their shapes only (pretrained weights are
// not read). The batch's labels are single ([batch]) or, with mixup, label sets with weights
// ([batch, 2]). A multistage configuration is refused: its largest graph is stage 3 on one chunk,
// which is the direct step's graph without the loss — measure with batch = multistage.chunk.
func MeasureStepMemory(cfg Config, b compute.Backend, batch, h, w, c, nClasses int) (*StepMemory, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("train: config: %w", err)
	}
	if cfg.Multistage.Chunk > 0 {
		return nil, fmt.Errorf("train: config: multistage.chunk: %d: the memory account covers the direct step; measure a chunk's stage 3 with multistage.chunk 0 and the batch of one chunk", cfg.Multistage.Chunk)
	}
	if batch <= 0 || h <= 0 || w <= 0 || c <= 0 || nClasses <= 0 {
		return nil, fmt.Errorf("train: memory account: batch %d, image %d×%d×%d, %d classes: want all > 0", batch, h, w, c, nClasses)
	}
	cfg.Log.EverySteps = 0 // no diagnostics outputs
	store := model.NewStore()
	e, err := newEngine(&cfg, b, store, nClasses, h, w, c)
	if err != nil {
		return nil, err
	}
	var data, roots []*Node
	collect := func(scope *model.Scope, outs []*Node) []*Node {
		g := outs[0].Graph()
		roots = append(roots, outs...)
		for v := range store.IterVariables() {
			if v.InUseByGraph(g) {
				roots = append(roots, v.NodeValue(g))
			}
		}
		return outs
	}
	var ex *model.Exec
	xShape := shapes.Make(dtypes.Float32, batch, h, w, c)
	if cfg.Model.Backbone == "features" {
		xShape = shapes.Make(dtypes.Float32, batch, h*w*c)
	}
	scalar := shapes.Make(dtypes.Float32)
	var inShapes []shapes.Shape
	if cfg.Mixup.Enabled {
		ex, err = model.NewExec(b, store, func(scope *model.Scope, x, y, wt, lr, t *Node) []*Node {
			data = []*Node{x, y, wt}
			return collect(scope, e.stepMixGraph(scope, x, y, wt, lr, t))
		})
		inShapes = []shapes.Shape{xShape, shapes.Make(dtypes.Int64, batch, 2), shapes.Make(dtypes.Float32, batch, 2), scalar, scalar}
	} else {
		ex, err = model.NewExec(b, store, func(scope *model.Scope, x, y, lr, t *Node) []*Node {
			data = []*Node{x, y}
			loss, finite := e.stepGraph(scope, x, y, lr, t)
			return collect(scope, []*Node{loss, finite})
		})
		inShapes = []shapes.Shape{xShape, shapes.Make(dtypes.Int64, batch), scalar, scalar}
	}
	if err != nil {
		return nil, fmt.Errorf("train: memory account: %w", err)
	}
	g, err := ex.Compile(inShapes...)
	if err != nil {
		return nil, fmt.Errorf("train: memory account: building the step: %w", err)
	}
	start, ok := g.State(backwardStartKey{}).(NodeId)
	if !ok {
		return nil, fmt.Errorf("train: memory account: the step built no backward pass")
	}
	acc := accountGraph(g, data, roots, start)
	acc.Batch = batch
	for _, v := range e.trainableInGraph(g, "/") {
		acc.Trainable += v.Shape().ByteSize()
	}
	return &acc, nil
}

// accountGraph accounts for graph g (see [StepMemory]; Batch and Trainable are left to the
// caller): data are the batch's input nodes, roots the nodes the step outputs (its results and
// the new values of its variables), and the nodes with ids ≥ backwardStart are the backward
// pass (and what follows it, the optimiser). Only live nodes count: those roots depend on.
func accountGraph(g *Graph, data, roots []*Node, backwardStart NodeId) StepMemory {
	nodes := g.Nodes()
	n := len(nodes)
	live := make([]bool, n)
	for _, r := range roots {
		live[r.Id()] = true
	}
	for i := n - 1; i >= 0; i-- {
		if live[i] && nodes[i] != nil {
			for _, in := range nodes[i].Inputs() {
				live[in.Id()] = true
			}
		}
	}
	isData := make(map[NodeId]bool, len(data))
	var acc StepMemory
	for _, d := range data {
		isData[d.Id()] = true
		acc.Inputs += d.Shape().ByteSize()
	}
	// dataDep: computed from the batch; varDep: from variables; base: the node a reshape or an
	// identity views (a bitcast; no copy). A node that depends on neither is computed from constants alone
	// (a broadcast zero, say), which compilers fold into its consumers: it is not counted.
	dataDep, varDep := make([]bool, n), make([]bool, n)
	base := make([]NodeId, n)
	for i, nd := range nodes {
		base[i] = NodeId(i)
		if nd == nil {
			continue
		}
		dataDep[i] = isData[nd.Id()]
		varDep[i] = nd.Type() == NodeTypeParameter && !isData[nd.Id()]
		for _, in := range nd.Inputs() {
			dataDep[i] = dataDep[i] || dataDep[in.Id()]
			varDep[i] = varDep[i] || varDep[in.Id()]
		}
		if t := nd.Type(); t == NodeTypeReshape || t == NodeTypeIdentity {
			base[i] = base[nd.Inputs()[0].Id()]
		}
	}
	saved := make(map[NodeId]bool)
	opaqueUse := make(map[NodeId]bool) // read by a backward op that is not fusible
	for i, nd := range nodes {
		if nd == nil || !live[i] {
			continue
		}
		if shapeOK(nd) && nd.Shape().ByteSize() > acc.Largest.Bytes {
			acc.Largest = OpBytes{Name: opName(nd), Count: 1, Bytes: nd.Shape().ByteSize()}
		}
		if nd.Type() == NodeTypeParameter && !isData[nd.Id()] {
			acc.Variables += nd.Shape().ByteSize() // wherever built: the optimiser's state is read after the backward pass
		}
		if NodeId(i) < backwardStart {
			acc.Forward++
			continue
		}
		acc.Backward++
		for _, in := range nd.Inputs() {
			if in.Id() < backwardStart {
				saved[base[in.Id()]] = true
				if !fusibleConsumer(nd) {
					opaqueUse[base[in.Id()]] = true
				}
			}
		}
	}
	// The fused account: a saved cheap producer read only by fusible backward ops is recomputed
	// there from its inputs, recursively; what remains is kept.
	kept := make(map[NodeId]bool)
	var expand func(id NodeId)
	expand = func(id NodeId) {
		id = base[id]
		nd := nodes[id]
		if kept[id] || isData[id] || !dataDep[id] {
			return
		}
		if !cheapProducer(nd) || opaqueUse[id] {
			kept[id] = true
			return
		}
		for _, in := range nd.Inputs() {
			expand(in.Id())
		}
	}
	for id := range saved {
		expand(id)
	}
	fusedByOp := map[string]*OpBytes{}
	for id := range kept {
		if nd := nodes[id]; shapeOK(nd) {
			acc.SavedFused += nd.Shape().ByteSize()
			addOpBytes(fusedByOp, opName(nd), nd.Shape().ByteSize())
		}
	}
	acc.SavedFusedByOp = sortedOpBytes(fusedByOp)
	byOp, byDType := map[string]*OpBytes{}, map[string]*OpBytes{}
	for id := range saved {
		nd := nodes[id]
		if !shapeOK(nd) || nd.Type() == NodeTypeParameter || nd.Type() == NodeTypeConstant {
			continue
		}
		b := nd.Shape().ByteSize()
		if !dataDep[id] {
			if varDep[id] {
				acc.ParamDerived += b
			}
			continue
		}
		acc.Saved += b
		addOpBytes(byOp, opName(nd), b)
		addOpBytes(byDType, nd.Shape().DType.String(), b)
	}
	acc.SavedByOp, acc.SavedByDType = sortedOpBytes(byOp), sortedOpBytes(byDType)
	return acc
}

func addOpBytes(m map[string]*OpBytes, k string, b int64) {
	if m[k] == nil {
		m[k] = &OpBytes{Name: k}
	}
	m[k].Count++
	m[k].Bytes += b
}

// cheapProducers are the ops a fusing compiler may recompute inside the fusions that read them:
// elementwise ops, converts, broadcasts, reshapes, slices and transposes.
var cheapProducers = map[NodeType]bool{
	NodeTypeAbs: true, NodeTypeAdd: true, NodeTypeClamp: true, NodeTypeConvertDType: true, NodeTypeCos: true,
	NodeTypeDiv: true, NodeTypeEqual: true, NodeTypeErf: true, NodeTypeExp: true, NodeTypeGreaterOrEqual: true,
	NodeTypeGreaterThan: true, NodeTypeLessOrEqual: true, NodeTypeLessThan: true, NodeTypeLog: true,
	NodeTypeLogicalAnd: true, NodeTypeLogicalNot: true, NodeTypeLogicalOr: true, NodeTypeLogistic: true,
	NodeTypeMax: true, NodeTypeMin: true, NodeTypeMul: true, NodeTypeNeg: true, NodeTypeNotEqual: true,
	NodeTypePow: true, NodeTypeRsqrt: true, NodeTypeSign: true, NodeTypeSin: true, NodeTypeSqrt: true,
	NodeTypeSub: true, NodeTypeTanh: true, NodeTypeWhere: true, NodeTypeBroadcastInDim: true,
	NodeTypeReshape: true, NodeTypeIdentity: true, NodeTypeSlice: true, NodeTypeTranspose: true,
}

func cheapProducer(nd *Node) bool { return cheapProducers[nd.Type()] }

// fusibleConsumer reports whether a backward op can take a cheap producer into its fusion:
// another cheap op, a reduction, or batch-norm-grad, which XLA's GPU compiler expands into
// reductions and element-wise ops (its BatchNormExpander pass) before fusing.
func fusibleConsumer(nd *Node) bool {
	switch nd.Type() {
	case NodeTypeReduceSum, NodeTypeReduceMax, NodeTypeReduceMin, NodeTypeReduceProduct, NodeTypeBatchNormGradient:
		return true
	}
	return cheapProducer(nd)
}

// shapeOK reports whether nd is a single tensor (not a multi-output node or a tuple).
func shapeOK(nd *Node) bool {
	return nd.NumOutputs() == 1 && nd.Shape().Ok() && !nd.Shape().IsTuple()
}

// opName is nd's op type without GoMLX's "NodeType" prefix.
func opName(nd *Node) string { return strings.TrimPrefix(nd.Type().String(), "NodeType") }

func sortedOpBytes(m map[string]*OpBytes) []OpBytes {
	out := make([]OpBytes, 0, len(m))
	for _, v := range m {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return out
}
