package train

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/benchreport"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
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

// stepMS returns the median ms per training step of eng over reps runs of steps steps.
func stepMS(tb testing.TB, eng *engine, pix []float32, labels []int64, steps, reps int, step *int) float64 {
	var ms []float64
	for r := 0; r < reps; r++ {
		start := time.Now()
		for s := 0; s < steps; s++ {
			if _, err := eng.trainStep(pix, 256, labels, 1, 1e-3, *step); err != nil {
				tb.Fatal(err)
			}
			*step++
		}
		ms = append(ms, float64(time.Since(start).Microseconds())/1e3/float64(steps))
	}
	return median(ms)
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	sort.Float64s(s)
	return s[len(s)/2]
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
// channels_last; the faster counts. For the CNN it prints a second number: the same step with
// oneDNN (MKL-DNN) turned off, where PyTorch convolves by im2col + BLAS GEMM, as dmlkit does.
// Mode "gemm" times the eight matrix products of one small-CNN step (see convGEMMs).
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
def timed(f):
    for _ in range(2): f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(steps): f()
        ts.append((time.perf_counter()-t)*1e3/steps)
    return sorted(ts)[len(ts)//2]
def bench(m, x, y):
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    def step():
        opt.zero_grad(); l = contrastive(m(x), y); l.backward(); opt.step()
    return timed(step)
def cnn():
    x = torch.rand(256, 1, 28, 28)
    a = bench(CNN(), x, y)
    m = CNN().to(memory_format=torch.channels_last)
    b = bench(m, x.to(memory_format=torch.channels_last), y)
    return min(a, b)
y = torch.arange(256) // 4
if sys.argv[1] == "head2048x512":
    print(bench(nn.Linear(2048, 512), torch.rand(256, 2048), y))
elif sys.argv[1] == "gemm":
    prods = []
    for n, k, o, dx in [(200704, 9, 32, False), (50176, 288, 64, True), (12544, 576, 128, True)]:
        x, w, v = torch.rand(n, k), torch.rand(k, o), torch.rand(n, o)
        prods += [(lambda x=x, w=w: x@w), (lambda x=x, v=v: x.t()@v)] + ([lambda v=v, w=w: v@w.t()] if dx else [])
    print(timed(lambda: [p() for p in prods]))
else:
    best = cnn()
    with torch.backends.mkldnn.flags(enabled=False):
        print(best, cnn())
`

// convGEMMs returns a graph function computing the eight matrix products of one small-CNN
// training step at batch 256 on 28×28 (im2col patch matrices x [N, K], weights w [K, O], output
// gradients v [N, O] of the three 3×3 convolutions: N = 256·28², 256·14², 256·7²; K = 9·C_in;
// O = 32, 64, 128): x·w, the weight gradient as models.MatMulW builds it, and v·wᵀ (not for the
// first layer, whose input needs no gradient).
func convGEMMs() (shapes [][3]int, fn func(in []*graph.Node) []*graph.Node) {
	shapes = [][3]int{{200704, 9, 32}, {50176, 288, 64}, {12544, 576, 128}}
	return shapes, func(in []*graph.Node) []*graph.Node {
		var out []*graph.Node
		for i := range shapes {
			x, w, v := in[3*i], in[3*i+1], in[3*i+2]
			out = append(out, graph.MatMul(x, w), graph.Gradient(graph.ReduceAllSum(graph.Mul(models.MatMulW(x, w), v)), w)[0])
			if i > 0 {
				out = append(out, graph.DotGeneral(v, []int{1}, nil, w, []int{1}, nil))
			}
		}
		return out
	}
}

// goGEMMms times convGEMMs on the default backend: median ms of reps runs.
func goGEMMms(tb testing.TB, reps int) float64 {
	shapes, fn := convGEMMs()
	e, err := graph.NewExec(backend.MustShared(), fn)
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	var args []any
	for _, s := range shapes {
		for _, d := range [][2]int{{s[0], s[1]}, {s[1], s[2]}, {s[0], s[2]}} {
			v := make([]float32, d[0]*d[1])
			for i := range v {
				v[i] = r.Float32()
			}
			args = append(args, tensors.FromFlatDataAndDimensions(v, d[0], d[1]))
		}
	}
	var ms []float64
	for i := 0; i < reps+1; i++ {
		start := time.Now()
		if _, err := e.Exec(args...); err != nil {
			tb.Fatal(err)
		}
		if i > 0 { // the first run compiles
			ms = append(ms, float64(time.Since(start).Microseconds())/1e3)
		}
	}
	return median(ms)
}

// runTorch runs torchBench with the given arguments and returns the numbers it prints.
func runTorch(t *testing.T, py string, args ...string) []float64 {
	cmd := exec.Command("/usr/bin/python3", append([]string{py}, args...)...)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("torch: %v\n%s", err, out)
	}
	var nums []float64
	for _, f := range strings.Fields(string(out)) {
		var x float64
		if _, err := fmt.Sscan(f, &x); err != nil {
			t.Fatalf("torch output %q: %v", out, err)
		}
		nums = append(nums, x)
	}
	return nums
}

// TestBenchVsTorch (DMLKIT_BENCH=1) prints ms/step of both workloads on the current backend
// beside PyTorch (Debian python3-torch, tuned: OPENBLAS_CORETYPE=Cooperlake,
// OMP_WAIT_POLICY=PASSIVE, 2 threads) and the ratios (targets: head ≤ 1.0×, CNN ≤ 1.5×). The
// two are measured alternately, DMLKIT_BENCH_ROUNDS rounds (default 3), so that a machine whose
// speed drifts during the run slows both; the summary is the median ratio over the rounds. For
// the CNN it also prints the ratio to PyTorch without oneDNN (im2col + GEMM convolutions, as
// dmlkit's) and the time of the step's eight GEMMs on both sides.
func TestBenchVsTorch(t *testing.T) {
	if os.Getenv("DMLKIT_BENCH") == "" {
		t.Skip("set DMLKIT_BENCH=1")
	}
	rounds := 3
	if v := os.Getenv("DMLKIT_BENCH_ROUNDS"); v != "" {
		if _, err := fmt.Sscan(v, &rounds); err != nil || rounds < 1 {
			t.Fatalf("DMLKIT_BENCH_ROUNDS=%q: want a positive integer", v)
		}
	}
	// The comparison needs PyTorch beside dmlkit: say so at once rather than after a traceback.
	if out, err := exec.Command("/usr/bin/python3", "-c", "import torch").CombinedOutput(); err != nil {
		t.Fatalf("TestBenchVsTorch compares against PyTorch, which /usr/bin/python3 cannot import (Debian: apt-get install python3-torch python3-numpy): %v\n%s", err, out)
	}
	py := filepath.Join(t.TempDir(), "bench.py")
	if err := os.WriteFile(py, []byte(torchBench), 0o644); err != nil {
		t.Fatal(err)
	}
	var rows []benchreport.Row
	tv := torchVersion(t)
	for _, bc := range benchCases() {
		steps, reps := 20, 5
		if bc.name == "smallcnn28" {
			steps, reps = 3, 5
		}
		eng, pix, labels := newBenchEngine(t, bc)
		step := 0
		stepMS(t, eng, pix, labels, 2, 1, &step) // compile and warm up
		var ratios, ratiosIm2col, goAll, torchAll, im2colAll []float64
		for r := 0; r < rounds; r++ {
			goms := stepMS(t, eng, pix, labels, steps, reps, &step)
			tms := runTorch(t, py, bc.name, fmt.Sprint(steps), fmt.Sprint(reps))
			ratios = append(ratios, goms/tms[0])
			goAll, torchAll = append(goAll, goms), append(torchAll, tms[0])
			line := fmt.Sprintf("%-14s round %d: Go (%s) %7.1f ms/step   PyTorch %7.1f ms/step   ratio %.2f×",
				bc.name, r+1, backend.Config(), goms, tms[0], goms/tms[0])
			if len(tms) > 1 {
				ratiosIm2col = append(ratiosIm2col, goms/tms[1])
				im2colAll = append(im2colAll, tms[1])
				line += fmt.Sprintf("   (PyTorch without oneDNN %7.1f ms/step, ratio %.2f×)", tms[1], goms/tms[1])
			}
			t.Log(line)
		}
		target := map[string]float64{"head2048x512": 1.0, "smallcnn28": 1.5}[bc.name]
		t.Logf("%-14s median ratio %.2f× over %d rounds (range %.2f–%.2f×; target ≤ %.1f×)",
			bc.name, median(ratios), rounds, slices.Min(ratios), slices.Max(ratios), target)
		what := map[string]string{"head2048x512": "2048 → 512 head + contrastive loss, batch 256", "smallcnn28": "small CNN, 28×28, batch 256"}[bc.name]
		spread := func(rs []float64) string { return fmt.Sprintf("%.2f–%.2f", slices.Min(rs), slices.Max(rs)) }
		rows = append(rows, benchreport.Row{Case: what + ", training step", Unit: "ms", Dmlkit: median(goAll), Reference: median(torchAll),
			RefName: "PyTorch " + tv, MedianRatio: median(ratios), Spread: spread(ratios)})
		if len(ratiosIm2col) > 0 {
			t.Logf("%-14s median ratio to PyTorch without oneDNN %.2f×", bc.name, median(ratiosIm2col))
			rows = append(rows, benchreport.Row{Case: what + ", training step", Unit: "ms", Dmlkit: median(goAll), Reference: median(im2colAll),
				RefName: "PyTorch " + tv + " without oneDNN", MedianRatio: median(ratiosIm2col), Spread: spread(ratiosIm2col)})
		}
	}
	gms := goGEMMms(t, 5)
	tms := runTorch(t, py, "gemm", "1", "5")
	t.Logf("small-CNN GEMMs (8 products of one step): Go %.1f ms   PyTorch (OpenBLAS) %.1f ms   ratio %.2f×", gms, tms[0], gms/tms[0])
	rows = append(rows, benchreport.Row{Case: "the small CNN step's 8 GEMMs", Unit: "ms", Dmlkit: gms, Reference: tms[0], RefName: "PyTorch (OpenBLAS)"})
	// The stored report the README's performance block is generated from (DMLKIT_BENCH_REPORT).
	if dir := benchreport.FromEnv(); dir != "" {
		r := benchreport.New("train-vs-torch", fmt.Sprintf("Training steps on %s beside PyTorch, median of %d alternating rounds", backend.Config(), rounds),
			"DMLKIT_BENCH=1 DMLKIT_BENCH_REPORT=$PWD/reproductions/bench GOTOOLCHAIN=auto GOEXPERIMENT=simd go test -run TestBenchVsTorch -v ./dmlkit/train")
		r.Rows = rows
		r.Notes = []string{"Times are medians over the rounds; a ratio is the median of the rounds' ratios, in brackets their range."}
		if p, err := benchreport.Write(dir, r); err != nil {
			t.Error(err)
		} else {
			t.Logf("wrote %s", p)
		}
	}
}

// torchVersion is the version of /usr/bin/python3's PyTorch ("?" when it does not say).
func torchVersion(t *testing.T) string {
	out, err := exec.Command("/usr/bin/python3", "-c", "import torch; print(torch.__version__)").Output()
	if err != nil {
		t.Logf("PyTorch version: %v", err)
		return "?"
	}
	return strings.TrimSpace(string(out))
}
