package metrics

// OPIS and ε-OPIS: threshold-inconsistency metrics of seed 000 ("Threshold-Consistent Margin loss", TCM paper),
// Eq. 1–4 and Algorithm 1, plus the Gaussian utility model of its Appendix A.1.1.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"
)

// OPISConvention names how the sum over the threshold grid is normalised. The paper's Eq. 2 (an integral over
// [d_min, d_max] divided by d_max−d_min) and its Algorithm 1 (a plain sum over the N grid points divided by
// d_max−d_min, without the Δd = (d_max−d_min)/N factor) differ by the factor N/(d_max−d_min).
type OPISConvention string

const (
	// OPISNormIntegral (default) evaluates Eq. 2 with a right Riemann sum on the grid d_1..d_N:
	//	OPIS = Σ_i Σ_j (U_i(d_j) − Ū(d_j))² Δd / (T·(d_max−d_min)) = (1/(T·N)) Σ_j Σ_i (U_i(d_j) − Ū(d_j))²,
	// i.e. the across-class (population) variance of the utility averaged over the grid. Dimensionless, bounded by
	// 1/4, independent of N for smooth curves.
	OPISNormIntegral OPISConvention = "integral(Eq.2)"
	// OPISNormAlgorithm1 is Algorithm 1 of the paper verbatim:
	//	OPIS = Σ_j Σ_i (U_i(d_j) − Ū(d_j))² / (T·(d_max−d_min)),
	// which equals N/(d_max−d_min) times the OPISNormIntegral value.
	OPISNormAlgorithm1 OPISConvention = "algorithm1"
)

// OPISSampling selects which pairs of the test set are compared.
type OPISSampling int

const (
	// OPISSampleNegatives (default): all positive pairs of every class plus, for each class, NegPerPos times as many
	// random negative pairs whose anchor is a member of the class (the iNaturalist/SOP protocol of seed 000 §5,
	// "negative-to-positive ratio of 10-to-1 for each class"). A class with P positive pairs gets
	// max(1, round(NegPerPos·P)) distinct negatives drawn uniformly without replacement (all of them when fewer
	// exist). Deterministic given OPISOptions.Seed and the row order.
	OPISSampleNegatives OPISSampling = iota
	// OPISExhaustive: all unordered pairs (the CUB/Cars protocol of seed 000 §5).
	OPISExhaustive
)

// String returns "sampled" or "exhaustive".
func (s OPISSampling) String() string {
	switch s {
	case OPISSampleNegatives:
		return "sampled"
	case OPISExhaustive:
		return "exhaustive"
	}
	return fmt.Sprintf("OPISSampling(%d)", int(s))
}

// OPIS defaults.
const (
	OPISDefaultNegPerPos = 10.0
	OPISDefaultFARMin    = 1e-2
	OPISDefaultFARMax    = 1e-1
	OPISDefaultGridN     = 100
	OPISDefaultEpsilon   = 0.1
)

// OPISOptions configures OPIS. The zero value gives the paper's settings: sampled negatives at 10:1, calibration
// range 1e-2 ≤ FAR ≤ 1e-1, N = 100 grid points, ε = 10%, convention OPISNormIntegral.
type OPISOptions struct {
	Sampling  OPISSampling
	NegPerPos float64 // negatives per positive pair, per class (OPISSampleNegatives); 0 → 10
	Seed      uint64  // seed of the negative sampling

	// FARMin, FARMax: the calibration range as a FAR interval of the pooled negative pairs; 0 → 1e-2, 1e-1.
	FARMin, FARMax float64
	GridN          int            // number of grid thresholds N (paper: N ≥ 10); 0 → 100
	Convention     OPISConvention // "" → OPISNormIntegral
	Epsilon        float64        // ε of ε-OPIS as a fraction of the classes; 0 → 0.1

	// EpsOPISEq3Literal uses Eq. 3 as printed, U_ε = φψ/(φ+ψ), i.e. without the factor 2 of Eq. 1 (the ε-OPIS
	// value is then 1/4 of the default). Default (false): U_ε = 2φψ/(φ+ψ), consistent with Eq. 1 with c = 1.
	EpsOPISEq3Literal bool

	// SkipClassesWithoutPositives drops classes with fewer than two samples (no positive pair) instead of
	// returning an error; their samples are then not used at all, and their labels are listed in
	// OPISResult.SkippedClasses.
	SkipClassesWithoutPositives bool

	Workers int // goroutines for the distance computation; 0 → GOMAXPROCS
}

