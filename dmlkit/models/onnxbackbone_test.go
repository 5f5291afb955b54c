package models

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/compute-onnx/support/protos"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"
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
	return Config{Backbone: "onnx", Pretrained: onnxFixture, Pool: "avg", Head: "identity"}
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
		{func(c *Config) { c.Pretrained = "" }, []string{"model.pretrained", "empty", "backbone onnx"}},
		{func(c *Config) { c.Pretrained = "mobilenet.tflite" }, []string{"model.pretrained", "mobilenet.tflite"}},
		{func(c *Config) { c.ONNXLayout = "chw" }, []string{"model.onnx_layout", "chw"}},
		{func(c *Config) { c.InputNorm = "imagenet1k" }, []string{"model.input_norm", "imagenet1k"}},
		{func(c *Config) { c.Backbone, c.Pretrained, c.Channels, c.InputNorm = "cnn", "", []int{4}, "imagenet" }, []string{"model.input_norm", "only backbone onnx"}},
		{func(c *Config) { c.Backbone, c.Pretrained, c.Channels, c.ONNXOutput = "cnn", "", []int{4}, "x" }, []string{"model.onnx_output", "only backbone onnx"}},
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
		{func(c *Config) { c.Pretrained = filepath.Join(dir, "missing.onnx") }, []string{"model.pretrained", "missing.onnx"}},
		{func(c *Config) { c.Pretrained = garbage }, []string{"model.pretrained", "garbage.onnx", "not an ONNX model"}},
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

// torchvisionONNX exports an untrained torchvision network (random weights: nothing is
// downloaded) with its classifier removed: "resnet50" (fc) in one of two forms — "folded" is
// torch.onnx.export's default (eval mode: every BatchNorm folded into its convolution, weights
// renamed), "named" keeps the BatchNormalization nodes and the state_dict names
// (do_constant_folding=False, TrainingMode.PRESERVE) — or "vit_b_16" (heads; named). It saves a
// random input [1, 3, 224, 224] and PyTorch's features, and prints PyTorch's forward and
// forward+backward times (2 threads).
const torchvisionONNX = `
import sys, time, numpy as np, torch, torchvision
torch.manual_seed(0)
torch.set_num_threads(2)
d, arch, form = sys.argv[1], sys.argv[2], sys.argv[3]
m = getattr(torchvision.models, arch)()
if arch == 'vit_b_16':
    m.heads = torch.nn.Identity()
else:
    m.fc = torch.nn.Identity()
m.eval()
kw = dict(input_names=['images'], output_names=['features'], dynamic_axes={'images': {0: 'batch'}, 'features': {0: 'batch'}})
if form == 'named':
    kw.update(do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
torch.onnx.export(m, torch.zeros(1, 3, 224, 224), d + '/net.onnx', **kw)
x = torch.rand(1, 3, 224, 224)
with torch.no_grad():
    m(x)
    t = time.time(); y = m(x); tf = time.time() - t
xg = x.clone().requires_grad_(True)
(m(xg) ** 2).sum().backward()
t = time.time(); (m(xg) ** 2).sum().backward(); tb = time.time() - t
np.save(d + '/x.npy', x.numpy())
np.save(d + '/y.npy', y.numpy())
print('torch forward %.3f s, forward+backward %.3f s' % (tf, tb))
`

