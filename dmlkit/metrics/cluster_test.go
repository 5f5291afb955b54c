package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterBruteMI computes MI from its definition with plain maps (independent of clusterContingencyOf).
func clusterBruteMI(a, b []int64) float64 {
	n := float64(len(a))
	ca, cb, cab := map[int64]float64{}, map[int64]float64{}, map[[2]int64]float64{}
	for i := range a {
		ca[a[i]]++
		cb[b[i]]++
		cab[[2]int64{a[i], b[i]}]++
	}
	var mi float64
	for k, c := range cab {
		mi += c / n * math.Log(n*c/(ca[k[0]]*cb[k[1]]))
	}
	return mi
}

func clusterBruteH(a []int64) float64 {
	c := map[int64]float64{}
	for _, v := range a {
		c[v]++
	}
	var h float64
	for _, v := range c {
		p := v / float64(len(a))
		h -= p * math.Log(p)
	}
	return h
}

// clusterBruteAMI computes E[MI] as the average MI over all n! orderings of b (the permutation model behind the
// hypergeometric formula), then AMI = (MI − E)/(mean H − E).
func clusterBruteAMI(a, b []int64) float64 {
	n := len(b)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	var sum float64
	count := 0
	pb := make([]int64, n)
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			for i, p := range perm {
				pb[i] = b[p]
			}
			sum += clusterBruteMI(a, pb)
			count++
			return
		}
		for i := k; i < n; i++ {
			perm[k], perm[i] = perm[i], perm[k]
			rec(k + 1)
			perm[k], perm[i] = perm[i], perm[k]
		}
	}
	rec(0)
	emi := sum / float64(count)
	return (clusterBruteMI(a, b) - emi) / ((clusterBruteH(a)+clusterBruteH(b))/2 - emi)
}

