package metrics

// Clustering metrics: k-means (k-means++ or random init, Lloyd iterations) and NMI / AMI as in scikit-learn
// (normalized_mutual_info_score, adjusted_mutual_info_score, average_method="arithmetic").

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// KMeansInit selects the initial centroids.
type KMeansInit int

const (
	// KMeansPlusPlus (default): k-means++ (Arthur & Vassilvitskii 2007), plain D² sampling, one trial per centre.
	// Up to n·K·d = 2³² multiply-adds it runs sequentially (one float64 distance update per centre, K·n·d
	// in all, like one float64 Lloyd iteration). Beyond (e.g. SOP: 60,502 × 512, K = 11,316) it runs the lazy
	// blocked variant: the same D² distribution, drawn by rejection from a stale D² that is refreshed for
	// blocks of up to 256 new centres at a time through the float32 kNN kernel (see KMeansResult.InitMethod).
	// The two variants consume the random stream differently, so one seed gives different centres in each.
	KMeansPlusPlus KMeansInit = iota
	// KMeansRandomInit: K distinct points drawn uniformly (faiss's default, as used by PML's NMI).
	KMeansRandomInit
)

// KMeansDefaultIterations is the default number of Lloyd iterations (faiss's default niter = 20, used by PML's
// AccuracyCalculator for NMI/AMI).
const KMeansDefaultIterations = 20

// KMeansOptions configures KMeans.
type KMeansOptions struct {
	K           int        // number of clusters; ClusterScores sets it to the number of classes when 0
	Iterations  int        // Lloyd iterations (assignment + update); 0 → 20; stops early when assignments no longer change
	Init        KMeansInit // default KMeansPlusPlus
	Seed        uint64     // seed of the initialisation
	L2Normalize bool       // cluster the L2-normalised rows instead of the raw ones (PML/faiss cluster raw rows)
	Workers     int        // goroutines of the assignment step; 0 → GOMAXPROCS
	// Progress, when set, is called after the initialisation (done = 0) and after every Lloyd iteration with
	// total = Iterations.
	Progress func(done, total int)
}

// KMeansResult is the clustering.
type KMeansResult struct {
	Assign     []int     // cluster of each row (the nearest final centroid, ties → smaller index), [n]
	Centroids  []float64 // [K, d] row-major
	Inertia    float64   // Σ squared L2 distance of every row to its centroid
	Iterations int       // Lloyd iterations run
	Reseeded   int       // empty clusters re-seeded during the iterations
	// InitMethod is the initialisation actually run: "k-means++" (sequential), "k-means++ (lazy, blocked)"
	// (same distribution, for n·K·d > 2³²) or "random".
	InitMethod string
	// Float32Passes counts the nearest-centroid passes (assignment passes and lazy k-means++ flushes) that
	// used the float32 kNN engine; Float64Rows counts the rows in those passes whose float32 candidates could
	// not be certified and were scanned over all centroids in float64. Diagnostics only: the assignment is
	// the float64 one either way.
	Float32Passes, Float64Rows int
}

