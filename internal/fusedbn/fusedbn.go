// Package fusedbn runs the fused BatchNorm ops that dmlkit emits for XLA on the Go backend, so
// that the fused path can be tested and measured on machines without an XLA plugin.
//
// The Go backend implements no BatchNorm op (compute v0.1.14 lists OpTypeBatchNormForTraining,
// …Gradient and …Inference as commented out in its capabilities, and its op registry is
// internal), and no XLA CPU plugin can be had on the CPU machines. [Backend] wraps a backend and
// implements the two ops the fused path emits with the wrapped backend's own primitive ops,
// following XLA's semantics (batch-norm-training returns the normalised tensor, the batch mean and
// the biased batch variance; batch-norm-grad returns ∂/∂operand, ∂/∂scale, ∂/∂offset in closed
// form). The closed-form gradient is a second implementation of what autodiff derives for the
// composite graph. Everything else is delegated. Float32 operands only.
package fusedbn

import (
	"fmt"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
)

// Calls counts the fused ops built, so a test can tell that the fused path was taken.
type Calls struct{ training, gradient atomic.Int64 }

// Training is the number of batch-norm-training ops built so far.
func (c *Calls) Training() int64 { return c.training.Load() }

// Gradient is the number of batch-norm-grad ops built so far.
func (c *Calls) Gradient() int64 { return c.gradient.Load() }

// Backend is a backend with the fused BatchNorm ops added (see the package doc).
type Backend struct {
	compute.Backend
	calls *Calls
	name  string // "" keeps the wrapped backend's name
}

// Wrap returns b with the fused BatchNorm ops and the counter of the ops it builds.
func Wrap(b compute.Backend) (Backend, *Calls) {
	c := &Calls{}
	return Backend{Backend: b, calls: c}, c
}

// AsXLA is b under the name "xla" and with XLA's operations (see [Backend.Capabilities]), so that
// GoMLX and dmlkit's models build the graph they build for XLA (the backend's own convolution,
// plain MatMul and max-pooling, the XLA ReLU — see dmlkit/models' ConvImpl, MatMulW, MaxPool2,
// Relu — and no Go-backend fused op) instead of the Go backend's. The
// graph is for accounting (dmlkit/train.MeasureStepMemory): executing it runs the Go backend's
// native convolution, about 30× slower than its im2col path.
func (b Backend) AsXLA() Backend {
	b.name = "xla"
	return b
}

// Name is "xla" after [Backend.AsXLA], otherwise the wrapped backend's name.
func (b Backend) Name() string {
	if b.name != "" {
		return b.name
	}
	return b.Backend.Name()
}

// String is [Backend.Name].
func (b Backend) String() string { return b.Name() }

// Capabilities are the wrapped backend's with OpTypeBatchNormForTraining and
// OpTypeBatchNormGradient added; after [Backend.AsXLA], also without the ops the Go backend has
// and XLA has not ([goOnlyOps]), so that GoMLX decomposes them (softmax, layer norm, GELU, …)
// as it does for XLA.
func (b Backend) Capabilities() compute.Capabilities {
	c := b.Backend.Capabilities().Clone()
	c.Operations[compute.OpTypeBatchNormForTraining] = true
	c.Operations[compute.OpTypeBatchNormGradient] = true
	if b.name == "xla" {
		for _, op := range goOnlyOps {
			delete(c.Operations, op)
		}
	}
	return c
}

// goOnlyOps are the operations compute v0.1.14's Go backend lists in its capabilities and
// go-xla v0.4.13's XLA backend does not (compute/xla.Capabilities): its fused ops, which GoMLX
// builds only where the backend has them and otherwise decomposes, and the control-flow and
// dynamic-shape ops.
var goOnlyOps = []compute.OpType{
	compute.OpTypeCall, compute.OpTypeCumSum, compute.OpTypeDynamicBroadcastInDim,
	compute.OpTypeDynamicDimensionSize, compute.OpTypeDynamicIota, compute.OpTypeDynamicPad,
	compute.OpTypeDynamicReshape, compute.OpTypeDynamicShape, compute.OpTypeFusedActivation,
	compute.OpTypeFusedActivationVJP, compute.OpTypeFusedAttentionQKVProjection,
	compute.OpTypeFusedDense, compute.OpTypeFusedDenseVJP, compute.OpTypeFusedLayerNorm,
	compute.OpTypeFusedQuantizedDense, compute.OpTypeFusedScaledDotProductAttention,
	compute.OpTypeFusedSoftmax, compute.OpTypeIf, compute.OpTypeQuantizedEmbeddingLookup,
	compute.OpTypeSort, compute.OpTypeWhile,
}

