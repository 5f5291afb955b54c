package reproduce

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestEmb2dSeries: 7 points under a cap of 3 keep every third (indices 0, 3, 6), with their labels.
func TestEmb2dSeries(t *testing.T) {
	emb := []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}
	labels := []int64{5, 5, 6, 6, 7, 7, 8}
	got := map[string][]float64{}
	old := emb2dMaxForTest(3)
	defer emb2dMaxForTest(old)
	emb2dSeries(emb, 7, labels, got)
	want := map[string][]float64{"emb2d/x": {0, 6, 12}, "emb2d/y": {1, 7, 13}, "emb2d/label": {5, 6, 8}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// emb2dMaxForTest sets emb2dMax and returns the previous value.
func emb2dMaxForTest(n int) int { old := emb2dMax; emb2dMax = n; return old }

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

// TestTrainRunnerCorruptionAndProtocols: a two-step run on synth-reproduce-test (16 classes × 8 =
// 128 training images) with label noise 0.25 (32 chosen) and image noise 0.125 (16 replaced, the
// pool being the dataset's own training images) stores the realised corruption: corrupt/label_changed
// equals a recount of the record's old ≠ new labels in corruption.json (the paper's draw lets some
// of the 32 keep their label), its fraction of the 128 images, and 16 images replaced (0.125). The
// re-ranking protocol (eval.rerank.k 3) adds rerank/R@1; hierarchical without coarse labels adds
// nothing.
func TestTrainRunnerCorruptionAndProtocols(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	cfg := map[string]any{
		"seed": 5,
		"data": map[string]any{"name": "synth-reproduce-test",
			"corrupt": map[string]any{"label_noise": 0.25, "image_noise": 0.125, "image_pool": "synth-reproduce-test"}},
		"model":      map[string]any{"channels": []any{4, 8}, "dim": 8},
		"sampler":    map[string]any{"name": "m_per_class", "batch_size": 16, "m": 4},
		"steps":      2,
		"eval":       map[string]any{"ks": []any{1, 2}, "batch_size": 32, "metric": "R@1", "rerank": map[string]any{"k": 3}, "hierarchical": true},
		"checkpoint": map[string]any{"keep": 0},
		"loss":       map[string]any{"name": "contrastive"},
	}
	dir := t.TempDir()
	out, err := TrainRunner(context.Background(), sweep.RunSpec{Config: cfg, Seed: 5, Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := data.LoadCorruptions(filepath.Join(dir, data.CorruptionFile))
	if err != nil || len(recs) != 2 || recs[0].Kind != "label-noise" || len(recs[0].Indices) != 32 {
		t.Fatalf("records %+v %v", recs, err)
	}
	changed := 0
	for j := range recs[0].Indices {
		if recs[0].OldLabels[j] != recs[0].NewLabels[j] {
			changed++
		}
	}
	want := map[string]float64{"corrupt/label_changed": float64(changed), "corrupt/label_changed_frac": float64(changed) / 128,
		"corrupt/images_replaced": 16, "corrupt/images_replaced_frac": 0.125}
	for k, v := range want {
		if got, ok := out.Metrics[k]; !ok || got != v {
			t.Errorf("%s = %v (stored %v), want %v", k, got, ok, v)
		}
	}
	if changed == 32 {
		t.Errorf("all 32 chosen labels changed: want the paper's draw from all classes")
	}
	if _, ok := out.Metrics["rerank/R@1"]; !ok || out.Metrics["rerank/k"] != 3 {
		t.Errorf("rerank/R@1 missing: %v", out.Metrics)
	}
	if _, ok := out.Metrics["HR@1"]; ok {
		t.Error("HR@1 stored without coarse labels")
	}
	// No spec asked for seed 000's diagnostics: none is computed (issue 43).
	for _, k := range []string{"dist/pos", "dist/neg", "fig1/dstar_alphabet"} {
		if _, ok := out.Series[k]; ok {
			t.Errorf("series %s computed though no diagnostic was asked for", k)
		}
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
	newOut := func() *sweep.Outcome {
		return &sweep.Outcome{Metrics: map[string]float64{}, Series: map[string][]float64{}}
	}
	// One alphabet (as TestAlphabetThresholds: d* = 1.5): the series, no metric, a note.
	out := newOut()
	fig1Thresholds([]float32{0, 0.5, 2, 2.5}, 4, 1, []int64{a, a, a + 1, a + 1}, out)
	if _, ok := out.Metrics["fig1/dstar_spread"]; ok || !reflect.DeepEqual(out.Series["fig1/dstar_alphabet"], []float64{1.5}) ||
		out.Notes["fig1/dstar_spread"] != "undefined: 1 Omniglot evaluation alphabet(s) of the test classes have a threshold (the spread needs 2)" {
		t.Errorf("one alphabet: %+v", out)
	}
	// Two alphabets: the second at 10, 10.5, 13, 13.5 has negatives 3, 3.5, 2.5, 3 → d* = 2.5;
	// spread = sample std of 1.5 and 2.5 = √0.5.
	out = newOut()
	fig1Thresholds([]float32{0, 0.5, 2, 2.5, 10, 10.5, 13, 13.5}, 8, 1, []int64{a, a, a + 1, a + 1, b, b, b + 1, b + 1}, out)
	if got := out.Metrics["fig1/dstar_spread"]; math.Abs(got-math.Sqrt(0.5)) > 1e-12 || out.Notes != nil ||
		!reflect.DeepEqual(out.Series["fig1/dstar_alphabet"], []float64{1.5, 2.5}) {
		t.Errorf("two alphabets: %+v", out)
	}
	// Not Omniglot's evaluation characters: nothing but the note.
	out = newOut()
	fig1Thresholds([]float32{0, 1}, 2, 1, []int64{3, 4}, out)
	if len(out.Series) != 0 || len(out.Metrics) != 0 || out.Notes["fig1/dstar_spread"] == "" {
		t.Errorf("background labels: %+v", out)
	}
}
