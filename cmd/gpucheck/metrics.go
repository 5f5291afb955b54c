package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

func init() {
	register("metrics", "exact kNN on the backend + retrieval metrics vs dmlkit/metrics on the CPU (SOP-sized random set)", runMetrics)
}

// metricTol is the largest difference allowed between a retrieval metric computed from the
// backend's neighbours and dmlkit/metrics' CPU result (metrics are fractions in [0, 1]). Both
// score the same unit-norm float32 vectors by inner products; the two sum in different orders, so
// near-ties (score gaps below ~1e-6) may swap. 1e-3 of 60,502 queries is 60 queries.
const metricTol = 1e-3

// metricSet is a random SOP-like set: n unit-norm rows of dimension d in classes of about 5.35
// images (SOP test: 60,502 images of 11,316 products), each row a class centre plus noise sized
// so that R@1 is neither 0 nor 1.
func metricSet(seed uint64, n, d int) ([]float32, []int64) {
	r := rand.New(rand.NewPCG(seed, 60502))
	classes := int(math.Round(float64(n) / 5.35))
	sigma := math.Sqrt(math.Max(math.Sqrt(float64(d))/3-1, 0.25))
	centres := make([]float64, classes*d)
	for i := range centres {
		centres[i] = r.NormFloat64()
	}
	emb := make([]float32, n*d)
	labels := make([]int64, n)
	for i := 0; i < n; i++ {
		c := r.IntN(classes)
		if i < 2*classes { // every class gets at least two images
			c = i % classes
		}
		labels[i] = int64(c)
		for j := 0; j < d; j++ {
			emb[i*d+j] = float32(centres[c*d+j] + sigma*r.NormFloat64())
		}
	}
	if err := metrics.L2Normalize(emb, n, d); err != nil {
		panic(err)
	}
	return emb, labels
}

type metricsReport struct {
	part
	N           int                `json:"n"`
	Dim         int                `json:"dim"`
	Ks          []int              `json:"ks"`
	KNN         int                `json:"neighbours_per_query"`
	QueryBlock  int                `json:"query_block"`
	Tol         float64            `json:"tol_abs"`
	CPU         map[string]float64 `json:"cpu_metrics"`
	Device      map[string]float64 `json:"backend_metrics"`
	MaxDiff     float64            `json:"max_abs_diff"`
	MaxDiffKey  string             `json:"max_abs_diff_key"`
	Top1Agree   float64            `json:"top1_index_agreement"`
	Top1Score   float64            `json:"top1_score_max_abs_diff"`
	CPUSec      float64            `json:"cpu_seconds"` // dmlkit/metrics.Retrieval, all cores
	CPUThreads  int                `json:"cpu_threads"`
	DevSec      float64            `json:"backend_seconds"`         // kNN on the backend (after the first block) + metrics from its lists
	DevFirstSec float64            `json:"backend_first_block_sec"` // first block: compile + run
	Mismatches  []string           `json:"mismatches,omitempty"`
}

func runMetrics(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "write the JSON part here")
	scale := scaleFlag(fs)
	nFlag := fs.Int("n", 0, "rows (default: 60502 full, 1500 small)")
	dFlag := fs.Int("d", 0, "dimension (default: 512 full, 128 small)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkScale(*scale); err != nil {
		return err
	}
	// 10^7 × 65,536 float32 is 2.6 TB: the bounds keep n·d·4 bytes inside an int64 and refuse
	// sizes no device holds.
	if err := checkIntFlags(fs, intBound{"n", nFlag, 2, 10_000_000}, intBound{"d", dFlag, 1, 1 << 16}); err != nil {
		return err
	}
	n, d, ks, block := 60502, 512, []int{1, 10, 100, 1000}, 2048
	if *scale == "small" {
		// TopK is a full sort with a comparator closure, which the Go backend interprets element by
		// element (~3·10^4 elements/s on 2 cores): 1,500² takes about a minute. The GPU runs the same graph.
		n, d, ks, block = 1500, 128, []int{1, 10, 100}, 500
	}
	if *nFlag > 0 {
		n = *nFlag
	}
	if *dFlag > 0 {
		d = *dFlag
	}
	rep := metricsReport{part: part{Phase: "metrics", Scale: *scale, Ref: "dmlkit/metrics (CPU, " + metrics.KNNKernelName() + ")"},
		N: n, Dim: d, Ks: ks, QueryBlock: block, Tol: metricTol, CPUThreads: runtime.GOMAXPROCS(0)}
	test, cfg, err := testBackend()
	rep.Backend = cfg
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	emb, labels := metricSet(3, n, d)
	fmt.Fprintf(stdout, "set: %d × %d, %d classes; K = %v\n", n, d, len(distinct(labels)), ks)
	t0 := time.Now()
	cpu, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: ks, Similarity: metrics.InnerProduct})
	if err != nil {
		return err
	}
	rep.CPUSec = time.Since(t0).Seconds()
	rep.CPU = cpu
	fmt.Fprintf(stdout, "CPU (dmlkit/metrics, %d threads): %.2fs  R@1 %.4f  MAP@R %.4f\n", rep.CPUThreads, rep.CPUSec, cpu["R@1"], cpu["MAP@R"])
	kmax := neighboursNeeded(ks, labels)
	rep.KNN = kmax
	t0 = time.Now()
	nb, first, err := deviceKNN(test, emb, n, d, kmax, block)
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	dev, err := metrics.RetrievalFromNeighbors(nb, labels, labels, nil, nil, true, ks, nil)
	if err != nil {
		return err
	}
	rep.DevFirstSec = first
	rep.DevSec = time.Since(t0).Seconds() - first
	rep.Device = dev
	fmt.Fprintf(stdout, "backend %s: first block %.2fs, the rest + metrics %.2fs  R@1 %.4f  MAP@R %.4f\n", cfg, first, rep.DevSec, dev["R@1"], dev["MAP@R"])
	// Top-1 agreement with the CPU engine's lists (same options as Retrieval).
	cpuNb, err := metrics.KNNSelf(emb, n, d, metrics.KNNOptions{K: 1, Similarity: metrics.InnerProduct})
	if err != nil {
		return err
	}
	rep.Top1Agree, rep.Top1Score = top1Agreement(cpuNb, nb)
	rep.MaxDiff, rep.MaxDiffKey, rep.Mismatches = compareMetricMaps(cpu, dev, metricTol)
	rep.OK = len(rep.Mismatches) == 0
	fmt.Fprintf(stdout, "top-1 neighbour agreement %.5f, top-1 score max |Δ| %.2g; metric max |Δ| %.2g (%s) ≤ %.0e\n",
		rep.Top1Agree, rep.Top1Score, rep.MaxDiff, rep.MaxDiffKey, metricTol)
	if err := writeJSON(*jsonPath, rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%w: retrieval metrics differ from the CPU result: %v", errMismatch, rep.Mismatches)
	}
	return nil
}