// KMeans clusters the rows of emb ([n, d] row-major) into opt.K clusters with Lloyd's algorithm in float64.
// Each iteration assigns every row to its nearest centroid (squared L2; ties → smaller centroid index; parallel
// over rows) and moves every centroid to the mean of its rows. An empty cluster is re-seeded at the row farthest
// from its own centroid (rows already used for re-seeding in that iteration excluded). After the last update the
// rows are assigned once more to the final centroids (as PML does with faiss: train, then search).
//
// Precision. Centroids, the update step, distances and inertia are float64. The assignment is defined by the
// float64 criterion ‖c_j‖² − 2 x·c_j (ties → smaller index). For K > 4 the search runs through the float32 kNN
// engine (KNN, InnerProduct on the augmented centred vectors [x−m, 1]·[c−m, −‖c−m‖²/2], top 4 candidates),
// and the float32 candidates are certified with an a-priori rounding bound and re-scored in float64; rows
// whose candidates cannot be certified (near-ties) are scanned in float64 over all centroids. The assignment
// is therefore exactly the float64 one, independent of the number of workers, at the speed of the float32
// kernel (K ≤ 4, or vectors too large for float32, use the float64 loop directly).
func KMeans(emb []float32, n, d int, opt KMeansOptions) (*KMeansResult, error) {
	x, err := kmeansRows(emb, n, d, opt.L2Normalize)
	if err != nil {
		return nil, fmt.Errorf("metrics.KMeans: %w", err)
	}
	if opt.K < 1 || opt.K > n {
		return nil, fmt.Errorf("metrics.KMeans: K=%d, want 1 ≤ K ≤ n=%d", opt.K, n)
	}
	if opt.Iterations == 0 {
		opt.Iterations = KMeansDefaultIterations
	}
	if opt.Iterations < 0 {
		return nil, fmt.Errorf("metrics.KMeans: Iterations=%d, want ≥ 0", opt.Iterations)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	k := opt.K
	rng := rand.New(rand.NewPCG(opt.Seed, 0x6b6d65616e73))
	as := newKMeansAssigner(x, n, d, workers)
	res := &KMeansResult{}
	var c []float64
	switch opt.Init {
	case KMeansPlusPlus:
		if float64(n)*float64(k)*float64(d) <= kmeansPlusPlusSequentialLimit {
			c = kmeansPlusPlusInit(x, n, d, k, rng, workers)
			res.InitMethod = "k-means++"
		} else {
			c = kmeansPlusPlusLazyInit(as, k, rng)
			res.InitMethod = "k-means++ (lazy, blocked)"
		}
	case KMeansRandomInit:
		c = make([]float64, k*d)
		for ci, r := range rng.Perm(n)[:k] {
			copy(c[ci*d:(ci+1)*d], x[r*d:(r+1)*d])
		}
		res.InitMethod = "random"
	default:
		return nil, fmt.Errorf("metrics.KMeans: unknown Init %d", int(opt.Init))
	}
	if opt.Progress != nil {
		opt.Progress(0, opt.Iterations)
	}
	assign := make([]int, n)
	dist := make([]float64, n)
	for i := range assign {
		assign[i] = -1
	}
	for it := 1; it <= opt.Iterations; it++ {
		changed := as.assign(c, k, assign, dist)
		res.Iterations = it
		if changed == 0 && it > 1 {
			if opt.Progress != nil {
				opt.Progress(opt.Iterations, opt.Iterations)
			}
			break
		}
		res.Reseeded += kmeansUpdate(x, c, n, d, k, assign, dist)
		if opt.Progress != nil {
			opt.Progress(it, opt.Iterations)
		}
	}
	as.assign(c, k, assign, dist)
	for _, v := range dist {
		res.Inertia += v
	}
	res.Assign, res.Centroids = assign, c
	res.Float32Passes, res.Float64Rows = as.passes32, as.rows64
	return res, nil
}

func kmeansRows(emb []float32, n, d int, normalize bool) ([]float64, error) {
	if normalize {
		return opisNormalizeRows(emb, n, d)
	}
	if n <= 0 || d <= 0 {
		return nil, fmt.Errorf("embeddings shape (n=%d, d=%d): both must be positive", n, d)
	}
	if len(emb) != n*d {
		return nil, fmt.Errorf("len(emb)=%d, want n·d = %d·%d = %d", len(emb), n, d, n*d)
	}
	x := make([]float64, n*d)
	for i, v := range emb {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("embedding row %d, column %d is %v", i/d, i%d, v)
		}
		x[i] = f
	}
	return x, nil
}

func kmeansSqDist(u, v []float64) float64 {
	var s0, s1 float64
	k := 0
	for ; k+2 <= len(u); k += 2 {
		e0, e1 := u[k]-v[k], u[k+1]-v[k+1]
		s0 += e0 * e0
		s1 += e1 * e1
	}
	if k < len(u) {
		e := u[k] - v[k]
		s0 += e * e
	}
	return s0 + s1
}

func kmeansDot(u, v []float64) float64 {
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(u); k += 4 {
		s0 += u[k] * v[k]
		s1 += u[k+1] * v[k+1]
		s2 += u[k+2] * v[k+2]
		s3 += u[k+3] * v[k+3]
	}
	for ; k < len(u); k++ {
		s0 += u[k] * v[k]
	}
	return s0 + s1 + s2 + s3
}

// kmeansParallel runs f on [lo, hi) chunks of [0, n).
func kmeansParallel(n, workers int, f func(lo, hi int)) {
	chunk := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, n)
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() { defer wg.Done(); f(lo, hi) }()
	}
	wg.Wait()
}

