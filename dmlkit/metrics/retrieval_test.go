package metrics

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

const retrievalTol = 1e-12

// retrievalAngles places unit vectors at the given angles (degrees) in 2-D, so cosine ranking is by angular
// distance and every ranking below can be read off a line.
func retrievalAngles(deg ...float64) []float32 {
	x := make([]float32, 0, 2*len(deg))
	for _, a := range deg {
		r := a * math.Pi / 180
		x = append(x, float32(math.Cos(r)), float32(math.Sin(r)))
	}
	return x
}

func retrievalCheck(t *testing.T, got map[string]float64, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing key %q (have %v)", k, got)
			continue
		}
		if math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %.12f, want %.12f", k, g, w)
		}
	}
}

// Hand-worked self-retrieval case. Samples at angles a=0°, b=10°, c=25°, d=55°, e=105°; labels
// a,b,e = 0 and c,d = 1; coarse labels a,b,c = 0 and d,e = 1. Rankings (angular distance, self excluded):
//
//	a (0): b10+ c25− d55− e105+     P=2   positives at ranks 1,4
//	b (0): a10+ c15− d45− e95+      P=2   ranks 1,4
//	c (1): b15− a25− d30+ e80−      P=1   rank 3
//	d (1): c30+ b45− e50− a55−      P=1   rank 1
//	e (0): d50− c80− b95+ a105+     P=2   ranks 3,4
//
// R@1   = (1+1+0+1+0)/5 = 0.6;  R@2 = 0.6;  R@4 = 1
// Recall@1 = (.5+.5+0+1+0)/5 = 0.4;  Recall@2 = 0.4;  Recall@4 = (1+1+1+1+1)/5 = 1
// MAP@R: a: R=2, top2 = +− → (1/1)/2 = .5; b .5; c: R=1, top1 − → 0; d: 1; e: top2 −− → 0 → 2/5 = 0.4
// R-Precision: .5, .5, 0, 1, 0 → 0.4
// mAP@2 (÷min(2,P)): a 1/2, b 1/2, c 0/1, d 1/1, e 0/2 → 0.4
// mAP@4: a (1/1+2/4)/2 = .75, b .75, c (1/3)/1, d 1, e (1/3+2/4)/2 = 5/12 → (1.5+1/3+1+5/12)/5 = 0.65
// mAP (full ranking) = mAP@4 here (every positive is within 4) = 0.65
// HR@1 (coarse): a→b ✓, b→a ✓, c→b ✓, d→c ✗ (0 vs 1), e→d ✓ → 0.8;  HR@2: d's c,b ✗ → 0.8;  HR@4 = 1
func TestRetrievalHandWorked(t *testing.T) {
	emb := retrievalAngles(0, 10, 25, 55, 105)
	labels := []int64{0, 0, 1, 1, 0}
	coarse := []int64{0, 0, 0, 1, 1}
	got, err := Retrieval(emb, 5, 2, labels, Options{K: []int{1, 2, 4}, MAPAtK: []int{2, 4}, FullMAP: true, Coarse: coarse})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{
		"R@1": 0.6, "R@2": 0.6, "R@4": 1, "Recall@1": 0.4, "Recall@2": 0.4, "Recall@4": 1,
		"MAP@R": 0.4, "R-Precision": 0.4, "mAP@2": 0.4, "mAP@4": 0.65, "mAP": 0.65,
		"HR@1": 0.8, "HR@2": 0.8, "HR@4": 1, "n_queries": 5, "n_skipped": 0, "n_skipped_coarse": 0,
	})
}

// A class of size 1 has no positive once the query is excluded: it is skipped, counted, and never NaN.
// Samples on a line (inner product, d = 1): values 3, 2, 1, −1 with labels 0, 0, 1, 2.
//
//	q0 (3): ranking 2(idx1,+) 1(idx2) −1(idx3) → hit at rank 1, AP = 1
//	q1 (2): ranking 3(idx0,+) …                → hit at rank 1, AP = 1
//	q2, q3: alone in their class → skipped (n_skipped = 2)
//
// R@1 = 1, Recall@1 = 1, MAP@R = 1, mAP = 1 over the 2 evaluated queries.
func TestRetrievalSkipsClassesOfSizeOne(t *testing.T) {
	emb := []float32{3, 2, 1, -1}
	got, err := Retrieval(emb, 4, 1, []int64{0, 0, 1, 2}, Options{K: []int{1}, Similarity: InnerProduct, FullMAP: true})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"R@1": 1, "Recall@1": 1, "MAP@R": 1, "mAP": 1, "n_skipped": 2, "n_queries": 4})
	for k, v := range got {
		if math.IsNaN(v) {
			t.Errorf("%s is NaN", k)
		}
	}
	if _, err := Retrieval(emb[:2], 2, 1, []int64{0, 1}, Options{K: []int{1}, Similarity: InnerProduct}); err == nil {
		t.Error("all queries alone in their class: want an error")
	}
}