// OPISResult holds OPIS, ε-OPIS and the curves behind them. Curves are indexed [threshold j][class i], with
// j = 0..N−1 standing for the grid point d_{j+1} and i following Classes (ascending labels).
type OPISResult struct {
	OPIS    float64 // Eq. 2 / Algorithm 1, normalised per Convention
	EpsOPIS float64 // Eq. 4 (same grid normalisation as OPIS)

	Convention OPISConvention
	Sampling   string  // "sampled", "exhaustive" or "given" (OPISFromDistances)
	NegPerPos  float64 // for "sampled"
	Epsilon    float64
	GridN      int

	FARMin, FARMax float64   // the requested calibration range
	DMin, DMax     float64   // its distances on the pooled negatives
	Thresholds     []float64 // d_j = DMin + j·(DMax−DMin)/N, j = 1..N (DMin excluded, DMax included)

	Classes     []int64     // class labels, ascending
	Specificity [][]float64 // φ_i(d_j) = 1 − FAR_i(d_j), [N][T]
	Sensitivity [][]float64 // ψ_i(d_j) = TPR_i(d_j), [N][T]
	Utility     [][]float64 // U_i(d_j) = 2φψ/(φ+ψ) (0 when φ+ψ = 0), [N][T]
	MeanUtility []float64   // Ū(d_j), [N]

	ClassMeanUtility []float64 // (1/N) Σ_j U_i(d_j), [T]: the ranking criterion of ε-OPIS
	EpsBest          []int64   // labels of the ε best classes (highest ClassMeanUtility first)
	EpsWorst         []int64   // labels of the ε worst classes (lowest ClassMeanUtility last)
	UtilityEpsBest   []float64 // U_εbest(d_j), [N]
	UtilityEpsWorst  []float64 // U_εworst(d_j), [N]

	NumPos         int     // positive pairs used (each unordered pair once)
	NumNeg         int     // negative pairs in the pooled calibration set (see OPIS)
	ClassNumPos    []int   // positive pairs per class, [T]
	ClassNumNeg    []int   // negative pairs per class, [T] (exhaustive: a pair counts for both of its classes)
	SkippedClasses []int64 // labels dropped by SkipClassesWithoutPositives
}

