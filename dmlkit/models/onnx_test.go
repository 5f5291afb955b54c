package models

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// torchResNet18 defines ResNet-18 with torchvision's module names and structure (torchvision is
// not installed here), randomises every BN (so running statistics matter), exports it to ONNX
// with the parameter names kept, and saves a random input (NCHW) and the eval-mode pooled
// features [2, 512].
const torchResNet18 = `
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
class ResNet18(nn.Module):
    def __init__(s):
        super().__init__()
        s.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False); s.bn1 = nn.BatchNorm2d(64)
        s.relu = nn.ReLU(inplace=True); s.maxpool = nn.MaxPool2d(3, 2, 1)
        inp = 64
        for i, (w, st) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)]):
            setattr(s, 'layer%d' % (i + 1), nn.Sequential(BasicBlock(inp, w, st), BasicBlock(w, w, 1)))
            inp = w
        s.fc = nn.Linear(512, 10)
    def forward(s, x):
        x = s.maxpool(s.relu(s.bn1(s.conv1(x))))
        for i in range(4): x = getattr(s, 'layer%d' % (i + 1))(x)
        return x.mean((2, 3))
m = ResNet18()
for b in m.modules():
    if isinstance(b, nn.BatchNorm2d):
        b.running_mean.uniform_(-0.2, 0.2); b.running_var.uniform_(0.5, 1.5)
        b.weight.data.uniform_(0.5, 1.5); b.bias.data.uniform_(-0.2, 0.2)
m.eval()
x = torch.rand(2, 3, 32, 32)
d = sys.argv[1]
torch.onnx.export(m, x, d + '/r18.onnx', do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
np.save(d + '/x.npy', x.numpy())
np.save(d + '/y.npy', m(x).detach().numpy())
`

// TestTorchResNet18FromONNX builds a ResNet-18 in PyTorch 1.13 (Debian python3-torch), exports
// it to ONNX, loads its weights into dmlkit's im2col ResNet-18 and compares the pooled features
// of the same input: float32 through 20 layers, tolerance 1e-3 relative to the largest feature.
// Skipped without /usr/bin/python3 + torch.
func TestTorchResNet18FromONNX(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("no python3 with torch and numpy")
	}
	dir := t.TempDir()
	py := filepath.Join(dir, "r18.py")
	os.WriteFile(py, []byte(torchResNet18), 0o644)
	cmd := exec.Command("/usr/bin/python3", py, dir)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS=2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch export: %v\n%s", err, out)
	}
	w, err := ReadONNXWeights(filepath.Join(dir, "r18.onnx"))
	if err != nil {
		t.Fatal(err)
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
	if err := LoadTorchResNet(store.RootScope().At("backbone"), "18", w); err != nil {
		t.Fatal(err)
	}
	if v := store.GetVariable("/backbone/layer2/0/downsample/weights"); v == nil || !v.Trainable {
		t.Fatalf("downsample weights not loaded as a trainable variable: %v", v)
	}
	nVars := store.NumVariables()
	cfg := Config{Backbone: "resnet18", Pool: "avg"}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
		scope.SetTraining(x.Graph(), true)
		return ResNet(scope.At("backbone"), "18", cfg, x, Mode{})
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(x, n, h, wd, c))
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
	scale, worst := 0.0, 0.0
	for i := range want {
		scale = math.Max(scale, math.Abs(float64(want[i])))
		worst = math.Max(worst, math.Abs(float64(got[i]-want[i])))
	}
	t.Logf("ResNet-18 vs PyTorch: max |Δ| = %.3g (max |feature| %.3g)", worst, scale)
	if worst > 1e-3*scale {
		t.Errorf("dmlkit ResNet-18 differs from PyTorch's: max |Δ| = %g, scale %g", worst, scale)
	}
}
