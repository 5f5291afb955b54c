package losses_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// simixBlockLabels is a batch of 20 with classes of 1, 2, 3, 4, 5 and 5 samples, interleaved
// (i·7 mod 20; 7 is coprime with 20) so that classes and their pair slots straddle blocks. With
// max_class_size 5 every sample has O = 2 pair slots: N = 20·3 = 60 items, of which
// 20 + (0 + 1 + 3 + 6 + 10 + 10) = 50 are valid; the singleton class has no positive.
func simixBlockLabels() []int64 {
	var labels []int64
	for c, n := range []int{1, 2, 3, 4, 5, 5} {
		for range n {
			labels = append(labels, int64(c))
		}
	}
	out := make([]int64, len(labels))
	for i := range labels {
		out[i*7%len(labels)] = labels[i]
	}
	return out
}

// rngState returns the store's RNG state (the Store's "#rngState" variable) as uint64s.
func rngState(t *testing.T, store *model.Store) []uint64 {
	t.Helper()
	v := store.GetVariable(model.JoinPath("/", model.RNGStateVariableName))
	if v == nil {
		t.Fatal("store has no RNG state")
	}
	x, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[uint64](x)
}

// TestRSKSiMixBlockwiseMatchesWholeBatch: RS@k + SiMix evaluated in blocks of 4 (divides B = 20),
// 7 (blocks 7, 7, 6) and 20 anchors equals the whole-batch graph in value and ∂L/∂E, for α from a
// per-pair table (distinct α per pair: checks that a block mixes the same pairs with the same side
// weighted by α), α ~ U(0, 1) from the store's RNG (the blocks must all draw the whole-batch draw,
// and the store's RNG must end in the same state: advanced once), fixed α with the query in the
// ranking set, and in float32.
//
// The two paths compute the same terms: the mixed similarities are the same sums of two (or four)
// products of the same cosine similarities, only the order of the dot products and of the final
// sums differs. In float64 that is ~1e-16 relative on s, amplified by 1/τ₂ = 20 in the sigmoids and
// summed over ≤ 60 items: ~1e-13, checked to 1e-11. In float32 the same argument gives ~1e-5 on the
// value at τ₂ = 0.05 (ε = 6e-8 · 20 · 60 · a few), checked to 1e-4; gradients relative to the largest
// entry. A block taking other pairs or other α, a count taken per block, a missing self-exclusion or
// a missing reference-row gradient changes the value or gradient by ≥ 1e-3 here.
func TestRSKSiMixBlockwiseMatchesWholeBatch(t *testing.T) {
	labels := simixBlockLabels()
	batch := losstest.Random(11, 6, labels)
	table := make([]float64, batch.B*batch.B)
	for i := range table {
		table[i] = 0.05 + 0.9*math.Mod(float64(i)*0.6180339887, 1)
	}
	cases := []struct {
		name string
		cfg  *losses.RSKConfig
		dt   dtypes.DType
	}{
		{"alpha table", &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2, 4, 8}, SiMix: true,
			SiMixAlphaTable: table, MaxClassSize: 5, SiMixAlpha: -1}, dtypes.Float64},
		{"random alpha", &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2, 4, 8}, SiMix: true,
			MaxClassSize: 5, SiMixAlpha: -1, ChunkQueries: 5}, dtypes.Float64},
		{"fixed alpha, query in ranking", &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2, 4}, SiMix: true,
			MaxClassSize: 5, SiMixAlpha: 0.3, QueryInRanking: true}, dtypes.Float64},
		{"random alpha float32", &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2, 4, 8}, SiMix: true,
			MaxClassSize: 5, SiMixAlpha: -1}, dtypes.Float32},
	}
	newStore := func() *model.Store {
		s := model.NewStore()
		if err := s.SetRNGStateFromSeed(5); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tc := range cases {
		tol := 1e-11
		if tc.dt == dtypes.Float32 {
			tol = 1e-4
		}
		wholeStore := newStore()
		want, err := losses.Evaluate(backend.MustShared(), tc.cfg, batch.Emb, batch.B, batch.D, batch.Labels, 1,
			losses.EvalOptions{Grad: true, DType: tc.dt, Store: wholeStore})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if want.Value == 0 || math.IsNaN(want.Value) {
			t.Fatalf("%s: degenerate whole-batch value %v", tc.name, want.Value)
		}
		for _, block := range []int{4, 7, 20} {
			name := fmt.Sprintf("%s, block %d", tc.name, block)
			blockStore := newStore()
			got, err := losses.EvaluateBlockwise(backend.MustShared(), tc.cfg, batch.Emb, batch.B, batch.D, batch.Labels, 1, block,
				losses.EvalOptions{Grad: true, DType: tc.dt, Store: blockStore})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if d := math.Abs(got.Value - want.Value); d > tol {
				t.Errorf("%s: blockwise %.12g, whole batch %.12g (|Δ| %.2g)", name, got.Value, want.Value, d)
			}
			worst, scale := 0.0, 0.0
			for i := range want.Grad {
				worst = math.Max(worst, math.Abs(got.Grad[i]-want.Grad[i]))
				scale = math.Max(scale, math.Abs(want.Grad[i]))
			}
			if scale == 0 {
				t.Fatalf("%s: zero whole-batch gradient", name)
			}
			if worst > tol*math.Max(1, scale) {
				t.Errorf("%s: max |∂ blockwise − ∂ whole| = %.2g (largest entry %.2g)", name, worst, scale)
			}
			if tc.cfg.SiMixAlphaTable == nil && tc.cfg.SiMixAlpha < 0 {
				if ws, bs := rngState(t, wholeStore), rngState(t, blockStore); !slices.Equal(ws, bs) {
					t.Errorf("%s: RNG state after the blocks %v, after the whole batch %v: want one advance", name, bs, ws)
				}
			}
		}
	}
}

