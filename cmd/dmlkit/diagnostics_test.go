package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// oneAlphabetSpec trains on Omniglot with 10 test characters, all of the first evaluation
// alphabet (issue 43: such runs were stored as failed on seed 000's Fig. 1 diagnostic,
// "non-finite metrics: fig1/dstar_spread = NaN").
const oneAlphabetSpec = `paper: mine
base:
  seed: 0
  data: {name: omniglot, options: {size: 28}, max_train_classes: 16, max_test_classes: 10, val_classes: 0}
  model: {backbone: cnn, channels: [4, 8], dim: 8}
  loss: {name: contrastive}
  sampler: {name: m_per_class, batch_size: 32, m: 4}
  steps: 2
  eval: {ks: [1], batch_size: 64, metric: R@1, opis: false, patience: 0}
  checkpoint: {keep: 0}
sweep:
  list: [{loss.name: contrastive}, {loss.name: triplet}]
  seeds: [0]
`

// TestOwnSweepNeverFailsOnAPaperDiagnostic: a user's two-run Omniglot spec with
// max_test_classes 10 stores both runs as done with no paper diagnostic; the same spec naming
// seed 000's Fig. 1 diagnostic stores its runs as done too, the undefined spread left out with
// the reason in the record's notes.
func TestOwnSweepNeverFailsOnAPaperDiagnostic(t *testing.T) {
	if _, err := os.Stat("../../../shared/data/omniglot/images_background.npz"); err != nil {
		t.Skip("no ../shared/data/omniglot")
	}
	reproduce.Register()
	for _, c := range []struct {
		name, extra string
		notes       bool
	}{{"own", "", false}, {"fig1", "diagnostics: [fig1_thresholds]\n", true}} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, "reproductions", "mine")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			spec := filepath.Join(dir, "spec.yaml")
			if err := os.WriteFile(spec, []byte(oneAlphabetSpec+c.extra), 0o644); err != nil {
				t.Fatal(err)
			}
			results := filepath.Join(root, "results")
			code, stdout, stderr := runCLI("run", spec, "--results", results, "--workers", "1", "--quiet")
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
			}
			recs, _, err := sweep.NewStore(results).Load()
			if err != nil || len(recs) != 2 {
				t.Fatalf("%d records, %v", len(recs), err)
			}
			for _, r := range recs {
				if r.Failed != "" {
					t.Errorf("run %s failed: %s", r.Hash, r.Failed)
				}
				if _, ok := r.Series["dist/pos"]; ok {
					t.Errorf("run %s: Fig. 10's distances computed unasked", r.Hash)
				}
				if _, ok := r.Metrics["fig1/dstar_spread"]; ok {
					t.Errorf("run %s: fig1/dstar_spread stored for one alphabet", r.Hash)
				}
				note := r.Notes["fig1/dstar_spread"]
				if c.notes != strings.HasPrefix(note, "undefined: 1 Omniglot evaluation alphabet") {
					t.Errorf("run %s: note %q", r.Hash, note)
				}
			}
		})
	}
}

// TestExplicitDefaultKeepsRunIdentity: writing precision: fp32 (the trainer's default, a key added
// after the committed records) changes no run's hash: a sweep of the spec with it finds every run
// of the spec without it stored and trains nothing, and the stored configurations do not carry it
// (issue 43: identical runs trained again and were stored twice). bf16 is another configuration.
func TestExplicitDefaultKeepsRunIdentity(t *testing.T) {
	reproduce.Register() // the trainer's neutral defaults (its validator is then removed for the toy spec)
	toyExperiments(t)
	calls := 0
	sweep.SetRunner(func(ctx context.Context, r sweep.RunSpec, progress func(string)) (*sweep.Outcome, error) {
		calls++
		if p, ok := sweep.Get(r.Config, "precision"); ok && p != "bf16" {
			t.Errorf("run %s: the neutral precision reached the runner's configuration", r.Hash)
		}
		return &sweep.Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
	})
	_, spec := writeSpec(t, cliSpec)
	results := filepath.Join(t.TempDir(), "results")
	args := []string{"run", spec, "--scale", "smoke", "--results", results, "--workers", "1", "--quiet"}
	if code, stdout, stderr := runCLI(args...); code != 0 || calls != 8 {
		t.Fatalf("first sweep: exit %d, %d runs\n%s%s", code, calls, stdout, stderr)
	}
	for _, extra := range []string{"precision: fp32\n", "loss_scale: 0\nprecision: fp32\n"} {
		text := strings.Replace(cliSpec, "base: {loss: {name: contrastive, margin: 0.5}, train: {epochs: 10}}",
			"base: {loss: {name: contrastive, margin: 0.5}, train: {epochs: 10}, "+strings.ReplaceAll(strings.TrimSpace(extra), "\n", ", ")+"}", 1)
		if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := runCLI(args...); code != 0 || calls != 8 {
			t.Fatalf("%q: exit %d, %d runs in all (want 8: nothing new)\n%s%s", extra, code, calls, stdout, stderr)
		}
	}
	recs, _, err := sweep.NewStore(results).Load()
	if err != nil || len(recs) != 8 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	// A non-default value is a configuration of its own.
	text := strings.Replace(cliSpec, "train: {epochs: 10}}", "train: {epochs: 10}, precision: bf16}", 1)
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(args...); code != 0 || calls != 16 {
		t.Fatalf("bf16: exit %d, %d runs in all (want 16)\n%s%s", code, calls, stdout, stderr)
	}
}

// TestReportsRefuseAMissingStore: tables and figures given a --results directory that does not
// exist, or one without the scale's store, fail naming it (issue 47: a mistyped gather path
// printed every table "skipped" and 76 inconclusive claims, exit 0) and write nothing.
func TestReportsRefuseAMissingStore(t *testing.T) {
	toyExperiments(t)
	_, spec := writeSpec(t, cliSpec)
	tmp := t.TempDir()
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "out")
	for _, c := range []struct{ cmd, results, want string }{
		{"tables", filepath.Join(tmp, "nope"), "--results " + filepath.Join(tmp, "nope") + ": stat"},
		{"figures", filepath.Join(tmp, "nope"), "no such file or directory"},
		{"tables", empty, `--results ` + empty + `: no records of scale "smoke"`},
	} {
		code, _, stderr := runCLI(c.cmd, spec, "--scale", "smoke", "--results", c.results, "--out", out)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s --results %s: exit %d, %q; want %q", c.cmd, c.results, code, stderr, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out %s was written", out)
	}
}
