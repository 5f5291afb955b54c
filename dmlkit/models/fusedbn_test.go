package models

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// The Go backend implements no BatchNorm op (compute v0.1.14 lists OpTypeBatchNormForTraining,
// …Gradient and …Inference as commented out in its capabilities, and its op registry is
// internal), and no XLA CPU plugin can be had on the CPU machines. To run dmlkit's fused path
// on CPU, fusedBNBackend wraps the Go backend and implements the two ops the fused path emits
// with the Go backend's own primitive ops, following XLA's semantics (batch-norm-training returns
// the normalised tensor, the batch mean and the biased batch variance; batch-norm-grad returns
// ∂/∂operand, ∂/∂scale, ∂/∂offset in closed form). The closed-form gradient is a second
// implementation of what autodiff derives for the composite graph. Everything else is delegated.

// bnCalls counts the fused ops built, so a test can tell that the fused path was taken.
type bnCalls struct{ training, gradient atomic.Int64 }

type fusedBNBackend struct {
	compute.Backend
	calls *bnCalls
}

func (b fusedBNBackend) Capabilities() compute.Capabilities {
	c := b.Backend.Capabilities().Clone()
	c.Operations[compute.OpTypeBatchNormForTraining] = true
	c.Operations[compute.OpTypeBatchNormGradient] = true
	return c
}

func (b fusedBNBackend) Builder(name string) compute.Builder {
	return fusedBNBuilder{Builder: b.Backend.Builder(name), calls: b.calls}
}

type fusedBNBuilder struct {
	compute.Builder
	calls *bnCalls
}

func (b fusedBNBuilder) Main() compute.Function {
	return fusedBNFunction{Function: b.Builder.Main(), calls: b.calls}
}

func (b fusedBNBuilder) NewFunction(name string) (compute.Function, error) {
	f, err := b.Builder.NewFunction(name)
	if err != nil {
		return nil, err
	}
	return fusedBNFunction{Function: f, calls: b.calls}, nil
}

type fusedBNFunction struct {
	compute.Function
	calls *bnCalls
}