// OPIS computes OPIS and ε-OPIS (seed 000, Eq. 1–4, Algorithm 1) for embeddings emb (row-major [n, d]) with class
// labels (length n).
//
// Definitions used (those the paper leaves open are marked "choice"):
//   - Distance: L2 between the L2-normalised rows, in [0, 2]. A pair is accepted (declared a match) at threshold d
//     when its distance is ≤ d.
//   - Pairs of class i (choice; the paper says "gather all L2 distances for class i"): the positive pairs are the
//     pairs of two members of i; the negative pairs are the pairs whose anchor is a member of i and whose other
//     element is not. Exhaustive sampling takes every unordered pair once; a negative pair (x, y) then counts for
//     the classes of x and of y (it is the anchor-in-class reading over ordered pairs, which counts every positive
//     twice and leaves the rates unchanged). Sampled negatives count for the class they were drawn for only.
//   - Calibration range: FAR(d) of the pooled negatives is the fraction with distance ≤ d. The pooled negatives
//     are every negative pair once (exhaustive) or all sampled negatives (sampled: a pair drawn for two classes
//     counts twice; the pool is weighted like the per-class samples, i.e. by each class's positive count). d_min (d_max) is the smallest negative distance with FAR ≥ FARMin (FARMax), i.e. the ⌈f·M⌉-th smallest
//     of the M pooled negative distances. Error if M < 1/FARMin (the FAR resolution does not reach FARMin) or if
//     d_max ≤ d_min.
//   - Grid: d_j = d_min + j·(d_max−d_min)/N, j = 1..N.
//   - Per class: φ_i(d) = 1 − FAR_i(d), ψ_i(d) = TPR_i(d), U_i = 2φψ/(φ+ψ) (Eq. 1, c = 1; 0 when φ+ψ = 0),
//     Ū = mean of U_i over the T classes.
//   - OPIS: see OPISConvention.
//   - ε-OPIS (Eq. 3–4): classes are ranked by their mean utility over the grid (choice; ties broken by the smaller
//     label first); the best (worst) group is the first (last) max(1, ⌈ε·T⌉) classes. φ and ψ of a group are
//     pooled over the pairs of its classes (micro-average: Σ accepted / Σ pairs, choice). ε-OPIS is the grid mean
//     of (U_εworst − U_εbest)² (OPISNormIntegral) or its grid sum divided by d_max−d_min (OPISNormAlgorithm1).
//
// Cost: sampled mode computes (1+NegPerPos)·Σ_c n_c(n_c−1)/2 distances (SOP test set at 10:1: ≈1.5 M) and keeps
// them; exhaustive mode computes n(n−1)/2 distances once and keeps them (8 bytes each; at most 2^28 pairs).
func OPIS(emb []float32, n, d int, labels []int64, opt OPISOptions) (*OPISResult, error) {
	opt, err := opisFillDefaults(opt)
	if err != nil {
		return nil, err
	}
	x, err := opisNormalizeRows(emb, n, d)
	if err != nil {
		return nil, fmt.Errorf("metrics.OPIS: %w", err)
	}
	if len(labels) != n {
		return nil, fmt.Errorf("metrics.OPIS: len(labels)=%d, want n=%d", len(labels), n)
	}
	g := opisGroupClasses(labels)
	var skipped []int64
	keepClass := make([]bool, len(g.classes))
	for ci, m := range g.members {
		keepClass[ci] = len(m) >= 2
		if !keepClass[ci] {
			if !opt.SkipClassesWithoutPositives {
				return nil, fmt.Errorf("metrics.OPIS: class %d has %d sample(s) and so no positive pair "+
					"(set SkipClassesWithoutPositives to drop such classes)", g.classes[ci], len(m))
			}
			skipped = append(skipped, g.classes[ci])
		}
	}
	if len(skipped) > 0 {
		var keptLabels []int64
		var keptRows []int
		for i, l := range labels {
			if keepClass[g.index[l]] {
				keptLabels = append(keptLabels, l)
				keptRows = append(keptRows, i)
			}
		}
		xk := make([]float64, len(keptRows)*d)
		for r, i := range keptRows {
			copy(xk[r*d:(r+1)*d], x[i*d:(i+1)*d])
		}
		x, labels, n = xk, keptLabels, len(keptRows)
		g = opisGroupClasses(labels)
	}
	if len(g.classes) < 2 {
		return nil, fmt.Errorf("metrics.OPIS: need at least 2 classes with positive pairs, have %d", len(g.classes))
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var res *OPISResult
	switch opt.Sampling {
	case OPISExhaustive:
		res, err = opisExhaustive(x, n, d, g, opt, workers)
	case OPISSampleNegatives:
		res, err = opisSampled(x, n, d, g, opt, workers)
	default:
		return nil, fmt.Errorf("metrics.OPIS: unknown Sampling %d", int(opt.Sampling))
	}
	if err != nil {
		return nil, fmt.Errorf("metrics.OPIS: %w", err)
	}
	res.SkippedClasses = skipped
	return res, nil
}

// Metrics returns the scalar results under the keys the paper uses: "OPIS" and "<100ε>%-OPIS" (e.g. "10%-OPIS").
func (r *OPISResult) Metrics() map[string]float64 {
	return map[string]float64{"OPIS": r.OPIS, fmt.Sprintf("%g%%-OPIS", 100*r.Epsilon): r.EpsOPIS}
}

// OPISClassDistances are the distances of the positive and negative pairs of one class, for OPISFromDistances.
type OPISClassDistances struct {
	Class    int64
	Pos, Neg []float64
}

// OPISFromDistances computes OPIS and ε-OPIS from precomputed pair distances per class (any distance where
// "smaller is more similar"; a pair is accepted at threshold d when its distance is ≤ d). pooledNeg are the
// negative distances that calibrate [d_min, d_max]; nil means the concatenation of all classes' Neg. The Sampling,
// NegPerPos, Seed, Workers and SkipClassesWithoutPositives options are ignored. See OPIS for the definitions.
func OPISFromDistances(classes []OPISClassDistances, pooledNeg []float64, opt OPISOptions) (*OPISResult, error) {
	opt, err := opisFillDefaults(opt)
	if err != nil {
		return nil, err
	}
	if len(classes) < 2 {
		return nil, fmt.Errorf("metrics.OPISFromDistances: need at least 2 classes, have %d", len(classes))
	}
	order := make([]int, len(classes))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return classes[order[a]].Class < classes[order[b]].Class })
	labels := make([]int64, len(classes))
	for k, i := range order {
		labels[k] = classes[i].Class
		if k > 0 && labels[k] == labels[k-1] {
			return nil, fmt.Errorf("metrics.OPISFromDistances: class %d given twice", labels[k])
		}
	}
	if pooledNeg == nil {
		for _, c := range classes {
			pooledNeg = append(pooledNeg, c.Neg...)
		}
	} else {
		pooledNeg = slices.Clone(pooledNeg)
	}
	for i, v := range pooledNeg {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("metrics.OPISFromDistances: pooled negative distance %d is %v", i, v)
		}
	}
	cal, err := opisCalibrate(pooledNeg, opt)
	if err != nil {
		return nil, fmt.Errorf("metrics.OPISFromDistances: %w", err)
	}
	h := opisNewHist(len(classes), opt.GridN)
	for k, i := range order {
		c := classes[i]
		for _, list := range [2][]float64{c.Pos, c.Neg} {
			for j, v := range list {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, fmt.Errorf("metrics.OPISFromDistances: class %d: distance %d is %v", c.Class, j, v)
				}
			}
		}
		for _, v := range c.Pos {
			h.pos[k][opisBin(cal.thresholds, v)]++
		}
		for _, v := range c.Neg {
			h.neg[k][opisBin(cal.thresholds, v)]++
		}
	}
	numPos := 0
	for _, c := range classes {
		numPos += len(c.Pos)
	}
	res, err := opisFinish(labels, cal, h, opt)
	if err != nil {
		return nil, fmt.Errorf("metrics.OPISFromDistances: %w", err)
	}
	res.Sampling = "given"
	res.NumPos, res.NumNeg = numPos, len(pooledNeg)
	return res, nil
}