// TestONNXBackboneTorchvision (DMLKIT_HEAVY=1, needs python3-torchvision; not run in CI): an
// untrained torchvision ResNet-50 exported both ways, and a ViT-B/16, import, run a forward pass
// on a 1×224×224×3 input equal to PyTorch's to 1e-4 relative to the largest feature (float32
// through 53 convolutions or 12 transformer blocks), and a forward+backward pass; it logs the
// import, compile and run times (minutes: GoMLX's convolution on the Go backend is slow).
func TestONNXBackboneTorchvision(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") == "" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, torchvision, numpy").Run(); err != nil {
		t.Skip("no python3 with torch, torchvision and numpy")
	}
	for _, tc := range [][2]string{{"resnet50", "folded"}, {"resnet50", "named"}, {"vit_b_16", "named"}} {
		arch, form := tc[0], tc[1]
		t.Run(arch+"/"+form, func(t *testing.T) {
			dir := t.TempDir()
			py := filepath.Join(dir, "export.py")
			os.WriteFile(py, []byte(torchvisionONNX), 0o644)
			cmd := exec.Command("/usr/bin/python3", py, dir, arch, form)
			cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS=2")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("torch export: %v\n%s", err, out)
			}
			t.Logf("%s", strings.TrimSpace(string(out)))
			xs, xshape, err := npy.ReadFloat32(filepath.Join(dir, "x.npy"))
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := npy.ReadFloat32(filepath.Join(dir, "y.npy"))
			if err != nil {
				t.Fatal(err)
			}
			x, dims := nchwToNHWC(xs, xshape)
			cfg := Config{Backbone: "onnx", Pretrained: filepath.Join(dir, "net.onnx"), Pool: "avg", Head: "identity"}
			start := time.Now()
			b, err := OpenONNXBackbone(cfg)
			if err != nil {
				t.Fatal(err)
			}
			store := model.NewStore()
			if err := b.LoadVariables(store.RootScope().At("backbone")); err != nil {
				t.Fatal(err)
			}
			tImport := time.Since(start)
			trainable := 0
			for v := range store.IterVariables() {
				if v.Trainable {
					trainable++
				}
			}
			t.Logf("%s %s export: %d parameters, %d variables (%d trainable); import %v", arch, form, b.Params, store.NumVariables(), trainable, tImport.Round(time.Millisecond))

			fwd, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
				return Build(scope, cfg, x, Mode{}).Features
			})
			if err != nil {
				t.Fatal(err)
			}
			xt := tensors.FromFlatDataAndDimensions(x, dims...)
			start = time.Now()
			res, err := fwd.Call(xt)
			if err != nil {
				t.Fatal(err)
			}
			tFirst := time.Since(start)
			start = time.Now()
			if _, err := fwd.Call(xt); err != nil {
				t.Fatal(err)
			}
			tFwd := time.Since(start)
			got := tensors.MustCopyFlatData[float32](res[0])
			worst, scale := 0.0, 0.0
			for i := range want {
				scale = math.Max(scale, math.Abs(float64(want[i])))
			}
			worst = maxAbsDiff(t, "features", got, want)
			t.Logf("%s: forward first call (build + compile + run) %v, second %v; max |Δ| vs PyTorch %.3g (max |feature| %.3g, relative %.2g)",
				form, tFirst.Round(time.Millisecond), tFwd.Round(time.Millisecond), worst, scale, worst/scale)
			if worst > 1e-4*scale {
				t.Errorf("features differ from PyTorch's by %g (scale %g)", worst, scale)
			}

			bwd, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
				f := Build(scope, cfg, x, Mode{Train: true}).Features
				loss := ReduceAllSum(Square(f))
				var nodes []*Node
				for v := range store.IterVariables() {
					if v.Trainable && v.InUseByGraph(x.Graph()) {
						nodes = append(nodes, v.NodeValue(x.Graph()))
					}
				}
				grads := Gradient(loss, nodes...)
				s := loss
				for _, g := range grads {
					s = Add(s, ReduceAllSum(g))
				}
				return s
			})
			if err != nil {
				t.Fatal(err)
			}
			start = time.Now()
			if _, err := bwd.Call(xt); err != nil {
				t.Fatal(err)
			}
			tFirst = time.Since(start)
			start = time.Now()
			if _, err := bwd.Call(xt); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: forward+backward (gradients of all %d trainable variables) first call %v, second %v",
				form, trainable, tFirst.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestONNXBackboneIdentityAliases: PyTorch's exporter stores equal tensors once and names the
// others with Identity nodes. A graph written here with Go's protobuf types —
// features = Identity(flatten(GlobalAveragePool(images)) · s · Identity(s)), s = (1, 2, 3) — loads
// with s and its alias t as two trainable variables of their own (as two PyTorch parameters
// would be) and differentiates (GoMLX has no gradient for Identity; the nodes are removed). On
// an NHWC image [1, 2, 2, 3] whose channel c holds c + 1 + k at pixel k = 0…3 the channel means
// are m = (2.5, 3.5, 4.5): features m·s² = (2.5, 14, 40.5) and, for L = Σ features,
// ∂L/∂s = ∂L/∂t = m·s = (2.5, 7, 13.5). Exact in float32 (small integers and halves).
func TestONNXBackboneIdentityAliases(t *testing.T) {
	path := writeTinyONNX(t, []*protos.TensorProto{floatInit("s", 1, 2, 3)},
		onnxNode("GlobalAveragePool", []string{"images"}, "p"),
		onnxNode("Flatten", []string{"p"}, "f", &protos.AttributeProto{Name: "axis", Type: protos.AttributeProto_INT, I: 1}),
		onnxNode("Mul", []string{"f", "s"}, "m"),
		onnxNode("Identity", []string{"s"}, "t"),
		onnxNode("Mul", []string{"m", "t"}, "o"),
		onnxNode("Identity", []string{"o"}, "features"),
	)
	cfg := Config{Backbone: "onnx", Pretrained: path, Head: "identity"}
	store := model.NewStore()
	if err := LoadPretrained(store.RootScope(), cfg); err != nil {
		t.Fatal(err)
	}
	sv, tv := store.GetVariable("/backbone/ONNX/s"), store.GetVariable("/backbone/ONNX/t")
	if store.NumVariables() != 2 || sv == nil || tv == nil || !sv.Trainable || !tv.Trainable {
		t.Fatalf("want trainable variables s and t only; got %d variables, s %v, t %v", store.NumVariables(), sv, tv)
	}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) []*Node {
		f := Build(scope, cfg, x, Mode{Train: true}).Features
		g := Gradient(ReduceAllSum(f), sv.NodeValue(x.Graph()), tv.NodeValue(x.Graph()))
		return []*Node{f, g[0], g[1]}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tinyImage())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]float32{{2.5, 14, 40.5}, {2.5, 7, 13.5}, {2.5, 7, 13.5}} {
		if d := maxAbsDiff(t, []string{"features", "dL/ds", "dL/dt"}[i], tensors.MustCopyFlatData[float32](out[i]), want); d != 0 {
			t.Errorf("%s = %v, want %v", []string{"features", "dL/ds", "dL/dt"}[i], tensors.MustCopyFlatData[float32](out[i]), want)
		}
	}
}

