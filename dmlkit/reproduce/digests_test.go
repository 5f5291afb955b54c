package reproduce

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// TestTrainRunnerDigests: the outcome of a run on the ONNX backbone fixture carries the file's
// SHA-256 (worked out here) under "model.pretrained", for the record's digests.
func TestTrainRunnerDigests(t *testing.T) {
	t.Setenv("GOMLX_BACKEND", "go")
	const fixture = "../models/testdata/onnx_backbone.onnx"
	b, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"seed":       5,
		"data":       map[string]any{"name": "synth-reproduce-test"},
		"model":      map[string]any{"backbone": "onnx", "pretrained": fixture, "input_norm": "none", "dim": 8},
		"sampler":    map[string]any{"name": "m_per_class", "batch_size": 16, "m": 4},
		"steps":      1,
		"eval":       map[string]any{"ks": []any{1}, "batch_size": 32, "metric": "R@1", "skip_opis": true},
		"checkpoint": map[string]any{"keep": 0},
		"loss":       map[string]any{"name": "contrastive"},
	}
	out, err := TrainRunner(context.Background(), sweep.RunSpec{Config: cfg, Seed: 5, Dir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Digests["model.pretrained"], fmt.Sprintf("%x", sha256.Sum256(b)); got != want {
		t.Errorf("Outcome.Digests[model.pretrained] = %q, want %s", got, want)
	}
}
