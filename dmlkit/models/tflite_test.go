package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// coralDir is the shared copy of the Coral MobileNets (../shared/weights/coral beside the
// repository), relative to this package's directory.
const coralDir = "../../../shared/weights/coral"

// The four Coral files (../shared/weights/coral/README.md) and the reference images.
const (
	tfliteV2   = "mobilenet_v2_1.0_224_quant.tflite"
	tfliteTF2  = "tf2_mobilenet_v2_1.0_224_ptq.tflite"
	tfliteINat = "mobilenet_v2_1.0_224_inat_bird_quant.tflite"
	tfliteV1   = "mobilenet_v1_1.0_224_quant_embedding_extractor.tflite"
)

var coralImages = []string{"cat.bmp", "grace_hopper.bmp", "bird.bmp"}

// coralFile returns the path of a Coral file, skipping the test when ../shared is absent.
func coralFile(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(coralDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no ../shared/weights/coral: %v", err)
	}
	return p
}

// coralModel returns the parsed file (cached across tests by CachedTFLite).
func coralModel(t testing.TB, name string) *TFLiteModel {
	t.Helper()
	m, err := CachedTFLite(coralFile(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// oracleOut holds ../shared/tools/tflite_ref.py's outputs for one model and resize: the exact
// float input [1, 224, 224, 3] and logits of each reference image.
type oracleOut struct{ inputs, logits map[string][]float32 }

var oracleCache sync.Map // "model|resize" → *oracleOut

// pythonOracle runs the NumPy reference interpreter (Debian's /usr/bin/python3 with NumPy) on
// the three reference images. Without python3 or NumPy the test fails saying what to install,
// unless DMLKIT_SKIP_PYTHON_ORACLE=1.
func pythonOracle(t *testing.T, modelName, resize string) *oracleOut {
	t.Helper()
	key := modelName + "|" + resize
	if o, ok := oracleCache.Load(key); ok {
		return o.(*oracleOut)
	}
	mp := coralFile(t, modelName)
	tool := filepath.Join(coralDir, "..", "..", "tools", "tflite_ref.py")
	if err := exec.Command("/usr/bin/python3", "-c", "import numpy").Run(); err != nil {
		if os.Getenv("DMLKIT_SKIP_PYTHON_ORACLE") == "1" {
			t.Skip("DMLKIT_SKIP_PYTHON_ORACLE=1: no /usr/bin/python3 with NumPy")
		}
		t.Fatalf("the TFLite oracle needs /usr/bin/python3 with NumPy (apt-get install python3-numpy), or set DMLKIT_SKIP_PYTHON_ORACLE=1: %v", err)
	}
	dir := t.TempDir()
	args := []string{tool, mp}
	for _, im := range coralImages {
		args = append(args, filepath.Join(coralDir, im))
	}
	args = append(args, "--out", dir, "--resize", resize)
	cmd := exec.Command("/usr/bin/python3", args...)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tflite_ref.py: %v\n%s", err, out)
	}
	o := &oracleOut{inputs: map[string][]float32{}, logits: map[string][]float32{}}
	for _, im := range coralImages {
		stem := filepath.Join(dir, strings.TrimSuffix(im, ".bmp"))
		x, xs, err := npy.ReadFloat32(stem + ".input.npy")
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(xs) != "[1 224 224 3]" {
			t.Fatalf("%s.input.npy has shape %v", stem, xs)
		}
		l, _, err := npy.ReadFloat32(stem + ".logits.npy")
		if err != nil {
			t.Fatal(err)
		}
		o.inputs[im], o.logits[im] = x, l
	}
	oracleCache.Store(key, o)
	return o
}

// tfliteLogits runs m.Logits on the network inputs xs (each [224, 224, 3]) as one batch with the
// file's weights, returning one logits row per input.
func tfliteLogits(t *testing.T, m *TFLiteModel, xs [][]float32) [][]float32 {
	t.Helper()
	b := len(xs)
	flat := make([]float32, 0, b*224*224*3)
	for _, x := range xs {
		flat = append(flat, x...)
	}
	store := model.NewStore()
	if err := m.LoadVariables(store.RootScope().At("backbone"), true); err != nil {
		t.Fatal(err)
	}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
		return m.Logits(scope.At("backbone"), x)
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(flat, b, 224, 224, 3))
	if err != nil {
		t.Fatal(err)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	rows := make([][]float32, b)
	n := len(got) / b
	for i := range rows {
		rows[i] = got[i*n : (i+1)*n]
	}
	return rows
}

// TestTFLiteMatchesOracle feeds the oracle's exact input tensors of the three reference images
// (bilinear resize) through each of the four files and compares the logits (the softmax input;
// the embedding for the V1 extractor) with the NumPy interpreter's: |Δ| ≤ 1e-4 absolute. Both run
// the same float graph in float32 but sum in different orders (im2col MatMul vs NumPy's BLAS):
// about 60 layers of rounding at ~6e-8 relative each on logits up to ~15 give |Δ| of 3e-6–2e-5
// (logged), so 1e-4 leaves a margin of 5 without hiding a wrong op (a wrong padding or scale moves
// logits by ≥ 1e-2).
func TestTFLiteMatchesOracle(t *testing.T) {
	for _, name := range []string{tfliteV2, tfliteTF2, tfliteINat, tfliteV1} {
		t.Run(strings.TrimSuffix(name, ".tflite"), func(t *testing.T) {
			m := coralModel(t, name)
			o := pythonOracle(t, name, "bilinear")
			var xs [][]float32
			for _, im := range coralImages {
				xs = append(xs, o.inputs[im])
			}
			got := tfliteLogits(t, m, xs)
			for i, im := range coralImages {
				want := o.logits[im]
				if len(got[i]) != len(want) {
					t.Fatalf("%s: %d logits, oracle %d", im, len(got[i]), len(want))
				}
				scale, worst := 0.0, 0.0
				for j := range want {
					scale = math.Max(scale, math.Abs(float64(want[j])))
					worst = math.Max(worst, math.Abs(float64(got[i][j]-want[j])))
				}
				t.Logf("%s: max |Δ| = %.3g (max |logit| %.3g)", im, worst, scale)
				if worst > 1e-4 || math.IsNaN(worst) {
					t.Errorf("%s: max |Δ| = %g > 1e-4", im, worst)
				}
			}
		})
	}
}

// TestTFLiteGradients checks the graph's gradients by central finite differences on the uint8
// MobileNetV2 at 1×32×32×3: L = Σ r ⊙ Features(x) with fixed random r and x, run in float64
// (the weights are converted to x's dtype), so the differences are not drowned in float32
// rounding. Input: h = 1e-6 on pixels in [0, 1] (truncation O(h²) ≈ 1e-12; crossing a ReLU6
// kink within ±h is unlikely at 6 sampled pixels, and would show as a large error).
// Variables (float32): h = 2⁻¹², added exactly to the stored float32 weight, on weights of the
// first convolution, a depthwise convolution and the bias of the last block's linear projection
// (the last convolution's outputs are mostly clipped by ReLU6 at 32 px). Tolerance
// 1e-6 + 1e-3·|∂L/∂θ|: the autodiff gradient of a float32 variable is rounded to float32.
func TestTFLiteGradients(t *testing.T) {
	m := coralModel(t, tfliteV2)
	const hw = 32
	x := make([]float64, hw*hw*3)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = rng.Float64()
	}
	r := make([]float64, m.FeatureDim)
	for i := range r {
		r[i] = rng.NormFloat64()
	}
	store := model.NewStore()
	scope := store.RootScope().At("backbone")
	if err := m.LoadVariables(scope, false); err != nil {
		t.Fatal(err)
	}
	// The variables checked: the first conv's weights, op 4's depthwise weights, the biases of
	// the last block's projection (op FeatureOp−2).
	var paths []string
	for _, k := range []int{0, 4, m.FeatureOp - 2} {
		vs := m.variables(k)
		name := "weights"
		if k == m.FeatureOp-2 {
			name = "biases"
		}
		paths = append(paths, scope.Scope()+"/"+vs[0].scope+"/"+name)
	}
	loss := func(scope *model.Scope, xn *Node) *Node {
		scope.SetTraining(xn.Graph(), true) // variables read from the store at each call
		f := m.Features(scope.At("backbone"), xn)
		return ReduceAllSum(Mul(f, Const(xn.Graph(), tensors.FromFlatDataAndDimensions(r, 1, m.FeatureDim))))
	}
	fwd, err := model.NewExec(backend.MustShared(), store, loss)
	if err != nil {
		t.Fatal(err)
	}
	grad, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) []*Node {
		scope.SetTraining(xn.Graph(), true)
		wrt := []*Node{xn}
		for _, p := range paths {
			wrt = append(wrt, store.GetVariable(p).NodeValue(xn.Graph()))
		}
		return Gradient(loss(scope, xn), wrt...)
	})
	if err != nil {
		t.Fatal(err)
	}
	call := func(e *model.Exec, xs []float64) []*tensors.Tensor {
		out, err := e.Call(tensors.FromFlatDataAndDimensions(xs, 1, hw, hw, 3))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	lossAt := func(xs []float64) float64 { return tensors.MustCopyFlatData[float64](call(fwd, xs)[0])[0] }
	g := call(grad, x)
	check := func(what string, ad, fd float64) {
		t.Helper()
		t.Logf("%s: autodiff %.6g, finite difference %.6g", what, ad, fd)
		if math.Abs(ad-fd) > 1e-6+1e-3*math.Abs(ad) || math.IsNaN(ad) {
			t.Errorf("%s: autodiff %g, finite difference %g", what, ad, fd)
		}
	}
	gx := tensors.MustCopyFlatData[float64](g[0])
	for _, i := range []int{0, 97, 1500, 2048, 3071, 1234} {
		const h = 1e-6
		xp, xm := slices.Clone(x), slices.Clone(x)
		xp[i] += h
		xm[i] -= h
		check(fmt.Sprintf("∂L/∂x[%d]", i), gx[i], (lossAt(xp)-lossAt(xm))/(2*h))
	}
	nonzero := 0
	for vi, p := range paths {
		v := store.GetVariable(p)
		gv := tensors.MustCopyFlatData[float32](g[1+vi])
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		orig := tensors.MustCopyFlatData[float32](val)
		for _, i := range []int{0, len(orig) / 3, len(orig) - 1} {
			const h = 1.0 / 4096
			set := func(d float32) {
				w := slices.Clone(orig)
				w[i] += d
				if err := v.SetValue(tensors.FromFlatDataAndDimensions(w, v.Shape().Dimensions...)); err != nil {
					t.Fatal(err)
				}
			}
			set(h)
			lp := lossAt(x)
			set(-h)
			lm := lossAt(x)
			set(0)
			if gv[i] != 0 {
				nonzero++
			}
			check(fmt.Sprintf("∂L/∂%s[%d]", p, i), float64(gv[i]), (lp-lm)/(2*h))
		}
	}
	if nonzero < 4 {
		t.Errorf("only %d of the sampled weight gradients are non-zero: the check says little", nonzero)
	}
}