// kmeansPlusPlusInit: first centre uniform, then each next centre drawn with probability ∝ D(x)², the squared
// distance to the nearest chosen centre. If every remaining D² is 0 (duplicates), the next not-yet-chosen row in
// a random order is taken.
func kmeansPlusPlusInit(x []float64, n, d, k int, rng *rand.Rand, workers int) []float64 {
	c := make([]float64, k*d)
	chosen := make([]bool, n)
	first := rng.IntN(n)
	copy(c[:d], x[first*d:(first+1)*d])
	chosen[first] = true
	d2 := make([]float64, n)
	for i := range d2 {
		d2[i] = math.Inf(1)
	}
	for ci := 1; ci < k; ci++ {
		prev := c[(ci-1)*d : ci*d]
		kmeansParallel(n, workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if v := kmeansSqDist(x[i*d:(i+1)*d], prev); v < d2[i] {
					d2[i] = v
				}
			}
		})
		var total float64
		for i, v := range d2 {
			if !chosen[i] {
				total += v
			}
		}
		pick := -1
		if total > 0 {
			r := rng.Float64() * total
			for i, v := range d2 {
				if chosen[i] || v == 0 {
					continue
				}
				pick = i
				if r -= v; r < 0 {
					break
				}
			}
		}
		if pick < 0 {
			for _, i := range rng.Perm(n) {
				if !chosen[i] {
					pick = i
					break
				}
			}
		}
		chosen[pick] = true
		copy(c[ci*d:(ci+1)*d], x[pick*d:(pick+1)*d])
	}
	return c
}

// kmeansAssign sets assign/dist to the nearest centroid and its squared distance; returns how many changed.
// Rows are processed in blocks of kmeansRowBlock against centroid blocks of kmeansCentroidBlock (so a centroid
// block stays in cache while a row block is scored), with a 2×2 register-blocked dot product. Centroids are
// scanned in increasing index order with a strict comparison, so ties go to the smaller index.
func kmeansAssign(x, c []float64, n, d, k int, assign []int, dist []float64, workers int) int {
	cn := make([]float64, k)
	for j := range k {
		cn[j] = kmeansDot(c[j*d:(j+1)*d], c[j*d:(j+1)*d])
	}
	changed := make([]int, workers)
	chunk := (n + workers - 1) / workers
	kmeansParallel(n, workers, func(lo, hi int) {
		w := lo / chunk
		var best [kmeansRowBlock]int
		var bestV [kmeansRowBlock]float64
		for r0 := lo; r0 < hi; r0 += kmeansRowBlock {
			r1 := min(r0+kmeansRowBlock, hi)
			for r := range r1 - r0 {
				best[r], bestV[r] = 0, math.Inf(1)
			}
			for c0 := 0; c0 < k; c0 += kmeansCentroidBlock {
				c1 := min(c0+kmeansCentroidBlock, k)
				r := r0
				for ; r+2 <= r1; r += 2 {
					u0, u1 := x[r*d:(r+1)*d], x[(r+1)*d:(r+2)*d]
					b0, b1 := r-r0, r-r0+1
					j := c0
					for ; j+2 <= c1; j += 2 {
						s00, s01, s10, s11 := kmeansDot2x2(u0, u1, c[j*d:(j+1)*d], c[(j+1)*d:(j+2)*d])
						if v := cn[j] - 2*s00; v < bestV[b0] {
							best[b0], bestV[b0] = j, v
						}
						if v := cn[j+1] - 2*s01; v < bestV[b0] {
							best[b0], bestV[b0] = j+1, v
						}
						if v := cn[j] - 2*s10; v < bestV[b1] {
							best[b1], bestV[b1] = j, v
						}
						if v := cn[j+1] - 2*s11; v < bestV[b1] {
							best[b1], bestV[b1] = j+1, v
						}
					}
					for ; j < c1; j++ {
						cj := c[j*d : (j+1)*d]
						if v := cn[j] - 2*kmeansDotSeq(u0, cj); v < bestV[b0] {
							best[b0], bestV[b0] = j, v
						}
						if v := cn[j] - 2*kmeansDotSeq(u1, cj); v < bestV[b1] {
							best[b1], bestV[b1] = j, v
						}
					}
				}
				for ; r < r1; r++ {
					u := x[r*d : (r+1)*d]
					for j := c0; j < c1; j++ {
						// ||x−c||² − ||x||² = ||c||² − 2 x·c: the ranking criterion.
						if v := cn[j] - 2*kmeansDotSeq(u, c[j*d:(j+1)*d]); v < bestV[r-r0] {
							best[r-r0], bestV[r-r0] = j, v
						}
					}
				}
			}
			for r := r0; r < r1; r++ {
				b := best[r-r0]
				if assign[r] != b {
					changed[w]++
					assign[r] = b
				}
				dist[r] = kmeansSqDist(x[r*d:(r+1)*d], c[b*d:(b+1)*d])
			}
		}
	})
	total := 0
	for _, v := range changed {
		total += v
	}
	return total
}