func distinct(labels []int64) map[int64]bool {
	m := map[int64]bool{}
	for _, l := range labels {
		m[l] = true
	}
	return m
}

// neighboursNeeded is the K that dmlkit/metrics.Retrieval searches: max(ks) and every query's
// number of positives R (MAP@R needs the top R).
func neighboursNeeded(ks []int, labels []int64) int {
	k := 0
	for _, v := range ks {
		k = max(k, v)
	}
	for _, p := range metrics.PositiveCounts(labels, labels, true) {
		k = max(k, p)
	}
	return min(k, len(labels)-1)
}

// deviceKNN is exact inner-product self-kNN on backend b: query blocks [block, d] against all
// rows, the query itself masked out, TopK (ties to the smaller index, as dmlkit/metrics). It
// returns the lists and the seconds of the first block (compilation included).
func deviceKNN(b compute.Backend, emb []float32, n, d, k, block int) (nb *metrics.Neighbors, first float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kNN graph on the backend: %v", r)
		}
	}()
	block = min(block, n)
	exec, err := graph.NewExec(b, func(q, all, off *graph.Node) (*graph.Node, *graph.Node) {
		g := q.Graph()
		s := graph.DotGeneral(q, []int{1}, nil, all, []int{1}, nil) // [block, n]
		sh := shapes.Make(dtypes.Int32, block, n)
		rows := graph.Add(graph.Iota(g, sh, 0), off)
		cols := graph.Iota(g, sh, 1)
		s = graph.Where(graph.Equal(rows, cols), graph.BroadcastToDims(graph.Infinity(g, s.DType(), -1), block, n), s)
		v, idx := graph.TopK(s, k, 1)
		return v, graph.ConvertDType(idx, dtypes.Int32)
	})
	if err != nil {
		return nil, 0, err
	}
	allT := tensors.FromFlatDataAndDimensions(emb, n, d)
	nb = &metrics.Neighbors{NQ: n, K: k, Similarity: metrics.InnerProduct, Index: make([]int32, n*k), Score: make([]float32, n*k)}
	buf := make([]float32, block*d)
	for st := 0; st < n; st += block {
		t0 := time.Now()
		m := min(block, n-st)
		clear(buf)
		copy(buf, emb[st*d:(st+m)*d])
		out, err := exec.Exec(tensors.FromFlatDataAndDimensions(buf, block, d), allT, tensors.FromScalar(int32(st)))
		if err != nil {
			return nil, 0, err
		}
		vals := tensors.MustCopyFlatData[float32](out[0])
		idx := tensors.MustCopyFlatData[int32](out[1])
		copy(nb.Score[st*k:(st+m)*k], vals[:m*k])
		copy(nb.Index[st*k:(st+m)*k], idx[:m*k])
		if st == 0 {
			first = time.Since(t0).Seconds()
		}
	}
	return nb, first, nil
}

// top1Agreement is the fraction of queries whose best neighbour is the same in a and b, and the
// largest difference of their best scores.
func top1Agreement(a, b *metrics.Neighbors) (float64, float64) {
	same, worst := 0, 0.0
	for i := 0; i < a.NQ; i++ {
		ia, sa := a.Row(i)
		ib, sb := b.Row(i)
		if ia[0] == ib[0] {
			same++
		}
		worst = math.Max(worst, math.Abs(float64(sa[0])-float64(sb[0])))
	}
	return float64(same) / float64(a.NQ), worst
}

// compareMetricMaps compares every key of want with got: counts (n_*) must be equal, metrics
// within tol. It returns the largest metric difference, its key and the keys at fault.
func compareMetricMaps(want, got map[string]float64, tol float64) (float64, string, []string) {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	worst, worstKey := 0.0, ""
	var bad []string
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			bad = append(bad, k+" (missing)")
			continue
		}
		diff := math.Abs(g - want[k])
		if math.IsNaN(diff) {
			diff = math.Inf(1)
		}
		if len(k) > 2 && k[:2] == "n_" {
			if diff != 0 {
				bad = append(bad, fmt.Sprintf("%s %v vs %v", k, g, want[k]))
			}
			continue
		}
		if diff > worst || worstKey == "" {
			worst, worstKey = diff, k
		}
		if diff > tol {
			bad = append(bad, fmt.Sprintf("%s %.6f vs CPU %.6f", k, g, want[k]))
		}
	}
	return worst, worstKey, bad
}