// TestMobileNetBackbone builds the registered backbones through Config/LoadPretrained/Build at
// 96 px (RGB for V2, greyscale for V1: repeated to RGB): Features [B, 1280] / [B, 1024] and
// the head's embedding, with the feature extractor's weights as trainable variables under
// backbone/ (the ImageNet classifier is not loaded). At 224 px, V1's features equal its
// embedding output (the 7×7 average pool is the global mean there): compared with the oracle's
// embedding for the oracle's input, mapped back to [0, 1] pixels (p = x/scale + zero point; the
// round trip costs ~1e-7 relative), within 1e-4.
func TestMobileNetBackbone(t *testing.T) {
	for _, tc := range []struct {
		backbone, file string
		c, dim, vars   int
	}{
		{"mobilenet_v2", tfliteV2, 3, 1280, 2 * 52},
		{"mobilenet_v1", tfliteV1, 1, 1024, 2 * 27},
	} {
		t.Run(tc.backbone, func(t *testing.T) {
			cfg := Config{Backbone: tc.backbone, Pretrained: coralFile(t, tc.file), Head: "linear", Dim: 16, L2: true}
			if err := cfg.Validate("model"); err != nil {
				t.Fatal(err)
			}
			store := model.NewStore()
			if err := LoadPretrained(store.RootScope(), cfg); err != nil {
				t.Fatal(err)
			}
			n := 0
			for v := range store.IterVariables() {
				if !strings.HasPrefix(v.Path(), "/backbone/") || !v.Trainable {
					t.Errorf("variable %s (trainable %v): want trainable, under /backbone/", v.Path(), v.Trainable)
				}
				n++
			}
			if n != tc.vars {
				t.Errorf("%d variables, want %d (weights and biases of every convolution before the pooling)", n, tc.vars)
			}
			const b, hw = 2, 96
			x := make([]float32, b*hw*hw*tc.c)
			for i := range x {
				x[i] = float32(i%251) / 250
			}
			e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) []*Node {
				out := Build(scope, cfg, xn, Mode{})
				return []*Node{out.Features, out.Emb}
			})
			if err != nil {
				t.Fatal(err)
			}
			out, err := e.Call(tensors.FromFlatDataAndDimensions(x, b, hw, hw, tc.c))
			if err != nil {
				t.Fatal(err)
			}
			if d := out[0].Shape().Dimensions; !slices.Equal(d, []int{b, tc.dim}) {
				t.Errorf("features %v, want [%d %d]", d, b, tc.dim)
			}
			if d := out[1].Shape().Dimensions; !slices.Equal(d, []int{b, 16}) {
				t.Errorf("embedding %v, want [%d 16]", d, b)
			}
			if n2 := store.NumVariables(); n2 != n+2 {
				t.Errorf("the graph created %d variables, want the head's 2", n2-n)
			}
		})
	}
	t.Run("v1_features_at_224_vs_oracle", func(t *testing.T) {
		m := coralModel(t, tfliteV1)
		o := pythonOracle(t, tfliteV1, "bilinear")
		xs := o.inputs["cat.bmp"]
		px := make([]float32, len(xs))
		for i, v := range xs {
			px[i] = float32((float64(v)/m.InputScale + m.InputOffset) / 255)
		}
		store := model.NewStore()
		e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) *Node {
			return m.Features(scope.At("backbone"), xn)
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Call(tensors.FromFlatDataAndDimensions(px, 1, 224, 224, 3))
		if err != nil {
			t.Fatal(err)
		}
		got, want := tensors.MustCopyFlatData[float32](out[0]), o.logits["cat.bmp"]
		worst := 0.0
		for i := range want {
			worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
		}
		t.Logf("max |Δ| = %.3g", worst)
		if len(got) != 1024 || worst > 1e-4 {
			t.Errorf("%d features, max |Δ| = %g vs the oracle's embedding", len(got), worst)
		}
	})
}

