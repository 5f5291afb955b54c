package train

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// TestValidateNamesField: each broken field is reported by its path.
func TestValidateNamesField(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		field  string
	}{
		{func(c *Config) { c.Data.Name = "nope" }, "data.name"},
		{func(c *Config) { c.Model.Backbone = "vgg" }, "model.backbone"},
		{func(c *Config) { c.Model.Dim = 0 }, "model.dim"},
		{func(c *Config) { c.Loss.Name = "nope" }, "loss"},
		{func(c *Config) { c.Loss.Set = map[string]any{"distance": "manhattan"} }, "distance"},
		{func(c *Config) { c.Optimizer.Name = "lion" }, "optimizer.name"},
		{func(c *Config) { c.Optimizer.LR = -1 }, "optimizer.lr"},
		{func(c *Config) { c.Optimizer.Groups = []GroupConfig{{Match: "x", LRMul: -1}} }, "optimizer.groups[0].lr_mul"},
		{func(c *Config) { c.Schedule = ScheduleConfig{Name: "step"} }, "schedule.step_size"},
		{func(c *Config) { c.Schedule = ScheduleConfig{Name: "multistep", Milestones: []int{5, 3}, Gamma: 0.1} }, "schedule.milestones"},
		{func(c *Config) { c.Sampler.M = 3 }, "sampler.m"},
		{func(c *Config) { c.Epochs, c.Steps = -1, 0 }, "epochs"},
		{func(c *Config) { c.Model.Head = "pca" }, "model.head"}, // a pca head needs fixed features
		{func(c *Config) { c.Eval.Patience = 2 }, "eval.patience"},
		{func(c *Config) { c.Multistage.Chunk = 4 }, "multistage.chunk"},
		{func(c *Config) { c.Data.ValClasses = 1.5 }, "data.val_classes"},
	} {
		c := testConfig()
		if err := c.Validate(); err != nil {
			t.Fatalf("base config invalid: %v", err)
		}
		tc.mutate(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("want an error naming %q, got %v", tc.field, err)
		}
	}
}

