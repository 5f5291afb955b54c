package evaluate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// Paper diagnostics: evaluation protocols of one paper's figures, computed on a run's final test
// embeddings only for the runs of a spec that names them (its `diagnostics:` list); the generic
// runner knows them by name only. Each returns metrics and series for the record, or, where it is
// undefined for the run, a note (key → reason) instead of a NaN.

// Diagnostic is one named paper diagnostic.
type Diagnostic struct {
	Name string // as a spec names it
	Doc  string // what it computes (the spec validator lists it)
	// Run computes it on the test embeddings [n, d] and their labels; seed makes any sampling
	// deterministic.
	Run func(emb []float32, n, d int, labels []int64, seed int64) DiagnosticResult
}

// DiagnosticResult is what a diagnostic adds to a run's record.
type DiagnosticResult struct {
	Metrics map[string]float64
	Series  map[string][]float64
	Notes   map[string]string // key → why it was left out
}

// The diagnostics of seed 000 (TCM + OPIS).
const (
	DiagFig1Thresholds = "fig1_thresholds"
	DiagPairDistances  = "pair_distances"
)

var diagnostics = []Diagnostic{
	{Name: DiagFig1Thresholds,
		Doc: "seed 000 Fig. 1: d* at FAR 1e-2 per Omniglot evaluation alphabet (series fig1/dstar_alphabet) and their spread (metric fig1/dstar_spread)",
		Run: func(emb []float32, n, d int, labels []int64, _ int64) DiagnosticResult {
			return fig1Thresholds(emb, n, d, labels)
		}},
	{Name: DiagPairDistances,
		Doc: "seed 000 Fig. 10: L2 distances of sampled positive and negative test pairs (series dist/pos, dist/neg)",
		Run: func(emb []float32, n, d int, labels []int64, seed int64) DiagnosticResult {
			pos, neg := pairDistances(emb, n, d, labels, distSamples, uint64(seed))
			return DiagnosticResult{Series: map[string][]float64{"dist/pos": pos, "dist/neg": neg}}
		}},
}

// Diagnostics lists the paper diagnostics, by name.
func Diagnostics() []Diagnostic { return slices.Clone(diagnostics) }

// LookupDiagnostic returns the diagnostic a spec names.
func LookupDiagnostic(name string) (Diagnostic, bool) {
	for _, d := range diagnostics {
		if d.Name == name {
			return d, true
		}
	}
	return Diagnostic{}, false
}

// distSamples is the number of positive and of negative pairs whose L2 distances a run stores
// (series "dist/pos", "dist/neg") for distance-distribution figures (seed 000 Fig. 10).
var distSamples = 4000

// pairDistances samples up to k positive pairs (same label, i ≠ j) and k negative pairs
// (different labels) of the n embeddings [n, d] uniformly with replacement, deterministically
// from seed, and returns their L2 distances. Positive pairs are drawn by picking an anchor among
// the items whose class has ≥ 2 items, then another item of its class.
func pairDistances(emb []float32, n, d int, labels []int64, k int, seed uint64) (pos, neg []float64) {
	if n < 2 {
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x46_49_47_31_30)) // "FIG10"
	byClass := map[int64][]int{}
	for i, l := range labels[:n] {
		byClass[l] = append(byClass[l], i)
	}
	var anchors []int
	for i, l := range labels[:n] {
		if len(byClass[l]) >= 2 {
			anchors = append(anchors, i)
		}
	}
	dist := func(i, j int) float64 { return l2(emb, d, i, j) }
	if len(anchors) > 0 {
		for range k {
			i := anchors[rng.IntN(len(anchors))]
			cls := byClass[labels[i]]
			j := i
			for j == i {
				j = cls[rng.IntN(len(cls))]
			}
			pos = append(pos, dist(i, j))
		}
	}
	if len(byClass) >= 2 {
		for len(neg) < k {
			i, j := rng.IntN(n), rng.IntN(n)
			if labels[i] != labels[j] {
				neg = append(neg, dist(i, j))
			}
		}
	}
	return pos, neg
}

// farThreshold is the distance threshold d* at which a fraction far of the negative pairs
// (different labels) among the given items fall below it: the ⌈far·N⌉-th smallest of the N
// negative distances (all pairs). It returns NaN when there are no negative pairs.
func farThreshold(emb []float32, d int, labels []int64, items []int, far float64) float64 {
	var negs []float64
	for a := 0; a < len(items); a++ {
		for b := a + 1; b < len(items); b++ {
			i, j := items[a], items[b]
			if labels[i] == labels[j] {
				continue
			}
			negs = append(negs, l2(emb, d, i, j))
		}
	}
	if len(negs) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(far*float64(len(negs)))) - 1
	return kthSmallest(negs, max(k, 0))
}

