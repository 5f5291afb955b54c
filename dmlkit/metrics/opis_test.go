package metrics

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// opisToyClasses is a two-class toy whose utilities are worked out by hand below. All distances are multiples
// of 1/8, so every comparison is exact in float64.
//
// Pooled negatives (A.Neg ∪ B.Neg) = {1,2,…,10}/8, M = 10. FAR 0.1 → ⌈0.1·10⌉ = 1st smallest → d_min = 0.125;
// FAR 0.5 → 5th smallest → d_max = 0.625. N = 4 → grid d = 0.25, 0.375, 0.5, 0.625.
//
// Class A: Pos {0.25, 0.5}: ψ = 1/2, 1/2, 1, 1.
//
//	Neg {0.375, 0.75, 1.0, 1.125}: FAR = 0, 1/4, 1/4, 1/4 → φ = 1, 3/4, 3/4, 3/4.
//	U_A = 2φψ/(φ+ψ) = (1/1.5 =) 2/3, (0.75/1.25 =) 3/5, (1.5/1.75 =) 6/7, 6/7.
//
// Class B: Pos {0.375, 1.0}: ψ = 0, 1/2, 1/2, 1/2.
//
//	Neg {0.125, 0.25, 0.5, 0.625, 0.875, 1.25}: FAR = 2/6, 2/6, 3/6, 4/6 → φ = 2/3, 2/3, 1/2, 1/3.
//	U_B = 0, (2/3)/(7/6) = 4/7, (1/2)/1 = 1/2, (1/3)/(5/6) = 2/5.
//
// ΔU = U_A − U_B = 2/3, 1/35, 5/14, 16/35; with T = 2 the population variance is ΔU²/4.
// Σ_j ΔU² = 4/9 + 1/1225 + 25/196 + 256/1225 = (19600 + 36 + 5625 + 9216)/44100 = 34477/44100.
// OPIS (integral)   = (1/N) Σ_j ΔU²/4 = 34477/705600 ≈ 0.048862.
// OPIS (Algorithm1) = Σ_j (ΔU²/4)/(d_max − d_min) = (34477/176400)/0.5 = 34477/88200 ≈ 0.39090 (= 8× integral).
// ε-OPIS, ε = 10%, T = 2 → groups of ⌈0.2⌉ = 1 class; A has the higher mean utility → best = A, worst = B,
// ε-OPIS (integral) = (1/N) Σ_j ΔU² = 34477/176400; Algorithm1: (34477/44100)/0.5 = 34477/22050.
func opisToyClasses() []OPISClassDistances {
	return []OPISClassDistances{
		{Class: 7, Pos: []float64{0.375, 1.0}, Neg: []float64{0.125, 0.25, 0.5, 0.625, 0.875, 1.25}}, // B
		{Class: 3, Pos: []float64{0.25, 0.5}, Neg: []float64{0.375, 0.75, 1.0, 1.125}},               // A
	}
}

func opisNear(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > tol {
		t.Errorf("%s = %.12g, want %.12g (tol %g)", name, got, want, tol)
	}
}