const (
	kmeansRowBlock      = 32
	kmeansCentroidBlock = 64
)

// kmeansCandidates is the number of float32 candidates the kNN engine returns per row in a certified
// assignment pass (see kmeansAssigner.nearest).
const kmeansCandidates = 4

// kmeansPlusPlusSequentialLimit: k-means++ runs the plain sequential algorithm (one O(n·d) float64 distance
// update per centre) while n·K·d is at most this many multiply-adds, and the lazy blocked one beyond.
// A variable so that tests can force the lazy path.
var kmeansPlusPlusSequentialLimit = float64(1 << 32)

// kmeansLazyBlock caps the number of centres the lazy k-means++ initialisation keeps pending between two
// distance flushes.
const kmeansLazyBlock = 256

// kmeansAssigner runs assignment passes of one data set: it keeps float32 copies of the centred rows,
// augmented with a constant 1, for the kNN engine.
type kmeansAssigner struct {
	x        []float64 // [n, d] rows (float64)
	n, d     int
	workers  int
	mean     []float64 // [d] column means: the float32 path works on centred rows (distances are unchanged)
	q32      []float32 // [n, d+1]: float32(x_i − mean), 1
	xn, xn64 []float64 // ‖x_i − mean‖ and ‖x_i‖
	passes32 int       // nearest-centroid passes that used the float32 engine
	rows64   int       // rows whose float32 candidates could not be certified (full float64 scan)
}

func newKMeansAssigner(x []float64, n, d, workers int) *kmeansAssigner {
	return &kmeansAssigner{x: x, n: n, d: d, workers: workers}
}

// prepare builds the centred float32 rows on first use.
func (a *kmeansAssigner) prepare() {
	if a.q32 != nil {
		return
	}
	n, d, x := a.n, a.d, a.x
	a.mean = make([]float64, d)
	for i := range n {
		for t, v := range x[i*d : (i+1)*d] {
			a.mean[t] += v
		}
	}
	for t := range a.mean {
		a.mean[t] /= float64(n)
	}
	a.q32 = make([]float32, n*(d+1))
	a.xn, a.xn64 = make([]float64, n), make([]float64, n)
	kmeansParallel(n, a.workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row, q := x[i*d:(i+1)*d], a.q32[i*(d+1):(i+1)*(d+1)]
			var s, s64 float64
			for t, v := range row {
				e := v - a.mean[t]
				q[t] = float32(e)
				s += e * e
				s64 += v * v
			}
			q[d] = 1
			a.xn[i], a.xn64[i] = math.Sqrt(s), math.Sqrt(s64)
		}
	})
}

// assign is kmeansAssign (same results, bit for bit) with the centroid search done by nearest.
func (a *kmeansAssigner) assign(c []float64, k int, assign []int, dist []float64) int {
	best := a.nearest(c, k)
	if best == nil {
		return kmeansAssign(a.x, c, a.n, a.d, k, assign, dist, a.workers)
	}
	x, d := a.x, a.d
	kmeansParallel(a.n, a.workers, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			b := best[r]
			dist[r] = kmeansSqDist(x[r*d:(r+1)*d], c[b*d:(b+1)*d])
		}
	})
	changed := 0
	for r, b := range best {
		if assign[r] != b {
			changed++
			assign[r] = b
		}
	}
	return changed
}

