package losses

import (
	"fmt"
	"math"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Result is the value of a loss on a concrete batch and, optionally, its gradient w.r.t. the
// embeddings.
type Result struct {
	Value float64
	Grad  []float64 // [B·D] row-major, nil unless requested
}

// EvalOptions configures [Evaluate].
type EvalOptions struct {
	Grad       bool         // also compute ∂L/∂Emb
	DType      dtypes.DType // Float64 (default) or Float32
	NumClasses int          // for proxy losses; default max(label)+1
	Seed       int64        // seeds the initialisation of learnable parameters (proxies)
	Store      *model.Store // optional store holding learnable parameters; a fresh one if nil
	ClassBound int          // Inputs.ClassBound: the sampler's bound on samples per label (0 = none)
	// LabelWeights are Inputs.LabelWeights, [b·setSize] row-major (label sets only; nil: none).
	LabelWeights []float64
}

// Evaluate computes loss l on embeddings emb ([b, d] row-major) with labels ([b], or [b, s] label
// sets when len(labels) == b·s — pass s via setSize, 1 for plain labels). It is the reference
// harness used by the `dmlkit loss` command and by tests.
func Evaluate(backend compute.Backend, l Loss, emb []float64, b, d int, labels []int64, setSize int, opt EvalOptions) (res Result, err error) {
	if setSize, err = checkEvalShapes(emb, b, d, labels, setSize); err != nil {
		return res, err
	}
	for i, v := range emb {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return res, fmt.Errorf("losses: embeddings: non-finite value at row %d, column %d", i/d, i%d)
		}
	}
	opt = opt.withDefaults(labels)
	if err := CheckLabels(labels, setSize, opt.NumClasses); err != nil {
		return res, err
	}
	if opt.LabelWeights != nil && (setSize == 1 || len(opt.LabelWeights) != b*setSize) {
		return res, fmt.Errorf("losses: label weights: %d values, want %d (label sets of %d rows × %d slots)", len(opt.LabelWeights), b*setSize, b, setSize)
	}
	store, err := evalStore(opt.Store, opt.Seed)
	if err != nil {
		return res, err
	}
	defer recoverLossPanic(l, &err)
	embT, labT := evalTensors(emb, b, d, labels, setSize, opt.DType)
	exec, err := model.NewExec(backend, store, func(scope *model.Scope, e, y *graph.Node) []*graph.Node {
		in := Inputs{Emb: e, Labels: y, Scope: scope.In("loss"), NumClasses: opt.NumClasses, ClassBound: opt.ClassBound}
		if opt.LabelWeights != nil {
			in.LabelWeights = graph.Reshape(graph.ConvertDType(graph.Const(e.Graph(), opt.LabelWeights), e.DType()), b, setSize)
		}
		loss := l.Build(in)
		if loss.Rank() != 0 {
			panic(fmt.Sprintf("loss returned shape %s, want a scalar", loss.Shape()))
		}
		out := []*graph.Node{graph.ConvertDType(loss, dtypes.Float64)}
		if opt.Grad {
			out = append(out, graph.ConvertDType(graph.Gradient(loss, e)[0], dtypes.Float64))
		}
		return out
	})
	if err != nil {
		return res, err
	}
	outs, err := exec.Call(embT, labT)
	if err != nil {
		return res, err
	}
	res.Value = tensors.ToScalar[float64](outs[0])
	if opt.Grad {
		res.Grad = tensors.MustCopyFlatData[float64](outs[1])
	}
	return res, nil
}

// checkEvalShapes checks emb ([b, d]) and labels ([b] or [b, setSize]) as [Evaluate] and
// [EvaluateBlockwise] take them, and returns setSize (1 when ≤ 0).
func checkEvalShapes(emb []float64, b, d int, labels []int64, setSize int) (int, error) {
	if b <= 0 || d <= 0 || len(emb) != b*d {
		return 0, fmt.Errorf("losses: embeddings: %d values for shape [%d, %d]", len(emb), b, d)
	}
	if setSize <= 0 {
		setSize = 1
	}
	if len(labels) != b*setSize {
		return 0, fmt.Errorf("losses: labels: %d values, want %d (batch %d × set size %d)", len(labels), b*setSize, b, setSize)
	}
	return setSize, nil
}