func TestOPISToyByHand(t *testing.T) {
	base := OPISOptions{FARMin: 0.1, FARMax: 0.5, GridN: 4}
	r, err := OPISFromDistances(opisToyClasses(), nil, base)
	if err != nil {
		t.Fatal(err)
	}
	// Exact rationals evaluated in float64: tolerance a few ulps.
	const tol = 1e-14
	opisNear(t, "DMin", r.DMin, 0.125, 0)
	opisNear(t, "DMax", r.DMax, 0.625, 0)
	if !slices.Equal(r.Thresholds, []float64{0.25, 0.375, 0.5, 0.625}) {
		t.Errorf("Thresholds = %v", r.Thresholds)
	}
	if !slices.Equal(r.Classes, []int64{3, 7}) {
		t.Fatalf("Classes = %v, want [3 7]", r.Classes)
	}
	wantUA := []float64{2.0 / 3, 3.0 / 5, 6.0 / 7, 6.0 / 7}
	wantUB := []float64{0, 4.0 / 7, 1.0 / 2, 2.0 / 5}
	wantPhiB := []float64{2.0 / 3, 2.0 / 3, 1.0 / 2, 1.0 / 3}
	wantPsiA := []float64{0.5, 0.5, 1, 1}
	for j := range 4 {
		opisNear(t, "U_A", r.Utility[j][0], wantUA[j], tol)
		opisNear(t, "U_B", r.Utility[j][1], wantUB[j], tol)
		opisNear(t, "φ_B", r.Specificity[j][1], wantPhiB[j], tol)
		opisNear(t, "ψ_A", r.Sensitivity[j][0], wantPsiA[j], tol)
		opisNear(t, "Ū", r.MeanUtility[j], (wantUA[j]+wantUB[j])/2, tol)
	}
	opisNear(t, "OPIS(integral)", r.OPIS, 34477.0/705600, tol)
	opisNear(t, "ε-OPIS(integral)", r.EpsOPIS, 34477.0/176400, tol)
	if m := r.Metrics(); m["OPIS"] != r.OPIS || m["10%-OPIS"] != r.EpsOPIS || len(m) != 2 {
		t.Errorf("Metrics() = %v", m)
	}
	if r.Convention != OPISNormIntegral {
		t.Errorf("Convention = %q", r.Convention)
	}
	if !slices.Equal(r.EpsBest, []int64{3}) || !slices.Equal(r.EpsWorst, []int64{7}) {
		t.Errorf("EpsBest %v EpsWorst %v, want [3] [7]", r.EpsBest, r.EpsWorst)
	}
	if r.NumPos != 4 || r.NumNeg != 10 || !slices.Equal(r.ClassNumNeg, []int{4, 6}) {
		t.Errorf("NumPos %d NumNeg %d ClassNumNeg %v", r.NumPos, r.NumNeg, r.ClassNumNeg)
	}

	alg := base
	alg.Convention = OPISNormAlgorithm1
	r1, err := OPISFromDistances(opisToyClasses(), nil, alg)
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "OPIS(Algorithm1)", r1.OPIS, 34477.0/88200, tol)
	opisNear(t, "ε-OPIS(Algorithm1)", r1.EpsOPIS, 34477.0/22050, 1e-13)
	if r1.Convention != OPISNormAlgorithm1 {
		t.Errorf("Convention = %q", r1.Convention)
	}

	lit := base
	lit.EpsOPISEq3Literal = true // U_ε halves → ε-OPIS quarters
	r2, err := OPISFromDistances(opisToyClasses(), nil, lit)
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "ε-OPIS(Eq.3 literal)", r2.EpsOPIS, 34477.0/705600, tol)
	opisNear(t, "OPIS unaffected by Eq.3 option", r2.OPIS, r.OPIS, 0)

	all := base
	all.Epsilon = 1 // best and worst groups are both {A, B} → ε-OPIS = 0
	r3, err := OPISFromDistances(opisToyClasses(), nil, all)
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "ε-OPIS(ε=1)", r3.EpsOPIS, 0, 0)
}