// Ties: inner product with d = 1 and equal reference values; the smaller reference index wins.
// Query/gallery: q = [1] (label 7); gallery values 2 (label 3), 2 (label 7), 2 (label 3), 1 (label 7).
// Ranking: idx0 (−), idx1 (+), idx2 (−), idx3 (+): three-way tie at score 2 broken by index.
//
//	R@1 = 0, R@2 = 1; Recall@2 = 1/2; MAP@R (R = 2): top2 = −+ → (1/2)/2 = 0.25; R-Precision = 1/2
//	mAP (full): positives at ranks 2 and 4 → (1/2 + 2/4)/2 = 0.5
//
// The query is not part of the gallery, so nothing is excluded and its positive count is 2.
func TestRetrievalQGTies(t *testing.T) {
	got, err := RetrievalQG([]float32{1}, 1, []float32{2, 2, 2, 1}, 4, 1, []int64{7}, []int64{3, 7, 3, 7},
		Options{K: []int{1, 2}, Similarity: InnerProduct, FullMAP: true})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"R@1": 0, "R@2": 1, "Recall@2": 0.5, "MAP@R": 0.25, "R-Precision": 0.5, "mAP": 0.5})
}

// In query/gallery mode a query whose only positive is an identical copy of itself in the gallery keeps it
// (no self-exclusion): R@1 = 1. In self-retrieval the same sample would be skipped.
func TestRetrievalQGOnlyPositiveIsItself(t *testing.T) {
	q := []float32{0.6, 0.8}
	g := []float32{0.6, 0.8, 1, 0, 0, 1}
	got, err := RetrievalQG(q, 1, g, 3, 2, []int64{5}, []int64{5, 1, 2}, Options{K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"R@1": 1, "Recall@1": 1, "MAP@R": 1, "n_skipped": 0})
}

func retrievalClustered(rng *rand.Rand, classes, per, d int, noise float64) ([]float32, []int64) {
	var x []float32
	var l []int64
	for c := 0; c < classes; c++ {
		centre := make([]float64, d)
		for t := range centre {
			centre[t] = rng.NormFloat64()
		}
		n := 1 + rng.IntN(per)
		for j := 0; j < n; j++ {
			for t := range centre {
				x = append(x, float32(centre[t]+noise*rng.NormFloat64()))
			}
			l = append(l, int64(c))
		}
	}
	return x, l
}