// TestRSKSiMixBlockwiseRandomAlphaMatters guards the random-α comparison above: with another seed the
// whole-batch value differs by far more than the tolerance, so equal values there mean equal draws.
func TestRSKSiMixBlockwiseRandomAlphaMatters(t *testing.T) {
	batch := losstest.Random(11, 6, simixBlockLabels())
	cfg := &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2, 4, 8}, SiMix: true, MaxClassSize: 5, SiMixAlpha: -1}
	v := make([]float64, 2)
	for i, seed := range []int64{5, 6} {
		res, err := losses.EvaluateBlockwise(backend.MustShared(), cfg, batch.Emb, batch.B, batch.D, batch.Labels, 1, 7,
			losses.EvalOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		v[i] = res.Value
	}
	if math.Abs(v[0]-v[1]) < 1e-6 {
		t.Errorf("seeds 5 and 6 give %.12g and %.12g: α does not reach the blockwise loss", v[0], v[1])
	}
}

// TestRSKSiMixBlockwiseOverflow: a class larger than max_class_size makes the blockwise loss NaN,
// as the whole-batch loss (class of 5 with max_class_size 4).
func TestRSKSiMixBlockwiseOverflow(t *testing.T) {
	batch := losstest.Random(11, 6, simixBlockLabels())
	cfg := &losses.RSKConfig{TauRank: 1, TauSim: 0.05, K: []int{1, 2}, SiMix: true, MaxClassSize: 4, SiMixAlpha: 0.5}
	for _, block := range []int{7, 20} {
		res, err := losses.EvaluateBlockwise(backend.MustShared(), cfg, batch.Emb, batch.B, batch.D, batch.Labels, 1, block, losses.EvalOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !math.IsNaN(res.Value) {
			t.Errorf("block %d: value %v, want NaN (class of 5 > max_class_size 4)", block, res.Value)
		}
	}
}
