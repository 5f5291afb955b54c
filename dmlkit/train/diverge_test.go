package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStopsAtFirstNonFiniteStep: with lr = 1e30 the first Adam update (step size ≈ lr) leaves
// parameters of ±1e30 whose forward pass overflows, so step 2 is the first whose batch embeddings
// (and, for proxyanchor, loss) are not finite. The run stops there — for the hinge losses too,
// whose loss stays finite on NaN embeddings (contrastive 1, triplet 0.05: before, they ran to the
// end and failed only at evaluation) — with a *DivergedError naming step 2, a last metrics.jsonl
// record marked failed at 1 step done, and no test embeddings.
func TestStopsAtFirstNonFiniteStep(t *testing.T) {
	for _, tc := range []struct {
		loss       string
		multistage bool
		embeddings bool // finite loss, non-finite embeddings
	}{
		{"contrastive", false, true},
		{"triplet", false, true},
		{"smoothap", false, true},
		{"proxyanchor", false, false},
		{"contrastive", true, true},
	} {
		name := tc.loss
		if tc.multistage {
			name += "/multistage"
		}
		t.Run(name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Loss.Name = tc.loss
			cfg.Optimizer.LR = 1e30
			if tc.multistage {
				cfg.Model.FrozenBN = true
				cfg.Multistage.Chunk = 8
			}
			dir := t.TempDir()
			var steps int
			_, err := Run(context.Background(), cfg, dir, func(p Progress) {
				if p.Phase == "train" {
					steps = p.Step
				}
			})
			var de *DivergedError
			if !errors.As(err, &de) {
				t.Fatalf("got %v; want a *DivergedError", err)
			}
			if de.Step != 2 || de.Embeddings != tc.embeddings || steps != 1 {
				t.Errorf("DivergedError %+v after %d reported steps; want step 2, embeddings-only %v, 1 step done", de, steps, tc.embeddings)
			}
			if !strings.Contains(err.Error(), "step 2") {
				t.Errorf("message does not name step 2: %v", err)
			}
			hist := readMetrics(t, dir)
			if len(hist) == 0 || hist[len(hist)-1].Failed == "" || hist[len(hist)-1].Step != 1 || hist[len(hist)-1].Metrics != nil {
				t.Errorf("metrics.jsonl %+v: want a last record marked failed at step 1 without metrics", hist)
			}
			if _, err := os.Stat(filepath.Join(dir, "test_embeddings.npy")); err == nil {
				t.Error("a diverged run wrote test embeddings")
			}
		})
	}
}
