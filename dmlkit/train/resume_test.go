package train

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestResumeChangedConfig: a run interrupted after 5 of 16 steps is resumed with a changed
// configuration. Anything that shapes the model, its data or its optimisation is refused with the
// fields named (and config.resolved.yaml keeps the settings that produced the checkpoint); more
// epochs, a new checkpoint.keep or run name are accepted and listed in Result.ResumeChanges.
func TestResumeChangedConfig(t *testing.T) {
	ctx := context.Background()
	base := testConfig() // epochs 2, model.dim 8, lr 3e-3
	for _, tc := range []struct {
		name    string
		mutate  func(*Config)
		refused []string // fields the error must name; nil: accepted
		changes []string // Result.ResumeChanges when accepted
	}{
		{"dim", func(c *Config) { c.Model.Dim = 64 }, []string{"model.dim: 8 → 64"}, nil},
		{"dim and lr", func(c *Config) { c.Model.Dim = 16; c.Optimizer.LR = 1e-2 },
			[]string{"model.dim: 8 → 16", "optimizer.lr: 0.003 → 0.01"}, nil},
		{"loss option", func(c *Config) { c.Loss.Set = map[string]any{"neg_margin": "0.7"} }, []string{"loss.set.neg_margin: (unset) → 0.7"}, nil},
		{"seed", func(c *Config) { c.Seed = 1 }, []string{"seed: 0 → 1"}, nil},
		{"fewer epochs", func(c *Config) { c.Epochs = 1 }, []string{"epochs: 2 → 1"}, nil},
		{"more epochs", func(c *Config) { c.Epochs = 3 }, nil, []string{"epochs: 2 → 3"}},
		{"keep and name", func(c *Config) { c.Checkpoint.Keep = 1; c.Name = "x" }, nil, []string{"checkpoint.keep: 0 → 1", `name: "" → x`}},
		{"unchanged", func(c *Config) {}, nil, nil},
		// The runner's protocols run after training on the final embeddings: allowed.
		{"protocols", func(c *Config) { c.Eval.Cluster = true; c.Eval.Verify.Negatives = 100 }, nil,
			[]string{"eval.cluster: false → true", "eval.verify.negatives: 0 → 100"}},
		{"log", func(c *Config) { c.Log.EverySteps = 2 }, []string{"log.every_steps: 0 → 2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := RunWithOptions(ctx, base, dir, Options{StopAfter: 5}); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(filepath.Join(dir, "config.resolved.yaml"))
			cfg := testConfig()
			tc.mutate(&cfg)
			res, err := RunWithOptions(ctx, cfg, dir, Options{Resume: true})
			if tc.refused != nil {
				if err == nil {
					t.Fatalf("resume with a changed configuration succeeded (%d steps)", res.Steps)
				}
				for _, f := range tc.refused {
					if !strings.Contains(err.Error(), f) {
						t.Errorf("error does not name %q: %v", f, err)
					}
				}
				after, _ := os.ReadFile(filepath.Join(dir, "config.resolved.yaml"))
				if string(after) != string(before) {
					t.Error("a refused resume rewrote config.resolved.yaml")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(res.ResumeChanges, tc.changes) {
				t.Errorf("ResumeChanges %q, want %q", res.ResumeChanges, tc.changes)
			}
			if (cfg.Epochs == 2 && res.Steps != 16) || (cfg.Epochs == 3 && res.Steps <= 16) {
				t.Errorf("resumed run of %d epochs ended at step %d (2 epochs: 16)", cfg.Epochs, res.Steps)
			}
		})
	}
}