func TestNMIAMIKnownValues(t *testing.T) {
	mustNMI := func(a, b []int64) float64 {
		v, err := NMI(a, b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	mustAMI := func(a, b []int64) float64 {
		v, err := AMI(a, b)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// scikit-learn docstring examples.
	opisNear(t, "AMI identical", mustAMI([]int64{0, 0, 1, 1}, []int64{0, 0, 1, 1}), 1, 1e-15)
	opisNear(t, "AMI renamed", mustAMI([]int64{0, 0, 1, 1}, []int64{1, 1, 0, 0}), 1, 1e-15)
	opisNear(t, "NMI renamed", mustNMI([]int64{0, 0, 1, 1}, []int64{1, 1, 0, 0}), 1, 1e-15)
	opisNear(t, "AMI all split", mustAMI([]int64{0, 0, 0, 0}, []int64{0, 1, 2, 3}), 0, 1e-15)
	opisNear(t, "NMI all split", mustNMI([]int64{0, 0, 0, 0}, []int64{0, 1, 2, 3}), 0, 0)
	opisNear(t, "NMI single clusters", mustNMI([]int64{5, 5, 5}, []int64{2, 2, 2}), 1, 0)
	opisNear(t, "AMI single clusters", mustAMI([]int64{5, 5, 5}, []int64{2, 2, 2}), 1, 0)

	// [0,0,1,1] vs [0,0,1,2] by hand: contingency rows {2,0,0},{0,1,1}; a = (2,2), b = (2,1,1), N = 4.
	// MI = (2/4)ln(4·2/(2·2)) + 2·(1/4)ln(4·1/(2·1)) = ln 2 ≈ 0.693147; H(a) = ln 2; H(b) = 1.5 ln 2.
	// NMI = ln2 / (1.25 ln2) = 0.8.
	// E[MI] by enumerating the 6 distinct placements of b's singletons {1},{2} over 4 positions (the 2's block
	// fills the rest): both singletons in the same a-class (2 of 6 placements, contingency {2,0,0},{0,1,1} up to
	// renaming): MI = ln 2; split across a-classes (4 of 6): contingency {1,1,0},{1,0,1}: MI = 2·(1/4)ln(4/4) +
	// 2·(1/4)ln(4/2) = 0.5 ln 2. E = (2·ln2 + 4·0.5ln2)/6 = (2/3) ln 2.
	// AMI = (ln2 − (2/3)ln2)/(1.25 ln2 − (2/3)ln2) = (1/3)/(7/12) = 4/7 ≈ 0.571429.
	a, b := []int64{0, 0, 1, 1}, []int64{0, 0, 1, 2}
	opisNear(t, "NMI([0,0,1,1],[0,0,1,2])", mustNMI(a, b), 0.8, 1e-15)
	opisNear(t, "AMI([0,0,1,1],[0,0,1,2])", mustAMI(a, b), 4.0/7, 1e-14)
	opisNear(t, "AMI brute force", clusterBruteAMI(a, b), 4.0/7, 1e-14)

	// scikit-learn user guide (clustering evaluation): labels_true = [0,0,0,1,1,1], labels_pred = [0,0,1,1,2,2].
	// The guide printed adjusted_mutual_info_score = 0.22504… while the default normaliser was max(H(U), H(V))
	// (scikit-learn < 0.22); with today's arithmetic mean it prints 0.29879… . Check both through E[MI].
	// NMI by hand: MI = (2/3) ln 2, H = ln 2 and ln 3 → NMI = (2/3)ln2 / ((ln2+ln3)/2) ≈ 0.515803.
	u, v := []int64{0, 0, 0, 1, 1, 1}, []int64{0, 0, 1, 1, 2, 2}
	opisNear(t, "AMI user guide (arithmetic)", mustAMI(u, v), 0.29879, 5e-6)
	emi := clusterEMI([]int{3, 3}, []int{2, 2, 2}, 6)
	opisNear(t, "AMI user guide (max, old default)", ((2.0/3)*math.Ln2-emi)/(math.Log(3)-emi), 0.22504, 5e-6)
	opisNear(t, "AMI user guide brute force", clusterBruteAMI(u, v), mustAMI(u, v), 1e-13)
	opisNear(t, "NMI user guide", mustNMI(u, v), (2.0/3)*math.Ln2/((math.Ln2+math.Log(3))/2), 1e-15)
}

func TestAMIBruteForceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for range 15 {
		n := 3 + rng.IntN(5) // ≤ 7! = 5040 permutations
		a, b := make([]int64, n), make([]int64, n)
		for i := range n {
			a[i] = int64(rng.IntN(3))
			b[i] = int64(10 + rng.IntN(4))
		}
		got, err := AMI(a, b)
		if err != nil {
			t.Fatal(err)
		}
		if clusterBruteH(a) == 0 && clusterBruteH(b) == 0 {
			continue // both single clusters: special case 1.0, tested above
		}
		want := clusterBruteAMI(a, b)
		if den := (clusterBruteH(a) + clusterBruteH(b)) / 2; den < 1e-12 {
			continue
		}
		if math.IsNaN(want) || math.IsInf(want, 0) {
			// Expectation equals the normaliser (one labeling is constant): scikit-learn clamps the
			// denominator to ±eps; only check our value is finite.
			if math.IsNaN(got) || math.IsInf(got, 0) {
				t.Errorf("AMI(%v, %v) = %v", a, b, got)
			}
			continue
		}
		opisNear(t, "AMI vs permutation brute force", got, want, 1e-12)
		nmi, _ := NMI(a, b)
		if mi := clusterBruteMI(a, b); mi > 1e-15 {
			opisNear(t, "NMI vs brute force", nmi, mi/((clusterBruteH(a)+clusterBruteH(b))/2), 1e-12)
		}
		// Symmetry and renaming invariance.
		ba, _ := AMI(b, a)
		opisNear(t, "AMI symmetric", ba, got, 1e-12)
		ren := make([]int64, n)
		for i := range a {
			ren[i] = 100 - 7*a[i]
		}
		r, _ := AMI(ren, b)
		opisNear(t, "AMI renamed", r, got, 1e-12)
	}
}

// Independent random labelings: AMI ≈ 0 (its expectation is 0), while NMI is biased upwards by the many clusters.
// With n = 20,000 and ~4,000 clusters per side the EMI sum has 4000² (i, j) terms before grouping by size.
func TestAMIIndependentLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	n := 20000
	a, b := make([]int64, n), make([]int64, n)
	for i := range n {
		a[i] = int64(rng.IntN(4000))
		b[i] = int64(rng.IntN(4000))
	}
	start := time.Now()
	ami, err := AMI(a, b)
	if err != nil {
		t.Fatal(err)
	}
	nmi, _ := NMI(a, b)
	t.Logf("n=%d: AMI %.4g NMI %.4g in %v", n, ami, nmi, time.Since(start))
	if math.Abs(ami) > 0.01 {
		t.Errorf("AMI of independent labelings = %v, want ≈ 0", ami)
	}
	if nmi < 0.3 {
		t.Errorf("NMI = %v; expected the known upward bias (> 0.3) with ~5 items per cluster", nmi)
	}
}

func TestNMIAMIErrors(t *testing.T) {
	if _, err := NMI([]int64{1, 2}, []int64{1}); err == nil || !strings.Contains(err.Error(), "lengths 2 and 1") {
		t.Errorf("NMI length mismatch: %v", err)
	}
	if _, err := AMI(nil, nil); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("AMI empty: %v", err)
	}
}

