package models

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// The fixture of backbone "onnx": a torchvision-style ResNet in miniature exported by PyTorch
// 1.13 with its outputs and gradients (testdata/make_onnx_backbone.py wrote every file; run it
// again to regenerate them, the export is deterministic).
const onnxFixture = "testdata/onnx_backbone.onnx"

func readNpy(t *testing.T, name string) ([]float32, []int) {
	t.Helper()
	d, s, err := npy.ReadFloat32(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return d, s
}

// maxAbsDiff returns max |a − b| (and fails on a length mismatch).
func maxAbsDiff(t *testing.T, what string, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d values, want %d", what, len(a), len(b))
	}
	worst := 0.0
	for i := range a {
		worst = math.Max(worst, math.Abs(float64(a[i]-b[i])))
	}
	return worst
}

// nhwc is [nchwToNHWC] without the shape.
func nhwc(x []float32, shape []int) []float32 {
	out, _ := nchwToNHWC(x, shape)
	return out
}

func onnxFixtureConfig() Config {
	return Config{Backbone: "onnx", ONNXFile: onnxFixture, Pool: "avg", Head: "identity"}
}

// TestONNXBackboneMatchesTorch runs the fixture through [Build] (NHWC input, transposed to the
// network's NCHW) and compares with PyTorch's eval-mode output and with PyTorch's gradients of
// L = Σ features² with respect to the input, to layer2.0.conv1.weight (a strided convolution
// inside the residual block) and to bn1.weight (a BatchNorm scale). Tolerances: the features
// (|y| ≤ 0.61) to 1e-5 and the gradients (|g| ≤ 0.28) to 1e-4 absolute — float32 through seven
// convolutions summed in different orders differs by a few 1e-7 (measured ≤ 1e-6, see the log).
func TestONNXBackboneMatchesTorch(t *testing.T) {
	xs, xshape := readNpy(t, "onnx_backbone_x.npy")
	n, c, h, w := xshape[0], xshape[1], xshape[2], xshape[3]
	want, _ := readNpy(t, "onnx_backbone_y.npy")
	wantGX, _ := readNpy(t, "onnx_backbone_gx.npy")
	wantGW, _ := readNpy(t, "onnx_backbone_gw.npy")
	wantGG, _ := readNpy(t, "onnx_backbone_gg.npy")

	cfg := onnxFixtureConfig()
	if err := cfg.Validate("model"); err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := LoadPretrained(store.RootScope(), cfg); err != nil {
		t.Fatal(err)
	}
	wVar := store.GetVariable("/backbone/ONNX/layer2.0.conv1.weight")
	gVar := store.GetVariable("/backbone/ONNX/bn1.weight")
	if wVar == nil || gVar == nil {
		t.Fatalf("variables missing: layer2.0.conv1.weight %v, bn1.weight %v", wVar, gVar)
	}
	nVars := store.NumVariables()
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) []*Node {
		f := Build(scope, cfg, x, Mode{Train: true}).Features
		loss := ReduceAllSum(Square(f))
		g := Gradient(loss, x, wVar.NodeValue(x.Graph()), gVar.NodeValue(x.Graph()))
		return []*Node{f, g[0], g[1], g[2]}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(nhwc(xs, xshape), n, h, w, c))
	if err != nil {
		t.Fatal(err)
	}
	if store.NumVariables() != nVars {
		t.Fatalf("the graph created %d variables the ONNX file did not provide", store.NumVariables()-nVars)
	}
	if got := out[0].Shape().Dimensions; len(got) != 2 || got[0] != n || got[1] != 8 {
		t.Fatalf("features %v, want [%d, 8]", got, n)
	}
	dy := maxAbsDiff(t, "features", tensors.MustCopyFlatData[float32](out[0]), want)
	dgx := maxAbsDiff(t, "dL/dx", tensors.MustCopyFlatData[float32](out[1]), nhwc(wantGX, xshape))
	dgw := maxAbsDiff(t, "dL/dW", tensors.MustCopyFlatData[float32](out[2]), wantGW)
	dgg := maxAbsDiff(t, "dL/dγ", tensors.MustCopyFlatData[float32](out[3]), wantGG)
	t.Logf("vs PyTorch: features max |Δ| %.2g, dL/dx %.2g, dL/dW(layer2.0.conv1) %.2g, dL/dγ(bn1) %.2g", dy, dgx, dgw, dgg)
	if dy > 1e-5 {
		t.Errorf("features differ from PyTorch's by %g > 1e-5", dy)
	}
	for _, d := range []struct {
		name string
		v    float64
	}{{"dL/dx", dgx}, {"dL/dW", dgw}, {"dL/dγ", dgg}} {
		if d.v > 1e-4 {
			t.Errorf("%s differs from PyTorch's by %g > 1e-4", d.name, d.v)
		}
	}
}

