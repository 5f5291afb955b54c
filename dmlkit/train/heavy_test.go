package train

import (
	"context"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// TestHeavyWholeDatasetStep (DMLKIT_HEAVY=1) runs one multistage step whose batch is the whole
// Omniglot background set (19,280 images; DMLKIT_HEAVY_BATCH overrides) with the default small
// CNN in chunks of DMLKIT_HEAVY_CHUNK (default 1000) and reports the time and peak RSS. Stage 1
// and 3 hold one chunk's activations; stage 2 holds the B×D embeddings and the loss graph, whose
// pairwise matrices are B×B.
func TestHeavyWholeDatasetStep(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") == "" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	if _, err := data.FindOmniglot(""); err != nil {
		t.Skipf("Omniglot not available: %v", err)
	}
	batch, chunk := 19280, 1000
	if v, err := strconv.Atoi(os.Getenv("DMLKIT_HEAVY_BATCH")); err == nil {
		batch = v
	}
	if v, err := strconv.Atoi(os.Getenv("DMLKIT_HEAVY_CHUNK")); err == nil {
		chunk = v
	}
	cfg := Default()
	cfg.Data = DataConfig{Name: "omniglot", MaxTestClasses: 20}
	cfg.Model.FrozenBN = true
	cfg.Multistage.Chunk = chunk
	cfg.Sampler = SamplerConfig{Name: "random", BatchSize: batch}
	cfg.Epochs, cfg.Steps = 0, 1
	cfg.Eval = EvalConfig{Ks: []int{1}, BatchSize: 500}
	start := time.Now()
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("multistage step: batch %d, chunk %d: %v (incl. data load and final eval), loss %.4f, peak RSS %.2f GB",
		batch, chunk, time.Since(start).Round(time.Millisecond), res.FinalLoss, float64(ru.Maxrss)/1e6)
	if res.Steps != 1 {
		t.Fatalf("%d steps", res.Steps)
	}
}