// KMeans on 1-D points {0, 1, 10, 11}, K = 2: centroids 0.5 and 10.5, inertia 4·0.25 = 1.
func TestKMeansByHand(t *testing.T) {
	emb := []float32{0, 1, 10, 11}
	for _, init := range []KMeansInit{KMeansPlusPlus, KMeansRandomInit} {
		for seed := range uint64(5) {
			r, err := KMeans(emb, 4, 1, KMeansOptions{K: 2, Seed: seed, Init: init})
			if err != nil {
				t.Fatal(err)
			}
			if r.Assign[0] != r.Assign[1] || r.Assign[2] != r.Assign[3] || r.Assign[0] == r.Assign[2] {
				// Random init may start with both centroids in one pair; Lloyd still separates them here:
				// centroids {0,1} → assignment {0},{1,10,11} → means 0, 22/3 → {0,1},{10,11}.
				t.Errorf("init %d seed %d: assignment %v", init, seed, r.Assign)
				continue
			}
			c := []float64{r.Centroids[r.Assign[0]], r.Centroids[r.Assign[2]]}
			if !slices.Equal(c, []float64{0.5, 10.5}) || r.Inertia != 1 {
				t.Errorf("init %d seed %d: centroids %v inertia %v", init, seed, c, r.Inertia)
			}
		}
	}
}

// On well separated blobs KMeans (K = number of classes) recovers the classes; the result is a Lloyd fixed point
// (every centroid is the mean of its rows, every row is at its nearest centroid); same seed → same result.
func TestClusterScoresBlobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(51, 52))
	n, d, c := 300, 6, 10
	emb, labels := opisRandomClustered(rng, n, d, c, 0.02)
	var progress []int
	r, err := ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 1, Iterations: 50, Progress: func(done, total int) {
		progress = append(progress, done)
	}})
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "NMI", r.Metrics["NMI"], 1, 1e-12)
	opisNear(t, "AMI", r.Metrics["AMI"], 1, 1e-12)
	if len(progress) == 0 || progress[0] != 0 {
		t.Errorf("progress calls %v", progress)
	}
	km := r.KMeans
	if km.Iterations >= 50 {
		t.Errorf("did not converge in %d iterations", km.Iterations)
	}
	// Fixed point check with plain loops.
	sum := make([]float64, c*d)
	cnt := make([]int, c)
	var inertia float64
	for i := range n {
		a := km.Assign[i]
		cnt[a]++
		best, bestV := -1, math.Inf(1)
		for j := range c {
			var s float64
			for q := range d {
				e := float64(emb[i*d+q]) - km.Centroids[j*d+q]
				s += e * e
			}
			if s < bestV {
				best, bestV = j, s
			}
		}
		if best != a {
			t.Fatalf("row %d assigned to %d, nearest is %d", i, a, best)
		}
		inertia += bestV
		for q := range d {
			sum[a*d+q] += float64(emb[i*d+q])
		}
	}
	for j := range c {
		for q := range d {
			opisNear(t, "centroid = mean", km.Centroids[j*d+q], sum[j*d+q]/float64(cnt[j]), 1e-12)
		}
	}
	opisNear(t, "inertia", km.Inertia, inertia, 1e-9)

	again, err := KMeans(emb, n, d, KMeansOptions{K: c, Seed: 1, Iterations: 50, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Assign, km.Assign) {
		t.Error("same seed, different assignment")
	}
}

