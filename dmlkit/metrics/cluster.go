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
	// Costs K·n·d like one Lloyd iteration.
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
}

// KMeans clusters the rows of emb ([n, d] row-major) into opt.K clusters with Lloyd's algorithm in float64.
// Each iteration assigns every row to its nearest centroid (squared L2; ties → smaller centroid index; parallel
// over rows) and moves every centroid to the mean of its rows. An empty cluster is re-seeded at the row farthest
// from its own centroid (rows already used for re-seeding in that iteration excluded). After the last update the
// rows are assigned once more to the final centroids (as PML does with faiss: train, then search).
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
	var c []float64
	switch opt.Init {
	case KMeansPlusPlus:
		c = kmeansPlusPlusInit(x, n, d, k, rng, workers)
	case KMeansRandomInit:
		c = make([]float64, k*d)
		for ci, r := range rng.Perm(n)[:k] {
			copy(c[ci*d:(ci+1)*d], x[r*d:(r+1)*d])
		}
	default:
		return nil, fmt.Errorf("metrics.KMeans: unknown Init %d", int(opt.Init))
	}
	if opt.Progress != nil {
		opt.Progress(0, opt.Iterations)
	}
	res := &KMeansResult{}
	assign := make([]int, n)
	dist := make([]float64, n)
	for i := range assign {
		assign[i] = -1
	}
	for it := 1; it <= opt.Iterations; it++ {
		changed := kmeansAssign(x, c, n, d, k, assign, dist, workers)
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
	kmeansAssign(x, c, n, d, k, assign, dist, workers)
	for _, v := range dist {
		res.Inertia += v
	}
	res.Assign, res.Centroids = assign, c
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