// kthSmallest returns xs[k] of xs sorted as slices.Sort sorts it (NaNs first), reordering xs: a
// quickselect (median-of-three pivots, expected linear time) instead of sorting the hundreds of
// thousands of distances of an alphabet to read one of them; after more rounds than a balanced
// selection needs it sorts what is left.
func kthSmallest(xs []float64, k int) float64 {
	lo, hi := 0, len(xs)-1 // xs[k] lies in xs[lo..hi]
	for rounds := 0; hi > lo; rounds++ {
		if rounds > 64 {
			slices.Sort(xs[lo : hi+1])
			break
		}
		// Median of three as the pivot value, then a three-way partition of xs[lo..hi]:
		// [lo, lt) below the pivot, [lt, gt] equal to it, (gt, hi] above.
		mid := lo + (hi-lo)/2
		a, b, c := xs[lo], xs[mid], xs[hi]
		if cmp.Less(b, a) {
			a, b = b, a
		}
		if cmp.Less(c, b) {
			b = c
			if cmp.Less(b, a) {
				b = a
			}
		}
		p := b
		lt, i, gt := lo, lo, hi
		for i <= gt {
			switch c := cmp.Compare(xs[i], p); {
			case c < 0:
				xs[lt], xs[i] = xs[i], xs[lt]
				lt++
				i++
			case c > 0:
				xs[i], xs[gt] = xs[gt], xs[i]
				gt--
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt - 1
		case k > gt:
			lo = gt + 1
		default:
			return p
		}
	}
	return xs[k]
}

// fig1FAR is the target false-acceptance rate of the thresholds d* of seed 000 Fig. 1.
const fig1FAR = 1e-2

// alphabetThresholds computes, for Omniglot test embeddings (evaluation labels 964–1622), the
// threshold d* at FAR 1e-2 within each evaluation alphabet: the test distributions of seed 000
// Fig. 1, whose claim is that a threshold-consistent model needs about the same d* everywhere.
// It returns the per-alphabet thresholds in alphabet order (nil when the labels are not Omniglot
// evaluation characters).
func alphabetThresholds(emb []float32, n, d int, labels []int64) []float64 {
	groups := map[int][]int{}
	for i, l := range labels[:n] {
		a := data.OmniglotAlphabet(int(l))
		if a < data.OmniglotBackgroundAlphabets {
			return nil
		}
		groups[a] = append(groups[a], i)
	}
	keys := make([]int, 0, len(groups))
	for a := range groups {
		keys = append(keys, a)
	}
	slices.Sort(keys)
	out := make([]float64, len(keys))
	for i, a := range keys {
		out[i] = farThreshold(emb, d, labels, groups[a], fig1FAR)
	}
	return out
}

// spread is the sample standard deviation of the finite values of xs (NaN with fewer than 2).
func spread(xs []float64) float64 {
	v := slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(v) < 2 {
		return math.NaN()
	}
	var mean float64
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(v)-1))
}

// l2 is the Euclidean distance between rows i and j of the embeddings [n, d].
func l2(emb []float32, d, i, j int) float64 {
	var s float64
	for c := 0; c < d; c++ {
		x := float64(emb[i*d+c]) - float64(emb[j*d+c])
		s += x * x
	}
	return math.Sqrt(s)
}

// fig1Thresholds is seed 000 Fig. 1's per-alphabet thresholds and their spread or, where they
// are undefined for the run, a note saying why (never a NaN metric: a user's one-alphabet sweep
// must not fail on a diagnostic).
func fig1Thresholds(emb []float32, n, d int, labels []int64) DiagnosticResult {
	var out DiagnosticResult
	note := func(why string) {
		out.Notes = map[string]string{"fig1/dstar_spread": why}
	}
	th := alphabetThresholds(emb, n, d, labels)
	if th == nil {
		note("undefined: the test classes are not Omniglot's evaluation characters")
		return out
	}
	finite := 0
	for _, v := range th {
		if !math.IsNaN(v) {
			finite++
		}
	}
	out.Series = map[string][]float64{"fig1/dstar_alphabet": th}
	if finite < 2 {
		note(fmt.Sprintf("undefined: %d Omniglot evaluation alphabet(s) of the test classes have a threshold (the spread needs 2)", finite))
		return out
	}
	out.Metrics = map[string]float64{"fig1/dstar_spread": spread(th)}
	return out
}