func TestKMeansErrorsAndEdgeCases(t *testing.T) {
	emb := []float32{0, 0, 0, 5}
	for _, tc := range []struct {
		name string
		opt  KMeansOptions
		emb  []float32
		n, d int
		want string
	}{
		{"K too large", KMeansOptions{K: 5}, emb, 4, 1, "K=5"},
		{"K zero", KMeansOptions{K: 0}, emb, 4, 1, "K=0"},
		{"shape", KMeansOptions{K: 2}, emb, 3, 1, "len(emb)"},
		{"NaN", KMeansOptions{K: 2}, []float32{0, float32(math.NaN()), 0, 5}, 4, 1, "row 1"},
		{"zero row normalised", KMeansOptions{K: 2, L2Normalize: true}, emb, 4, 1, "zero norm"},
	} {
		if _, err := KMeans(tc.emb, tc.n, tc.d, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// Duplicated rows and K = 3 > number of distinct points (2): no panic, every row at distance 0 from its
	// centroid, empty clusters re-seeded rather than producing NaN centroids.
	for _, init := range []KMeansInit{KMeansPlusPlus, KMeansRandomInit} {
		r, err := KMeans(emb, 4, 1, KMeansOptions{K: 3, Init: init})
		if err != nil {
			t.Fatal(err)
		}
		if r.Inertia != 0 {
			t.Errorf("init %d: inertia %v, want 0", init, r.Inertia)
		}
		for _, v := range r.Centroids {
			if math.IsNaN(v) {
				t.Errorf("init %d: NaN centroid %v", init, r.Centroids)
			}
		}
	}
	if _, err := ClusterScores(emb, 4, 1, []int64{1, 2}, KMeansOptions{}); err == nil {
		t.Error("ClusterScores with short labels: no error")
	}
}

// The blocked 2×2 assignment gives every row its nearest centroid (checked against a plain loop, up to rounding
// of near-ties) and does not depend on the number of workers (row block boundaries move with the chunking).
func TestKMeansAssignmentBlockedVsPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(61, 62))
	n, d, k := 203, 9, 71 // odd sizes exercise the 2×2 tails
	emb := make([]float32, n*d)
	for i := range emb {
		emb[i] = float32(rng.NormFloat64())
	}
	var ref *KMeansResult
	for _, w := range []int{1, 2, 3, 7} {
		r, err := KMeans(emb, n, d, KMeansOptions{K: k, Iterations: 3, Seed: 9, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = r
		} else if !slices.Equal(r.Assign, ref.Assign) || !slices.Equal(r.Centroids, ref.Centroids) {
			t.Fatalf("workers=%d: result differs from workers=1", w)
		}
	}
	for i := range n {
		minV := math.Inf(1)
		for j := range k {
			var s float64
			for q := range d {
				e := float64(emb[i*d+q]) - ref.Centroids[j*d+q]
				s += e * e
			}
			minV = min(minV, s)
		}
		a := ref.Assign[i]
		var s float64
		for q := range d {
			e := float64(emb[i*d+q]) - ref.Centroids[a*d+q]
			s += e * e
		}
		if s > minV+1e-12 {
			t.Fatalf("row %d: assigned centroid at %v, nearest at %v", i, s, minV)
		}
	}
}

// TestClusterScale times KMeans + NMI/AMI at CUB test scale (5,924 × 512, 100 classes). Heavy: DMLKIT_HEAVY=1.
// SOP scale is TestClusterScaleSOP.
func TestClusterScale(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") != "1" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	rng := rand.New(rand.NewPCG(71, 72))
	n, d := 5924, 512
	emb, labels := opisRandomClustered(rng, n, d, 100, 1.0)
	start := time.Now()
	r, err := ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CUB-scale k-means++ (K=100, %d iterations) + NMI/AMI: %v, NMI %.4f AMI %.4f", r.KMeans.Iterations,
		time.Since(start), r.NMI, r.AMI)
}

// kmeansBruteNearest is the plain float64 nearest-centroid search by squared distance (ties → smaller index).
func kmeansBruteNearest(x, c []float64, n, d, k int) (best []int, bestD, secondD []float64) {
	best, bestD, secondD = make([]int, n), make([]float64, n), make([]float64, n)
	for i := range n {
		b, bv, sv := -1, math.Inf(1), math.Inf(1)
		for j := range k {
			var s float64
			for q := range d {
				e := x[i*d+q] - c[j*d+q]
				s += e * e
			}
			if s < bv {
				b, bv, sv = j, s, bv
			} else if s < sv {
				sv = s
			}
		}
		best[i], bestD[i], secondD[i] = b, bv, sv
	}
	return
}

