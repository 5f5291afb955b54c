package reproduce

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/evaluate"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

// idmlRunConfig is a two-step IDML run on synth-reproduce-test (10 test classes × 6 = 60 images):
// dual head 8 + 3, the idml loss (proxyanchor base, γ = 0.5) with mixup.
func idmlRunConfig(eval map[string]any) map[string]any {
	return map[string]any{
		"seed":       3,
		"data":       map[string]any{"name": "synth-reproduce-test"},
		"model":      map[string]any{"channels": []any{4, 8}, "dim": 8, "dual_head": true, "unc_dim": 3},
		"sampler":    map[string]any{"name": "m_per_class", "batch_size": 16, "m": 4},
		"steps":      2,
		"mixup":      map[string]any{"enabled": true},
		"eval":       eval,
		"checkpoint": map[string]any{"keep": 0},
		"loss":       map[string]any{"name": "idml", "set": map[string]any{"base": "proxyanchor", "unc_dim": 3, "gamma": 0.5}},
	}
}

// runIDMLFiles runs an idmlRunConfig configuration (seed 3) in dir and reads back the run's test
// embeddings [60, 8], uncertainty embeddings [60, 3] and labels.
func runIDMLFiles(t *testing.T, cfg map[string]any, dir string) (out *sweep.Outcome, emb, unc []float32, n, d int, labels []int64) {
	t.Helper()
	out, err := TrainRunner(context.Background(), sweep.RunSpec{Config: cfg, Seed: 3, Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	emb, n, d, labels, err = finalEmbeddings(dir)
	if err != nil {
		t.Fatal(err)
	}
	unc, shape, err := npy.ReadFloat32(filepath.Join(dir, train.TestUncertaintyFile))
	if err != nil || len(shape) != 2 || shape[0] != 60 || shape[1] != 3 || n != 60 || d != 8 {
		t.Fatalf("uncertainty %v (%v), embeddings [%d, %d]", shape, err, n, d)
	}
	return out, emb, unc, n, d, labels
}

// TestTrainRunnerISM: with model.dual_head the trainer keeps the test split's uncertainty
// embeddings ([60, 3], rows as the semantic ones); eval.ism stores ism/… keys equal to
// evaluate.ISMRetrieval on those files with the loss's τ (5), γ (0.5) and the proxyanchor base's
// C_IN form, and unc/norm_test is the mean row norm recomputed here (eval.degrade: the same under a
// blur that changes no pixel, another under noise). eval.ism without the dual head
// or without an idml loss is refused. eval.skip_opis leaves the runner's OPIS out; without it
// (and without eval.ism) OPIS is stored and the ism/ keys are not.
func TestTrainRunnerISM(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	dir := t.TempDir()
	cfg := idmlRunConfig(map[string]any{"ks": []any{1, 2}, "batch_size": 32, "ism": true, "skip_opis": true,
		"degrade": []any{map[string]any{"kind": "blur", "level": 0.001}, map[string]any{"kind": "noise", "level": 0.5}}})
	out, emb, unc, n, d, labels := runIDMLFiles(t, cfg, dir)
	want, err := evaluate.ISMRetrieval(emb, unc, n, d, 3, labels, evaluate.ISMOptions{Tau: 5, Gamma: 0.5, Form: "cos", K: []int{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"R@1", "R@2", "MAP@R", "R-Precision"} {
		if got, ok := out.Metrics["ism/"+k]; !ok || got != want[k] {
			t.Errorf("ism/%s = %v (stored %v), want %v", k, got, ok, want[k])
		}
		if _, ok := out.Metrics[k]; !ok {
			t.Errorf("%s (the cosine ranking) missing", k)
		}
	}
	if _, ok := out.Metrics["OPIS"]; ok || out.Series["opis/thresholds"] != nil {
		t.Error("OPIS stored with eval.skip_opis")
	}
	if out.Metrics["ism/form_cos"] != 1 {
		t.Errorf("ism/form_cos = %v, want 1 (proxyanchor base)", out.Metrics["ism/form_cos"])
	}
	sum := 0.0
	for i := 0; i < n; i++ {
		a, b, c := float64(unc[3*i]), float64(unc[3*i+1]), float64(unc[3*i+2])
		sum += math.Sqrt(a*a + b*b + c*c)
	}
	if got := out.Metrics["unc/norm_test"]; math.Abs(got-sum/60) > 1e-12 {
		t.Errorf("unc/norm_test = %v, want %v", got, sum/60)
	}
	// eval.degrade: a blur of σ = 0.001 changes no pixel, so its ‖u‖ is the clean one (float32
	// embeddings summed in float64 in a different order: 1e-6); noise of σ = 0.5 moves it.
	if got, ok := out.Metrics["unc/norm_test_blur_0.001"]; !ok || math.Abs(got-sum/60) > 1e-6*sum/60 {
		t.Errorf("unc/norm_test_blur_0.001 = %v (stored %v), want %v", got, ok, sum/60)
	}
	if got, ok := out.Metrics["unc/norm_test_noise_0.5"]; !ok || math.Abs(got-sum/60) < 1e-4*sum/60 {
		t.Errorf("unc/norm_test_noise_0.5 = %v (stored %v), want a value other than the clean %v", got, ok, sum/60)
	}
	for kind, level := range map[string]float64{"blur": 0.001, "noise": 0.5} {
		l, nm := out.Series["unc/degrade/"+kind+"/level"], out.Series["unc/degrade/"+kind+"/norm"]
		want := []float64{out.Metrics["unc/norm_test"], out.Metrics[fmt.Sprintf("unc/norm_test_%s_%g", kind, level)]}
		if !slices.Equal(l, []float64{0, level}) || !slices.Equal(nm, want) {
			t.Errorf("series of %s: levels %v, norms %v; want [0 %g], %v", kind, l, nm, level, want)
		}
	}

	out, err = TrainRunner(context.Background(), sweep.RunSpec{Config: idmlRunConfig(map[string]any{"ks": []any{1}, "batch_size": 32}), Seed: 3, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Metrics["OPIS"]; !ok || len(out.Series["opis/far_ranges"]) != 4 {
		t.Errorf("OPIS missing without eval.skip_opis: %v", out.Series["opis/far_ranges"])
	}
	if _, ok := out.Metrics["ism/R@1"]; ok || !(out.Metrics["unc/norm_test"] > 0) {
		t.Errorf("without eval.ism: ism/R@1 stored %v, unc/norm_test %v", ok, out.Metrics["unc/norm_test"])
	}

	bad := idmlRunConfig(map[string]any{"ism": true})
	bad["model"] = map[string]any{"channels": []any{4, 8}, "dim": 8}
	bad["loss"] = map[string]any{"name": "proxyanchor"}
	if err := ValidateTrainConfig(bad); err == nil || !strings.Contains(err.Error(), "eval.ism") || !strings.Contains(err.Error(), "dual_head") {
		t.Errorf("eval.ism without the dual head: %v", err)
	}
	bad = idmlRunConfig(map[string]any{"ism": true})
	bad["loss"] = map[string]any{"name": "pel"}
	bad["model"] = map[string]any{"channels": []any{4, 8}, "dim": 8, "dual_head": true}
	if err := ValidateTrainConfig(bad); err == nil || !strings.Contains(err.Error(), "idml loss") {
		t.Errorf("eval.ism without an idml loss: %v", err)
	}
	bad = idmlRunConfig(map[string]any{"ism": true, "ism_form": "l2"})
	if err := ValidateTrainConfig(bad); err == nil || !strings.Contains(err.Error(), "eval.ism_form") {
		t.Errorf("eval.ism_form l2: %v", err)
	}
}

// TestTrainRunnerPull: eval.pull stores evaluate.IDMLPull's deciles of the run's own test files
// (recomputed here with the run's seed: equal), and is refused for a proxy base.
func TestTrainRunnerPull(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	dir := t.TempDir()
	cfg := idmlRunConfig(map[string]any{"ks": []any{1}, "batch_size": 32, "pull": true, "skip_opis": true})
	cfg["loss"] = map[string]any{"name": "idml", "set": map[string]any{"base": "contrastive", "unc_dim": 3}}
	out, emb, unc, n, d, labels := runIDMLFiles(t, cfg, dir)
	ic := losses.DefaultIDML()
	ic.Base, ic.UncDim = "contrastive", 3
	want, err := evaluate.IDMLPull(emb, unc, n, d, 3, labels, evaluate.PullOptions{Loss: ic, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Series["pull/ratio_by_decile"], want.DecileRatio) || !slices.Equal(out.Series["pull/unc_by_decile"], want.DecileUnc) ||
		len(out.Series["pull/decile"]) != 10 || out.Series["pull/decile"][9] != 10 {
		t.Errorf("series: ratio %v unc %v decile %v; want %v, %v, 1…10", out.Series["pull/ratio_by_decile"], out.Series["pull/unc_by_decile"], out.Series["pull/decile"], want.DecileRatio, want.DecileUnc)
	}
	if out.Metrics["pull/ratio_bottom"] != want.DecileRatio[0] || out.Metrics["pull/ratio_top"] != want.DecileRatio[9] ||
		out.Metrics["pull/unc_top"] != want.DecileUnc[9] || out.Metrics["pull/unc_bottom"] != want.DecileUnc[0] {
		t.Errorf("metrics %v, want the first and last deciles of %v / %v", out.Metrics, want.DecileRatio, want.DecileUnc)
	}
	bad := idmlRunConfig(map[string]any{"pull": true})
	if err := ValidateTrainConfig(bad); err == nil || !strings.Contains(err.Error(), "eval.pull") || !strings.Contains(err.Error(), "proxyanchor") {
		t.Errorf("eval.pull with the proxyanchor base: %v", err)
	}
}