// TestMobileNetConfigErrors: configurations that cannot work fail naming model.pretrained.
func TestMobileNetConfigErrors(t *testing.T) {
	v2 := coralFile(t, tfliteV2)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Backbone: "mobilenet_v2", Dim: 8}, "model.pretrained: backbone mobilenet_v2 needs a .tflite file"},
		{Config{Backbone: "mobilenet_v1", Dim: 8, Pretrained: "resnet50.onnx"}, `model.pretrained: "resnet50.onnx": backbone mobilenet_v1 needs a .tflite file`},
		{Config{Backbone: "resnet50", Dim: 8, Pretrained: v2}, "a .tflite file initialises mobilenet_v2 or mobilenet_v1"},
		{Config{Backbone: "mobilenet_v3", Dim: 8, Pretrained: v2}, "model.backbone"},
	} {
		err := tc.cfg.Validate("model")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// A mobilenet's .tflite file gives the architecture, so init_from may replace its weights.
	ok := Config{Backbone: "mobilenet_v2", Dim: 8, Pretrained: v2, InitFrom: "runs/frozen"}
	if err := ok.Validate("model"); err != nil {
		t.Errorf("mobilenet_v2 with pretrained and init_from: %v", err)
	}
	res := Config{Backbone: "resnet18", Dim: 8, Pretrained: "r.onnx", InitFrom: "runs/a"}
	if err := res.Validate("model"); err == nil {
		t.Error("resnet18 with pretrained and init_from accepted")
	}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Backbone: "mobilenet_v2", Pretrained: filepath.Join(t.TempDir(), "none.tflite")}, "model.pretrained: models: stat"},
		{Config{Backbone: "mobilenet_v2", Pretrained: coralFile(t, tfliteV1)}, "the last feature map has 1024 channels, backbone mobilenet_v2 has 1280"},
	} {
		err := LoadPretrained(model.NewStore().RootScope(), tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadPretrained %+v: error %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestReadTFLiteErrors: a file that is not a TFLite flatbuffer, and a truncated one, give errors
// naming the file and the problem instead of panicking.
func TestReadTFLiteErrors(t *testing.T) {
	good, err := os.ReadFile(coralFile(t, tfliteV2))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"onnx.tflite", []byte("\x08\x07\x12\x0bpytorch-onnx"), "no TFL3 file identifier"},
		{"short.tflite", []byte("TFL"), "no TFL3 file identifier"},
		{"truncated.tflite", good[:4096], "malformed flatbuffer"},
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTFLite(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want %q naming the file", tc.name, err, tc.want)
		}
	}
}

