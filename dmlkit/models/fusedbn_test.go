package models

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/internal/fusedbn"
	"github.com/gomlx/compute"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestBatchNormFusedMatchesComposite runs training-mode BatchNorm once through the composite
// graph and once through the fused ops (fusedbn.Backend, on CPU) from the same non-trivial
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
	b, calls := fusedbn.Wrap(backend.MustShared())
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
			tr0, gr0 := calls.Training(), calls.Gradient()
			wantOuts, wantRM, wantRV := run(BatchNormComposite)
			if calls.Training() != tr0 || calls.Gradient() != gr0 {
				t.Fatal("the composite path built a fused BatchNorm op")
			}
			gotOuts, gotRM, gotRV := run(BatchNormAuto)
			if calls.Training() == tr0 || calls.Gradient() == gr0 {
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
	wrapped, _ := fusedbn.Wrap(goB)
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

// TestXLAPathsMatchGoPaths runs the layers whose XLA graph differs from the Go backend's — ReLU
// (gradient from the output), the stem max-pool (one reduce-window, select-and-scatter
// gradient), and the ViT's softmax, GELU and LayerNorm (gradients written out) — through the Go
// backend and through fusedbn's wrapper under the name "xla" (which builds the XLA graph and runs
// it on the Go backend), on the same input, and compares values and ∂/∂x of Σ f(x)⊙w (and, for
// the LayerNorm, ∂/∂γ, ∂/∂β). x is uniform on [−1, 1) (no exact zeros, no ties among the positive
// maxima). ReLU and max-pool route the same values: equal up to float32 rounding, 1e-6. The
// written-out gradients are other formulas for the same derivatives, summed in other orders:
// 1e-5·(1 + |want|).
func TestXLAPathsMatchGoPaths(t *testing.T) {
	wrapped, _ := fusedbn.Wrap(backend.MustShared())
	xla := wrapped.AsXLA()
	if xla.Name() != "xla" || xla.String() != "xla" {
		t.Fatalf("AsXLA: name %q / %q", xla.Name(), xla.String())
	}
	dims := []int{2, 8, 8, 3}
	x := randImages(31, dims...)
	for i := range x {
		x[i] = 2*x[i] - 1
	}
	flat := func(x *Node) *Node { return Reshape(x, 64, 6) }
	for _, tc := range []struct {
		name   string
		f      func(*model.Scope, *Node) *Node
		out    []int
		window bool    // the XLA graph has a reduce-window op
		tol    float64 // relative
	}{
		{"relu", func(_ *model.Scope, x *Node) *Node { return Relu(x) }, dims, false, 1e-6},
		{"relu+maxpool3s2", func(_ *model.Scope, x *Node) *Node { return MaxPool3s2(Relu(x)) }, []int{2, 4, 4, 3}, true, 1e-6},
		{"softmax", func(_ *model.Scope, x *Node) *Node { return softmaxLast(MulScalar(flat(x), 3)) }, []int{64, 6}, false, 1e-5},
		{"gelu", func(_ *model.Scope, x *Node) *Node { return GeluExact(MulScalar(x, 2)) }, dims, false, 1e-5},
		{"layernorm", func(s *model.Scope, x *Node) *Node { return vitLayerNorm(s.At("ln"), flat(x)) }, []int{64, 6}, false, 1e-5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := randImages(32, tc.out...)
			run := func(b compute.Backend) [][]float32 {
				var windows int // reduce-window ops built: the XLA max-pool path
				store := model.NewStore()
				ex, err := model.NewExec(b, store, func(scope *model.Scope, x, w *Node) []*Node {
					scope.SetTraining(x.Graph(), true)
					y := tc.f(scope, x)
					for _, n := range x.Graph().Nodes() {
						if n.Type() == NodeTypeReduceWindow {
							windows++
						}
					}
					wrt := []*Node{x}
					for v := range store.IterVariables() {
						if v.Trainable && v.InUseByGraph(x.Graph()) {
							wrt = append(wrt, v.NodeValue(x.Graph()))
						}
					}
					return append([]*Node{y}, Gradient(ReduceAllSum(Mul(y, w)), wrt...)...)
				})
				if err != nil {
					t.Fatal(err)
				}
				res, err := ex.Call(tensors.FromFlatDataAndDimensions(x, dims...), tensors.FromFlatDataAndDimensions(w, tc.out...))
				if err != nil {
					t.Fatal(err)
				}
				if wantWindows := b.Name() == "xla" && tc.window; (windows > 0) != wantWindows {
					t.Fatalf("backend %s: %d reduce-window ops built, want some: %v", b.Name(), windows, wantWindows)
				}
				var out [][]float32
				for _, r := range res {
					out = append(out, tensors.MustCopyFlatData[float32](r))
				}
				return out
			}
			want := run(backend.MustShared())
			got := run(xla)
			if len(got) != len(want) {
				t.Fatalf("%d outputs on the xla path, %d on the go path", len(got), len(want))
			}
			nonzero := 0
			for _, v := range want[1] {
				if v != 0 {
					nonzero++
				}
			}
			if nonzero == 0 {
				t.Fatal("the Go path's gradient is all zero: the test compares nothing")
			}
			for k := range want {
				what := []string{"y", "∂/∂x", "∂/∂variable"}[min(k, 2)]
				for i := range want[k] {
					if d := math.Abs(float64(got[k][i] - want[k][i])); d > tc.tol*(1+math.Abs(float64(want[k][i]))) || math.IsNaN(d) {
						t.Fatalf("%s[%d]: xla path %g, go path %g", what, i, got[k][i], want[k][i])
					}
				}
			}
		})
	}
}