func opisFillDefaults(opt OPISOptions) (OPISOptions, error) {
	if opt.NegPerPos == 0 {
		opt.NegPerPos = OPISDefaultNegPerPos
	}
	if opt.FARMin == 0 {
		opt.FARMin = OPISDefaultFARMin
	}
	if opt.FARMax == 0 {
		opt.FARMax = OPISDefaultFARMax
	}
	if opt.GridN == 0 {
		opt.GridN = OPISDefaultGridN
	}
	if opt.Convention == "" {
		opt.Convention = OPISNormIntegral
	}
	if opt.Epsilon == 0 {
		opt.Epsilon = OPISDefaultEpsilon
	}
	switch {
	case !(opt.NegPerPos > 0) || math.IsInf(opt.NegPerPos, 0):
		return opt, fmt.Errorf("metrics: OPISOptions.NegPerPos=%v, want > 0", opt.NegPerPos)
	case !(opt.FARMin > 0 && opt.FARMin < opt.FARMax && opt.FARMax <= 1):
		return opt, fmt.Errorf("metrics: OPIS calibration FAR interval [%v, %v] is empty or invalid, "+
			"want 0 < FARMin < FARMax ≤ 1", opt.FARMin, opt.FARMax)
	case opt.GridN < 1:
		return opt, fmt.Errorf("metrics: OPISOptions.GridN=%d, want ≥ 1", opt.GridN)
	case opt.Convention != OPISNormIntegral && opt.Convention != OPISNormAlgorithm1:
		return opt, fmt.Errorf("metrics: OPISOptions.Convention=%q, want %q or %q", opt.Convention,
			OPISNormIntegral, OPISNormAlgorithm1)
	case !(opt.Epsilon > 0 && opt.Epsilon <= 1):
		return opt, fmt.Errorf("metrics: OPISOptions.Epsilon=%v, want 0 < ε ≤ 1", opt.Epsilon)
	}
	return opt, nil
}

// opisNormalizeRows validates emb ([n, d] row-major) and returns its L2-normalised rows in float64.
// Errors on bad shapes, NaN/Inf values and zero rows, naming the row.
func opisNormalizeRows(emb []float32, n, d int) ([]float64, error) {
	if n <= 0 || d <= 0 {
		return nil, fmt.Errorf("embeddings shape (n=%d, d=%d): both must be positive", n, d)
	}
	if len(emb) != n*d {
		return nil, fmt.Errorf("len(emb)=%d, want n·d = %d·%d = %d", len(emb), n, d, n*d)
	}
	x := make([]float64, n*d)
	for i := 0; i < n; i++ {
		var s float64
		row := emb[i*d : (i+1)*d]
		for k, v := range row {
			f := float64(v)
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return nil, fmt.Errorf("embedding row %d, column %d is %v", i, k, v)
			}
			s += f * f
		}
		if s == 0 {
			return nil, fmt.Errorf("embedding row %d has zero norm and cannot be L2-normalised", i)
		}
		inv := 1 / math.Sqrt(s)
		for k, v := range row {
			x[i*d+k] = float64(v) * inv
		}
	}
	return x, nil
}

// opisClassGroups groups sample indices by label; classes are ascending.
type opisClassGroups struct {
	classes []int64
	index   map[int64]int
	members [][]int // sample indices per class, ascending
	labelIx []int   // class index of every sample
}

func opisGroupClasses(labels []int64) opisClassGroups {
	g := opisClassGroups{index: map[int64]int{}}
	for _, l := range labels {
		if _, ok := g.index[l]; !ok {
			g.index[l] = 0
			g.classes = append(g.classes, l)
		}
	}
	slices.Sort(g.classes)
	for i, c := range g.classes {
		g.index[c] = i
	}
	g.members = make([][]int, len(g.classes))
	g.labelIx = make([]int, len(labels))
	for i, l := range labels {
		ci := g.index[l]
		g.labelIx[i] = ci
		g.members[ci] = append(g.members[ci], i)
	}
	return g
}

func opisL2(x []float64, d, a, b int) float64 {
	u, v := x[a*d:(a+1)*d], x[b*d:(b+1)*d]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= d; k += 4 {
		e0, e1, e2, e3 := u[k]-v[k], u[k+1]-v[k+1], u[k+2]-v[k+2], u[k+3]-v[k+3]
		s0 += e0 * e0
		s1 += e1 * e1
		s2 += e2 * e2
		s3 += e3 * e3
	}
	for ; k < d; k++ {
		e := u[k] - v[k]
		s0 += e * e
	}
	return math.Sqrt(s0 + s1 + s2 + s3)
}

// opisCal is a calibration range and its grid.
type opisCal struct {
	farMin, farMax float64
	dmin, dmax     float64
	thresholds     []float64 // d_1..d_N
}

// opisCalibrate sorts pooledNeg in place and derives [d_min, d_max] and the grid.
func opisCalibrate(pooledNeg []float64, opt OPISOptions) (opisCal, error) {
	slices.Sort(pooledNeg)
	return opisCalibrateKth(len(pooledNeg), func(ks []int) []float64 {
		out := make([]float64, len(ks))
		for t, k := range ks {
			out[t] = pooledNeg[k-1]
		}
		return out
	}, opt)
}