// TestOPISEpsPooling checks the pooled (micro-averaged) φ, ψ of an ε group with 2 classes.
// Four classes, grid of N = 1 threshold: pooled negatives {1..10}/8, FARMin 0.1 → d_min = 0.125,
// FARMax 0.2 → d_max = 0.25, N = 1 → single threshold d_1 = 0.25.
//
//	class 1: Pos {0.125}          Neg {0.125, 1.25}       ψ=1,   FAR=1/2 → φ=1/2, U = 2·.5/1.5 = 2/3
//	class 2: Pos {0.125, 0.125}   Neg {0.375, 0.5}        ψ=1,   φ=1,     U = 1
//	class 3: Pos {0.5}            Neg {0.25, 0.625, 0.75} ψ=0,   φ=2/3,   U = 0
//	class 4: Pos {0.125, 1.0}     Neg {0.875, 1.0, 1.125} ψ=1/2, φ=1,     U = 2·.5/1.5 = 2/3
//
// Ranking by mean utility (ties → smaller label first): 2, 1, 4, 3. ε = 0.5 → groups of 2: best {2, 1},
// worst {4, 3}. Pooled best: ψ = 3/3, φ = 1 − 1/4 = 3/4 → U = 1.5/1.75 = 6/7.
// Pooled worst: ψ = 1/3, FAR = 1/6 → φ = 5/6 → U = 2·(1/3)(5/6)/(7/6) = 10/21.
// ε-OPIS = (6/7 − 10/21)² = (8/21)² = 64/441.
// OPIS: U = (2/3, 1, 0, 2/3), Ū = 7/12, variance = (1/144 + 25/144 + 49/144 + 1/144)/4 = 76/576 = 19/144.
func TestOPISEpsPooling(t *testing.T) {
	cls := []OPISClassDistances{
		{Class: 1, Pos: []float64{0.125}, Neg: []float64{0.125, 1.25}},
		{Class: 2, Pos: []float64{0.125, 0.125}, Neg: []float64{0.375, 0.5}},
		{Class: 3, Pos: []float64{0.5}, Neg: []float64{0.25, 0.625, 0.75}},
		{Class: 4, Pos: []float64{0.125, 1.0}, Neg: []float64{0.875, 1.0, 1.125}},
	}
	r, err := OPISFromDistances(cls, nil, OPISOptions{FARMin: 0.1, FARMax: 0.2, GridN: 1, Epsilon: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "d_1", r.Thresholds[0], 0.25, 0)
	if !slices.Equal(r.EpsBest, []int64{2, 1}) || !slices.Equal(r.EpsWorst, []int64{4, 3}) {
		t.Errorf("EpsBest %v EpsWorst %v, want [2 1] [4 3]", r.EpsBest, r.EpsWorst)
	}
	opisNear(t, "U_εbest", r.UtilityEpsBest[0], 6.0/7, 1e-15)
	opisNear(t, "U_εworst", r.UtilityEpsWorst[0], 10.0/21, 1e-15)
	opisNear(t, "ε-OPIS", r.EpsOPIS, 64.0/441, 1e-15)
	opisNear(t, "OPIS", r.OPIS, 19.0/144, 1e-15)
}

func TestOPISCalibrationErrors(t *testing.T) {
	cls := opisToyClasses()
	for _, tc := range []struct {
		name string
		opt  OPISOptions
		want string
	}{
		{"empty FAR interval", OPISOptions{FARMin: 0.1, FARMax: 0.1}, "empty or invalid"},
		{"reversed FAR interval", OPISOptions{FARMin: 0.5, FARMax: 0.1}, "empty or invalid"},
		// 10 pooled negatives cannot resolve FAR = 1e-2 (the paper's default range).
		{"unreachable FAR", OPISOptions{}, "unreachable"},
		{"bad grid", OPISOptions{FARMin: 0.1, FARMax: 0.5, GridN: -1}, "GridN"},
		{"bad epsilon", OPISOptions{FARMin: 0.1, FARMax: 0.5, Epsilon: 2}, "Epsilon"},
		{"bad convention", OPISOptions{FARMin: 0.1, FARMax: 0.5, Convention: "x"}, "Convention"},
	} {
		_, err := OPISFromDistances(cls, nil, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	// Degenerate range: all pooled negatives at the same distance → d_min = d_max.
	tied := []OPISClassDistances{
		{Class: 1, Pos: []float64{0.1}, Neg: []float64{1, 1, 1, 1, 1}},
		{Class: 2, Pos: []float64{0.1}, Neg: []float64{1, 1, 1, 1, 1}},
	}
	if _, err := OPISFromDistances(tied, nil, OPISOptions{FARMin: 0.1, FARMax: 0.5}); err == nil ||
		!strings.Contains(err.Error(), "degenerate") {
		t.Errorf("tied negatives: err = %v, want degenerate calibration range", err)
	}
	noPos := []OPISClassDistances{
		{Class: 1, Pos: nil, Neg: []float64{1, 2, 3, 4, 5}},
		{Class: 2, Pos: []float64{0.1}, Neg: []float64{1, 2, 3, 4, 5}},
	}
	if _, err := OPISFromDistances(noPos, nil, OPISOptions{FARMin: 0.1, FARMax: 0.5}); err == nil ||
		!strings.Contains(err.Error(), "class 1 has no positive") {
		t.Errorf("class without positives: err = %v", err)
	}
	nan := opisToyClasses()
	nan[0].Pos = []float64{math.NaN()}
	if _, err := OPISFromDistances(nan, nil, OPISOptions{FARMin: 0.1, FARMax: 0.5, GridN: 4}); err == nil {
		t.Errorf("NaN distance: no error")
	}
}

// opisRandomClustered returns n unit-ish vectors in d dims around c random centres with noise sigma.
func opisRandomClustered(rng *rand.Rand, n, d, c int, sigma float64) ([]float32, []int64) {
	centres := make([]float64, c*d)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	emb := make([]float32, n*d)
	labels := make([]int64, n)
	for i := range n {
		k := i % c
		labels[i] = int64(100 + 3*k)
		// Different spread per class so the classes' utility curves differ.
		s := sigma * (0.5 + float64(k%4)/2)
		for t := range d {
			emb[i*d+t] = float32(centres[k*d+t] + s*rng.NormFloat64())
		}
	}
	return emb, labels
}

// opisBruteForce recomputes OPIS on all pairs with plain loops over thresholds and per-class distance lists
// (no histograms, no sorting tricks), to check OPIS(…, OPISExhaustive).
func opisBruteForce(emb []float32, n, d int, labels []int64, farMin, farMax float64, gridN int) (opis float64, dmin, dmax float64) {
	x := make([][]float64, n)
	for i := range n {
		var s float64
		for t := range d {
			s += float64(emb[i*d+t]) * float64(emb[i*d+t])
		}
		x[i] = make([]float64, d)
		for t := range d {
			x[i][t] = float64(emb[i*d+t]) / math.Sqrt(s)
		}
	}
	dist := func(i, j int) float64 {
		var s float64
		for t := range d {
			s += (x[i][t] - x[j][t]) * (x[i][t] - x[j][t])
		}
		return math.Sqrt(s)
	}
	var classes []int64
	for _, l := range labels {
		if !slices.Contains(classes, l) {
			classes = append(classes, l)
		}
	}
	pos := map[int64][]float64{}
	neg := map[int64][]float64{}
	var pooled []float64
	for i := range n {
		for j := range n {
			if i == j {
				continue
			}
			v := dist(i, j)
			if labels[i] == labels[j] {
				pos[labels[i]] = append(pos[labels[i]], v) // ordered pairs: anchor i
			} else {
				neg[labels[i]] = append(neg[labels[i]], v)
				if i < j {
					pooled = append(pooled, v)
				}
			}
		}
	}
	slices.Sort(pooled)
	m := float64(len(pooled))
	dmin = pooled[int(math.Ceil(farMin*m-1e-9))-1]
	dmax = pooled[int(math.Ceil(farMax*m-1e-9))-1]
	for j := 1; j <= gridN; j++ {
		th := dmin + float64(j)*(dmax-dmin)/float64(gridN)
		var us []float64
		for _, c := range classes {
			acc := func(l []float64) float64 {
				k := 0
				for _, v := range l {
					if v <= th {
						k++
					}
				}
				return float64(k) / float64(len(l))
			}
			psi, phi := acc(pos[c]), 1-acc(neg[c])
			u := 0.0
			if phi+psi > 0 {
				u = 2 * phi * psi / (phi + psi)
			}
			us = append(us, u)
		}
		var mean float64
		for _, u := range us {
			mean += u
		}
		mean /= float64(len(us))
		for _, u := range us {
			opis += (u - mean) * (u - mean) / float64(len(us))
		}
	}
	return opis / float64(gridN), dmin, dmax
}

func TestOPISExhaustiveMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, d := 90, 5
	emb, labels := opisRandomClustered(rng, n, d, 6, 0.6)
	r, err := OPIS(emb, n, d, labels, OPISOptions{Sampling: OPISExhaustive, GridN: 37, Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	want, dmin, dmax := opisBruteForce(emb, n, d, labels, 1e-2, 1e-1, 37)
	// Same pair distances up to summation order (≈1e-16); thresholds never fall within 1e-12 of a distance here
	// in practice, so OPIS agrees to rounding.
	opisNear(t, "DMin", r.DMin, dmin, 1e-12)
	opisNear(t, "DMax", r.DMax, dmax, 1e-12)
	opisNear(t, "OPIS vs brute force", r.OPIS, want, 1e-12)
	if r.OPIS <= 0 {
		t.Errorf("OPIS = %v, want > 0 for classes of different spreads", r.OPIS)
	}
	// 90·89/2 = 4005 pairs, 6 classes of 15: 6·105 = 630 positive, 3375 negative.
	if r.NumPos != 630 || r.NumNeg != 3375 {
		t.Errorf("NumPos %d NumNeg %d, want 630 3375", r.NumPos, r.NumNeg)
	}

	// Permutation invariance: shuffling the rows (with their labels) changes nothing.
	perm := rng.Perm(n)
	emb2 := make([]float32, n*d)
	lab2 := make([]int64, n)
	for i, p := range perm {
		copy(emb2[i*d:(i+1)*d], emb[p*d:(p+1)*d])
		lab2[i] = labels[p]
	}
	r2, err := OPIS(emb2, n, d, lab2, OPISOptions{Sampling: OPISExhaustive, GridN: 37, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "OPIS after permutation", r2.OPIS, r.OPIS, 1e-15)
	opisNear(t, "ε-OPIS after permutation", r2.EpsOPIS, r.EpsOPIS, 1e-15)

	// Sampling all available negatives (huge ratio) reproduces the exhaustive per-class counts and quantiles.
	r3, err := OPIS(emb, n, d, labels, OPISOptions{NegPerPos: 1e6, GridN: 37})
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "OPIS sampled(all) vs exhaustive", r3.OPIS, r.OPIS, 1e-15)
	opisNear(t, "ε-OPIS sampled(all) vs exhaustive", r3.EpsOPIS, r.EpsOPIS, 1e-15)
}

func TestOPISSampled(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, d := 400, 8
	emb, labels := opisRandomClustered(rng, n, d, 40, 0.5) // 40 classes of 10: 45 positives each
	r, err := OPIS(emb, n, d, labels, OPISOptions{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if r.NumPos != 40*45 || r.NumNeg != 10*40*45 {
		t.Errorf("NumPos %d NumNeg %d, want 1800 and 18000 (10:1)", r.NumPos, r.NumNeg)
	}
	for i, c := range r.ClassNumNeg {
		if c != 450 {
			t.Fatalf("class %d has %d negatives, want 450", r.Classes[i], c)
		}
	}
	if r.Sampling != "sampled" || len(r.Utility) != 100 || len(r.Utility[0]) != 40 {
		t.Errorf("Sampling %q, curves %dx%d", r.Sampling, len(r.Utility), len(r.Utility[0]))
	}
	again, err := OPIS(emb, n, d, labels, OPISOptions{Seed: 5, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if again.OPIS != r.OPIS || again.EpsOPIS != r.EpsOPIS {
		t.Errorf("same seed: OPIS %v vs %v", again.OPIS, r.OPIS)
	}
	other, err := OPIS(emb, n, d, labels, OPISOptions{Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	if other.OPIS == r.OPIS {
		t.Errorf("different seeds gave identical OPIS %v (sampling not seeded?)", r.OPIS)
	}
	// Same data, exhaustive: the sampled estimate should be close (same population, 10:1 sample).
	ex, err := OPIS(emb, n, d, labels, OPISOptions{Sampling: OPISExhaustive})
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(r.OPIS-ex.OPIS) / ex.OPIS; rel > 0.3 {
		t.Errorf("sampled OPIS %v vs exhaustive %v: relative gap %.2f > 0.3", r.OPIS, ex.OPIS, rel)
	}
	// Every utility is in [0, 1] and no NaN.
	for j := range r.Utility {
		for i, u := range r.Utility[j] {
			if !(u >= 0 && u <= 1) {
				t.Fatalf("Utility[%d][%d] = %v", j, i, u)
			}
		}
	}
}

func TestOPISInputErrors(t *testing.T) {
	emb := []float32{1, 0, 0, 1, 1, 1, 1, -1}
	lab := []int64{1, 1, 2, 2}
	cases := []struct {
		name string
		emb  []float32
		n, d int
		lab  []int64
		want string
	}{
		{"short emb", emb[:7], 4, 2, lab, "len(emb)"},
		{"labels length", emb, 4, 2, lab[:3], "len(labels)"},
		{"NaN", []float32{1, 0, float32(math.NaN()), 1, 1, 1, 1, -1}, 4, 2, lab, "row 1"},
		{"zero row", []float32{1, 0, 0, 0, 1, 1, 1, -1}, 4, 2, lab, "zero norm"},
		{"singleton class", emb, 4, 2, []int64{1, 1, 2, 3}, "class 2 has 1 sample"},
		{"one class", emb, 4, 2, []int64{1, 1, 1, 1}, "at least 2 classes"},
		// 4 samples → 4 negatives: FAR 1e-2 unreachable.
		{"too few negatives", emb, 4, 2, lab, "unreachable"},
	}
	for _, tc := range cases {
		_, err := OPIS(tc.emb, tc.n, tc.d, tc.lab, OPISOptions{Sampling: OPISExhaustive})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	// SkipClassesWithoutPositives drops the singleton class 3 and reports it.
	rng := rand.New(rand.NewPCG(7, 8))
	e, l := opisRandomClustered(rng, 61, 4, 6, 0.5)
	l[60] = 999
	r, err := OPIS(e, 61, 4, l, OPISOptions{Sampling: OPISExhaustive, SkipClassesWithoutPositives: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.SkippedClasses, []int64{999}) || len(r.Classes) != 6 {
		t.Errorf("SkippedClasses %v, classes %v", r.SkippedClasses, r.Classes)
	}
}

// TestGaussianUtilityModel checks Eq. 9 and 10 against the harmonic means of Eq. 7–8 computed from the normal CDF
// and the paper's remark that U_pr ≈ U_roc ≈ 2/(3 + erf t_pos) when erf t_neg ≈ −1.
func TestGaussianUtilityModel(t *testing.T) {
	m := GaussianUtilityModel{MuPos: 0.8, SigmaPos: 0.15, MuNeg: 1.4, SigmaNeg: 0.1}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	cdf := func(x, mu, s float64) float64 { return 0.5 * math.Erfc(-(x-mu)/(s*math.Sqrt2)) }
	for _, d := range []float64{0.3, 0.7, 0.9, 1.1, 1.3, 1.6} {
		tp := cdf(d, m.MuPos, m.SigmaPos) // positives accepted
		fp := cdf(d, m.MuNeg, m.SigmaNeg) // negatives accepted
		sens, spec := tp, 1-fp
		prec := tp / (tp + fp)
		wantRoc := 2 * sens * spec / (sens + spec)
		wantPR := 2 * prec * sens / (prec + sens)
		opisNear(t, "URoc", m.URoc(d), wantRoc, 1e-12)
		opisNear(t, "UPR", m.UPR(d), wantPR, 1e-12)
		opisNear(t, "Sensitivity", m.Sensitivity(d), sens, 1e-12)
		opisNear(t, "Specificity", m.Specificity(d), spec, 1e-12)
		opisNear(t, "Precision", m.Precision(d), prec, 1e-12)
	}
	// d = 0.7: t_neg = −0.7/(√2·0.1) ≈ −4.95, erf t_neg ≈ −1 + 3e-12, so U_roc ≈ U_pr ≈ 2(1+erf t_pos)/(3+erf t_pos).
	// (App. A.1.1 prints 2/(3+erf t_pos); substituting erf t_neg = −1 into Eq. 9 or 10 gives the (1+erf t_pos)
	// factor.)
	ep := math.Erf((0.7 - 0.8) / (math.Sqrt2 * 0.15))
	opisNear(t, "U_roc ≈ 2(1+erf t_pos)/(3+erf t_pos)", m.URoc(0.7), 2*(1+ep)/(3+ep), 1e-9)
	opisNear(t, "U_pr ≈ U_roc (left part)", m.UPR(0.7), m.URoc(0.7), 1e-9)
	if _, _, _, err := (GaussianUtilityModel{SigmaPos: 0, SigmaNeg: 1}).Curves(0, 2, 10); err == nil {
		t.Error("σ = 0: no error")
	}
	dd, ur, up, err := m.Curves(0, 2, 200)
	if err != nil || len(dd) != 201 || len(ur) != 201 || len(up) != 201 {
		t.Fatalf("Curves: %v, lengths %d %d %d", err, len(dd), len(ur), len(up))
	}
	// Concavity claim of App. A.1.1: a single interior maximum.
	best := 0
	for k := range ur {
		if ur[k] > ur[best] {
			best = k
		}
	}
	if best == 0 || best == 200 {
		t.Errorf("U_roc maximum at the boundary (k=%d)", best)
	}
}

// TestOPISSOPScale times OPIS on a synthetic SOP-sized test set (60,502 × 512, 11,316 classes, 10:1 sampling).
// Heavy: run with DMLKIT_HEAVY=1.
func TestOPISSOPScale(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") != "1" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	n, d, c := 60502, 512, 11316
	centres := make([]float64, c*d)
	for i := range centres {
		centres[i] = rng.NormFloat64()
	}
	emb := make([]float32, n*d)
	labels := make([]int64, n)
	for i := range n {
		k := i % c
		labels[i] = int64(k)
		for t := range d {
			emb[i*d+t] = float32(centres[k*d+t] + 0.8*rng.NormFloat64())
		}
	}
	start := time.Now()
	r, err := OPIS(emb, n, d, labels, OPISOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SOP-scale OPIS: %v, OPIS=%.4g ε-OPIS=%.4g, %d pos, %d neg, range [%.4f, %.4f]",
		time.Since(start), r.OPIS, r.EpsOPIS, r.NumPos, r.NumNeg, r.DMin, r.DMax)

	// CUB test-set size, exhaustive pairs (5,924 × 512, 100 classes: 17.5 M pairs, computed twice).
	n = 5924
	e2, l2 := opisRandomClustered(rng, n, d, 100, 1.0)
	start = time.Now()
	r, err = OPIS(e2, n, d, l2, OPISOptions{Sampling: OPISExhaustive})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CUB-scale exhaustive OPIS: %v, OPIS=%.4g ε-OPIS=%.4g, %d pos, %d neg",
		time.Since(start), r.OPIS, r.EpsOPIS, r.NumPos, r.NumNeg)
}

// opisKthSmallest (histogram selection) agrees with sorting, with ties and with values that share a bin.
func TestOPISKthSmallest(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for trial := range 30 {
		m := 1 + rng.IntN(5000)
		vals := make([]float64, m)
		for i := range vals {
			switch trial % 3 {
			case 0:
				vals[i] = rng.Float64() * 2
			case 1:
				vals[i] = float64(rng.IntN(5)) / 4 // heavy ties
			default:
				vals[i] = 1 + rng.Float64()*1e-13 // all within a few bins
			}
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		ks := []int{1, 1 + rng.IntN(m), m}
		got := opisKthSmallest(func(f func(float64)) {
			for _, v := range vals {
				f(v)
			}
		}, ks)
		for q, k := range ks {
			if got[q] != sorted[k-1] {
				t.Fatalf("trial %d: %d-th smallest of %d = %v, want %v", trial, k, m, got[q], sorted[k-1])
			}
		}
	}
}
