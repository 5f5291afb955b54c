package train

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/gomlx/ml/model"
)

// benchCase is one of the two benchmark workloads of issue 4.
type benchCase struct {
	name    string
	cfg     Config
	h, w, c int
}

// benchCases: (a) a 2048→512 linear head (L2-normalised) on precomputed features with the
// contrastive loss, (b) the default small CNN (32-64-128, BN, GAP, linear 128, L2) on 28×28 grey
// images with the contrastive loss; both Adam, batch 256 = 64 classes × 4.
func benchCases() []benchCase {
	a := Default()
	a.Model = models.Config{Backbone: "features", Head: "linear", Dim: 512, L2: true}
	b := Default()
	return []benchCase{{"head2048x512", a, 1, 1, 2048}, {"smallcnn28", b, 28, 28, 1}}
}

func newBenchEngine(tb testing.TB, bc benchCase) (*engine, []float32, []int64) {
	cfg := bc.cfg
	eng, err := newEngine(&cfg, backend.MustShared(), model.NewStore(), 64, bc.h, bc.w, bc.c)
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 256
	pix := make([]float32, n*bc.h*bc.w*bc.c)
	for i := range pix {
		pix[i] = r.Float32()
	}
	labels := make([]int64, n)
	for i := range labels {
		labels[i] = int64(i / 4)
	}
	return eng, pix, labels
}

// goStepMS returns the median ms per training step over reps runs of steps steps (after 2 warm-up
// steps that include compilation).
func goStepMS(tb testing.TB, bc benchCase, steps, reps int) float64 {
	eng, pix, labels := newBenchEngine(tb, bc)
	for s := 0; s < 2; s++ {
		if _, err := eng.trainStep(pix, 256, labels, 1, 1e-3, s); err != nil {
			tb.Fatal(err)
		}
	}
	var ms []float64
	for r := 0; r < reps; r++ {
		start := time.Now()
		for s := 0; s < steps; s++ {
			if _, err := eng.trainStep(pix, 256, labels, 1, 1e-3, 2+r*steps+s); err != nil {
				tb.Fatal(err)
			}
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1e3/float64(steps))
	}
	sort.Float64s(ms)
	return ms[len(ms)/2]
}

func init() {
	// DMLKIT_IM2COL=slice benchmarks the slice-based im2col instead of the gather-based one.
	if m := os.Getenv("DMLKIT_IM2COL"); m != "" {
		models.Im2colMode = m
	}
	// DMLKIT_MATMULW=0 benchmarks autodiff's own weight-gradient layout instead of models.MatMulW's.
	if os.Getenv("DMLKIT_MATMULW") == "0" {
		models.MatMulWLayout = false
	}
	// DMLKIT_MAXPOOL=reduce benchmarks MaxPool2 as ReduceMax instead of pairwise maxima.
	if os.Getenv("DMLKIT_MAXPOOL") == "reduce" {
		models.MaxPoolPairs = false
	}
}

func BenchmarkHeadContrastive(b *testing.B) {
	bc := benchCases()[0]
	eng, pix, labels := newBenchEngine(b, bc)
	eng.trainStep(pix, 256, labels, 1, 1e-3, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := eng.trainStep(pix, 256, labels, 1, 1e-3, i+1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSmallCNN(b *testing.B) {
	bc := benchCases()[1]
	eng, pix, labels := newBenchEngine(b, bc)
	eng.trainStep(pix, 256, labels, 1, 1e-3, 0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := eng.trainStep(pix, 256, labels, 1, 1e-3, i+1); err != nil {
			b.Fatal(err)
		}
	}
}

// torchBench is the same two workloads in PyTorch: the contrastive loss written out as
// pytorch-metric-learning's ContrastiveLoss (L2 distance of normalised embeddings, m+ = 0,
// m- = 1, each term averaged over its non-zero pairs), Adam. The CNN is timed in NCHW and
// channels_last; the faster counts.
const torchBench = `
import sys, time, torch, torch.nn as nn, torch.nn.functional as F
torch.set_num_threads(2); torch.manual_seed(0)
steps, reps = int(sys.argv[2]), int(sys.argv[3])
def contrastive(e, y):
    e = F.normalize(e, dim=1)
    sq = (e*e).sum(1)
    d2 = (sq[:, None] + sq[None, :] - 2*e@e.t()).clamp_min(0)
    ok = d2 > 1e-12
    d = torch.where(ok, d2.clamp_min(1e-12).sqrt(), torch.zeros_like(d2))
    same = y[:, None] == y[None, :]
    eye = torch.eye(len(y), dtype=torch.bool)
    pos, neg = same & ~eye, ~same
    pt = F.relu(d) * pos; nt = F.relu(1 - d) * neg
    return pt.sum()/(pt > 0).sum().clamp_min(1) + nt.sum()/(nt > 0).sum().clamp_min(1)
class CNN(nn.Module):
    def __init__(s):
        super().__init__()
        s.c = nn.ModuleList([nn.Conv2d(i, o, 3, padding=1, bias=False) for i, o in [(1,32),(32,64),(64,128)]])
        s.b = nn.ModuleList([nn.BatchNorm2d(o) for o in [32,64,128]])
        s.fc = nn.Linear(128, 128)
    def forward(s, x):
        for i in range(3):
            x = F.relu(s.b[i](s.c[i](x)))
            if i < 2: x = F.max_pool2d(x, 2)
        return s.fc(x.mean((2, 3)))
def bench(m, x, y):
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    def step():
        opt.zero_grad(); l = contrastive(m(x), y); l.backward(); opt.step()
    for _ in range(2): step()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(steps): step()
        ts.append((time.perf_counter()-t)*1e3/steps)
    return sorted(ts)[len(ts)//2]
y = torch.arange(256) // 4
if sys.argv[1] == "head2048x512":
    print(bench(nn.Linear(2048, 512), torch.rand(256, 2048), y))
else:
    x = torch.rand(256, 1, 28, 28)
    a = bench(CNN(), x, y)
    m = CNN().to(memory_format=torch.channels_last)
    b = bench(m, x.to(memory_format=torch.channels_last), y)
    print(min(a, b))
`

// TestBenchVsTorch (DMLKIT_BENCH=1) prints ms/step of both workloads on the Go backend beside
// PyTorch (Debian python3-torch, tuned: OPENBLAS_CORETYPE=Cooperlake, OMP_WAIT_POLICY=PASSIVE,
// 2 threads) measured in the same run, and the ratios (targets: head ≤ 1.0×, CNN ≤ 1.5×).
func TestBenchVsTorch(t *testing.T) {
	if os.Getenv("DMLKIT_BENCH") == "" {
		t.Skip("set DMLKIT_BENCH=1")
	}
	py := filepath.Join(t.TempDir(), "bench.py")
	os.WriteFile(py, []byte(torchBench), 0o644)
	for _, bc := range benchCases() {
		steps, reps := 20, 5
		if bc.name == "smallcnn28" {
			steps, reps = 3, 5
		}
		goms := goStepMS(t, bc, steps, reps)
		cmd := exec.Command("/usr/bin/python3", py, bc.name, fmt.Sprint(steps), fmt.Sprint(reps))
		cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("torch: %v\n%s", err, out)
		}
		var tms float64
		if _, err := fmt.Sscan(strings.TrimSpace(string(out)), &tms); err != nil {
			t.Fatalf("torch output %q: %v", out, err)
		}
		t.Logf("%-14s Go (%s) %8.1f ms/step   PyTorch %8.1f ms/step   ratio %.2f×", bc.name, backend.Config(), goms, tms, goms/tms)
	}
}