// withDefaults fills the defaults of EvalOptions: DType Float64, NumClasses max(labels)+1 (checked
// against the labels by [CheckLabels] all the same: an explicit NumClasses is never raised).
func (o EvalOptions) withDefaults(labels []int64) EvalOptions {
	if o.DType == dtypes.InvalidDType {
		o.DType = dtypes.Float64
	}
	if o.NumClasses == 0 {
		for _, v := range labels {
			o.NumClasses = max(o.NumClasses, int(v)+1)
		}
	}
	return o
}

// IgnoreLabel marks an empty slot of a label set ([B, S] labels, S > 1): the slot matches no
// label. It is the only negative label a loss accepts.
const IgnoreLabel = -1

// CheckLabels checks labels ([B] when setSize is 1, else [B, setSize] label sets) against the class
// count numClasses: every label must be a class index in [0, numClasses), or [IgnoreLabel] in a
// slot of a label set. The error names the row (and slot) and the value. Every entry point that
// takes labels from outside ([Evaluate], [EvaluateBlockwise], the trainer's loss stage) calls it
// before building a graph, where an out-of-range label would silently select no proxy or another
// class's.
func CheckLabels(labels []int64, setSize, numClasses int) error {
	if numClasses <= 0 {
		return fmt.Errorf("losses: number of classes %d: want > 0", numClasses)
	}
	if setSize <= 0 {
		setSize = 1
	}
	for i, v := range labels {
		if v >= 0 && v < int64(numClasses) || (v == IgnoreLabel && setSize > 1) {
			continue
		}
		where := fmt.Sprintf("row %d", i)
		if setSize > 1 {
			where = fmt.Sprintf("row %d, slot %d", i/setSize, i%setSize)
		}
		if v < 0 {
			if setSize > 1 {
				return fmt.Errorf("losses: labels: %s is %d: negative labels other than %d (an empty slot of a label set) are not class indices", where, v, IgnoreLabel)
			}
			return fmt.Errorf("losses: labels: %s is %d: a plain label must be a class index in [0, %d) (%d marks only an empty slot of a [B, S] label set)", where, v, numClasses, IgnoreLabel)
		}
		return fmt.Errorf("losses: labels: %s is %d, outside the %d classes [0, %d)", where, v, numClasses, numClasses)
	}
	return nil
}

// recoverLossPanic, deferred, turns a panic of graph building or execution into *err naming
// the loss.
func recoverLossPanic(l Loss, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("losses: %s: %v", l.Name(), r)
	}
}

// evalStore returns store, or a new store whose graph RNG is seeded with seed.
func evalStore(store *model.Store, seed int64) (*model.Store, error) {
	if store != nil {
		return store, nil
	}
	store = model.NewStore()
	if err := store.SetRNGStateFromSeed(seed); err != nil {
		return nil, err
	}
	return store, nil
}

// evalTensors copies the float64 embeddings [b, d] (converted to dt: Float32 or Float64) and the
// labels [b] or [b, setSize] into tensors.
func evalTensors(emb []float64, b, d int, labels []int64, setSize int, dt dtypes.DType) (embT, labT *tensors.Tensor) {
	if dt == dtypes.Float32 {
		f := make([]float32, len(emb))
		for i, v := range emb {
			f[i] = float32(v)
		}
		embT = tensors.FromFlatDataAndDimensions(f, b, d)
	} else {
		embT = tensors.FromFlatDataAndDimensions(append([]float64(nil), emb...), b, d)
	}
	if setSize == 1 {
		return embT, tensors.FromFlatDataAndDimensions(append([]int64(nil), labels...), b)
	}
	return embT, tensors.FromFlatDataAndDimensions(append([]int64(nil), labels...), b, setSize)
}