// nearest returns, for every row, the centroid (of the k in c, [k, d]) that minimises the float64 criterion
// of kmeansAssign, ‖c_j‖² − 2 x·c_j (kmeansDot, kmeansDotSeq), ties → smaller index: the same index
// kmeansAssign picks, bit for bit. It returns nil when k ≤ kmeansCandidates (nothing to prune) or when the
// float32 engine rejects the augmented vectors (values too large for float32); the caller then runs the
// float64 loop.
//
// Method. The kNN engine (exact float32 top-kmeansCandidates, InnerProduct) scores the augmented centred
// vectors q_i = [x_i − m, 1] against r_j = [c_j − m, −‖c_j − m‖²/2]: s_ij ≈ T_ij = (x_i−m)·(c_j−m) −
// ‖c_j−m‖²/2 = −‖x_i − c_j‖²/2 + (terms of i only), the same ranking as the float64 criterion t_ij =
// −(‖c_j‖² − 2 x_i·c_j)/2 up to a constant per row. Rounding is bounded a priori:
//
//	|s_ij − T_ij| ≤ ε32 (‖x_i−m‖ C + C²/2),  ε32 = 1.01 (d+4) 2⁻²⁴ / (1 − (d+4) 2⁻²⁴)
//
// (an FMA chain of d+1 terms plus the float32 rounding of both inputs; C = max_j ‖c_j − m‖), and
// |t_ij − exact| ≤ ε64 (‖x_i‖ C64 + C64²) with ε64 = 1.01·2(d+4) 2⁻⁵³, C64 = max_j ‖c_j‖. With E_i the sum,
// every centroid outside the candidate list has s ≤ s_(K) (the engine's top-K is exact for its own scores;
// it breaks equal float32 scores by the smaller reference index, but nothing here depends on that), so if s_(1) − s_(K) > 2 E_i no such centroid can reach the float64 optimum:
// the float64 winner is among the candidates. By the same argument only the candidates with s ≥ s_(1) − 2 E_i
// can win; they are re-scored with the float64 criterion itself (usually there is one, which wins). A row
// that fails this test (near-ties within 2 E_i ≈ 2·10⁻⁵ relative at d = 512) is scanned over all k
// centroids in float64. Hence the result equals the float64 loop exactly, for any worker count.
func (a *kmeansAssigner) nearest(c []float64, k int) []int {
	if k <= kmeansCandidates {
		return nil
	}
	a.prepare()
	n, d, dA, x := a.n, a.d, a.d+1, a.x
	cn := make([]float64, k)
	r32 := make([]float32, k*dA)
	var cmax2, cmax64sq float64
	for j := range k {
		cj, rj := c[j*d:(j+1)*d], r32[j*dA:(j+1)*dA]
		cn[j] = kmeansDot(cj, cj)
		var s float64
		for t, v := range cj {
			e := v - a.mean[t]
			rj[t] = float32(e)
			s += e * e
		}
		rj[d] = float32(-s / 2)
		cmax2, cmax64sq = max(cmax2, s), max(cmax64sq, cn[j])
	}
	nb, err := KNN(a.q32, n, r32, k, dA, KNNOptions{K: kmeansCandidates, Similarity: InnerProduct, Workers: a.workers})
	if err != nil {
		return nil
	}
	const u32, u64 = 0x1p-24, 0x1p-53
	fd := float64(d + 4)
	eps32 := 1.01 * fd * u32 / (1 - fd*u32)
	eps64 := 1.01 * 2 * fd * u64 / (1 - 2*fd*u64)
	cmax, cmax64 := math.Sqrt(cmax2), math.Sqrt(cmax64sq)
	best := make([]int, n)
	full := make([]int, a.workers)
	chunk := (n + a.workers - 1) / a.workers
	kmeansParallel(n, a.workers, func(lo, hi int) {
		w := lo / chunk
		for i := lo; i < hi; i++ {
			u := x[i*d : (i+1)*d]
			idx, sc := nb.Row(i)
			e := eps32*(a.xn[i]*cmax+cmax2/2) + eps64*(a.xn64[i]*cmax64+cmax64sq)
			b, bv := -1, math.Inf(1)
			if s1 := float64(sc[0]); s1-float64(sc[len(sc)-1]) > 2*e {
				// Certified. A candidate with s < s_(1) − 2E cannot be the float64 winner either, so only
				// candidates inside the window are re-scored (usually one: no float64 work at all).
				if len(idx) < 2 || s1-float64(sc[1]) > 2*e {
					best[i] = int(idx[0])
					continue
				}
				for r, j32 := range idx {
					if s1-float64(sc[r]) > 2*e {
						break // scores are best-first
					}
					j := int(j32)
					if v := cn[j] - 2*kmeansDotSeq(u, c[j*d:(j+1)*d]); v < bv || (v == bv && j < b) {
						b, bv = j, v
					}
				}
			} else {
				full[w]++
				for j := range k {
					if v := cn[j] - 2*kmeansDotSeq(u, c[j*d:(j+1)*d]); v < bv {
						b, bv = j, v
					}
				}
			}
			best[i] = b
		}
	})
	a.passes32++
	for _, v := range full {
		a.rows64 += v
	}
	return best
}