// bnHelpers returns, for operand x (float32 only) and feature axis, the reduction axes, the
// per-channel count n and a broadcast of a [C] value to x's shape.
func (f fusedBNFunction) bnHelpers(x compute.Value, axis int) (s shapes.Shape, axes []int, n float32, bc func(compute.Value) (compute.Value, error), err error) {
	s, err = f.Shape(x)
	if err != nil {
		return
	}
	if s.DType != dtypes.Float32 {
		err = fmt.Errorf("fusedBNBackend: only float32, got %s", s)
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
func (f fusedBNFunction) fill(c int, v float32) (compute.Value, error) {
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

func (f fusedBNFunction) BatchNormForTraining(x, scale, offset compute.Value, eps float32, axis int) (compute.Value, compute.Value, compute.Value, error) {
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

func (f fusedBNFunction) BatchNormGradient(x, scale, mean, variance, dy compute.Value, eps float32, axis int) (compute.Value, compute.Value, compute.Value, error) {
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

// TestBatchNormFusedMatchesComposite runs training-mode BatchNorm once through the composite
// graph and once through the fused ops (fusedBNBackend, on CPU) from the same non-trivial
// γ, β and running statistics, and compares the output y, the updated running statistics and the
// gradients of L = Σ y⊙w (w fixed random) w.r.t. x, γ and β.
//
// Tolerance: both are float32 computations of the same quantities in different orders (one-pass
// closed form vs autodiff of the composite); with ≤ 150 elements per channel of size ≤ 2 the
// differences are a few float32 ulps of the values (≈ 1e-6 relative); 2e-5·(1 + |want|) leaves
// room for that and fails on any real difference (a biased vs unbiased variance alone shifts the
// running variance by ≥ 0.1·σ²/n ≈ 1e-3 here; a missing mean term shifts ∂/∂x by O(0.1)).
func TestBatchNormFusedMatchesComposite(t *testing.T) {
	defer func(k BatchNormKernel) { BatchNormImpl = k }(BatchNormImpl)
	calls := &bnCalls{}
	b := fusedBNBackend{Backend: backend.MustShared(), calls: calls}
	if !HasFusedBatchNorm(b) || HasFusedBatchNorm(backend.MustShared()) {
		t.Fatalf("HasFusedBatchNorm: wrapper %v (want true), Go backend %v (want false)", HasFusedBatchNorm(b), HasFusedBatchNorm(backend.MustShared()))
	}
	for _, tc := range []struct {
		name string
		dims []int
		mode Mode
	}{
		{"images", []int{6, 5, 5, 4}, Mode{Train: true}},
		{"features", []int{8, 3}, Mode{Train: true}},
		{"no stats update", []int{4, 3, 3, 2}, Mode{Train: true, NoStatsUpdate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.dims[len(tc.dims)-1]
			x := randImages(11, tc.dims...)
			for i := range x {
				x[i] = 2*x[i] - 0.5
			}
			w := randImages(12, tc.dims...)
			run := func(k BatchNormKernel) (outs [][]float32, rm, rv []float32) {
				BatchNormImpl = k
				store := model.NewStore()
				for _, v := range []struct {
					name string
					seed uint64
					lo   float32
				}{{"gamma", 21, 0.5}, {"beta", 22, -0.5}, {"mean", 23, -0.5}, {"var", 24, 0.5}} {
					vals := randImages(v.seed, c)
					for i := range vals {
						vals[i] += v.lo
					}
					if _, err := store.CreateVariable("/bn/"+v.name, tensors.FromFlatDataAndDimensions(vals, c)); err != nil {
						t.Fatal(err)
					}
				}
				ex, err := model.NewExec(b, store, func(scope *model.Scope, x, w *Node) []*Node {
					scope.SetTraining(x.Graph(), true)
					y := BatchNorm(scope.At("bn"), x, tc.mode)
					g := x.Graph()
					grads := Gradient(ReduceAllSum(Mul(y, w)), x, scope.At("bn").GetVariable("gamma").NodeValue(g), scope.At("bn").GetVariable("beta").NodeValue(g))
					return append([]*Node{y}, grads...)
				})
				if err != nil {
					t.Fatal(err)
				}
				res, err := ex.Call(tensors.FromFlatDataAndDimensions(x, tc.dims...), tensors.FromFlatDataAndDimensions(w, tc.dims...))
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range res {
					outs = append(outs, tensors.MustCopyFlatData[float32](r))
				}
				return outs, varData(t, store, "/bn/mean"), varData(t, store, "/bn/var")
			}
			tr0, gr0 := calls.training.Load(), calls.gradient.Load()
			wantOuts, wantRM, wantRV := run(BatchNormComposite)
			if calls.training.Load() != tr0 || calls.gradient.Load() != gr0 {
				t.Fatal("the composite path built a fused BatchNorm op")
			}
			gotOuts, gotRM, gotRV := run(BatchNormAuto)
			if calls.training.Load() == tr0 || calls.gradient.Load() == gr0 {
				t.Fatal("BatchNormAuto on a backend with the fused ops did not build them")
			}
			check := func(what string, got, want []float32) {
				t.Helper()
				if len(got) != len(want) {
					t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
				}
				for i := range got {
					if d := math.Abs(float64(got[i] - want[i])); d > 2e-5*(1+math.Abs(float64(want[i]))) || math.IsNaN(d) {
						t.Fatalf("%s[%d]: fused %g, composite %g", what, i, got[i], want[i])
					}
				}
			}
			for i, name := range []string{"y", "∂L/∂x", "∂L/∂γ", "∂L/∂β"} {
				check(name, gotOuts[i], wantOuts[i])
			}
			check("running mean", gotRM, wantRM)
			check("running var", gotRV, wantRV)
			if tc.mode.NoStatsUpdate == (math.Abs(float64(wantRV[0]-(randImages(24, c)[0]+0.5))) > 1e-7) {
				t.Errorf("running var[0] = %g: NoStatsUpdate %v but the statistics moved %v", wantRV[0], tc.mode.NoStatsUpdate, !tc.mode.NoStatsUpdate)
			}
		})
	}
}

// TestUseFusedBatchNorm checks the one switch: auto follows the backend, composite and fused
// override it, and fused on a backend without the op panics.
func TestUseFusedBatchNorm(t *testing.T) {
	defer func(k BatchNormKernel) { BatchNormImpl = k }(BatchNormImpl)
	goB := backend.MustShared()
	wrapped := fusedBNBackend{Backend: goB, calls: &bnCalls{}}
	for _, tc := range []struct {
		k         BatchNormKernel
		b         compute.Backend
		want      bool
		wantPanic bool
	}{
		{BatchNormAuto, goB, false, false},
		{BatchNormAuto, wrapped, true, false},
		{BatchNormComposite, wrapped, false, false},
		{BatchNormFused, wrapped, true, false},
		{BatchNormFused, goB, false, true},
	} {
		BatchNormImpl = tc.k
		func() {
			defer func() {
				if r := recover(); (r != nil) != tc.wantPanic {
					t.Errorf("kernel %d on %T: panic %v, want panic %v", tc.k, tc.b, r, tc.wantPanic)
				}
			}()
			if got := UseFusedBatchNorm(tc.b); got != tc.want {
				t.Errorf("kernel %d on %T: %v, want %v", tc.k, tc.b, got, tc.want)
			}
		}()
	}
}