// floatInit is a float32 initializer [len(v)].
func floatInit(name string, v ...float32) *protos.TensorProto {
	return &protos.TensorProto{Name: name, Dims: []int64{int64(len(v))}, DataType: int32(protos.TensorProto_FLOAT), FloatData: v}
}

// onnxNode is a node with one output, named as its output.
func onnxNode(op string, in []string, out string, attrs ...*protos.AttributeProto) *protos.NodeProto {
	return &protos.NodeProto{OpType: op, Name: out, Input: in, Output: []string{out}, Attribute: attrs}
}

// writeTinyONNX writes an ONNX model (opset 14) with input "images" [batch, 3, 2, 2] (NCHW),
// output "features" [batch, 3], the given initializers and nodes, and returns its path.
func writeTinyONNX(t *testing.T, inits []*protos.TensorProto, nodes ...*protos.NodeProto) string {
	t.Helper()
	f32 := int32(protos.TensorProto_FLOAT)
	dim := func(p string, v int64) *protos.TensorShapeProto_Dimension {
		if p != "" {
			return &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimParam{DimParam: p}}
		}
		return &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	tensorType := func(dims ...*protos.TensorShapeProto_Dimension) *protos.TypeProto {
		return &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: &protos.TypeProto_Tensor{
			ElemType: f32, Shape: &protos.TensorShapeProto{Dim: dims}}}}
	}
	m := &protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Domain: "", Version: 14}}, Graph: &protos.GraphProto{
		Name:        "tiny",
		Input:       []*protos.ValueInfoProto{{Name: "images", Type: tensorType(dim("batch", 0), dim("", 3), dim("", 2), dim("", 2))}},
		Output:      []*protos.ValueInfoProto{{Name: "features", Type: tensorType(dim("batch", 0), dim("", 3))}},
		Initializer: inits,
		Node:        nodes,
	}}
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.onnx")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// tinyImage is the NHWC image [1, 2, 2, 3] whose channel c holds c + 1 + k at pixel k = 0…3
// (channel means 2.5, 3.5, 4.5).
func tinyImage() *tensors.Tensor {
	x := make([]float32, 12)
	for k := 0; k < 4; k++ {
		for c := 0; c < 3; c++ {
			x[3*k+c] = float32(c + 1 + k)
		}
	}
	return tensors.FromFlatDataAndDimensions(x, 1, 2, 2, 3)
}

// TestONNXBackboneBatchNormMomentum: an inference BatchNormalization with momentum 0.99 (what
// PyTorch exports for BatchNorm2d(momentum=0.01), which onnx-gomlx v0.5.5 refuses) loads, uses
// its statistics — scale 2, bias 1, mean 0.5, variance 4, ε 0: y = (x − 0.5)/2·2 + 1 = x + 0.5, so
// the pooled features of [tinyImage] are (3, 4, 5) exactly — and only scale and bias are trainable.
func TestONNXBackboneBatchNormMomentum(t *testing.T) {
	path := writeTinyONNX(t,
		[]*protos.TensorProto{floatInit("g", 2, 2, 2), floatInit("b", 1, 1, 1), floatInit("mu", 0.5, 0.5, 0.5), floatInit("var", 4, 4, 4)},
		onnxNode("BatchNormalization", []string{"images", "g", "b", "mu", "var"}, "n",
			&protos.AttributeProto{Name: "epsilon", Type: protos.AttributeProto_FLOAT, F: 0},
			&protos.AttributeProto{Name: "momentum", Type: protos.AttributeProto_FLOAT, F: 0.99}),
		onnxNode("GlobalAveragePool", []string{"n"}, "p"),
		onnxNode("Flatten", []string{"p"}, "features", &protos.AttributeProto{Name: "axis", Type: protos.AttributeProto_INT, I: 1}),
	)
	cfg := Config{Backbone: "onnx", Pretrained: path, Head: "identity"}
	store := model.NewStore()
	if err := LoadPretrained(store.RootScope(), cfg); err != nil {
		t.Fatal(err)
	}
	for name, trainable := range map[string]bool{"g": true, "b": true, "mu": false, "var": false} {
		if v := store.GetVariable("/backbone/ONNX/" + name); v == nil || v.Trainable != trainable {
			t.Errorf("variable %s: %v, want trainable %v", name, v, trainable)
		}
	}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
		return Build(scope, cfg, x, Mode{Train: true}).Features
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tinyImage())
	if err != nil {
		t.Fatal(err)
	}
	if got := tensors.MustCopyFlatData[float32](out[0]); maxAbsDiff(t, "features", got, []float32{3, 4, 5}) != 0 {
		t.Errorf("features %v, want [3 4 5]", got)
	}
}
