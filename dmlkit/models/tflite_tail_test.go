package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestTFLiteBlockStarts: the block boundaries found in the three Coral files, read off their op
// lists (the op after each expanded_conv_i's project or add for V2, each Conv2d_i_depthwise for
// V1; the TF2 file starts with a QUANTIZE op, so its indices are one higher), the cut shapes at
// 96 px (96/16 = 6 at the 14×14 stage of 224 px, 96/32 = 3 at the 7×7 one) and the errors for
// a tail longer than the file's blocks.
func TestTFLiteBlockStarts(t *testing.T) {
	v2 := []int{3, 6, 10, 13, 17, 21, 24, 28, 32, 36, 39, 43, 47, 50, 54, 58}
	tf2 := make([]int, len(v2))
	for i, k := range v2 {
		tf2[i] = k + 1
	}
	v1 := []int{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25}
	for _, c := range []struct {
		file   string
		starts []int
		shapes map[int][]int // tail n → cut shape at 96 px
	}{
		{tfliteV2, v2, map[int][]int{1: {3, 3, 160}, 2: {3, 3, 160}, 3: {3, 3, 160}, 4: {6, 6, 96}, 16: {48, 48, 16}}},
		{tfliteTF2, tf2, map[int][]int{1: {3, 3, 160}, 4: {6, 6, 96}}},
		{tfliteV1, v1, map[int][]int{1: {3, 3, 1024}, 2: {6, 6, 512}, 3: {6, 6, 512}, 13: {48, 48, 32}}},
	} {
		t.Run(c.file, func(t *testing.T) {
			m := coralModel(t, c.file)
			if got := m.BlockStarts(); !slices.Equal(got, c.starts) {
				t.Errorf("block starts %v, want %v", got, c.starts)
			}
			for n, want := range c.shapes {
				start, err := m.TailStart(n)
				if err != nil {
					t.Fatal(err)
				}
				if got := m.CutShape(start, 96, 96); !slices.Equal(got, want) {
					t.Errorf("tail %d (op %d): cut shape %v at 96 px, want %v", n, start, got, want)
				}
			}
			for _, n := range []int{0, len(c.starts) + 1} {
				if _, err := m.TailStart(n); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("want 1 to %d", len(c.starts))) {
					t.Errorf("tail %d: %v, want an error naming the range 1 to %d", n, err, len(c.starts))
				}
			}
		})
	}
}

// TestTFLiteTailEqualsFeatures: the tail on the prefix's output is the full feature extractor,
// for the last 1 and 2 blocks of MobileNetV2 (and 1 of V1), at a 2×64×64×3 batch of random
// pixels in float32: the same ops on the same values, so they agree to rounding (1e-5 absolute;
// the features are O(1)).
func TestTFLiteTailEqualsFeatures(t *testing.T) {
	for _, c := range []struct {
		file string
		n    int
	}{{tfliteV2, 1}, {tfliteV2, 2}, {tfliteV1, 1}} {
		t.Run(fmt.Sprintf("%s/%d", c.file, c.n), func(t *testing.T) {
			m := coralModel(t, c.file)
			start, err := m.TailStart(c.n)
			if err != nil {
				t.Fatal(err)
			}
			const b, hw = 2, 64
			x := make([]float32, b*hw*hw*3)
			rng := rand.New(rand.NewPCG(3, uint64(c.n)))
			for i := range x {
				x[i] = rng.Float32()
			}
			store := model.NewStore()
			ex, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) []*Node {
				s := scope.At("backbone")
				cut := m.Prefix(s, xn, start)
				return []*Node{m.Features(s, xn), m.TailFeatures(s, cut, start), cut}
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := ex.Call(tensors.FromFlatDataAndDimensions(x, b, hw, hw, 3))
			if err != nil {
				t.Fatal(err)
			}
			if want := append([]int{b}, m.CutShape(start, hw, hw)...); !slices.Equal(out[2].Shape().Dimensions, want) {
				t.Errorf("cut map %s, want %v", out[2].Shape(), want)
			}
			full, tail := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
			if len(full) != b*m.FeatureDim || len(tail) != len(full) {
				t.Fatalf("features %s and %s, want [%d, %d]", out[0].Shape(), out[1].Shape(), b, m.FeatureDim)
			}
			worst, norm := 0.0, 0.0
			for i := range full {
				worst = max(worst, math.Abs(float64(full[i]-tail[i])))
				norm = max(norm, math.Abs(float64(full[i])))
			}
			t.Logf("max |full − prefix+tail| %.3g (largest feature %.3g)", worst, norm)
			if worst > 1e-5 || norm == 0 {
				t.Errorf("prefix + tail differs from the full network by %g (largest feature %g)", worst, norm)
			}
		})
	}
}