// The certified float32 search (kmeansAssigner.nearest) returns exactly the index of the float64 loop
// (kmeansAssign) for every row and worker count, and the nearest centroid of a brute-force float64 loop on
// squared distances except where the two nearest distances agree to 1e-12 relative (there the two float64
// formulas, ‖c‖² − 2x·c and Σ(x−c)², may round either way). Covers random data, clustered data, and planted
// near-ties (duplicated centroids, rows on the bisector of two centroids, a large common offset) that force the
// float64 fallback.
func TestKMeansCertifiedFloat32VsFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	type tc struct {
		name    string
		n, d, k int
		x, c    []float64
	}
	var cases []tc
	// Random Gaussian rows, random centroids.
	for _, sh := range [][3]int{{500, 33, 60}, {301, 7, 5}, {257, 130, 97}, {64, 1, 9}, {40, 3, 4}} {
		n, d, k := sh[0], sh[1], sh[2]
		x, c := make([]float64, n*d), make([]float64, k*d)
		for i := range x {
			x[i] = float64(float32(rng.NormFloat64()))
		}
		for i := range c {
			c[i] = rng.NormFloat64() * 0.7
		}
		cases = append(cases, tc{"random", n, d, k, x, c})
	}
	// Clustered rows (float32 inputs) with centroids = class means: the Lloyd situation.
	{
		n, d, k := 600, 64, 40
		emb, labels := opisRandomClustered(rng, n, d, k, 0.8)
		x := make([]float64, n*d)
		for i, v := range emb {
			x[i] = float64(v)
		}
		c := make([]float64, k*d)
		cnt := make([]float64, k)
		for i := range n {
			j := int(labels[i]-100) / 3
			cnt[j]++
			for q := range d {
				c[j*d+q] += x[i*d+q]
			}
		}
		for j := range k {
			for q := range d {
				c[j*d+q] /= cnt[j]
			}
		}
		cases = append(cases, tc{"clustered", n, d, k, x, c})
	}
	// Planted ties: centroids 3, 5, 7 and 9 are copies of centroid 0 (five equal scores: more than the 4
	// candidates, so rows near centroid 0 need the float64 fallback), rows on the bisector of centroids 1 and 2,
	// all with an offset of 1e3.
	{
		n, d, k := 200, 16, 12
		x, c := make([]float64, n*d), make([]float64, k*d)
		for i := range c {
			c[i] = rng.NormFloat64() + 1000
		}
		for _, j := range []int{3, 5, 7, 9} {
			copy(c[j*d:(j+1)*d], c[:d])
		}
		for i := range n {
			row := x[i*d : (i+1)*d]
			switch i % 3 {
			case 0: // exactly between centroids 1 and 2 (midpoint): a true tie
				for q := range d {
					row[q] = (c[d+q] + c[2*d+q]) / 2
				}
			case 1: // a copy of a centroid
				copy(row, c[(i%k)*d:(i%k+1)*d])
			default:
				for q := range d {
					row[q] = c[q] + 0.01*rng.NormFloat64()
				}
			}
		}
		cases = append(cases, tc{"ties", n, d, k, x, c})
	}
	// Float32-blind near-ties: centroids in groups of 2, 3 and 6 around common bases, 1e-6 apart (below float32
	// resolution of the scores, well above float64's): the groups of 2–3 are certified and decided by the
	// float64 re-scoring of the window, the groups of 6 overflow the 4 candidates and need the fallback.
	{
		n, d := 400, 24
		var c []float64
		for g, size := range []int{2, 3, 6, 2, 3, 6, 3, 2} {
			base := make([]float64, d)
			for q := range base {
				base[q] = rng.NormFloat64() + float64(g%3)
			}
			for range size {
				for q := range d {
					c = append(c, base[q]+1e-6*rng.NormFloat64())
				}
			}
		}
		k := len(c) / d
		x := make([]float64, n*d)
		for i := range n {
			j := rng.IntN(k)
			for q := range d {
				x[i*d+q] = float64(float32(c[j*d+q] + 0.05*rng.NormFloat64()))
			}
		}
		cases = append(cases, tc{"float32-blind", n, d, k, x, c})
	}
	for _, cs := range cases {
		n, d, k := cs.n, cs.d, cs.k
		assign, dist := make([]int, n), make([]float64, n)
		kmeansAssign(cs.x, cs.c, n, d, k, assign, dist, 1)
		bf, bfD, bf2 := kmeansBruteNearest(cs.x, cs.c, n, d, k)
		for _, w := range []int{1, 2, 5} {
			a := newKMeansAssigner(cs.x, n, d, w)
			got := a.nearest(cs.c, k)
			if k <= kmeansCandidates {
				if got != nil {
					t.Errorf("%s: k=%d ≤ %d should use the float64 loop", cs.name, k, kmeansCandidates)
				}
				continue
			}
			if got == nil {
				t.Fatalf("%s: float32 path refused", cs.name)
			}
			if !slices.Equal(got, assign) {
				for i := range n {
					if got[i] != assign[i] {
						t.Fatalf("%s workers=%d: row %d → %d, float64 loop → %d", cs.name, w, i, got[i], assign[i])
					}
				}
			}
			nearTies := 0
			for i := range n {
				if got[i] != bf[i] {
					if bf2[i]-bfD[i] > 1e-12*bfD[i]+1e-300 {
						t.Fatalf("%s: row %d → %d, brute force → %d (d² %v vs second %v)", cs.name, i, got[i], bf[i], bfD[i], bf2[i])
					}
					nearTies++
				}
			}
			if w == 1 {
				t.Logf("%s n=%d d=%d k=%d: %d rows scanned in float64, %d near-tie differences with the Σ(x−c)² brute force",
					cs.name, n, d, k, a.rows64, nearTies)
			}
			if (cs.name == "ties" || cs.name == "float32-blind") && a.rows64 == 0 {
				t.Errorf("%s: planted near-ties did not reach the float64 fallback", cs.name)
			}
			if cs.name == "ties" {
				for i := 0; i < n; i += 3 { // bisector rows: centroids 1 and 2 tie, smaller index wins
					if got[i] != 1 && got[i] != 2 {
						t.Errorf("ties: bisector row %d → %d", i, got[i])
					}
				}
				for i := range n { // copies of centroid 0 (= 3 = 5 = 7 = 9) and rows near it → 0
					if j := i % k; (i%3 == 2 || i%3 == 1 && slices.Contains([]int{0, 3, 5, 7, 9}, j)) && got[i] != 0 {
						t.Errorf("ties: copy of centroid %d → %d, want 0", j, got[i])
					}
				}
			}
		}
	}
}

