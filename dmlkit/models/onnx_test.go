package models

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/compute-onnx/support/protos"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"
)

// torchResNet defines ResNet-18/50 with torchvision's module names and structure (torchvision is
// not installed here), randomises every BN (so running statistics matter), exports it to ONNX
// with the parameter names kept, and saves a random input (NCHW) and the eval-mode pooled
// features [2, 512] / [2, 2048].
const torchResNet = `
import sys, numpy as np, torch, torch.nn as nn
torch.manual_seed(0)
class BasicBlock(nn.Module):
    def __init__(s, inp, out, stride):
        super().__init__()
        s.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False); s.bn1 = nn.BatchNorm2d(out)
        s.relu = nn.ReLU(inplace=True)
        s.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False); s.bn2 = nn.BatchNorm2d(out)
        s.downsample = None
        if stride != 1 or inp != out:
            s.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))
    def forward(s, x):
        idt = x if s.downsample is None else s.downsample(x)
        o = s.relu(s.bn1(s.conv1(x)))
        return s.relu(s.bn2(s.conv2(o)) + idt)
class Bottleneck(nn.Module):
    def __init__(s, inp, w, stride):
        super().__init__()
        s.conv1 = nn.Conv2d(inp, w, 1, bias=False); s.bn1 = nn.BatchNorm2d(w)
        s.conv2 = nn.Conv2d(w, w, 3, stride, 1, bias=False); s.bn2 = nn.BatchNorm2d(w)
        s.conv3 = nn.Conv2d(w, 4 * w, 1, bias=False); s.bn3 = nn.BatchNorm2d(4 * w)
        s.relu = nn.ReLU(inplace=True)
        s.downsample = None
        if stride != 1 or inp != 4 * w:
            s.downsample = nn.Sequential(nn.Conv2d(inp, 4 * w, 1, stride, bias=False), nn.BatchNorm2d(4 * w))
    def forward(s, x):
        idt = x if s.downsample is None else s.downsample(x)
        o = s.relu(s.bn1(s.conv1(x))); o = s.relu(s.bn2(s.conv2(o)))
        return s.relu(s.bn3(s.conv3(o)) + idt)
class ResNet(nn.Module):
    def __init__(s, depth):
        super().__init__()
        s.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False); s.bn1 = nn.BatchNorm2d(64)
        s.relu = nn.ReLU(inplace=True); s.maxpool = nn.MaxPool2d(3, 2, 1)
        inp = 64
        blocks, B, exp = ([2, 2, 2, 2], BasicBlock, 1) if depth == 18 else ([3, 4, 6, 3], Bottleneck, 4)
        for i, (w, st) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)]):
            layers = []
            for b in range(blocks[i]):
                layers.append(B(inp, w, st if b == 0 else 1)); inp = w * exp
            setattr(s, 'layer%d' % (i + 1), nn.Sequential(*layers))
        s.fc = nn.Linear(inp, 10)
    def forward(s, x):
        x = s.maxpool(s.relu(s.bn1(s.conv1(x))))
        for i in range(4): x = getattr(s, 'layer%d' % (i + 1))(x)
        return x.mean((2, 3))
depth = int(sys.argv[2])
m = ResNet(depth)
for b in m.modules():
    if isinstance(b, nn.BatchNorm2d):
        b.running_mean.uniform_(-0.2, 0.2); b.running_var.uniform_(0.5, 1.5)
        b.weight.data.uniform_(0.5, 1.5); b.bias.data.uniform_(-0.2, 0.2)
m.eval()
x = torch.rand(2, 3, 32, 32)
d = sys.argv[1]
torch.onnx.export(m, x, d + '/r.onnx', do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
np.save(d + '/x.npy', x.numpy())
np.save(d + '/y.npy', m(x).detach().numpy())
`

// TestTorchResNet18FromONNX builds a ResNet-18 in PyTorch 1.13 (Debian python3-torch), exports
// it to ONNX, loads its weights into dmlkit's im2col ResNet-18 and compares the pooled features
// of the same input: float32 through 18 layers, tolerance 1e-3 relative to the largest feature.
// Skipped without /usr/bin/python3 + torch.
func TestTorchResNet18FromONNX(t *testing.T) { testTorchResNet(t, "18") }

// TestTorchResNet50FromONNX is the ResNet-50 (bottleneck, v1.5) version (DMLKIT_HEAVY=1: the
// export is ~100 MB).
func TestTorchResNet50FromONNX(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") == "" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	testTorchResNet(t, "50")
}