// kmeansPlusPlusLazyInit draws K centres from exactly the k-means++ distribution (first centre uniform, each
// next one with probability ∝ D², the squared distance to the nearest centre chosen so far, chosen rows
// excluded) without an O(n·d) pass per centre. The D² array is brought up to date only in "flushes" that
// fold a block of up to kmeansLazyBlock pending centres in at once through kmeansAssigner.nearest (the
// float32 kNN kernel, certified in float64). Between flushes the stale D²_old ≥ D² is sampled by rejection:
// draw i ∝ D²_old(i) (binary search in the prefix sums), compute D²(i) = min(D²_old(i), distances to the
// pending centres) in float64 and accept with probability D²(i)/D²_old(i); accepted rows are distributed ∝
// D²(i), exactly as in kmeansPlusPlusInit. A flush also happens after 32 consecutive rejections. When every
// remaining D² is 0 (duplicates) the next not-yet-chosen row of a random order is taken, as in the
// sequential version. Total work ≈ one assignment pass through the float32 kernel plus
// O(K · kmeansLazyBlock · d) float64 for the rejection tests. The draws consume the random stream
// differently from kmeansPlusPlusInit, so a seed gives other centres than the sequential version.
func kmeansPlusPlusLazyInit(a *kmeansAssigner, k int, rng *rand.Rand) []float64 {
	x, n, d, workers := a.x, a.n, a.d, a.workers
	c := make([]float64, k*d)
	chosen := make([]bool, n)
	first := rng.IntN(n)
	copy(c[:d], x[first*d:(first+1)*d])
	chosen[first] = true
	d2 := make([]float64, n)
	kmeansParallel(n, workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			d2[i] = kmeansSqDist(x[i*d:(i+1)*d], c[:d])
		}
	})
	cum := make([]float64, n)
	var total float64
	rebuild := func() {
		total = 0
		for i := range d2 {
			if chosen[i] {
				d2[i] = 0
			}
			total += d2[i]
			cum[i] = total
		}
	}
	rebuild()
	flushed := 1 // centres [0, flushed) are folded into d2
	flush := func(upto int) {
		block, m := c[flushed*d:upto*d], upto-flushed
		best := a.nearest(block, m)
		kmeansParallel(n, workers, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				u := x[i*d : (i+1)*d]
				if best != nil {
					b := best[i]
					d2[i] = min(d2[i], kmeansSqDist(u, block[b*d:(b+1)*d]))
					continue
				}
				for p := range m {
					d2[i] = min(d2[i], kmeansSqDist(u, block[p*d:(p+1)*d]))
				}
			}
		})
		flushed = upto
		rebuild()
	}
	for ci := 1; ci < k; ci++ {
		limit := min(kmeansLazyBlock, max(1, ci/2))
		pick, rejects := -1, 0
		for pick < 0 {
			if ci > flushed && (ci-flushed >= limit || rejects >= 32 || total <= 0) {
				flush(ci)
				rejects = 0
			}
			if total <= 0 {
				for _, i := range rng.Perm(n) {
					if !chosen[i] {
						pick = i
						break
					}
				}
				break
			}
			r := rng.Float64() * total
			i, _ := slices.BinarySearchFunc(cum, r, func(v, r float64) int {
				if v <= r {
					return -1
				}
				return 1
			})
			if i >= n || chosen[i] {
				rejects++
				continue
			}
			stale := d2[i]
			tr := stale
			u := x[i*d : (i+1)*d]
			for p := flushed; p < ci; p++ {
				tr = min(tr, kmeansSqDist(u, c[p*d:(p+1)*d]))
			}
			if tr == stale || rng.Float64()*stale < tr {
				pick = i
			} else {
				rejects++
			}
		}
		chosen[pick] = true
		copy(c[ci*d:(ci+1)*d], x[pick*d:(pick+1)*d])
	}
	return c
}

// kmeansDotSeq is u·v summed in index order with one accumulator: bit-identical to each output of kmeansDot2x2,
// so a row's scores do not depend on which path (paired or tail) handled it.
func kmeansDotSeq(u, v []float64) float64 {
	v = v[:len(u)]
	var s float64
	for k, a := range u {
		s += a * v[k]
	}
	return s
}

// kmeansDot2x2 returns the four dot products u0·v0, u0·v1, u1·v0, u1·v1 in one pass.
func kmeansDot2x2(u0, u1, v0, v1 []float64) (s00, s01, s10, s11 float64) {
	u1, v0, v1 = u1[:len(u0)], v0[:len(u0)], v1[:len(u0)]
	for k, a := range u0 {
		b, p, q := u1[k], v0[k], v1[k]
		s00 += a * p
		s01 += a * q
		s10 += b * p
		s11 += b * q
	}
	return
}