// kmeansPlusPlusSetProbs enumerates the exact k-means++ probability of every set of chosen rows (sequential D²
// sampling, chosen rows excluded) for a tiny data set.
func kmeansPlusPlusSetProbs(x []float64, n, d, k int) map[string]float64 {
	out := map[string]float64{}
	var rec func(seq []int, p float64)
	rec = func(seq []int, p float64) {
		if len(seq) == k {
			s := slices.Clone(seq)
			slices.Sort(s)
			key := ""
			for _, v := range s {
				key += string(rune('a' + v))
			}
			out[key] += p
			return
		}
		w := make([]float64, n)
		var tot float64
		for i := range n {
			if slices.Contains(seq, i) {
				continue
			}
			w[i] = math.Inf(1)
			for _, c := range seq {
				w[i] = min(w[i], kmeansSqDist(x[i*d:(i+1)*d], x[c*d:(c+1)*d]))
			}
			tot += w[i]
		}
		for i := range n {
			if w[i] > 0 {
				rec(append(seq, i), p*w[i]/tot)
			}
		}
	}
	for i := range n {
		rec([]int{i}, 1/float64(n))
	}
	return out
}

// The lazy blocked k-means++ draws from exactly the k-means++ distribution: on 8 points with K = 6 (the
// pending-centre rejection step is exercised from the 5th centre on) the frequencies of the chosen sets over
// 30,000 seeds match the enumerated probabilities (chi-square, 27 sets: the statistic has mean ≈ 26, and the
// bound 80 is far in the tail). The sequential version is checked the same way as a control.
func TestKMeansPlusPlusLazyDistribution(t *testing.T) {
	n, d, k := 8, 2, 6
	x := []float64{0, 0, 1, 0, 0, 1, 5, 5, 5, 6, 9, 0, 9, 1, 3, 3}
	probs := kmeansPlusPlusSetProbs(x, n, d, k)
	key := func(c []float64) string {
		var idx []int
		for j := range k {
			for i := range n {
				if c[j*d] == x[i*d] && c[j*d+1] == x[i*d+1] {
					idx = append(idx, i)
				}
			}
		}
		slices.Sort(idx)
		s := ""
		for _, v := range idx {
			s += string(rune('a' + v))
		}
		return s
	}
	const runs = 30000
	for _, lazy := range []bool{true, false} {
		counts := map[string]float64{}
		for seed := range uint64(runs) {
			rng := rand.New(rand.NewPCG(seed, 7))
			var c []float64
			if lazy {
				c = kmeansPlusPlusLazyInit(newKMeansAssigner(x, n, d, 1), k, rng)
			} else {
				c = kmeansPlusPlusInit(x, n, d, k, rng, 1)
			}
			counts[key(c)]++
		}
		var chi2 float64
		for s, p := range probs {
			e := p * runs
			chi2 += (counts[s] - e) * (counts[s] - e) / e
		}
		for s := range counts {
			if _, ok := probs[s]; !ok {
				t.Errorf("lazy=%v: impossible set %q drawn %v times", lazy, s, counts[s])
			}
		}
		t.Logf("lazy=%v: chi² = %.1f over %d sets", lazy, chi2, len(probs))
		if chi2 > 80 {
			t.Errorf("lazy=%v: chi² = %.1f, the draws do not follow the k-means++ distribution", lazy, chi2)
		}
	}
}