// TestApplyAndLoad: --set assignments reach typed fields and the loss/data maps; YAML loading
// rejects unknown fields with their line.
func TestApplyAndLoad(t *testing.T) {
	c := testConfig()
	kv := map[string]any{"optimizer.lr": "0.01", "model.channels": "8,16", "loss.set.neg_margin": "0.5", "data.options.size": "28", "sampler.m": "2"}
	if err := c.Apply(kv); err != nil {
		t.Fatal(err)
	}
	if c.Optimizer.LR != 0.01 || !reflect.DeepEqual(c.Model.Channels, []int{8, 16}) || c.Loss.Set["neg_margin"] != "0.5" || c.Data.Options["size"] != "28" || c.Sampler.M != 2 {
		t.Errorf("assignments not applied: %+v", c)
	}
	if err := c.Apply(map[string]any{"optimizer.learning_rate": "1"}); err == nil || !strings.Contains(err.Error(), "optimizer.learning_rate") {
		t.Errorf("unknown key: %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "run.yaml")
	os.WriteFile(p, []byte("seed: 3\noptimizer:\n  name: sgd\n  lr: 0.1\nmodel:\n  dimm: 4\n"), 0o644)
	if _, err := LoadConfig(p); err == nil || !strings.Contains(err.Error(), "line 6") || !strings.Contains(err.Error(), "dimm") {
		t.Errorf("unknown yaml field: %v", err)
	}
	os.WriteFile(p, []byte("seed: 3\noptimizer:\n  name: sgd\n  lr: 0.1\nloss:\n  name: contrastive\n  set: {neg_margin: 0.7}\n"), 0o644)
	c2, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Seed != 3 || c2.Optimizer.Name != "sgd" || c2.Optimizer.Beta2 != 0.999 || c2.Loss.Set["neg_margin"] != 0.7 {
		t.Errorf("loaded %+v", c2)
	}
	// The resolved YAML round-trips.
	y, _ := c2.YAML()
	os.WriteFile(p, y, 0o644)
	c3, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	y3, _ := c3.YAML()
	if !bytes.Equal(y, y3) {
		t.Errorf("round trip changed the config:\n%s\n%s", y, y3)
	}
}

// readMetrics reads metrics.jsonl with ReadHistory, zeroing the wall times (they differ between
// otherwise identical runs).
func readMetrics(t *testing.T, dir string) []EvalRecord {
	t.Helper()
	out, err := ReadHistory(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range out {
		out[i].WallTime = 0
	}
	return out
}

// TestRunDeterministicAndResume: the same config and seed give byte-identical embeddings and
// identical metrics; a run interrupted after 5 steps and resumed from its checkpoint ends with
// the same embeddings and final metrics as the uninterrupted run; the run directory has every
// file.
func TestRunDeterministicAndResume(t *testing.T) {
	cfg := testConfig()
	cfg.Eval.OPIS = true
	ctx := context.Background()
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	var reports int
	resA, err := Run(ctx, cfg, dirA, func(p Progress) { reports++ })
	if err != nil {
		t.Fatal(err)
	}
	if resA.Steps != 16 || reports < 16 {
		t.Fatalf("steps %d, progress reports %d; want 16 steps (2 epochs × 8 batches)", resA.Steps, reports)
	}
	for _, f := range []string{"config.resolved.yaml", "env.json", "metrics.jsonl", "test_embeddings.npy", "test_labels.npy"} {
		if _, err := os.Stat(filepath.Join(dirA, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	if l, _ := listCheckpoints(dirA); len(l) == 0 {
		t.Error("no checkpoint written")
	}
	var env Env
	b, _ := os.ReadFile(filepath.Join(dirA, "env.json"))
	if err := json.Unmarshal(b, &env); err != nil || env.GoVersion == "" || env.Backend == "" {
		t.Errorf("env.json: %v %+v", err, env)
	}
	if _, err := Run(ctx, cfg, dirB, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(ctx, cfg, dirB, nil); err == nil || !strings.Contains(err.Error(), "already holds a run") {
		t.Errorf("a second run into the same directory: %v", err)
	}
	embA, _ := os.ReadFile(filepath.Join(dirA, "test_embeddings.npy"))
	embB, _ := os.ReadFile(filepath.Join(dirB, "test_embeddings.npy"))
	if !bytes.Equal(embA, embB) {
		t.Error("same config and seed gave different embeddings")
	}
	mA, mB := readMetrics(t, dirA), readMetrics(t, dirB)
	if !reflect.DeepEqual(mA, mB) {
		t.Errorf("same config and seed gave different metrics:\n%+v\n%+v", mA, mB)
	}
	if len(mA) != 2 || mA[1].Metrics["test/R@1"] == 0 || mA[1].Metrics["test/MAP@R"] == 0 {
		t.Errorf("want 2 evaluation records with test/R@1 and test/MAP@R, got %+v", mA)
	}
	if _, ok := mA[1].Metrics["test/OPIS"]; !ok {
		t.Errorf("eval.opis set but no test/OPIS: %v", mA[1].Metrics)
	}

	// Interrupted after 5 steps (mid-epoch), then resumed.
	r1, err := RunWithOptions(ctx, cfg, dirC, Options{StopAfter: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !r1.Interrupted || r1.Steps != 5 {
		t.Fatalf("interrupted run: %+v", r1)
	}
	r2, err := RunWithOptions(ctx, cfg, dirC, Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Steps != 16 {
		t.Fatalf("resumed run ended at step %d", r2.Steps)
	}
	embC, _ := os.ReadFile(filepath.Join(dirC, "test_embeddings.npy"))
	if !bytes.Equal(embA, embC) {
		t.Error("resumed run's embeddings differ from the uninterrupted run's")
	}
	if !reflect.DeepEqual(r2.Metrics, resA.Metrics) {
		t.Errorf("resumed final metrics %v, uninterrupted %v", r2.Metrics, resA.Metrics)
	}
	if r2.FinalLoss != resA.FinalLoss {
		t.Errorf("final loss %v vs %v", r2.FinalLoss, resA.FinalLoss)
	}
	mC := readMetrics(t, dirC)
	if !reflect.DeepEqual(mC, mA) {
		t.Errorf("resumed metrics.jsonl differs:\n%+v\n%+v", mC, mA)
	}
}

// TestMultistageGradient: the chunked three-stage gradient equals the direct full-batch
// gradient to 1e-5 (the bound; absolute, or relative to the largest gradient entry when
// that exceeds 1). Chunks of 5 over a batch of 16 (5, 5, 5, 1) exercise an uneven last chunk.
// Both are float32 and differ only in summation order: ~1e-7 on the Go backend, ~3e-6 on ONNX
// Runtime.
func TestMultistageGradient(t *testing.T) {
	cfg := testConfig()
	cfg.Model.FrozenBN = true
	cfg.Multistage.Chunk = 5
	cfg.Model.Projector = []int{6}
	loss, direct, worst, scale := multistageVsDirect(t, cfg)
	if d := math.Abs(loss - direct); d > 1e-6 {
		t.Errorf("multistage loss %g vs direct %g", loss, direct)
	}
	if scale == 0 {
		t.Fatal("direct gradient is zero")
	}
	if worst > 1e-5*math.Max(1, scale) {
		t.Errorf("max |multistage − direct| gradient entry = %g (scale %g)", worst, scale)
	}
	// One multistage training step runs and moves the weights.
	cfg2 := cfg
	cfg2.Epochs, cfg2.Steps = 0, 3
	if _, err := Run(context.Background(), cfg2, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
}

// TestExampleConfig: the shipped example configuration loads and validates.
func TestExampleConfig(t *testing.T) {
	c, err := LoadConfig("testdata/omniglot-cnn.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Data.ValClasses != 0.1 || c.Schedule.Name != "cosine" || c.Eval.Metric != "MAP@R" || !c.Eval.OPIS {
		t.Errorf("loaded %+v", c)
	}
}

func TestReadHistoryErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadHistory(dir); err == nil || !strings.Contains(err.Error(), "metrics.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("{\"step\": 1, \"metrics\": {\"test/R@1\": 0.5}}\n{broken\n"), 0o644)
	if _, err := ReadHistory(dir); err == nil || !strings.Contains(err.Error(), "metrics.jsonl:2") {
		t.Errorf("broken line 2: %v", err)
	}
}

// TestEvalScheduleDoesNotChangeTraining: evaluating after every epoch, with OPIS, with the loss
// timed alone (eval.time_loss), at step 0 and on part of the training set, leaves the trained
// model unchanged: the final test embeddings are byte-identical to those of a run evaluated only at
// the end. (Experiment claims rely on this to pair runs across eval.* settings.)
func TestEvalScheduleDoesNotChangeTraining(t *testing.T) {
	ctx := context.Background()
	once := testConfig()
	once.Eval.Every = 0
	often := testConfig()
	often.Eval.Every, often.Eval.OPIS, often.Eval.TimeLoss, often.Eval.Initial = 1, true, true, true
	often.Eval.Train, often.Eval.MaxTrain = true, 40
	dirA, dirB := t.TempDir(), t.TempDir()
	resA, err := Run(ctx, once, dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	resB, err := Run(ctx, often, dirB, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(resA.History) != 1 || len(resB.History) != 3 {
		t.Fatalf("evaluations: %d and %d, want 1 (end) and 3 (initial + 2 epochs)", len(resA.History), len(resB.History))
	}
	embA, _ := os.ReadFile(filepath.Join(dirA, "test_embeddings.npy"))
	embB, _ := os.ReadFile(filepath.Join(dirB, "test_embeddings.npy"))
	if len(embA) == 0 || !bytes.Equal(embA, embB) {
		t.Error("the evaluation schedule changed the trained model's test embeddings")
	}
	if resA.Metrics["test/R@1"] != resB.Metrics["test/R@1"] || resA.FinalLoss != resB.FinalLoss {
		t.Errorf("final R@1 %v vs %v, loss %v vs %v", resA.Metrics["test/R@1"], resB.Metrics["test/R@1"], resA.FinalLoss, resB.FinalLoss)
	}
}

// TestMeasureOptionsDoNotChangeTraining: Options.InitTrain (the untrained model on part of the
// training set) and Options.LossTrace leave the run as it was — the same test embeddings and final
// loss as a plain run — and InitTrain's R@1 is the one an initial evaluation on the same training
// subset gives (eval.initial + eval.train, a second path to the same number). The trace holds one
// loss per step, its last the final loss.
func TestMeasureOptionsDoNotChangeTraining(t *testing.T) {
	ctx := context.Background()
	plain := testConfig()
	plain.Eval.Every = 0
	dirA, dirB, dirC := t.TempDir(), t.TempDir(), t.TempDir()
	resA, err := Run(ctx, plain, dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	resB, err := RunWithOptions(ctx, plain, dirB, Options{InitTrain: 40, LossTrace: true})
	if err != nil {
		t.Fatal(err)
	}
	embA, _ := os.ReadFile(filepath.Join(dirA, "test_embeddings.npy"))
	embB, _ := os.ReadFile(filepath.Join(dirB, "test_embeddings.npy"))
	if len(embA) == 0 || !bytes.Equal(embA, embB) || resA.FinalLoss != resB.FinalLoss || len(resB.History) != 1 {
		t.Fatalf("the measurement options changed the run (embeddings equal %v, loss %v vs %v, %d evaluations)",
			bytes.Equal(embA, embB), resA.FinalLoss, resB.FinalLoss, len(resB.History))
	}
	if len(resB.Losses) != resB.Steps || resB.Losses[len(resB.Losses)-1] != resB.FinalLoss || resA.Losses != nil {
		t.Errorf("loss trace: %d losses for %d steps, last %v, final %v", len(resB.Losses), resB.Steps, resB.Losses[len(resB.Losses)-1], resB.FinalLoss)
	}
	initial := plain
	initial.Eval.Initial, initial.Eval.Train, initial.Eval.MaxTrain = true, true, 40
	resC, err := Run(ctx, initial, dirC, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := resB.InitTrain["train/R@1"]
	want := resC.History[0].Metrics["train/R@1"]
	if !ok || got != want || resC.History[0].Step != 0 {
		t.Errorf("InitTrain R@1 %v (present %v), the initial evaluation's %v at step %d", got, ok, want, resC.History[0].Step)
	}
}

// TestRestoreBest: with eval.restore_best the run reports the evaluation with the best validation
// R@1 — its test metrics and step — and writes that evaluation's test embeddings: R@1 recomputed
// from test_embeddings.npy equals the reported one, and it is the history's test R@1 at the step
// of the best validation R@1 (the first of equals), found here by hand from the history.
func TestRestoreBest(t *testing.T) {
	cfg := testConfig()
	cfg.Epochs, cfg.Eval.Every = 8, 1
	cfg.Data.ValClasses = 0.25
	cfg.Eval.RestoreBest = true
	cfg.Optimizer.LR = 3e-1 // large enough that validation R@1 peaks before the end (0.75 at the 5th of 8 evaluations)
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	best := 0
	for i, h := range res.History {
		if h.Metrics["val/R@1"] > res.History[best].Metrics["val/R@1"] {
			best = i
		}
	}
	if best == len(res.History)-1 {
		t.Fatal("validation R@1 peaks at the last evaluation: the test would not tell restoring from not")
	}
	want := res.History[best]
	if res.BestStep != want.Step || res.Metrics["test/R@1"] != want.Metrics["test/R@1"] {
		t.Fatalf("best step %d, test R@1 %v; the history's best validation is at step %d with test R@1 %v",
			res.BestStep, res.Metrics["test/R@1"], want.Step, want.Metrics["test/R@1"])
	}
	emb, dims, err := npy.ReadFloat32(filepath.Join(dir, "test_embeddings.npy"))
	if err != nil {
		t.Fatal(err)
	}
	labels, _, err := npy.ReadInt64(filepath.Join(dir, "test_labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := RetrievalEvaluator(cfg.Eval.Ks, false, 0)(emb, dims[0], dims[1], labels)
	if err != nil {
		t.Fatal(err)
	}
	if m["R@1"] != res.Metrics["test/R@1"] {
		t.Errorf("R@1 of the written embeddings %v, reported %v", m["R@1"], res.Metrics["test/R@1"])
	}
	bad := cfg
	bad.Data.ValClasses = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "eval.restore_best") {
		t.Errorf("restore_best without a validation split: %v", err)
	}
}