// opisCalibrateKth derives [d_min, d_max] and the grid from m pooled negatives; kth returns the ks[t]-th
// smallest (1-indexed) pooled negative distances.
func opisCalibrateKth(m int, kth func(ks []int) []float64, opt OPISOptions) (opisCal, error) {
	if m == 0 {
		return opisCal{}, fmt.Errorf("no negative pairs: cannot calibrate the FAR range")
	}
	// FAR resolution: with M negatives FAR moves in steps of 1/M; FARMin must be at least one step.
	if float64(m)*opt.FARMin < 1-1e-9 {
		return opisCal{}, fmt.Errorf("calibration FAR range [%g, %g] unreachable: %d pooled negative pairs give "+
			"a FAR resolution of %.3g > FARMin=%g (need at least %d negatives)", opt.FARMin, opt.FARMax, m,
			1/float64(m), opt.FARMin, int(math.Ceil(1/opt.FARMin-1e-9)))
	}
	rank := func(f float64) int {
		k := int(math.Ceil(f*float64(m) - 1e-9))
		return max(1, min(k, m))
	}
	q := kth([]int{rank(opt.FARMin), rank(opt.FARMax)})
	c := opisCal{farMin: opt.FARMin, farMax: opt.FARMax, dmin: q[0], dmax: q[1]}
	if !(c.dmax > c.dmin) {
		return opisCal{}, fmt.Errorf("calibration range degenerate: FAR %g and %g both map to distance %g "+
			"(ties among the %d pooled negative distances)", opt.FARMin, opt.FARMax, c.dmin, m)
	}
	n := opt.GridN
	c.thresholds = make([]float64, n)
	for j := 1; j <= n; j++ {
		c.thresholds[j-1] = c.dmin + float64(j)*(c.dmax-c.dmin)/float64(n)
	}
	return c, nil
}

// opisKthSmallest returns the ks[t]-th smallest (1-indexed, 1 ≤ k ≤ m) of the m values that each produces,
// exactly, in O(m) time and O(bins) memory: a histogram over [min, max] locates the bin holding each rank (the
// bin index is monotone in the value), then only that bin's values are gathered and sorted.
func opisKthSmallest(each func(f func(v float64)), ks []int) []float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	each(func(v float64) { lo, hi = min(lo, v), max(hi, v) })
	out := make([]float64, len(ks))
	if !(hi > lo) {
		for t := range out {
			out[t] = lo
		}
		return out
	}
	const bins = 1 << 20
	cnt := make([]int64, bins)
	scale := bins / (hi - lo)
	bin := func(v float64) int { return min(max(int((v-lo)*scale), 0), bins-1) }
	each(func(v float64) { cnt[bin(v)]++ })
	for t, k := range ks {
		var below int64
		b := 0
		for ; b < bins-1 && below+cnt[b] < int64(k); b++ {
			below += cnt[b]
		}
		var vals []float64
		each(func(v float64) {
			if bin(v) == b {
				vals = append(vals, v)
			}
		})
		slices.Sort(vals)
		out[t] = vals[k-1-int(below)]
	}
	return out
}

// opisBin returns b in 0..N such that a pair with distance v is accepted at thresholds[j] for all j ≥ b
// (v ≤ thresholds[j]) and rejected for j < b; b = N means rejected everywhere.
func opisBin(thr []float64, v float64) int {
	n := len(thr)
	if v <= thr[0] {
		return 0
	}
	if v > thr[n-1] {
		return n
	}
	// Guess from the uniform grid, then correct against the exact thresholds.
	step := (thr[n-1] - thr[0]) / float64(max(n-1, 1))
	b := 0
	if step > 0 {
		b = int(math.Ceil((v - thr[0]) / step))
	}
	b = max(0, min(b, n))
	for b > 0 && v <= thr[b-1] {
		b--
	}
	for b < n && v > thr[b] {
		b++
	}
	return b
}

// opisHist holds, per class, histograms of pair distances over the grid bins of opisBin (length N+1).
type opisHist struct {
	pos, neg [][]int64
}

func opisNewHist(t, n int) opisHist {
	h := opisHist{pos: make([][]int64, t), neg: make([][]int64, t)}
	bp := make([]int64, t*(n+1))
	bn := make([]int64, t*(n+1))
	for i := range t {
		h.pos[i] = bp[i*(n+1) : (i+1)*(n+1)]
		h.neg[i] = bn[i*(n+1) : (i+1)*(n+1)]
	}
	return h
}

func (h opisHist) add(o opisHist) {
	for i := range h.pos {
		for b := range h.pos[i] {
			h.pos[i][b] += o.pos[i][b]
			h.neg[i][b] += o.neg[i][b]
		}
	}
}

// opisUtility is Eq. 1 with c = 1 (factor = 2) or Eq. 3 as printed (factor = 1); 0 when φ+ψ = 0.
func opisUtility(phi, psi, factor float64) float64 {
	if phi+psi == 0 {
		return 0
	}
	return factor * phi * psi / (phi + psi)
}