// TestTFLiteTailGradients checks the tail's gradients by central finite differences, as
// TestTFLiteGradients does for the whole network: L = Σ r ⊙ TailFeatures(h) for MobileNetV2's
// last 2 blocks on a fixed random cut map h [1, 2, 2, 160] (values in [0, 1], about the
// projection outputs' scale), run in float64; h = 2⁻¹² added exactly to float32 weights of the
// last block's expansion (op 58) and of the second-last block's depthwise convolution (op 55),
// and to the biases of the final 1×1 convolution (op 61), at four entries of each (see idx).
// Tolerance 1e-6 + 1e-3·|∂L/∂θ|. Also: the tail has exactly its 7 convolutions' 14 variables.
func TestTFLiteTailGradients(t *testing.T) {
	m := coralModel(t, tfliteV2)
	start, err := m.TailStart(2)
	if err != nil {
		t.Fatal(err)
	}
	if start != 54 {
		t.Fatalf("tail 2 starts at op %d, want 54", start)
	}
	const hw, ch = 2, 160
	x := make([]float64, hw*hw*ch)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range x {
		x[i] = 0.5 * rng.NormFloat64()
	}
	r := make([]float64, m.FeatureDim)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	store := model.NewStore()
	scope := store.RootScope().At("backbone")
	if err := m.LoadTailVariables(scope, start); err != nil {
		t.Fatal(err)
	}
	n := 0
	for range store.IterVariables() {
		n++
	}
	if n != 14 { // weights and biases of ops 54–56 (block 15), 58–60 (block 16) and 61
		t.Errorf("%d tail variables, want 14", n)
	}
	var paths []string
	for _, c := range []struct {
		op   int
		name string
	}{{58, "weights"}, {55, "weights"}, {61, "biases"}} {
		paths = append(paths, scope.Scope()+"/"+m.variables(c.op)[0].scope+"/"+c.name)
	}
	loss := func(scope *model.Scope, xn *Node) *Node {
		scope.SetTraining(xn.Graph(), true)
		f := m.TailFeatures(scope.At("backbone"), xn, start)
		return ReduceAllSum(Mul(f, Const(xn.Graph(), tensors.FromFlatDataAndDimensions(r, 1, m.FeatureDim))))
	}
	fwd, err := model.NewExec(backend.MustShared(), store, loss)
	if err != nil {
		t.Fatal(err)
	}
	grad, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) []*Node {
		scope.SetTraining(xn.Graph(), true)
		var wrt []*Node
		for _, p := range paths {
			wrt = append(wrt, store.GetVariable(p).NodeValue(xn.Graph()))
		}
		return Gradient(loss(scope, xn), wrt...)
	})
	if err != nil {
		t.Fatal(err)
	}
	in := tensors.FromFlatDataAndDimensions(x, 1, hw, hw, ch)
	lossAt := func() float64 {
		out, err := fwd.Call(in)
		if err != nil {
			t.Fatal(err)
		}
		return tensors.MustCopyFlatData[float64](out[0])[0]
	}
	g, err := grad.Call(in)
	if err != nil {
		t.Fatal(err)
	}
	nonzero := 0
	for vi, p := range paths {
		v := store.GetVariable(p)
		gv := tensors.MustCopyFlatData[float32](g[vi])
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		orig := tensors.MustCopyFlatData[float32](val)
		// Index 0, the largest |∂L/∂θ| and the first non-zero gradients from a third and from
		// half way (many are exactly 0: units clipped by ReLU6 or below 0).
		idx := []int{0, 0}
		for i, g := range gv {
			if math.Abs(float64(g)) > math.Abs(float64(gv[idx[1]])) {
				idx[1] = i
			}
		}
		for _, from := range []int{len(gv) / 3, len(gv) / 2} {
			for i := from; i < len(gv); i++ {
				if gv[i] != 0 {
					idx = append(idx, i)
					break
				}
			}
		}
		for _, i := range idx {
			const h = 1.0 / 4096
			set := func(d float32) {
				w := slices.Clone(orig)
				w[i] += d
				if err := v.SetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...)); err != nil {
					t.Fatal(err)
				}
			}
			set(h)
			lp := lossAt()
			set(-h)
			lm := lossAt()
			set(0)
			ad, fd := float64(gv[i]), (lp-lm)/(2*h)
			if gv[i] != 0 {
				nonzero++
			}
			t.Logf("∂L/∂%s[%d]: autodiff %.6g, finite difference %.6g", p, i, ad, fd)
			if math.Abs(ad-fd) > 1e-6+1e-3*math.Abs(ad) || math.IsNaN(ad) {
				t.Errorf("∂L/∂%s[%d]: autodiff %g, finite difference %g", p, i, ad, fd)
			}
		}
	}
	if nonzero < 8 {
		t.Errorf("only %d of the sampled weight gradients are non-zero: the check says little", nonzero)
	}
}