// Builder returns a builder whose functions build the two fused ops.
func (b Backend) Builder(name string) compute.Builder {
	return builder{Builder: b.Backend.Builder(name), calls: b.calls, xla: b.name == "xla"}
}

type builder struct {
	compute.Builder
	calls *Calls
	xla   bool
}

func (b builder) Main() compute.Function {
	return function{Function: b.Builder.Main(), calls: b.calls, xla: b.xla}
}

func (b builder) NewFunction(name string) (compute.Function, error) {
	f, err := b.Builder.NewFunction(name)
	if err != nil {
		return nil, err
	}
	return function{Function: f, calls: b.calls, xla: b.xla}, nil
}

type function struct {
	compute.Function
	calls *Calls
	xla   bool // refuse the Go backend's fused ops, as XLA does (GoMLX then decomposes them)
}

// notXLA is the error of a Go-backend fused op under [Backend.AsXLA].
func notXLA(op string) error {
	return fmt.Errorf("fusedbn: %s is not an XLA op: %w", op, compute.ErrNotImplemented)
}

// FusedActivation is refused under [Backend.AsXLA] (GoMLX decomposes it), delegated otherwise.
func (f function) FusedActivation(x compute.Value, cfg compute.ActivationConfig) (compute.Value, error) {
	if f.xla {
		return nil, notXLA("FusedActivation")
	}
	return f.Function.FusedActivation(x, cfg)
}

// FusedSoftmax is refused under [Backend.AsXLA], delegated otherwise.
func (f function) FusedSoftmax(x compute.Value, axis int) (compute.Value, error) {
	if f.xla {
		return nil, notXLA("FusedSoftmax")
	}
	return f.Function.FusedSoftmax(x, axis)
}

// FusedLayerNorm is refused under [Backend.AsXLA], delegated otherwise.
func (f function) FusedLayerNorm(x compute.Value, axes []int, epsilon float64, gamma, beta compute.Value) (compute.Value, error) {
	if f.xla {
		return nil, notXLA("FusedLayerNorm")
	}
	return f.Function.FusedLayerNorm(x, axes, epsilon, gamma, beta)
}

// FusedDense is refused under [Backend.AsXLA], delegated otherwise.
func (f function) FusedDense(x, weight, bias compute.Value, options compute.DenseConfig) (compute.Value, error) {
	if f.xla {
		return nil, notXLA("FusedDense")
	}
	return f.Function.FusedDense(x, weight, bias, options)
}

// FusedScaledDotProductAttention is refused under [Backend.AsXLA], delegated otherwise.
func (f function) FusedScaledDotProductAttention(query, key, value compute.Value, axesLayout compute.AttentionAxesLayout,
	options *compute.ScaledDotProductAttentionConfig) (compute.Value, []compute.Value, error) {
	if f.xla {
		return nil, nil, notXLA("FusedScaledDotProductAttention")
	}
	return f.Function.FusedScaledDotProductAttention(query, key, value, axesLayout, options)
}

// FusedAttentionQKVProjection is refused under [Backend.AsXLA], delegated otherwise.
func (f function) FusedAttentionQKVProjection(x, wQKV, biasQ, biasK, biasV compute.Value, queryDim, keyValueDim int) (compute.Value, compute.Value, compute.Value, error) {
	if f.xla {
		return nil, nil, nil, notXLA("FusedAttentionQKVProjection")
	}
	return f.Function.FusedAttentionQKVProjection(x, wQKV, biasQ, biasK, biasV, queryDim, keyValueDim)
}

