package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// TestTorchIDMLProxyAnchorMatchesDmlkit checks that the PyTorch side of the idml_pa benchmark
// (scripts/gpucheck_torch.py's idml_proxyanchor) computes dmlkit's "idml" loss (base proxyanchor,
// the paper's defaults): the same value and embedding gradient in float64 on a batch with label
// sets, with the proxies dmlkit initialised. Both are float64 evaluations of the same closed form;
// 1e-10 allows for the different summation orders (logsumexp vs dmlkit's shifted sum). Skipped
// where /usr/bin/python3 cannot import torch (Debian python3-torch).
func TestTorchIDMLProxyAnchorMatchesDmlkit(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("no /usr/bin/python3 with torch:", err)
	}
	const d, u, nc = 4, 3, 5
	b := losstest.Random(81, d+u, []int64{0, 0, 1, 1, 2, 3, 3})
	b.Labels = []int64{0, -1, 0, 2, 1, -1, 1, 3, 2, -1, 3, -1, 3, 0} // mixup label sets {y_i, y_π(i)}
	b.SetSize = 2
	for i := range b.B { // uncertainty norms of the order the trained heads give (‖u‖ ≈ 1-3)
		for k := d; k < d+u; k++ {
			b.Emb[i*(d+u)+k] *= 2
		}
	}
	c := losses.DefaultIDML()
	c.UncDim = u
	store := model.NewStore()
	if err := store.SetRNGStateFromSeed(5); err != nil {
		t.Fatal(err)
	}
	opt := losses.EvalOptions{Store: store, NumClasses: nc}
	want, wantGrad := losstest.Value(t, c, b, opt)
	var proxies []float64
	for v := range store.IterVariables() {
		if v.Name() == "proxies" {
			val, err := v.Value()
			if err != nil {
				t.Fatal(err)
			}
			proxies = tensors.MustCopyFlatData[float64](val)
		}
	}
	if len(proxies) != nc*d {
		t.Fatalf("proxies: %d values, want %d", len(proxies), nc*d)
	}
	in, err := json.Marshal(map[string]any{"emb": b.Emb, "b": b.B, "sets": b.Labels, "proxies": proxies, "nc": nc, "d": d})
	if err != nil {
		t.Fatal(err)
	}
	py := `
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import gpucheck_torch as g
a = json.load(sys.stdin)
e = torch.tensor(a["emb"], dtype=torch.float64).reshape(a["b"], -1).requires_grad_(True)
s = torch.tensor(a["sets"]).reshape(a["b"], -1)
p = torch.tensor(a["proxies"], dtype=torch.float64).reshape(a["nc"], a["d"])
l = g.idml_proxyanchor(e, s, p, a["d"])
l.backward()
print(json.dumps({"value": l.item(), "grad": e.grad.reshape(-1).tolist()}))
`
	cmd := exec.Command("/usr/bin/python3", "-c", py, filepath.Join("..", "..", "scripts"))
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	var got struct {
		Value float64   `json:"value"`
		Grad  []float64 `json:"grad"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python output %q: %v", out, err)
	}
	if math.Abs(got.Value-want) > 1e-10*math.Max(1, math.Abs(want)) {
		t.Errorf("loss: PyTorch %.15g, dmlkit %.15g", got.Value, want)
	}
	if len(got.Grad) != len(wantGrad) {
		t.Fatalf("gradient: %d values, want %d", len(got.Grad), len(wantGrad))
	}
	for i := range wantGrad {
		if math.Abs(got.Grad[i]-wantGrad[i]) > 1e-10*math.Max(1, math.Abs(wantGrad[i])) {
			t.Errorf("∂L/∂emb[%d]: PyTorch %.15g, dmlkit %.15g", i, got.Grad[i], wantGrad[i])
		}
	}
}

// TestTorchProfileTop runs scripts/gpucheck_torch.py --profile-top on the small CNN on the CPU
// (scripts/gpu-profile.sh runs it on the GPU, issue 49 item 2): the part holds the 3 ops with the
// most self time per step, sorted, each called at least once a step, their sum within the
// profiled total, and a convolution among them (a CNN's step is mostly its convolutions).
// Skipped where /usr/bin/python3 cannot import torch.
func TestTorchProfileTop(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch").Run(); err != nil {
		t.Skip("no /usr/bin/python3 with torch:", err)
	}
	out := filepath.Join(t.TempDir(), "t.json")
	cmd := exec.Command("/usr/bin/python3", filepath.Join("..", "..", "scripts", "gpucheck_torch.py"),
		"--case", "smallcnn", "--backbone", "cnn", "--batch", "32", "--size", "28", "--channels", "1",
		"--steps", "2", "--dim", "32", "--loss", "contrastive", "--device", "cpu", "--threads", "1",
		"--profile-top", "3", "--json", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		OK      bool `json:"ok"`
		Profile struct {
			Steps int     `json:"steps"`
			Total float64 `json:"device_ms_per_step"`
			Top   []struct {
				Op     string  `json:"op"`
				SelfMS float64 `json:"self_ms"`
				Calls  float64 `json:"calls"`
			} `json:"top"`
		} `json:"profile"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	p := rep.Profile
	if !rep.OK || p.Steps != 3 || len(p.Top) != 3 {
		t.Fatalf("part %s", b)
	}
	sum, conv := 0.0, false
	for i, r := range p.Top {
		sum += r.SelfMS
		if r.SelfMS <= 0 || r.Calls < 1 || (i > 0 && r.SelfMS > p.Top[i-1].SelfMS) {
			t.Errorf("row %d %+v", i, r)
		}
		conv = conv || bytes.Contains([]byte(r.Op), []byte("conv"))
	}
	if sum > p.Total*(1+1e-9) {
		t.Errorf("top 3 sum %.3f ms > total %.3f ms", sum, p.Total)
	}
	if !conv {
		t.Errorf("no convolution among the top ops: %s", b)
	}
}
