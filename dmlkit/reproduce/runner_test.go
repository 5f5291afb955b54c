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

// TestTrainRunnerNoStep: a run of no optimiser step (epochs 0, steps 0: the zero-shot floor)
// stores steps 0, its one evaluation's metrics, and no final_loss (no loss was computed, and a NaN
// metric would store the run as failed); every stored metric is finite.
func TestTrainRunnerNoStep(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	cfg := map[string]any{
		"seed":       1,
		"data":       map[string]any{"name": "synth-reproduce-test"},
		"model":      map[string]any{"channels": []any{4, 8}, "dim": 8},
		"sampler":    map[string]any{"name": "m_per_class", "batch_size": 16, "m": 4},
		"epochs":     0,
		"eval":       map[string]any{"ks": []any{1, 2}, "batch_size": 32, "metric": "R@1", "train": true},
		"checkpoint": map[string]any{"keep": 0},
		"loss":       map[string]any{"name": "contrastive"},
	}
	out, err := TrainRunner(context.Background(), sweep.RunSpec{Config: cfg, Seed: 1, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Metrics["steps"] != 0 || out.Metrics["epochs"] != 0 {
		t.Errorf("steps %v, epochs %v; want 0, 0", out.Metrics["steps"], out.Metrics["epochs"])
	}
	if _, ok := out.Metrics["final_loss"]; ok {
		t.Errorf("final_loss stored for a run of no step: %v", out.Metrics["final_loss"])
	}
	for _, k := range []string{"R@1", "MAP@R", "train/R@1", "OPIS"} {
		if _, ok := out.Metrics[k]; !ok {
			t.Errorf("no %s", k)
		}
	}
	for k, v := range out.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v", k, v)
		}
	}
}
