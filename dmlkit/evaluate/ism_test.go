package evaluate

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// ismBrutePair is the introspective score of rows i, j worked out from the definitions (Eq. 5, 6,
// 19, 20) without the ‖u_i + u_j‖² expansion ISMNeighbors uses: α = ‖ŝ_i − ŝ_j‖, β = ‖u_i + u_j‖.
func ismBrutePair(si, sj, ui, uj []float64, opt ISMOptions) float64 {
	unit := func(x []float64) []float64 {
		n := 0.0
		for _, v := range x {
			n += v * v
		}
		out := make([]float64, len(x))
		for k, v := range x {
			out[k] = v / math.Sqrt(n)
		}
		return out
	}
	a, b := unit(si), unit(sj)
	var alpha2, c float64
	for k := range a {
		alpha2 += (a[k] - b[k]) * (a[k] - b[k])
		c += a[k] * b[k]
	}
	alpha := math.Sqrt(alpha2)
	if opt.CodeMetric {
		ui, uj = unit(ui), unit(uj)
	}
	var beta2 float64
	for k := range ui {
		beta2 += (ui[k] + uj[k]) * (ui[k] + uj[k])
	}
	r := (math.Sqrt(beta2) + opt.Gamma) / alpha
	if opt.CodeMetric {
		r = (beta2 + opt.Gamma) / alpha2
	}
	e := math.Exp(-r / opt.Tau)
	switch {
	case opt.Form == "dist" && opt.Metric == "dis":
		return -math.Sqrt(2 - 2*c*e)
	case opt.Form == "dist":
		return -alpha * e
	case opt.Metric == "dis":
		return c * e
	}
	return 1 - (1-c)*e
}

// ismBruteRetrieval ranks every other row by ismBrutePair (ties: smaller index) and computes R@k,
// MAP@R and R-Precision from their definitions (Musgrave et al. 2020): R@k = 1 when a positive is
// among the first k; with R positives, R-Precision = |positives in the first R| / R and MAP@R =
// (1/R) Σ_{i ≤ R, i-th is positive} precision@i.
func ismBruteRetrieval(s, u [][]float64, labels []int64, ks []int, opt ISMOptions) map[string]float64 {
	n := len(s)
	out := map[string]float64{}
	used := 0
	for q := 0; q < n; q++ {
		var order []int
		score := map[int]float64{}
		for j := 0; j < n; j++ {
			if j != q {
				order = append(order, j)
				score[j] = ismBrutePair(s[q], s[j], u[q], u[j], opt)
			}
		}
		sort.SliceStable(order, func(a, b int) bool { return score[order[a]] > score[order[b]] })
		r := 0
		for _, j := range order {
			if labels[j] == labels[q] {
				r++
			}
		}
		if r == 0 {
			continue
		}
		used++
		for _, k := range ks {
			hit := 0.0
			for _, j := range order[:k] {
				if labels[j] == labels[q] {
					hit = 1
				}
			}
			out[ismKey(k)] += hit
		}
		tp, ap := 0, 0.0
		for i, j := range order[:r] {
			if labels[j] == labels[q] {
				tp++
				ap += float64(tp) / float64(i+1)
			}
		}
		out["MAP@R"] += ap / float64(r)
		out["R-Precision"] += float64(tp) / float64(r)
	}
	for k := range out {
		out[k] /= float64(used)
	}
	return out
}

func ismKey(k int) string { return "R@" + string(rune('0'+k)) }

func ismFlat(rows [][]float64) []float32 {
	var out []float32
	for _, r := range rows {
		for _, v := range r {
			out = append(out, float32(v))
		}
	}
	return out
}