// opisFinish turns histograms into curves, OPIS and ε-OPIS. classes are ascending labels matching h.
func opisFinish(classes []int64, cal opisCal, h opisHist, opt OPISOptions) (*OPISResult, error) {
	T, N := len(classes), len(cal.thresholds)
	res := &OPISResult{
		Convention: opt.Convention, NegPerPos: opt.NegPerPos, Epsilon: opt.Epsilon, GridN: N,
		FARMin: cal.farMin, FARMax: cal.farMax, DMin: cal.dmin, DMax: cal.dmax,
		Thresholds: cal.thresholds, Classes: classes,
		ClassNumPos: make([]int, T), ClassNumNeg: make([]int, T),
		Specificity: make([][]float64, N), Sensitivity: make([][]float64, N), Utility: make([][]float64, N),
		MeanUtility: make([]float64, N), ClassMeanUtility: make([]float64, T),
		UtilityEpsBest: make([]float64, N), UtilityEpsWorst: make([]float64, N),
	}
	for i := range T {
		var p, q int64
		for b := range h.pos[i] {
			p += h.pos[i][b]
			q += h.neg[i][b]
		}
		if p == 0 {
			return nil, fmt.Errorf("class %d has no positive pair", classes[i])
		}
		if q == 0 {
			return nil, fmt.Errorf("class %d has no negative pair", classes[i])
		}
		res.ClassNumPos[i], res.ClassNumNeg[i] = int(p), int(q)
	}
	// Cumulative accepted counts per class while sweeping the grid upwards.
	accP := make([]int64, T)
	accN := make([]int64, T)
	var opisSum float64
	for j := range N {
		res.Specificity[j] = make([]float64, T)
		res.Sensitivity[j] = make([]float64, T)
		res.Utility[j] = make([]float64, T)
		var mean float64
		for i := range T {
			accP[i] += h.pos[i][j]
			accN[i] += h.neg[i][j]
			phi := 1 - float64(accN[i])/float64(res.ClassNumNeg[i])
			psi := float64(accP[i]) / float64(res.ClassNumPos[i])
			u := opisUtility(phi, psi, 2)
			res.Specificity[j][i], res.Sensitivity[j][i], res.Utility[j][i] = phi, psi, u
			mean += u
			res.ClassMeanUtility[i] += u / float64(N)
		}
		mean /= float64(T)
		res.MeanUtility[j] = mean
		var v float64
		for i := range T {
			e := res.Utility[j][i] - mean
			v += e * e
		}
		opisSum += v / float64(T)
	}
	norm := func(sum float64) float64 {
		if opt.Convention == OPISNormAlgorithm1 {
			return sum / (cal.dmax - cal.dmin)
		}
		return sum / float64(N)
	}
	res.OPIS = norm(opisSum)

	// ε-OPIS.
	rank := make([]int, T)
	for i := range rank {
		rank[i] = i
	}
	sort.SliceStable(rank, func(a, b int) bool {
		return res.ClassMeanUtility[rank[a]] > res.ClassMeanUtility[rank[b]]
	})
	gsize := max(1, int(math.Ceil(opt.Epsilon*float64(T)-1e-9)))
	gsize = min(gsize, T)
	best, worst := rank[:gsize], rank[T-gsize:]
	for _, i := range best {
		res.EpsBest = append(res.EpsBest, classes[i])
	}
	for _, i := range worst {
		res.EpsWorst = append(res.EpsWorst, classes[i])
	}
	factor := 2.0
	if opt.EpsOPISEq3Literal {
		factor = 1
	}
	groupCurve := func(group []int, out []float64) {
		var totP, totN, accP, accN int64
		for _, i := range group {
			totP += int64(res.ClassNumPos[i])
			totN += int64(res.ClassNumNeg[i])
		}
		for j := range N {
			for _, i := range group {
				accP += h.pos[i][j]
				accN += h.neg[i][j]
			}
			out[j] = opisUtility(1-float64(accN)/float64(totN), float64(accP)/float64(totP), factor)
		}
	}
	groupCurve(best, res.UtilityEpsBest)
	groupCurve(worst, res.UtilityEpsWorst)
	var epsSum float64
	for j := range N {
		e := res.UtilityEpsWorst[j] - res.UtilityEpsBest[j]
		epsSum += e * e
	}
	res.EpsOPIS = norm(epsSum)
	return res, nil
}

// opisMaxExhaustivePairs bounds the exhaustive mode (8 bytes are kept per pair): 2^28 pairs = 2 GiB, about
// 23,000 samples. Larger sets must use OPISSampleNegatives, as the paper does for SOP and iNaturalist.
const opisMaxExhaustivePairs = 1 << 28