// kmeansUpdate moves the centroids to the means; returns the number of re-seeded empty clusters.
func kmeansUpdate(x, c []float64, n, d, k int, assign []int, dist []float64) int {
	count := make([]int, k)
	clear(c)
	for i := range n {
		a := assign[i]
		count[a]++
		row, ca := x[i*d:(i+1)*d], c[a*d:(a+1)*d]
		for t := range d {
			ca[t] += row[t]
		}
	}
	reseeded := 0
	var used map[int]bool
	for j := range k {
		cj := c[j*d : (j+1)*d]
		if count[j] > 0 {
			inv := 1 / float64(count[j])
			for t := range cj {
				cj[t] *= inv
			}
			continue
		}
		if used == nil {
			used = map[int]bool{}
		}
		far, farV := -1, -1.0
		for i, v := range dist {
			if !used[i] && v > farV {
				far, farV = i, v
			}
		}
		used[far] = true
		copy(cj, x[far*d:(far+1)*d])
		reseeded++
	}
	return reseeded
}

// ClusterResult holds the clustering scores of ClusterScores.
type ClusterResult struct {
	NMI, AMI float64
	Metrics  map[string]float64 // keys "NMI" and "AMI"
	KMeans   *KMeansResult
}

// ClusterScores clusters the rows of emb ([n, d]) with KMeans (K = number of distinct labels unless opt.K is set)
// and scores the clustering against labels with NMI and AMI (arithmetic normalisation, as PML's
// AccuracyCalculator with faiss k-means and scikit-learn).
func ClusterScores(emb []float32, n, d int, labels []int64, opt KMeansOptions) (*ClusterResult, error) {
	if len(labels) != n {
		return nil, fmt.Errorf("metrics.ClusterScores: len(labels)=%d, want n=%d", len(labels), n)
	}
	if opt.K == 0 {
		seen := map[int64]bool{}
		for _, l := range labels {
			seen[l] = true
		}
		opt.K = len(seen)
	}
	km, err := KMeans(emb, n, d, opt)
	if err != nil {
		return nil, err
	}
	pred := make([]int64, n)
	for i, a := range km.Assign {
		pred[i] = int64(a)
	}
	res := &ClusterResult{KMeans: km}
	if res.NMI, err = NMI(labels, pred); err != nil {
		return nil, err
	}
	if res.AMI, err = AMI(labels, pred); err != nil {
		return nil, err
	}
	res.Metrics = map[string]float64{"NMI": res.NMI, "AMI": res.AMI}
	return res, nil
}

// clusterContingency is the contingency table of two labelings in sparse form.
type clusterContingency struct {
	n      int
	a, b   []int // row sums (classes of the first labeling), column sums
	cells  []int // non-zero n_ij
	cellsA []int // row of each cell
	cellsB []int // column of each cell
}

func clusterContingencyOf(a, b []int64) (clusterContingency, error) {
	if len(a) != len(b) {
		return clusterContingency{}, fmt.Errorf("labelings have lengths %d and %d", len(a), len(b))
	}
	if len(a) == 0 {
		return clusterContingency{}, fmt.Errorf("empty labelings")
	}
	ia, ib := map[int64]int{}, map[int64]int{}
	cell := map[[2]int]int{}
	var t clusterContingency
	t.n = len(a)
	for k := range a {
		i, ok := ia[a[k]]
		if !ok {
			i = len(t.a)
			ia[a[k]] = i
			t.a = append(t.a, 0)
		}
		j, ok := ib[b[k]]
		if !ok {
			j = len(t.b)
			ib[b[k]] = j
			t.b = append(t.b, 0)
		}
		t.a[i]++
		t.b[j]++
		cell[[2]int{i, j}]++
	}
	keys := make([][2]int, 0, len(cell))
	for key := range cell {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(p, q [2]int) int {
		if p[0] != q[0] {
			return p[0] - q[0]
		}
		return p[1] - q[1]
	})
	for _, key := range keys {
		t.cells = append(t.cells, cell[key])
		t.cellsA = append(t.cellsA, key[0])
		t.cellsB = append(t.cellsB, key[1])
	}
	return t, nil
}

// clusterEntropy is −Σ (c/N) ln(c/N) over the counts.
func clusterEntropy(counts []int, n int) float64 {
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(n)
			h -= p * math.Log(p)
		}
	}
	return h
}

// clusterMI is scikit-learn's mutual_info_score (natural log): Σ_ij (n_ij/N) ln(N n_ij/(a_i b_j)), with terms of
// magnitude below machine epsilon zeroed and the sum clipped at 0.
func clusterMI(t clusterContingency) float64 {
	var mi float64
	nf := float64(t.n)
	for k, c := range t.cells {
		p := float64(c) / nf
		term := p * (math.Log(float64(c)) - math.Log(nf) - math.Log(float64(t.a[t.cellsA[k]])) -
			math.Log(float64(t.b[t.cellsB[k]])) + 2*math.Log(nf))
		if math.Abs(term) < 0x1p-52 {
			term = 0
		}
		mi += term
	}
	return max(mi, 0)
}

