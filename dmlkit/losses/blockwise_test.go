package losses_test

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
)

// blockwiseLabels is a batch of 48 with uneven classes (sizes 1, 2, 3, ..., 8, and a rest of 12
// split in two classes), shuffled so that classes straddle block boundaries. Class 0 is a single
// sample: an anchor without positives, excluded from the per-anchor means.
func blockwiseLabels() []int64 {
	var labels []int64
	sizes := []int{1, 2, 3, 4, 5, 6, 7, 8, 6, 6}
	for c, n := range sizes {
		for range n {
			labels = append(labels, int64(c))
		}
	}
	// A fixed interleaving permutation (i·19 mod 48; 19 is coprime with 48).
	out := make([]int64, len(labels))
	for i := range labels {
		out[i*19%len(labels)] = labels[i]
	}
	return out
}

func mustLoss(t *testing.T, name string, set map[string]any) losses.Loss {
	t.Helper()
	l, err := losses.New(name, set)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestBlockwiseMatchesWholeBatch: for every blockwise loss, the value and ∂L/∂emb computed in
// blocks of 10 anchors against the whole batch of 48 (blocks 10, 10, 10, 10, 8) equal the direct
// whole-batch graph. The two differ only in summation order (per-block partial sums, counts summed
// on the host): in float64 that is ~1e-15, checked to 1e-11; in float32 each of the ≤ 48² summed
// terms carries a relative rounding of 6e-8, so ~1e-6 at most for O(1) values, checked to 1e-5 (the
// issue's bound). A self-pair left in, a count taken per block instead of per batch, or a missing
// reference-row gradient changes the value or gradient by ≥ 1e-3 here.
func TestBlockwiseMatchesWholeBatch(t *testing.T) {
	labels := blockwiseLabels()
	batch := losstest.Random(3, 8, labels)
	cases := []struct {
		name string
		set  map[string]any
	}{
		{"contrastive", nil},
		{"contrastive", map[string]any{"distance": "cosine", "pos_margin": 0.75, "neg_margin": 0.1}},
		{"contrastive", map[string]any{"avg_nonzero": false, "squared": true, "neg_margin": 1.2}},
		{"tcm", map[string]any{"pos_margin": 0.3, "neg_margin": 0.1}},
		{"tcm", map[string]any{"pos_margin": 0.3, "neg_margin": 0.1, "no_indicator": true}},
		{"tcm", map[string]any{"pos_margin": 0.3, "neg_margin": 0.1, "total_count": true}},
		{"tcm", map[string]any{"pos_margin": 0.3, "neg_margin": 0.1, "lambda_neg": 0}},
		{"smoothap", map[string]any{"tau": 0.1}},
		{"smoothap", map[string]any{"tau": 0.1, "query_as_positive": true}},
		{"smoothap", map[string]any{"tau": 0.1, "max_class_size": 8}},
		{"smoothap", map[string]any{"tau": 0.1, "max_class_size": 9, "query_as_positive": true}},
		{"rsk", map[string]any{"tau2": 0.1, "k": "1,2,4"}},
		{"rsk", map[string]any{"tau2": 0.1, "k": "1,4", "max_class_size": 8, "chunk_queries": 3}},
		{"rsk", map[string]any{"tau2": 0.1, "k": "1,2,4", "query_in_ranking": true}},
		{"combo", map[string]any{"expr": "rsk(tau2=0.1, k=[1,2,4]) + 0.5*tcm(pos_margin=0.3, neg_margin=0.1)"}},
		{"combo", map[string]any{"expr": "smoothap(tau=0.1) + 2*contrastive(distance=cosine, neg_margin=0.1)"}},
	}
	for _, tc := range cases {
		l := mustLoss(t, tc.name, tc.set)
		for _, dt := range []dtypes.DType{dtypes.Float64, dtypes.Float32} {
			tol := 1e-11
			if dt == dtypes.Float32 {
				tol = 1e-5
			}
			opt := losses.EvalOptions{Grad: true, DType: dt}
			want, err := losses.Evaluate(backend.MustShared(), l, batch.Emb, batch.B, batch.D, batch.Labels, 1, opt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := losses.EvaluateBlockwise(backend.MustShared(), l, batch.Emb, batch.B, batch.D, batch.Labels, 1, 10, opt)
			if err != nil {
				t.Fatalf("%s %v: %v", tc.name, tc.set, err)
			}
			if want.Value == 0 || math.IsNaN(want.Value) {
				t.Fatalf("%s %v: degenerate whole-batch value %v", tc.name, tc.set, want.Value)
			}
			if d := math.Abs(got.Value - want.Value); d > tol {
				t.Errorf("%s %v %s: blockwise %.10g, whole batch %.10g (|Δ| %.2g)", tc.name, tc.set, dt, got.Value, want.Value, d)
			}
			worst, scale := 0.0, 0.0
			for i := range want.Grad {
				worst = math.Max(worst, math.Abs(got.Grad[i]-want.Grad[i]))
				scale = math.Max(scale, math.Abs(want.Grad[i]))
			}
			if scale == 0 {
				t.Fatalf("%s %v: zero whole-batch gradient", tc.name, tc.set)
			}
			if worst > tol*math.Max(1, scale) {
				t.Errorf("%s %v %s: max |∂ blockwise − ∂ whole| = %.2g (largest entry %.2g)", tc.name, tc.set, dt, worst, scale)
			}
		}
	}
}

// TestBlockwiseLabelSets: label sets ([B, S], −1 = empty slot) decompose too (contrastive, tcm).
func TestBlockwiseLabelSets(t *testing.T) {
	base := blockwiseLabels()
	sets := make([]int64, 2*len(base))
	for i, y := range base {
		sets[2*i] = y
		sets[2*i+1] = -1
		if i%5 == 0 {
			sets[2*i+1] = (y + 3) % 10
		}
	}
	batch := losstest.Random(4, 6, base)
	for _, name := range []string{"contrastive", "tcm"} {
		l := mustLoss(t, name, nil)
		opt := losses.EvalOptions{Grad: true}
		want, err := losses.Evaluate(backend.MustShared(), l, batch.Emb, batch.B, batch.D, sets, 2, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, err := losses.EvaluateBlockwise(backend.MustShared(), l, batch.Emb, batch.B, batch.D, sets, 2, 7, opt)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(got.Value - want.Value); d > 1e-11 {
			t.Errorf("%s: blockwise %.12g, whole %.12g", name, got.Value, want.Value)
		}
		for i := range want.Grad {
			if d := math.Abs(got.Grad[i] - want.Grad[i]); d > 1e-11 {
				t.Fatalf("%s: gradient entry %d: %g vs %g", name, i, got.Grad[i], want.Grad[i])
			}
		}
	}
}

// TestBlockwiseUnsupported: losses that do not decompose are refused with a reason.
func TestBlockwiseUnsupported(t *testing.T) {
	cases := []struct {
		name string
		set  map[string]any
		want string
	}{
		{"proxyanchor", nil, "does not decompose"},
		{"combo", map[string]any{"expr": "rsk + proxyanchor"}, "term 2"},
	}
	for _, tc := range cases {
		err := losses.CheckBlockwise(mustLoss(t, tc.name, tc.set))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: error %v, want one mentioning %q", tc.name, tc.set, err, tc.want)
		}
	}
	for _, n := range []string{"contrastive", "tcm", "smoothap", "rsk"} {
		if err := losses.CheckBlockwise(mustLoss(t, n, nil)); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := losses.CheckBlockwise(mustLoss(t, "rsk", map[string]any{"simix": true})); err != nil {
		t.Errorf("rsk with simix: %v (decomposes over anchors: TestRSKSiMixBlockwiseMatchesWholeBatch)", err)
	}
	got := strings.Join(losses.BlockwiseNames(), ",")
	for _, n := range []string{"combo", "contrastive", "rsk", "smoothap", "tcm"} {
		if !strings.Contains(got, n) {
			t.Errorf("BlockwiseNames() = %s, missing %s", got, n)
		}
	}
}