// opisExhaustive uses every unordered pair. The distances are computed once (rows interleaved across workers
// for balance) and kept in enumeration order, 8 bytes per pair (CUB test set: 17.5 M pairs, 140 MB); the
// calibration quantiles are selected exactly from them without a sorted copy, then the pairs are binned.
func opisExhaustive(x []float64, n, d int, g opisClassGroups, opt OPISOptions, workers int) (*OPISResult, error) {
	if pairs := int64(n) * int64(n-1) / 2; pairs > opisMaxExhaustivePairs {
		return nil, fmt.Errorf("exhaustive sampling of %d samples needs %d pairs (> %d kept in memory); "+
			"use OPISSampleNegatives", n, pairs, opisMaxExhaustivePairs)
	}
	T := len(g.classes)
	lab := g.labelIx
	parts := make([][]float64, workers) // distances of rows i ≡ w (mod workers), pairs (i, j > i) in order
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			size := 0
			for i := w; i < n; i += workers {
				size += n - 1 - i
			}
			out := make([]float64, 0, size)
			for i := w; i < n; i += workers {
				for j := i + 1; j < n; j++ {
					out = append(out, opisL2(x, d, i, j))
				}
			}
			parts[w] = out
		}(w)
	}
	wg.Wait()
	numNeg := 0
	for _, m := range g.members {
		numNeg += len(m) * (n - len(m))
	}
	numNeg /= 2
	eachNeg := func(f func(v float64)) {
		for w := range workers {
			k := 0
			p := parts[w]
			for i := w; i < n; i += workers {
				li := lab[i]
				for j := i + 1; j < n; j++ {
					if lab[j] != li {
						f(p[k])
					}
					k++
				}
			}
		}
	}
	cal, err := opisCalibrateKth(numNeg, func(ks []int) []float64 { return opisKthSmallest(eachNeg, ks) }, opt)
	if err != nil {
		return nil, err
	}
	hs := make([]opisHist, workers)
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h := opisNewHist(T, opt.GridN)
			k := 0
			p := parts[w]
			for i := w; i < n; i += workers {
				li := lab[i]
				for j := i + 1; j < n; j++ {
					b := opisBin(cal.thresholds, p[k])
					k++
					if lab[j] == li {
						h.pos[li][b]++
					} else {
						h.neg[li][b]++
						h.neg[lab[j]][b]++
					}
				}
			}
			hs[w] = h
		}(w)
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		hs[0].add(hs[w])
	}
	res, err := opisFinish(g.classes, cal, hs[0], opt)
	if err != nil {
		return nil, err
	}
	res.Sampling = OPISExhaustive.String()
	for _, p := range res.ClassNumPos {
		res.NumPos += p
	}
	res.NumNeg = numNeg
	return res, nil
}

// opisPair is one sampled pair; class is the class index the pair counts for.
type opisPair struct {
	a, b  int32
	class int32
	pos   bool
}

// opisSampleNegatives draws want distinct negative pairs for class ci (anchor in the class) without replacement,
// deterministically from (seed, ci). order lists all sample indices grouped by class; the class occupies
// order[start : start+nc].
func opisSampleNegatives(g opisClassGroups, order []int, start []int, ci int, want int, seed uint64) []opisPair {
	members := g.members[ci]
	nc := len(members)
	nn := len(order) - nc // non-members
	avail := int64(nc) * int64(nn)
	nonMember := func(r int) int {
		if r < start[ci] {
			return order[r]
		}
		return order[r+nc]
	}
	mk := func(k int64) opisPair {
		return opisPair{a: int32(members[k/int64(nn)]), b: int32(nonMember(int(k % int64(nn)))), class: int32(ci)}
	}
	var out []opisPair
	if int64(want) >= avail {
		out = make([]opisPair, 0, avail)
		for k := range avail {
			out = append(out, mk(k))
		}
		return out
	}
	// Floyd's algorithm: want distinct values of [0, avail), in a deterministic insertion order.
	rng := rand.New(rand.NewPCG(seed, uint64(ci)+0x9e3779b97f4a7c15))
	seen := make(map[int64]struct{}, want)
	out = make([]opisPair, 0, want)
	for j := avail - int64(want); j < avail; j++ {
		t := rng.Int64N(j + 1)
		if _, dup := seen[t]; dup {
			t = j
		}
		seen[t] = struct{}{}
		out = append(out, mk(t))
	}
	return out
}

func opisSampled(x []float64, n, d int, g opisClassGroups, opt OPISOptions, workers int) (*OPISResult, error) {
	T := len(g.classes)
	order := make([]int, 0, n)
	start := make([]int, T)
	for ci, m := range g.members {
		start[ci] = len(order)
		order = append(order, m...)
	}
	var pairs []opisPair
	numPos := 0
	for ci, m := range g.members {
		for a := 0; a < len(m); a++ {
			for b := a + 1; b < len(m); b++ {
				pairs = append(pairs, opisPair{a: int32(m[a]), b: int32(m[b]), class: int32(ci), pos: true})
			}
		}
		p := len(m) * (len(m) - 1) / 2
		numPos += p
		want := int(math.Round(opt.NegPerPos * float64(p)))
		pairs = append(pairs, opisSampleNegatives(g, order, start, ci, max(want, 1), opt.Seed)...)
	}
	dist := make([]float64, len(pairs))
	var wg sync.WaitGroup
	chunk := (len(pairs) + workers - 1) / workers
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(pairs))
		if lo >= hi {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := lo; k < hi; k++ {
				dist[k] = opisL2(x, d, int(pairs[k].a), int(pairs[k].b))
			}
		}()
	}
	wg.Wait()
	pooled := make([]float64, 0, len(pairs)-numPos)
	for k, p := range pairs {
		if !p.pos {
			pooled = append(pooled, dist[k])
		}
	}
	cal, err := opisCalibrate(pooled, opt)
	if err != nil {
		return nil, err
	}
	h := opisNewHist(T, opt.GridN)
	for k, p := range pairs {
		b := opisBin(cal.thresholds, dist[k])
		if p.pos {
			h.pos[p.class][b]++
		} else {
			h.neg[p.class][b]++
		}
	}
	res, err := opisFinish(g.classes, cal, h, opt)
	if err != nil {
		return nil, err
	}
	res.Sampling = OPISSampleNegatives.String()
	res.NumPos, res.NumNeg = numPos, len(pooled)
	return res, nil
}