// TestONNXBackboneVariables: the fixture's initializers are variables under /backbone/ONNX/ with
// their state_dict names — six convolution weights and six BatchNorms of four tensors each
// (30); the convolutions and BN scales/biases (18) are trainable, the running statistics (12)
// are not. Parameter count by hand: convolutions 3·4·9 + 2·(4·4·9) + 4·8·9 + 8·8·9 + 4·8 = 1292,
// BatchNorms 4·(4 + 4 + 4 + 8 + 8 + 8) = 144; 1436 in all.
func TestONNXBackboneVariables(t *testing.T) {
	b, err := OpenONNXBackbone(onnxFixtureConfig())
	if err != nil {
		t.Fatal(err)
	}
	if b.Layout != "nchw" || b.Channels != 3 || b.Input != "images" || b.Output != "features" || b.Params != 1436 {
		t.Errorf("opened as layout %q, %d channels, input %q, output %q, %d parameters; want nchw, 3, images, features, 1436",
			b.Layout, b.Channels, b.Input, b.Output, b.Params)
	}
	store := model.NewStore()
	if err := LoadPretrained(store.RootScope().At("model"), onnxFixtureConfig()); err != nil {
		t.Fatal(err)
	}
	var trainable, frozen int
	for v := range store.IterVariables() {
		p := v.Path()
		if !strings.HasPrefix(p, "/model/backbone/ONNX/") {
			t.Errorf("variable %s outside /model/backbone/ONNX/", p)
			continue
		}
		stat := strings.HasSuffix(p, ".running_mean") || strings.HasSuffix(p, ".running_var")
		if v.Trainable == stat {
			t.Errorf("%s: trainable %v", p, v.Trainable)
		}
		if v.Trainable {
			trainable++
		} else {
			frozen++
		}
	}
	if trainable != 18 || frozen != 12 {
		t.Errorf("%d trainable and %d frozen variables, want 18 and 12", trainable, frozen)
	}
	for _, p := range []string{"conv1.weight", "layer2.0.downsample.0.weight", "layer2.0.downsample.1.bias", "layer1.0.bn2.running_var"} {
		if store.GetVariable("/model/backbone/ONNX/"+p) == nil {
			t.Errorf("no variable for %s", p)
		}
	}
}

// TestONNXBackboneIntermediateOutput: model.onnx_output names layer1's output, a [2, 4, 5, 5]
// NCHW map; pooled (avg) it equals PyTorch's spatial mean of the same tensor (1e-5, as above),
// and layer2's initializers get no variables: 15 remain, the 3 convolution weights of conv1 and
// layer1 and their 3 BatchNorms' 4 tensors each.
func TestONNXBackboneIntermediateOutput(t *testing.T) {
	xs, xshape := readNpy(t, "onnx_backbone_x.npy")
	n, c, h, w := xshape[0], xshape[1], xshape[2], xshape[3]
	want, _ := readNpy(t, "onnx_backbone_y1.npy")
	cfg := onnxFixtureConfig()
	cfg.ONNXOutput = "/layer1/layer1.0/relu_1/Relu_output_0"
	got, store := runONNXFeatures(t, cfg, nhwc(xs, xshape), []int{n, h, w, c})
	if d := maxAbsDiff(t, "layer1 features", got, want); d > 1e-5 {
		t.Errorf("pooled layer1 output differs from PyTorch's by %g", d)
	}
	if k := store.NumVariables(); k != 15 {
		t.Errorf("%d variables, want 15 (conv1, bn1, layer1)", k)
	}
	if store.GetVariable("/backbone/ONNX/layer2.0.conv1.weight") != nil {
		t.Error("layer2 has variables although the output does not use it")
	}
}