// MutualInformation is the mutual information (nats) between two labelings of the same items.
func MutualInformation(a, b []int64) (float64, error) {
	t, err := clusterContingencyOf(a, b)
	if err != nil {
		return 0, fmt.Errorf("metrics.MutualInformation: %w", err)
	}
	return clusterMI(t), nil
}

// NMI is the normalised mutual information MI(a, b) / ((H(a)+H(b))/2) (scikit-learn normalized_mutual_info_score,
// arithmetic average). Special cases as scikit-learn: 1 when both labelings have a single cluster, 0 when MI = 0.
// Symmetric, invariant to renaming the labels.
func NMI(a, b []int64) (float64, error) {
	t, err := clusterContingencyOf(a, b)
	if err != nil {
		return 0, fmt.Errorf("metrics.NMI: %w", err)
	}
	if len(t.a) == 1 && len(t.b) == 1 {
		return 1, nil
	}
	mi := clusterMI(t)
	if mi == 0 {
		return 0, nil
	}
	norm := (clusterEntropy(t.a, t.n) + clusterEntropy(t.b, t.n)) / 2
	return mi / norm, nil
}

// AMI is the adjusted mutual information (MI − E[MI]) / (mean(H(a), H(b)) − E[MI]) with the arithmetic mean
// (scikit-learn adjusted_mutual_info_score, average_method="arithmetic"). E[MI] is the expected mutual information
// under the hypergeometric (random permutation) model, Vinh, Epps & Bailey (2010):
//
//	E[MI] = Σ_i Σ_j Σ_{n_ij = max(1, a_i+b_j−N)}^{min(a_i, b_j)} (n_ij/N) ln(N n_ij/(a_i b_j)) ·
//	        a_i! b_j! (N−a_i)! (N−b_j)! / (N! n_ij! (a_i−n_ij)! (b_j−n_ij)! (N−a_i−b_j+n_ij)!),
//
// evaluated in log space with a table of ln k! (math.Lgamma), grouping rows and columns of equal size.
// Special cases as scikit-learn: 1 when both labelings have a single cluster; the denominator is kept at least
// machine epsilon in magnitude (with its sign).
func AMI(a, b []int64) (float64, error) {
	t, err := clusterContingencyOf(a, b)
	if err != nil {
		return 0, fmt.Errorf("metrics.AMI: %w", err)
	}
	if len(t.a) == 1 && len(t.b) == 1 {
		return 1, nil
	}
	mi := clusterMI(t)
	emi := clusterEMI(t.a, t.b, t.n)
	norm := (clusterEntropy(t.a, t.n) + clusterEntropy(t.b, t.n)) / 2
	den := norm - emi
	const eps = 0x1p-52
	if den < 0 {
		den = min(den, -eps)
	} else {
		den = max(den, eps)
	}
	return (mi - emi) / den, nil
}

// clusterEMI is the expected mutual information of two labelings with cluster sizes a and b over n items.
func clusterEMI(a, b []int, n int) float64 {
	if len(a) == 1 || len(b) == 1 {
		return 0 // a labeling with zero entropy has zero MI with anything
	}
	lf := make([]float64, n+1) // lf[k] = ln k!
	for k := range lf {
		lf[k], _ = math.Lgamma(float64(k) + 1)
	}
	// Group equal sizes: E[MI] depends on (a_i, b_j) only.
	group := func(s []int) (vals, mult []int) {
		m := map[int]int{}
		for _, v := range s {
			m[v]++
		}
		for v := range m {
			vals = append(vals, v)
		}
		slices.Sort(vals)
		for _, v := range vals {
			mult = append(mult, m[v])
		}
		return vals, mult
	}
	av, am := group(a)
	bv, bm := group(b)
	nf := float64(n)
	logN := math.Log(nf)
	var emi float64
	for i, ai := range av {
		for j, bj := range bv {
			var s float64
			lo := max(1, ai+bj-n)
			hi := min(ai, bj)
			base := lf[ai] + lf[bj] + lf[n-ai] + lf[n-bj] - lf[n]
			logAB := math.Log(float64(ai)) + math.Log(float64(bj))
			for nij := lo; nij <= hi; nij++ {
				term2 := logN + math.Log(float64(nij)) - logAB
				gln := base - lf[nij] - lf[ai-nij] - lf[bj-nij] - lf[n-ai-bj+nij]
				s += float64(nij) / nf * term2 * math.Exp(gln)
			}
			emi += float64(am[i]*bm[j]) * s
		}
	}
	return emi
}
