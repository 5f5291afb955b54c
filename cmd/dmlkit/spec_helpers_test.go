package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// runSmokeSweep runs a spec's smoke scale through `dmlkit run` into a temporary results directory
// (skipping the test without Omniglot), checks that its want runs all ran, and returns the
// directory and the stored records.
func runSmokeSweep(t *testing.T, specPath string, want int) (string, []sweep.Record) {
	t.Helper()
	if _, err := data.FindOmniglot(""); err != nil {
		t.Skipf("Omniglot not available: %v", err)
	}
	tmp := t.TempDir()
	results, work := filepath.Join(tmp, "results"), filepath.Join(tmp, "runs")
	code, stdout, stderr := runCLI("run", specPath, "--scale", "smoke", "--results", results, "--workdir", work, "--quiet")
	if code != 0 || !strings.Contains(stdout, fmt.Sprintf("%d runs selected, 0 already stored, %d ran, 0 failed", want, want)) {
		t.Fatalf("run: code %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	recs, _, err := sweep.NewStore(results).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != want {
		t.Fatalf("%d records stored, want %d", len(recs), want)
	}
	return tmp, recs
}

// mustLoadSpec loads a reproduction's spec.yaml (with its paper.yaml) or fails the test.
func mustLoadSpec(t *testing.T, path string) *sweep.Spec {
	t.Helper()
	s, err := sweep.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkStoredResultsMatchSpec: the committed small-scale store beside specPath is exactly the
// spec's plan, resolved from the store itself (the tuning steps' selections come from the stored
// tuning runs) — nothing pending, every planned run stored once, no stray record of another
// configuration — and every record carries the commit it was produced from and a clean tree, so
// every verdict uses it. With noFailed, no record may be marked failed.
// readSuperseded reads results/superseded.txt: one line per stored record that is no longer a run
// of the spec ("<hash> <why>"; # comments), kept in the store as history and left out of tables,
// figures and verdicts (judge.DropSuperseded). A missing file lists none.
func readSuperseded(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		hash, why, _ := strings.Cut(line, " ")
		if len(hash) != 16 || strings.TrimSpace(why) == "" {
			t.Errorf("%s:%d: want \"<16-hex hash> <why it was superseded>\", got %q", path, i+1, line)
		}
		out[hash] = strings.TrimSpace(why)
	}
	return out
}

func checkStoredResultsMatchSpec(t *testing.T, s *sweep.Spec, specPath string, noFailed bool) {
	t.Helper()
	checkStoredScaleMatchesSpec(t, s, specPath, "small", noFailed)
}

// checkStoredScaleMatchesSpec is [checkStoredResultsMatchSpec] for one committed scale (small or
// pretrained): the store's records of that scale are exactly the scale's plan.
func checkStoredScaleMatchesSpec(t *testing.T, s *sweep.Spec, specPath, scale string, noFailed bool) {
	t.Helper()
	recs, rep, err := sweep.NewStore(filepath.Join(filepath.Dir(specPath), "results")).Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Bad) > 0 || len(rep.Duplicates) > 0 {
		t.Errorf("store: %d unreadable, %d duplicate records", len(rep.Bad), len(rep.Duplicates))
	}
	p, err := s.PlanWith(scale, recs)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range p.Pending {
		t.Errorf("pending: %s (%s)", x.Point, x.Reason)
	}
	planned := map[string]bool{}
	for _, r := range p.Runs {
		planned[r.Hash] = true
	}
	superseded := readSuperseded(t, filepath.Join(filepath.Dir(specPath), "results", "superseded.txt"))
	stored := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Scale != scale {
			continue
		}
		stored[r.Hash] = true
		switch _, marked := superseded[r.Hash]; {
		case !planned[r.Hash] && !marked:
			t.Errorf("record %s (seed %d) is not a run of the spec, nor marked superseded in results/superseded.txt", r.Hash, r.Seed)
		case planned[r.Hash] && marked:
			t.Errorf("record %s (seed %d) is marked superseded but is a run of the spec", r.Hash, r.Seed)
		}
		if c, _ := r.Env["git_commit"].(string); len(c) != 40 || r.Dirty() {
			t.Errorf("record %s: commit %q, dirty %v", r.Hash, c, r.Dirty())
		}
		if noFailed && r.Failed != "" {
			t.Errorf("record %s: failed %q", r.Hash, r.Failed)
		}
	}
	for _, r := range p.Runs {
		if !stored[r.Hash] {
			t.Errorf("run %s (%s) is not stored", r.Hash, r.Label())
		}
	}
}