// runONNXFeatures builds cfg's features on x (created lazily by the graph: no LoadPretrained)
// and returns them with the store.
func runONNXFeatures(t *testing.T, cfg Config, x []float32, dims []int) ([]float32, *model.Store) {
	t.Helper()
	store := model.NewStore()
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
		return Build(scope, cfg, x, Mode{}).Features
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(x, dims...))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float32](out[0]), store
}

// TestONNXBackboneInputs: a grey image [B, H, W, 1] gives the features of the RGB image with
// three equal channels; input_norm imagenet gives those of the image normalised on the host,
// (x − mean[c])/std[c]; a batch of 3 at 16×16 (the export was [1, 3, 10, 10], batch dynamic)
// runs: the batch and image size are free.
func TestONNXBackboneInputs(t *testing.T) {
	const n, h, w = 3, 16, 16
	grey := make([]float32, n*h*w)
	for i := range grey {
		grey[i] = float32((i*37)%101) / 100
	}
	rgb := make([]float32, 3*len(grey))
	for i, v := range grey {
		rgb[3*i], rgb[3*i+1], rgb[3*i+2] = v, v, v
	}
	cfg := onnxFixtureConfig()
	fGrey, _ := runONNXFeatures(t, cfg, grey, []int{n, h, w, 1})
	fRGB, _ := runONNXFeatures(t, cfg, rgb, []int{n, h, w, 3})
	if len(fRGB) != n*8 {
		t.Fatalf("%d features, want %d", len(fRGB), n*8)
	}
	if d := maxAbsDiff(t, "grey vs RGB", fGrey, fRGB); d != 0 {
		t.Errorf("grey input differs from its RGB repetition by %g", d)
	}
	norm := make([]float32, len(rgb))
	mean, std := [3]float64{0.485, 0.456, 0.406}, [3]float64{0.229, 0.224, 0.225}
	for i, v := range rgb {
		norm[i] = float32((float64(v) - mean[i%3]) / std[i%3])
	}
	cfg.InputNorm = "imagenet"
	fIn, _ := runONNXFeatures(t, cfg, rgb, []int{n, h, w, 3})
	cfg.InputNorm = ""
	fHost, _ := runONNXFeatures(t, cfg, norm, []int{n, h, w, 3})
	// The graph multiplies by 1/std in float32 where the host divides in float64: a few ulps.
	if d := maxAbsDiff(t, "input_norm", fIn, fHost); d > 1e-5 {
		t.Errorf("input_norm imagenet differs from host normalisation by %g", d)
	}
}

// TestONNXBackboneErrors: configuration and file errors name the field (and the file).
func TestONNXBackboneErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want []string
	}{
		{func(c *Config) { c.ONNXFile = "" }, []string{"model.onnx_file", "empty"}},
		{func(c *Config) { c.ONNXLayout = "chw" }, []string{"model.onnx_layout", "chw"}},
		{func(c *Config) { c.InputNorm = "imagenet1k" }, []string{"model.input_norm", "imagenet1k"}},
		{func(c *Config) { c.Backbone = "cnn"; c.Channels = []int{4} }, []string{"model.onnx_file", "only backbone onnx"}},
		{func(c *Config) { c.Pretrained = "w.onnx" }, []string{"model.pretrained"}},
	} {
		cfg := onnxFixtureConfig()
		tc.mod(&cfg)
		err := cfg.Validate("model")
		if err == nil {
			t.Errorf("%+v: accepted", cfg)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q lacks %q", err, s)
			}
		}
	}
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.onnx")
	os.WriteFile(garbage, []byte("not a model"), 0o644)
	for _, tc := range []struct {
		mod  func(*Config)
		want []string
	}{
		{func(c *Config) { c.ONNXFile = filepath.Join(dir, "missing.onnx") }, []string{"model.onnx_file", "missing.onnx"}},
		{func(c *Config) { c.ONNXFile = garbage }, []string{"model.onnx_file", "garbage.onnx", "not an ONNX model"}},
		{func(c *Config) { c.ONNXOutput = "/layer9/Relu_output_0" }, []string{"model.onnx_output", "/layer9/Relu_output_0", "onnx_backbone.onnx"}},
	} {
		cfg := onnxFixtureConfig()
		tc.mod(&cfg)
		err := LoadPretrained(model.NewStore().RootScope(), cfg)
		if err == nil {
			t.Errorf("%+v: loaded", cfg)
			continue
		}
		for _, s := range tc.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("error %q lacks %q", err, s)
			}
		}
	}
}