func testTorchResNet(t *testing.T, depth string) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("no python3 with torch and numpy")
	}
	dir := t.TempDir()
	py := filepath.Join(dir, "r.py")
	os.WriteFile(py, []byte(torchResNet), 0o644)
	cmd := exec.Command("/usr/bin/python3", py, dir, depth)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS=2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch export: %v\n%s", err, out)
	}
	xs, xshape, err := npy.ReadFloat32(filepath.Join(dir, "x.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := npy.ReadFloat32(filepath.Join(dir, "y.npy"))
	if err != nil {
		t.Fatal(err)
	}
	// NCHW → NHWC.
	n, c, h, wd := xshape[0], xshape[1], xshape[2], xshape[3]
	x := make([]float32, len(xs))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for y := 0; y < h; y++ {
				for xx := 0; xx < wd; xx++ {
					x[((i*h+y)*wd+xx)*c+ch] = xs[((i*c+ch)*h+y)*wd+xx]
				}
			}
		}
	}
	store := model.NewStore()
	cfg := Config{Backbone: "resnet" + depth, Pool: "avg", Pretrained: filepath.Join(dir, "r.onnx")}
	if err := LoadPretrained(store.RootScope(), cfg); err != nil {
		t.Fatal(err)
	}
	if v := store.GetVariable("/backbone/layer2/0/downsample/weights"); v == nil || !v.Trainable {
		t.Fatalf("downsample weights not loaded as a trainable variable: %v", v)
	}
	// Both convolution paths: im2col (Go backend, ONNX Runtime) and the backend's own convolution
	// (XLA's path, run here on the Go backend).
	defer func(c string) { ConvImpl = c }(ConvImpl)
	for _, impl := range []string{"im2col", "native"} {
		ConvImpl = impl
		worst, scale := featuresVsTorch(t, store, func(scope *model.Scope, x *Node) *Node {
			scope.SetTraining(x.Graph(), true)
			return ResNet(scope.At("backbone"), depth, cfg, x, Mode{})
		}, x, []int{n, h, wd, c}, want)
		t.Logf("ResNet-%s (%s convolutions) vs PyTorch: max |Δ| = %.3g (max |feature| %.3g)", depth, impl, worst, scale)
		if worst > 1e-3*scale {
			t.Errorf("dmlkit ResNet-%s (%s convolutions) differs from PyTorch's: max |Δ| = %g, scale %g", depth, impl, worst, scale)
		}
	}
}

// featuresVsTorch runs build on x (shape xshape) with the weights already in store, checks that the
// graph created no variable the weights did not provide and that it returns len(want) features, and
// returns max |got − want| and max |want|.
func featuresVsTorch(t *testing.T, store *model.Store, build func(*model.Scope, *Node) *Node, x []float32, xshape []int, want []float32) (worst, scale float64) {
	t.Helper()
	nVars := store.NumVariables()
	e, err := model.NewExec(backend.MustShared(), store, build)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(x, xshape...))
	if err != nil {
		t.Fatal(err)
	}
	if store.NumVariables() != nVars {
		t.Fatalf("the graph created %d variables the weights did not provide", store.NumVariables()-nVars)
	}
	got := tensors.MustCopyFlatData[float32](out[0])
	if len(got) != len(want) {
		t.Fatalf("%d features, torch %d", len(got), len(want))
	}
	for i := range want {
		scale = math.Max(scale, math.Abs(float64(want[i])))
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
	}
	return worst, scale
}

// TestReadONNXWeightsTiny writes a tiny ONNX model with Go's protobuf types (no PyTorch): one
// raw_data and one float_data initializer, an int64 initializer (ignored) and an Identity alias,
// and reads it back; then a conv weight is permuted from [out, in, kh, kw] to [kh, kw, in, out].
func TestReadONNXWeightsTiny(t *testing.T) {
	raw := make([]byte, 4*6)
	for i := 0; i < 6; i++ {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(float32(i)+0.5))
	}
	m := &protos.ModelProto{IrVersion: 8, Graph: &protos.GraphProto{
		Name: "tiny",
		Initializer: []*protos.TensorProto{
			{Name: "conv.weight", Dims: []int64{2, 1, 1, 3}, DataType: int32(protos.TensorProto_FLOAT), RawData: raw},
			{Name: "bn.weight", Dims: []int64{2}, DataType: int32(protos.TensorProto_FLOAT), FloatData: []float32{1, 2}},
			{Name: "steps", Dims: []int64{1}, DataType: int32(protos.TensorProto_INT64), Int64Data: []int64{7}},
		},
		Node: []*protos.NodeProto{{OpType: "Identity", Input: []string{"bn.weight"}, Output: []string{"bn.running_var"}}},
	}}
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tiny.onnx")
	os.WriteFile(p, b, 0o644)
	w, err := ReadONNXWeights(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 3 {
		t.Fatalf("read %d tensors, want conv.weight, bn.weight and its alias", len(w))
	}
	if got := w["bn.running_var"].Data; len(got) != 2 || got[1] != 2 {
		t.Errorf("alias: %v", got)
	}
	cw := w["conv.weight"]
	if cw.Data[4] != 4.5 || len(cw.Dims) != 4 {
		t.Fatalf("conv.weight %+v", cw)
	}
	// [out=2, in=1, kh=1, kw=3] → [kh=1, kw=3, in=1, out=2]: element (o, 0, 0, x) = 3o + x + 0.5
	// moves to index x·2 + o.
	d, dims := torchConvToHWIO(cw)
	for o := 0; o < 2; o++ {
		for x := 0; x < 3; x++ {
			if d[x*2+o] != float32(3*o+x)+0.5 {
				t.Errorf("permuted[%d,%d] = %g", x, o, d[x*2+o])
			}
		}
	}
	if dims[0] != 1 || dims[1] != 3 || dims[2] != 1 || dims[3] != 2 {
		t.Errorf("dims %v", dims)
	}
	if _, err := ReadONNXWeights(filepath.Join(t.TempDir(), "missing.onnx")); err == nil {
		t.Error("missing file accepted")
	}
	os.WriteFile(p, []byte("not a model"), 0o644)
	if _, err := ReadONNXWeights(p); err == nil {
		t.Error("garbage accepted")
	}
}