// bnHelpers returns, for operand x (float32 only) and feature axis, the reduction axes, the
// per-channel count n and a broadcast of a [C] value to x's shape.
func (f function) bnHelpers(x compute.Value, axis int) (s shapes.Shape, axes []int, n float32, bc func(compute.Value) (compute.Value, error), err error) {
	s, err = f.Shape(x)
	if err != nil {
		return
	}
	if s.DType != dtypes.Float32 {
		err = fmt.Errorf("fusedbn: only float32, got %s", s)
		return
	}
	for i := range s.Rank() {
		if i != axis {
			axes = append(axes, i)
		}
	}
	n = float32(s.Size() / s.Dimensions[axis])
	bc = func(v compute.Value) (compute.Value, error) { return f.BroadcastInDim(v, s, []int{axis}) }
	return
}

// fill returns a [c] float32 constant of value v.
func (f function) fill(c int, v float32) (compute.Value, error) {
	flat := make([]float32, c)
	for i := range flat {
		flat[i] = v
	}
	return f.Constant(flat, c)
}

// must runs the chained backend calls of one op, stopping at the first error.
type must struct{ err error }

func (m *must) v(v compute.Value, err error) compute.Value {
	if m.err == nil {
		m.err = err
	}
	return v
}

// BatchNormForTraining follows XLA's batch-norm-training: x normalised over every axis but
// axis with the batch statistics, scaled and shifted; the batch mean and biased variance.
func (f function) BatchNormForTraining(x, scale, offset compute.Value, eps float32, axis int) (compute.Value, compute.Value, compute.Value, error) {
	f.calls.training.Add(1)
	s, axes, n, bc, err := f.bnHelpers(x, axis)
	if err != nil {
		return nil, nil, nil, err
	}
	c := s.Dimensions[axis]
	var m must
	nC := m.v(f.fill(c, n))
	epsC := m.v(f.fill(c, eps))
	mean := m.v(f.Div(m.v(f.ReduceSum(x, axes...)), nC))
	xc := m.v(f.Sub(x, m.v(bc(mean))))
	variance := m.v(f.Div(m.v(f.ReduceSum(m.v(f.Mul(xc, xc)), axes...)), nC))
	inv := m.v(f.Rsqrt(m.v(f.Add(variance, epsC))))
	y := m.v(f.Add(m.v(f.Mul(xc, m.v(bc(m.v(f.Mul(inv, scale)))))), m.v(bc(offset))))
	return y, mean, variance, m.err
}

// BatchNormGradient follows XLA's batch-norm-grad: ∂/∂x, ∂/∂scale, ∂/∂offset in closed form.
func (f function) BatchNormGradient(x, scale, mean, variance, dy compute.Value, eps float32, axis int) (compute.Value, compute.Value, compute.Value, error) {
	f.calls.gradient.Add(1)
	s, axes, n, bc, err := f.bnHelpers(x, axis)
	if err != nil {
		return nil, nil, nil, err
	}
	c := s.Dimensions[axis]
	var m must
	nC := m.v(f.fill(c, n))
	inv := m.v(f.Rsqrt(m.v(f.Add(variance, m.v(f.fill(c, eps))))))
	xhat := m.v(f.Mul(m.v(f.Sub(x, m.v(bc(mean)))), m.v(bc(inv))))
	gScale := m.v(f.ReduceSum(m.v(f.Mul(dy, xhat)), axes...))
	gOffset := m.v(f.ReduceSum(dy, axes...))
	// ∂/∂x = γ/√(σ²+ε)·(dy − mean(dy) − x̂·mean(dy·x̂))
	inner := m.v(f.Sub(m.v(f.Sub(dy, m.v(bc(m.v(f.Div(gOffset, nC)))))), m.v(f.Mul(xhat, m.v(bc(m.v(f.Div(gScale, nC))))))))
	gx := m.v(f.Mul(m.v(bc(m.v(f.Mul(scale, inv)))), inner))
	return gx, gScale, gOffset, m.err
}