// TestTFLiteDequantize checks (q − zero_point)·scale by hand: uint8 per tensor, int8 per channel
// along dimension 0 and along the last dimension, int32 biases with their own scale.
func TestTFLiteDequantize(t *testing.T) {
	for _, tc := range []struct {
		name string
		t    TFLiteTensor
		want []float32
	}{
		{"uint8 per tensor", TFLiteTensor{Shape: []int{3}, Type: tflUInt8, Data: []byte{0, 128, 255}, Scale: []float32{0.5}, ZeroPoint: []int64{128}},
			[]float32{-64, 0, 63.5}},
		{"int8 per channel, dim 0", TFLiteTensor{Shape: []int{2, 2}, Type: tflInt8, Data: []byte{0xff, 2, 0x80, 127}, Scale: []float32{0.25, 2}, ZeroPoint: []int64{0, 1}},
			[]float32{-0.25, 0.5, -258, 252}},
		{"int8 per channel, last dim", TFLiteTensor{Shape: []int{1, 2, 2}, Type: tflInt8, Data: []byte{1, 1, 3, 3}, Scale: []float32{1, 0.5}, ZeroPoint: []int64{0, 0}, QuantizedDim: 2},
			[]float32{1, 0.5, 3, 1.5}},
		{"int32 bias", TFLiteTensor{Shape: []int{2}, Type: tflInt32, Data: []byte{0xfe, 0xff, 0xff, 0xff, 0x10, 0, 0, 0}, Scale: []float32{0.125}, ZeroPoint: []int64{0}},
			[]float32{-0.25, 2}},
		{"float32, not quantized", TFLiteTensor{Shape: []int{1}, Type: tflFloat32, Data: []byte{0, 0, 0xc0, 0x3f}},
			[]float32{1.5}},
	} {
		if got := tc.t.Float32(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestTFLitePadding checks TFLite's SAME/VALID rule on hand-worked cases: SAME with stride 2 on
// an even input pads only after (224 → 112: total (112−1)·2 + 3 − 224 = 1, before 0), on an odd
// input on both sides.
func TestTFLitePadding(t *testing.T) {
	for _, tc := range []struct {
		size, k, stride, dilation, padding int
		before, after, out                 int
	}{
		{224, 3, 2, 1, tflPaddingSame, 0, 1, 112},
		{7, 3, 2, 1, tflPaddingSame, 1, 1, 4},
		{112, 3, 1, 1, tflPaddingSame, 1, 1, 112},
		{5, 3, 1, 2, tflPaddingSame, 2, 2, 5},
		{7, 7, 2, 1, tflPaddingValid, 0, 0, 1},
		{8, 3, 2, 1, tflPaddingValid, 0, 0, 3},
		{4, 1, 2, 1, tflPaddingSame, 0, 0, 2},
	} {
		b, a, o := tflitePadding(tc.size, tc.k, tc.stride, tc.dilation, tc.padding)
		if b != tc.before || a != tc.after || o != tc.out {
			t.Errorf("%+v: got (%d, %d, %d)", tc, b, a, o)
		}
	}
}

// TestTFLiteOpsDirect compares CONV_2D, DEPTHWISE_CONV_2D (depth multiplier 2) and a windowed
// AVERAGE_POOL_2D — paths the Coral files do not use (dilation, multiplier, a pool that is not
// global, odd sizes with stride 2) — with direct loops over output pixels and window taps that
// skip out-of-range input positions (zero padding; the pool counts in-range taps only), in
// float64: the same sums, so they agree to 1e-12.
func TestTFLiteOpsDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	randv := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64()*2 - 1
		}
		return v
	}
	const b, h, w, c = 2, 7, 6, 3
	x := randv(b * h * w * c)
	at := func(bi, y, xx, ch int) float64 { return x[((bi*h+y)*w+xx)*c+ch] }
	type op struct {
		name           string
		code           int
		k, s, d, mult  int
		padding, outCh int
	}
	for _, tc := range []op{
		{"conv 3×3 s2 SAME", tflConv2D, 3, 2, 1, 0, tflPaddingSame, 4},
		{"conv 3×3 s1 dilation 2 SAME", tflConv2D, 3, 1, 2, 0, tflPaddingSame, 2},
		{"conv 2×2 s2 VALID", tflConv2D, 2, 2, 1, 0, tflPaddingValid, 3},
		{"depthwise 3×3 s2 SAME ×2", tflDepthwiseConv2D, 3, 2, 1, 2, tflPaddingSame, 2 * c},
		{"depthwise 3×3 s1 SAME", tflDepthwiseConv2D, 3, 1, 1, 1, tflPaddingSame, c},
		{"avgpool 3×3 s2 SAME", tflAveragePool2D, 3, 2, 1, 0, tflPaddingSame, c},
		{"avgpool 2×2 s1 VALID", tflAveragePool2D, 2, 1, 1, 0, tflPaddingValid, c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &TFLiteOp{Code: tc.code, StrideH: tc.s, StrideW: tc.s, DilationH: tc.d, DilationW: tc.d, Padding: tc.padding, FilterH: tc.k, FilterW: tc.k}
			pt, _, ho := tflitePadding(h, tc.k, tc.s, tc.d, tc.padding)
			pl, _, wo := tflitePadding(w, tc.k, tc.s, tc.d, tc.padding)
			var wdims []int
			switch tc.code {
			case tflConv2D:
				wdims = []int{tc.k, tc.k, c, tc.outCh}
			case tflDepthwiseConv2D:
				wdims = []int{tc.k, tc.k, tc.outCh}
			}
			wt := randv(numElements(wdims))
			want := make([]float64, b*ho*wo*tc.outCh)
			for bi := 0; bi < b; bi++ {
				for i := 0; i < ho; i++ {
					for j := 0; j < wo; j++ {
						for oc := 0; oc < tc.outCh; oc++ {
							sum, cnt := 0.0, 0
							for di := 0; di < tc.k; di++ {
								for dj := 0; dj < tc.k; dj++ {
									y, xx := i*tc.s-pt+di*tc.d, j*tc.s-pl+dj*tc.d
									if y < 0 || y >= h || xx < 0 || xx >= w {
										continue
									}
									cnt++
									switch tc.code {
									case tflConv2D:
										for ic := 0; ic < c; ic++ {
											sum += at(bi, y, xx, ic) * wt[((di*tc.k+dj)*c+ic)*tc.outCh+oc]
										}
									case tflDepthwiseConv2D:
										sum += at(bi, y, xx, oc/tc.mult) * wt[(di*tc.k+dj)*tc.outCh+oc]
									default:
										sum += at(bi, y, xx, oc)
									}
								}
							}
							if tc.code == tflAveragePool2D {
								sum /= float64(cnt)
							}
							want[((bi*ho+i)*wo+j)*tc.outCh+oc] = sum
						}
					}
				}
			}
			// The pool's stored input shape differs from the filter, so it is not taken as global.
			m := &TFLiteModel{TFLiteFile: &TFLiteFile{Tensors: []TFLiteTensor{{Shape: []int{1, h, w, c}}}}}
			o.Inputs = []int{0}
			e, err := NewExec(backend.MustShared(), func(xn, wn *Node) *Node {
				switch tc.code {
				case tflConv2D:
					return tfliteConv(xn, wn, o)
				case tflDepthwiseConv2D:
					return tfliteDepthwise(xn, wn, o)
				}
				return m.tfliteAvgPool(xn, o)
			})
			if err != nil {
				t.Fatal(err)
			}
			if wdims == nil {
				wdims, wt = []int{1}, []float64{0}
			}
			out, err := e.Call(tensors.FromFlatDataAndDimensions(x, b, h, w, c), tensors.FromFlatDataAndDimensions(wt, wdims...))
			if err != nil {
				t.Fatal(err)
			}
			got := tensors.MustCopyFlatData[float64](out[0])
			if d := out[0].Shape().Dimensions; !slices.Equal(d, []int{b, ho, wo, tc.outCh}) {
				t.Fatalf("shape %v, want [%d %d %d %d]", d, b, ho, wo, tc.outCh)
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12 {
					t.Fatalf("value %d: %g, direct %g", i, got[i], want[i])
				}
			}
		})
	}
}

