package train

import (
	"math"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/gomlx/gomlx/ml/model"
)

// TestHeavyWholeDatasetStep (DMLKIT_HEAVY=1) runs one multistage step whose batch is the whole
// Omniglot background set (19,280 images; DMLKIT_HEAVY_BATCH overrides) with the default small
// CNN (frozen BN) and the contrastive loss in chunks of DMLKIT_HEAVY_CHUNK (default 500) and
// reports the time per stage and the peak RSS. Stages 1 and 3 hold one chunk's activations;
// stage 2 holds the B×D embeddings and the loss graph, whose pairwise matrices are B×B (1.5 GB
// each in float32 at B = 19,280). Measured on the shared 2-core machine with GOMEMLIMIT=11GiB:
// 2 min 48 s wall (embed 20 s, loss 81 s, re-embed + backprop 66 s), peak RSS 13.3 GB; without
// GOMEMLIMIT the Go heap overshoots past 18 GB, so set it when memory is tight.
func TestHeavyWholeDatasetStep(t *testing.T) {
	if os.Getenv("DMLKIT_HEAVY") == "" {
		t.Skip("set DMLKIT_HEAVY=1")
	}
	if _, err := data.FindOmniglot(""); err != nil {
		t.Skipf("Omniglot not available: %v", err)
	}
	batch, chunk := 19280, 500
	if v, err := strconv.Atoi(os.Getenv("DMLKIT_HEAVY_BATCH")); err == nil {
		batch = v
	}
	if v, err := strconv.Atoi(os.Getenv("DMLKIT_HEAVY_CHUNK")); err == nil {
		chunk = v
	}
	cfg := Default()
	cfg.Data = DataConfig{Name: "omniglot"}
	cfg.Model.FrozenBN = true
	cfg.Multistage.Chunk = chunk
	cfg.Sampler = SamplerConfig{Name: "random", BatchSize: batch}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	split, err := loadData(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := split.train
	h, w, c := tr.Dims()
	eng, err := newEngine(&cfg, backend.MustShared(), model.NewStore(), len(classesOf(tr)), h, w, c)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := NewSampler(cfg.Sampler, 0, tr.Labels(), nil)
	idx := s.Epoch(0)[0]
	pix := make([]float32, len(idx)*h*w*c)
	tr.Fill(idx, pix)
	labels := make([]int64, len(idx))
	for i, j := range idx {
		labels[i] = int64(tr.Labels()[j])
	}
	var before syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	start := time.Now()
	loss, err := eng.trainStep(pix, len(idx), labels, 1, 1e-3, 0)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano()+ru.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	st := eng.stageTimes
	t.Logf("multistage step: batch %d, chunk %d: %v wall (%v CPU; stages embed %v, loss+∂L/∂E %v, re-embed+backprop %v), loss %.4f, peak RSS %.2f GB (input pixels %.2f GB)",
		len(idx), chunk, el.Round(time.Millisecond), cpu.Round(time.Millisecond), st[0].Round(time.Millisecond), st[1].Round(time.Millisecond), st[2].Round(time.Millisecond),
		loss, float64(ru.Maxrss)/1e6, float64(len(pix)*4)/1e9)
	if math.IsNaN(loss) || loss <= 0 {
		t.Fatalf("loss %v", loss)
	}
}