// Permuting the samples (with their labels) leaves every metric unchanged; R@k and Recall@k are
// non-decreasing in k.
func TestRetrievalPermutationInvarianceAndMonotonicity(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	d := 16
	x, l := retrievalClustered(rng, 40, 6, d, 1.5)
	n := len(l)
	ks := []int{1, 2, 3, 5, 8, 13, 21}
	opt := Options{K: ks, MAPAtK: []int{5, 10}, FullMAP: true, Coarse: make([]int64, n)}
	for i := range opt.Coarse {
		opt.Coarse[i] = l[i] % 4
	}
	a, err := Retrieval(x, n, d, l, opt)
	if err != nil {
		t.Fatal(err)
	}
	perm := rng.Perm(n)
	px := make([]float32, len(x))
	pl := make([]int64, n)
	pc := make([]int64, n)
	for i, p := range perm {
		copy(px[i*d:(i+1)*d], x[p*d:(p+1)*d])
		pl[i] = l[p]
		pc[i] = opt.Coarse[p]
	}
	opt.Coarse = pc
	b, err := Retrieval(px, n, d, pl, opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != len(b) {
		t.Fatalf("key sets differ: %v vs %v", a, b)
	}
	for k, v := range a {
		if math.Abs(v-b[k]) > retrievalTol {
			t.Errorf("%s: %v before permutation, %v after", k, v, b[k])
		}
	}
	for i := 1; i < len(ks); i++ {
		for _, p := range []string{"R@", "Recall@", "HR@"} {
			lo, hi := a[p+strconv.Itoa(ks[i-1])], a[p+strconv.Itoa(ks[i])]
			if hi < lo {
				t.Errorf("%s not monotone: k=%d %v > k=%d %v", p, ks[i-1], lo, ks[i], hi)
			}
		}
	}
	if a["n_skipped"] == 0 {
		t.Log("note: no singleton class drawn")
	}
}

// Full mAP from the blocked rank counting equals a brute-force float64 full sort on random clustered data
// (continuous values: no exact ties, and float32 rounding is far below the gaps at this size).
func TestRetrievalFullMAPMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	d := 12
	x, l := retrievalClustered(rng, 30, 7, d, 2)
	n := len(l)
	got, err := Retrieval(x, n, d, l, Options{K: []int{1}, FullMAP: true, QueryBlock: 5, RefBlock: 19})
	if err != nil {
		t.Fatal(err)
	}
	idx, _ := knnBrute(x, n, x, n, d, n-1, Cosine, true)
	var sum float64
	used := 0
	for i := 0; i < n; i++ {
		found := 0
		var ap float64
		for r := 0; r < n-1; r++ {
			if l[idx[i*(n-1)+r]] == l[i] {
				found++
				ap += float64(found) / float64(r+1)
			}
		}
		if found > 0 {
			sum += ap / float64(found)
			used++
		}
	}
	if want := sum / float64(used); math.Abs(got["mAP"]-want) > 1e-12 {
		t.Fatalf("mAP = %v, brute force %v", got["mAP"], want)
	}
}

func TestPositiveCounts(t *testing.T) {
	got := PositiveCounts([]int64{1, 1, 2, 3}, []int64{1, 1, 2, 3}, true)
	want := []int{1, 1, 0, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("self: %v, want %v", got, want)
		}
	}
	got = PositiveCounts([]int64{1, 9}, []int64{1, 1, 2}, false)
	if got[0] != 2 || got[1] != 0 {
		t.Fatalf("query/gallery: %v, want [2 0]", got)
	}
}

// TestRetrievalFullMAPTiesManyPositives: the exact mAP with many positives per query (12, past the
// last few; 40 and 150, through the positives' bucket table) and scores that tie often (small integer
// vectors under the inner product, exact in float32) or not at all (Gaussian rows, cosine), against the
// brute-force ranking with ties broken by reference index.
func TestRetrievalFullMAPTiesManyPositives(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, c := range []struct {
		classes, per, d int
		ties            bool
	}{{9, 12, 3, true}, {5, 40, 3, true}, {3, 150, 4, true}, {4, 40, 8, false}, {2, 150, 8, false}} {
		n, d := c.classes*c.per, c.d
		x := make([]float32, n*d)
		l := make([]int64, n)
		for i := range l {
			l[i] = int64(i / c.per)
			for k := 0; k < d; k++ {
				if c.ties {
					x[i*d+k] = float32(rng.IntN(3) - 1 + int(l[i])%2)
				} else {
					x[i*d+k] = float32(rng.NormFloat64() + 0.3*float64(l[i]%2))
				}
			}
		}
		sim := InnerProduct
		if !c.ties {
			sim = Cosine
		}
		got, err := Retrieval(x, n, d, l, Options{K: []int{1}, Similarity: sim, FullMAP: true, QueryBlock: 7, RefBlock: 13})
		if err != nil {
			t.Fatal(err)
		}
		idx, _ := knnBrute(x, n, x, n, d, n-1, sim, true)
		var sum float64
		for i := 0; i < n; i++ {
			found := 0
			var ap float64
			for r := 0; r < n-1; r++ {
				if l[idx[i*(n-1)+r]] == l[i] {
					found++
					ap += float64(found) / float64(r+1)
				}
			}
			sum += ap / float64(found)
		}
		if want := sum / float64(n); math.Abs(got["mAP"]-want) > 1e-12 {
			t.Errorf("%d classes of %d (ties %v): mAP = %v, brute force %v", c.classes, c.per, c.ties, got["mAP"], want)
		}
	}
}