// GaussianUtilityModel is the analytic utility model of seed 000, Appendix A.1.1 (Fig. 7): the L2 distances of a
// class's positive pairs follow N(MuPos, SigmaPos²) and those of its negative pairs N(MuNeg, SigmaNeg²).
// With t_pos = (d−μ_pos)/(√2σ_pos), t_neg = (d−μ_neg)/(√2σ_neg):
//
//	sensitivity = recall = (1+erf t_pos)/2, specificity = (1−erf t_neg)/2,
//	precision = (1+erf t_pos)/(2+erf t_pos+erf t_neg)  (equal numbers of positive and negative pairs),
//	U_roc = (1+erf t_pos)(1−erf t_neg)/(2+erf t_pos−erf t_neg)   (Eq. 9),
//	U_pr  = 2(1+erf t_pos)/(4+erf t_pos+erf t_neg)               (Eq. 10).
type GaussianUtilityModel struct {
	MuPos, SigmaPos, MuNeg, SigmaNeg float64
}

// Validate checks σ > 0 and finite means.
func (m GaussianUtilityModel) Validate() error {
	for _, v := range []float64{m.MuPos, m.SigmaPos, m.MuNeg, m.SigmaNeg} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("metrics.GaussianUtilityModel %+v: parameters must be finite", m)
		}
	}
	if !(m.SigmaPos > 0 && m.SigmaNeg > 0) {
		return fmt.Errorf("metrics.GaussianUtilityModel %+v: SigmaPos and SigmaNeg must be > 0", m)
	}
	return nil
}

func (m GaussianUtilityModel) erfs(d float64) (ep, en float64) {
	return math.Erf((d - m.MuPos) / (math.Sqrt2 * m.SigmaPos)), math.Erf((d - m.MuNeg) / (math.Sqrt2 * m.SigmaNeg))
}

// Sensitivity is (1+erf t_pos)/2 (Eq. 8).
func (m GaussianUtilityModel) Sensitivity(d float64) float64 { ep, _ := m.erfs(d); return (1 + ep) / 2 }

// Specificity is (1−erf t_neg)/2 (Eq. 8).
func (m GaussianUtilityModel) Specificity(d float64) float64 { _, en := m.erfs(d); return (1 - en) / 2 }

// Precision is (1+erf t_pos)/(2+erf t_pos+erf t_neg) (Eq. 7); 0 where nothing is accepted.
func (m GaussianUtilityModel) Precision(d float64) float64 {
	ep, en := m.erfs(d)
	if 2+ep+en == 0 {
		return 0
	}
	return (1 + ep) / (2 + ep + en)
}

// URoc is Eq. 9, the harmonic mean of specificity and sensitivity; 0 where both are 0.
func (m GaussianUtilityModel) URoc(d float64) float64 {
	ep, en := m.erfs(d)
	if 2+ep-en == 0 {
		return 0
	}
	return (1 + ep) * (1 - en) / (2 + ep - en)
}

// UPR is Eq. 10, the harmonic mean of precision and recall (F1).
func (m GaussianUtilityModel) UPR(d float64) float64 {
	ep, en := m.erfs(d)
	return 2 * (1 + ep) / (4 + ep + en)
}

// Curves samples U_roc and U_pr at n+1 equally spaced distances from lo to hi inclusive (for Fig. 7).
func (m GaussianUtilityModel) Curves(lo, hi float64, n int) (dist, uroc, upr []float64, err error) {
	if err := m.Validate(); err != nil {
		return nil, nil, nil, err
	}
	if n < 1 || !(hi > lo) {
		return nil, nil, nil, fmt.Errorf("metrics.GaussianUtilityModel.Curves: want n ≥ 1 and hi > lo, got n=%d, [%v, %v]", n, lo, hi)
	}
	for k := 0; k <= n; k++ {
		v := lo + float64(k)*(hi-lo)/float64(n)
		dist = append(dist, v)
		uroc = append(uroc, m.URoc(v))
		upr = append(upr, m.UPR(v))
	}
	return dist, uroc, upr, nil
}