// TestMobileNetTiming (DMLKIT_BENCH=1) logs the MobileNetV2 backbone's forward time per image at
// 224, 128 and 96 px (batch 8) and the forward+backward time of a batch of 32 at 96 and 128 px
// (L = Σ r ⊙ features, gradients w.r.t. every backbone variable), each the best of 3 calls after
// a warm-up, on the current backend. It asserts nothing: the numbers plan CPU fine-tuning.
func TestMobileNetTiming(t *testing.T) {
	if os.Getenv("DMLKIT_BENCH") == "" {
		t.Skip("set DMLKIT_BENCH=1")
	}
	m := coralModel(t, tfliteV2)
	best := func(e *model.Exec, x *tensors.Tensor) time.Duration {
		var b time.Duration
		for i := 0; i < 4; i++ {
			start := time.Now()
			if _, err := e.Call(x); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); i > 0 && (b == 0 || d < b) {
				b = d
			}
		}
		return b
	}
	input := func(b, hw int) *tensors.Tensor {
		x := make([]float32, b*hw*hw*3)
		for i := range x {
			x[i] = float32(i%253) / 252
		}
		return tensors.FromFlatDataAndDimensions(x, b, hw, hw, 3)
	}
	for _, hw := range []int{224, 128, 96} {
		const b = 8
		store := model.NewStore()
		if err := m.LoadVariables(store.RootScope().At("backbone"), false); err != nil {
			t.Fatal(err)
		}
		e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
			return m.Features(scope.At("backbone"), x)
		})
		if err != nil {
			t.Fatal(err)
		}
		d := best(e, input(b, hw))
		t.Logf("forward %d×%d, batch %d: %v (%v per image)", hw, hw, b, d.Round(time.Millisecond), (d / b).Round(100*time.Microsecond))
	}
	for _, hw := range []int{96, 128} {
		const b = 32
		store := model.NewStore()
		if err := m.LoadVariables(store.RootScope().At("backbone"), false); err != nil {
			t.Fatal(err)
		}
		r := make([]float32, b*m.FeatureDim)
		for i := range r {
			r[i] = float32(i%7) - 3
		}
		e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) []*Node {
			scope.SetTraining(x.Graph(), true)
			f := m.Features(scope.At("backbone"), x)
			loss := ReduceAllSum(Mul(f, Const(x.Graph(), tensors.FromFlatDataAndDimensions(r, b, m.FeatureDim))))
			var wrt []*Node
			for v := range store.IterVariables() {
				wrt = append(wrt, v.NodeValue(x.Graph()))
			}
			return Gradient(loss, wrt...)
		})
		if err != nil {
			t.Fatal(err)
		}
		d := best(e, input(b, hw))
		t.Logf("forward+backward %d×%d, batch %d: %v", hw, hw, b, d.Round(time.Millisecond))
	}
}