// Forcing the lazy k-means++ (threshold 0) through KMeans: the blob classes are still recovered, the centres
// are distinct rows, the flushes use the float32 engine (K = 40 > 4 pending centres at a time), and the result
// does not depend on the number of workers.
func TestKMeansLazyInitEndToEnd(t *testing.T) {
	old := kmeansPlusPlusSequentialLimit
	kmeansPlusPlusSequentialLimit = 0
	defer func() { kmeansPlusPlusSequentialLimit = old }()
	rng := rand.New(rand.NewPCG(91, 92))
	n, d, c := 800, 12, 40
	emb, labels := opisRandomClustered(rng, n, d, c, 0.01)
	var ref *ClusterResult
	for _, w := range []int{1, 3} {
		r, err := ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 4, Iterations: 50, Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		if r.KMeans.InitMethod != "k-means++ (lazy, blocked)" {
			t.Fatalf("InitMethod %q", r.KMeans.InitMethod)
		}
		if r.KMeans.Float32Passes == 0 {
			t.Error("no float32 pass")
		}
		if ref == nil {
			ref = r
			t.Logf("lazy init: NMI %.6f AMI %.6f, %d iterations, %d float32 passes, %d rows in float64",
				r.NMI, r.AMI, r.KMeans.Iterations, r.KMeans.Float32Passes, r.KMeans.Float64Rows)
			// With 40 tight blobs k-means++ essentially always seeds one centre per blob.
			if r.NMI < 0.99 {
				t.Errorf("NMI %v", r.NMI)
			}
		} else if !slices.Equal(r.KMeans.Assign, ref.KMeans.Assign) || !slices.Equal(r.KMeans.Centroids, ref.KMeans.Centroids) {
			t.Errorf("workers=%d: result differs", w)
		}
	}
	// Direct check that the lazy centres are distinct rows.
	x := make([]float64, n*d)
	for i, v := range emb {
		x[i] = float64(v)
	}
	cs := kmeansPlusPlusLazyInit(newKMeansAssigner(x, n, d, 2), c, rand.New(rand.NewPCG(5, 6)))
	seen := map[string]bool{}
	for j := range c {
		key := ""
		for q := range d {
			key += strconv.FormatFloat(cs[j*d+q], 'g', -1, 64) + ","
		}
		if seen[key] {
			t.Fatalf("centre %d repeats an earlier one", j)
		}
		seen[key] = true
	}
}

