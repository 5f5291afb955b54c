package evaluate

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// TestFarThresholdByHand: four items of labels a, a, b, c on a line at 0, 1, 3, 7: the negative
// pairs and distances are (0,3)=3, (0,7)=7, (1,3)=2, (1,7)=6, (3,7)=4 → sorted 2, 3, 4, 6, 7.
// FAR 0.2 → the ⌈0.2·5⌉ = 1st → 2; FAR 0.5 → the 3rd → 4; FAR 1 → 7.
func TestFarThresholdByHand(t *testing.T) {
	emb := []float32{0, 1, 3, 7}
	labels := []int64{1, 1, 2, 3}
	items := []int{0, 1, 2, 3}
	for far, want := range map[float64]float64{0.2: 2, 0.5: 4, 1: 7, 1e-9: 2} {
		if got := farThreshold(emb, 1, labels, items, far); got != want {
			t.Errorf("FAR %g: d* = %v, want %v", far, got, want)
		}
	}
	if got := farThreshold(emb, 1, []int64{1, 1, 1, 1}, items, 0.5); !math.IsNaN(got) {
		t.Errorf("no negatives: %v, want NaN", got)
	}
	// spread: sample std of 2, 4, 4, 4, 5, 5, 7, 9 (mean 5, Σ(x−5)² = 32) = √(32/7).
	if got := spread([]float64{2, 4, 4, 4, 5, 5, 7, 9, math.NaN()}); math.Abs(got-math.Sqrt(32.0/7)) > 1e-12 {
		t.Errorf("spread %v", got)
	}
}

// TestAlphabetThresholds: evaluation labels 964.. (alphabet 30 starts at 964); a background
// label makes the whole set "not Omniglot evaluation".
func TestAlphabetThresholds(t *testing.T) {
	// Two items of two characters of the first evaluation alphabet, 1-D embeddings 0, 0.5, 2, 2.5:
	// negatives (0,2)=2, (0,2.5)=2.5, (0.5,2)=1.5, (0.5,2.5)=2 → sorted 1.5, 2, 2, 2.5; FAR 1e-2 → 1.5.
	got := alphabetThresholds([]float32{0, 0.5, 2, 2.5}, 4, 1, []int64{964, 964, 965, 965})
	if len(got) != 1 || got[0] != 1.5 {
		t.Errorf("thresholds %v, want [1.5]", got)
	}
	if got := alphabetThresholds([]float32{0, 1}, 2, 1, []int64{3, 964}); got != nil {
		t.Errorf("background label: %v, want nil", got)
	}
}

// TestPairDistances: positives join equal labels and negatives different ones (checked by
// recomputing each sampled distance's possible values), deterministic in the seed.
func TestPairDistances(t *testing.T) {
	// Labels 0,0,1,1,2 on a line at 0, 1, 10, 12, 100: positive distances ∈ {1, 2}; negatives ≥ 9.
	emb := []float32{0, 1, 10, 12, 100}
	labels := []int64{0, 0, 1, 1, 2}
	pos, neg := pairDistances(emb, 5, 1, labels, 200, 7)
	if len(pos) != 200 || len(neg) != 200 {
		t.Fatalf("%d positives, %d negatives", len(pos), len(neg))
	}
	for _, x := range pos {
		if x != 1 && x != 2 {
			t.Fatalf("positive distance %v", x)
		}
	}
	for _, x := range neg {
		if x < 9 {
			t.Fatalf("negative distance %v", x)
		}
	}
	pos2, _ := pairDistances(emb, 5, 1, labels, 200, 7)
	if !reflect.DeepEqual(pos, pos2) {
		t.Error("not deterministic")
	}
}