// TestISMRetrievalHandWorked: query x0 = (1, 0); its positive x1 = (0.6, 0.8) has cosine 0.6 and
// no uncertainty; the negative x2 = (0, 1) has cosine 0 but ‖u‖ = 3; x3 = (−1, 0) is class 1 as x2.
// With τ = 1, γ = 0: C_IN(x0, x2) = 1 − 1·exp(−3/√2) = 0.880127 > C_IN(x0, x1) = 0.6, so ISM
// ranks the negative first (x0's R@1 falls from 1 to 0); D_IN(x0, x2) = √2·exp(−3/√2) = 0.169526
// < D_IN(x0, x1) = α = √0.8 does the same in the distance form.
func TestISMRetrievalHandWorked(t *testing.T) {
	s := [][]float64{{1, 0}, {0.6, 0.8}, {0, 1}, {-1, 0}}
	u := [][]float64{{0}, {0}, {3}, {0}}
	labels := []int64{0, 0, 1, 1}
	opt := ISMOptions{Tau: 1, Gamma: 0}
	want := 1 - math.Exp(-3/math.Sqrt2)
	if got := ISMPairScore(0, 9, opt); math.Abs(got-want) > 1e-12 || math.Abs(got-0.880127) > 1e-6 {
		t.Fatalf("C_IN(x0, x2) = %.9g, want %.9g", got, want)
	}
	if got := ISMPairScore(0, 9, ISMOptions{Tau: 1, Form: "dist"}); math.Abs(got+0.169526) > 1e-6 {
		t.Fatalf("−D_IN(x0, x2) = %.9g, want −0.169526", got)
	}
	nb, err := ISMNeighbors(ismFlat(s), ismFlat(u), 4, 2, 1, 3, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Row x0: x2 (0.88009), x1 (0.6), x3 (−1: β = 0, so C_IN = C).
	if idx, sc := nb.Row(0); idx[0] != 2 || idx[1] != 1 || idx[2] != 3 || math.Abs(float64(sc[1])-0.6) > 1e-6 || sc[2] != -1 {
		t.Errorf("x0's neighbours %v %v, want [2 1 3] with scores [0.880 0.6 −1]", idx, sc)
	}
	// ISM first neighbours: x0 → x2 (0.880) miss; x1 → x2 (1 − 0.2·e^{−3/√0.4} = 0.998258 beats
	// x0's 0.6) miss; x2 → x1 (0.998258) miss; x3 → x2 (0.880 beats x1's −0.6) hit: R@1 = 1/4. The
	// cosine ranking (no uncertainty): x0 → x1 (0.6) hit, x1 → x2 (0.8) miss, x2 → x1 miss,
	// x3 → x2 (0 beats −0.6) hit: 2/4.
	m, err := ISMRetrieval(ismFlat(s), ismFlat(u), 4, 2, 1, labels, ISMOptions{Tau: 1, K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if m["R@1"] != 0.25 {
		t.Errorf("ISM R@1 = %g, want 0.25", m["R@1"])
	}
	plain, err := ISMRetrieval(ismFlat(s), ismFlat([][]float64{{0}, {0}, {0}, {0}}), 4, 2, 1, labels, ISMOptions{Tau: 1, K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if plain["R@1"] != 0.5 {
		t.Errorf("R@1 without uncertainty (the cosine ranking) = %g, want 0.5", plain["R@1"])
	}
	if _, err := ISMRetrieval(ismFlat(s), ismFlat(u), 4, 2, 1, labels, ISMOptions{}); err == nil {
		t.Error("tau 0 accepted")
	}
}

// TestISMRetrievalMatchesBruteForce: on random sets (5 classes × 6 rows, 7-d semantic and 3-d
// uncertainty embeddings), every metric of ISMRetrieval equals the brute-force ranking's for both
// forms, both metrics, γ > 0 and the code's variant; one worker or three give the same lists.
func TestISMRetrievalMatchesBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	n, d, du := 30, 7, 3
	s, u := make([][]float64, n), make([][]float64, n)
	labels := make([]int64, n)
	for i := range s {
		s[i], u[i] = make([]float64, d), make([]float64, du)
		for k := range s[i] {
			s[i][k] = r.NormFloat64()
		}
		for k := range u[i] {
			u[i][k] = 0.5 * r.NormFloat64()
		}
		labels[i] = int64(i % 5)
	}
	ks := []int{1, 2, 4}
	for _, opt := range []ISMOptions{
		{Tau: 5, Gamma: 0},
		{Tau: 1, Gamma: 0.5, Form: "dist"},
		{Tau: 2, Gamma: 0, Metric: "dis"},
		{Tau: 2, Gamma: 0.3, Metric: "dis", Form: "dist"},
		{Tau: 5, Gamma: 4, CodeMetric: true},
	} {
		opt.K = ks
		got, err := ISMRetrieval(ismFlat(s), ismFlat(u), n, d, du, labels, opt)
		if err != nil {
			t.Fatal(err)
		}
		want := ismBruteRetrieval(s, u, labels, ks, opt)
		for k, w := range want {
			if math.Abs(got[k]-w) > 1e-12 {
				t.Errorf("%+v: %s = %.15g, brute force %.15g", opt, k, got[k], w)
			}
		}
		one, three := opt, opt
		one.Workers, three.Workers = 1, 3
		a, _ := ISMNeighbors(ismFlat(s), ismFlat(u), n, d, du, n-1, one)
		b, _ := ISMNeighbors(ismFlat(s), ismFlat(u), n, d, du, n-1, three)
		for i := range a.Index {
			if a.Index[i] != b.Index[i] {
				t.Fatalf("%+v: 1 and 3 workers differ at %d", opt, i)
			}
		}
	}
}

func TestMeanRowNorm(t *testing.T) {
	// Rows (3, 4), (0, 0), (1, 0): norms 5, 0, 1 → mean 2 (exact in float64).
	if got := MeanRowNorm([]float32{3, 4, 0, 0, 1, 0}, 2); got != 2 {
		t.Errorf("MeanRowNorm = %v, want 2", got)
	}
	if got := MeanRowNorm(nil, 3); got != 0 {
		t.Errorf("MeanRowNorm of no rows = %v, want 0", got)
	}
}