// TestClusterScaleSOP runs ClusterScores (up to 20 Lloyd iterations, NMI/AMI) at SOP test scale, once with the
// default k-means++ (lazy blocked at this size) and once with random init (faiss/PML's default), on 60,502 × 512
// L2-normalised rows in 11,316 classes of 2–12 (knnBenchSOPData), K = 11,316 (both converge in a few
// iterations), then with k-means++ on structureless Gaussian rows of the same size (all 20 iterations), and
// spot-checks the final assignment of 300 rows of each against a brute-force float64 scan. Heavy:
// DMLKIT_HEAVY=1, e.g.
//
//	DMLKIT_HEAVY=1 go test -run TestClusterScaleSOP -v -timeout 60m ./dmlkit/metrics
//
// DMLKIT_HEAVY_N overrides the number of rows (classes scaled alike).
func TestClusterScaleSOP(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") != "1" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	n, d, classes := 60502, 512, 11316
	if s := os.Getenv("DMLKIT_HEAVY_N"); s != "" {
		n, _ = strconv.Atoi(s)
		classes = 11316 * n / 60502
	}
	emb, labels, _ := knnBenchSOPData(n, d, classes)
	t.Logf("data n=%d d=%d classes=%d kernel=%s GOMAXPROCS=%d", n, d, classes, KNNKernelName(), runtime.GOMAXPROCS(0))
	start, cpu0 := time.Now(), knnBenchCPU()
	last := start
	r, err := ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 1, Progress: func(done, total int) {
		t.Logf("  step %d/%d: %.1fs (+%.1fs)", done, total, time.Since(start).Seconds(), time.Since(last).Seconds())
		last = time.Now()
	}})
	if err != nil {
		t.Fatal(err)
	}
	km := r.KMeans
	t.Logf("SOP-scale %s (K=%d, %d iterations) + NMI/AMI: %.1fs wall, %.1fs CPU; NMI %.4f AMI %.4f; inertia %.6g; "+
		"%d float32 passes, %d rows scanned in float64, %d re-seeded",
		km.InitMethod, classes, km.Iterations, time.Since(start).Seconds(), knnBenchCPU()-cpu0, r.NMI, r.AMI,
		km.Inertia, km.Float32Passes, km.Float64Rows, km.Reseeded)
	clusterCheckSample(t, emb, n, d, km, 300)

	// Random init (faiss's default, as in PML) usually runs all 20 iterations: the full-length timing.
	start, cpu0 = time.Now(), knnBenchCPU()
	r, err = ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 1, Init: KMeansRandomInit})
	if err != nil {
		t.Fatal(err)
	}
	km = r.KMeans
	t.Logf("SOP-scale %s (K=%d, %d iterations) + NMI/AMI: %.1fs wall, %.1fs CPU; NMI %.4f AMI %.4f; inertia %.6g; "+
		"%d float32 passes, %d rows scanned in float64, %d re-seeded",
		km.InitMethod, classes, km.Iterations, time.Since(start).Seconds(), knnBenchCPU()-cpu0, r.NMI, r.AMI,
		km.Inertia, km.Float32Passes, km.Float64Rows, km.Reseeded)
	clusterCheckSample(t, emb, n, d, km, 300)

	// Worst case for the iteration count: structureless Gaussian rows (labels reused, meaningless), where Lloyd
	// keeps moving rows between clusters for all 20 iterations.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range emb {
		emb[i] = float32(rng.NormFloat64())
	}
	start, cpu0 = time.Now(), knnBenchCPU()
	r, err = ClusterScores(emb, n, d, labels, KMeansOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	km = r.KMeans
	t.Logf("SOP-size Gaussian noise, %s (K=%d, %d iterations) + NMI/AMI: %.1fs wall, %.1fs CPU; inertia %.6g; "+
		"%d float32 passes, %d rows scanned in float64, %d re-seeded",
		km.InitMethod, classes, km.Iterations, time.Since(start).Seconds(), knnBenchCPU()-cpu0,
		km.Inertia, km.Float32Passes, km.Float64Rows, km.Reseeded)
	clusterCheckSample(t, emb, n, d, km, 300)
}

// clusterCheckSample checks m evenly spaced rows against a brute-force float64 nearest-centroid scan of the final
// centroids (allowing only near-ties at 1e-12 relative) and the inertia against a plain recomputation.
func clusterCheckSample(t *testing.T, emb []float32, n, d int, km *KMeansResult, m int) {
	t.Helper()
	k := len(km.Centroids) / d
	x := make([]float64, d)
	for s := range m {
		i := s * n / m
		for q := range d {
			x[q] = float64(emb[i*d+q])
		}
		_, bD, _ := kmeansBruteNearest(x, km.Centroids, 1, d, k)
		a := km.Assign[i]
		got := kmeansSqDist(x, km.Centroids[a*d:(a+1)*d])
		if got > bD[0]*(1+1e-12) {
			t.Fatalf("row %d: assigned centroid at d² %v, nearest at %v", i, got, bD[0])
		}
	}
	var inertia float64
	for i := range n {
		a := km.Assign[i]
		for q := range d {
			x[q] = float64(emb[i*d+q])
		}
		inertia += kmeansSqDist(x, km.Centroids[a*d:(a+1)*d])
	}
	opisNear(t, "inertia", km.Inertia, inertia, 1e-9*inertia)
}