// TestFig1ThresholdsDiagnostic: seed 000 Fig. 1's diagnostic is stored where it is defined and
// left out, with a note, where it is not (issue 43: a user's sweep whose test classes come from one
// alphabet was stored as failed on "fig1/dstar_spread = NaN").
func TestFig1ThresholdsDiagnostic(t *testing.T) {
	a := int64(964) // first evaluation alphabet; b: the first label of the next one
	b := a
	for data.OmniglotAlphabet(int(b)) == data.OmniglotAlphabet(int(a)) {
		b++
	}
	// One alphabet (as TestAlphabetThresholds: d* = 1.5): the series, no metric, a note.
	out := fig1Thresholds([]float32{0, 0.5, 2, 2.5}, 4, 1, []int64{a, a, a + 1, a + 1})
	if _, ok := out.Metrics["fig1/dstar_spread"]; ok || !reflect.DeepEqual(out.Series["fig1/dstar_alphabet"], []float64{1.5}) ||
		out.Notes["fig1/dstar_spread"] != "undefined: 1 Omniglot evaluation alphabet(s) of the test classes have a threshold (the spread needs 2)" {
		t.Errorf("one alphabet: %+v", out)
	}
	// Two alphabets: the second at 10, 10.5, 13, 13.5 has negatives 3, 3.5, 2.5, 3 → d* = 2.5;
	// spread = sample std of 1.5 and 2.5 = √0.5.
	out = fig1Thresholds([]float32{0, 0.5, 2, 2.5, 10, 10.5, 13, 13.5}, 8, 1, []int64{a, a, a + 1, a + 1, b, b, b + 1, b + 1})
	if got := out.Metrics["fig1/dstar_spread"]; math.Abs(got-math.Sqrt(0.5)) > 1e-12 || out.Notes != nil ||
		!reflect.DeepEqual(out.Series["fig1/dstar_alphabet"], []float64{1.5, 2.5}) {
		t.Errorf("two alphabets: %+v", out)
	}
	// Not Omniglot's evaluation characters: nothing but the note.
	out = fig1Thresholds([]float32{0, 1}, 2, 1, []int64{3, 4})
	if len(out.Series) != 0 || len(out.Metrics) != 0 || out.Notes["fig1/dstar_spread"] == "" {
		t.Errorf("background labels: %+v", out)
	}
}

// TestDiagnosticsRegistry: the two seed 000 diagnostics are found by their spec names, and
// pair_distances returns both series, deterministic in the seed (the same as pairDistances).
func TestDiagnosticsRegistry(t *testing.T) {
	if len(Diagnostics()) != 2 {
		t.Fatalf("%d diagnostics", len(Diagnostics()))
	}
	if _, ok := LookupDiagnostic("fig1_treshold"); ok {
		t.Error("a typo found")
	}
	dg, ok := LookupDiagnostic(DiagPairDistances)
	if !ok {
		t.Fatal("pair_distances not found")
	}
	emb, labels := []float32{0, 1, 10, 12, 100}, []int64{0, 0, 1, 1, 2}
	r := dg.Run(emb, 5, 1, labels, 7)
	pos, neg := pairDistances(emb, 5, 1, labels, distSamples, 7)
	if !reflect.DeepEqual(r.Series["dist/pos"], pos) || !reflect.DeepEqual(r.Series["dist/neg"], neg) || len(pos) != distSamples {
		t.Errorf("series %d/%d", len(r.Series["dist/pos"]), len(r.Series["dist/neg"]))
	}
}

// TestKthSmallest: the selection reads the same value as sorting does (slices.Sort's order, NaNs
// first), for every k, on random values with ties, ±Inf and NaN, and on sorted, reversed and
// constant inputs (the quickselect's worst cases).
func TestKthSmallest(t *testing.T) {
	// By hand: 5, NaN, 1, 3, 1 in slices.Sort's order is NaN, 1, 1, 3, 5.
	for k, want := range []float64{math.NaN(), 1, 1, 3, 5} {
		got := kthSmallest([]float64{5, math.NaN(), 1, 3, 1}, k)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("by hand, k=%d: got %v, want %v", k, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var inputs [][]float64
	for _, n := range []int{1, 2, 3, 5, 17, 100, 1000} {
		x := make([]float64, n)
		for i := range x {
			switch r := rng.IntN(20); r {
			case 0:
				x[i] = math.NaN()
			case 1:
				x[i] = math.Inf(1)
			case 2:
				x[i] = math.Inf(-1)
			default:
				x[i] = float64(rng.IntN(n/2 + 1)) // ties
			}
		}
		asc := make([]float64, n)
		for i := range asc {
			asc[i] = float64(i)
		}
		desc := slices.Clone(asc)
		slices.Reverse(desc)
		inputs = append(inputs, x, asc, desc, make([]float64, n))
	}
	for _, x := range inputs {
		sorted := slices.Clone(x)
		slices.Sort(sorted)
		for k := range x {
			got, want := kthSmallest(slices.Clone(x), k), sorted[k]
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("n=%d k=%d: got %v, want %v (input %v)", len(x), k, got, want, x[:min(len(x), 20)])
			}
		}
	}
}
