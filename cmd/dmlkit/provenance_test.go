package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSweepRefusesDirtyTree: a sweep writing into reproductions/ from a tree with uncommitted
// changes is refused unless --allow-dirty, whose records are then marked; appending to the
// results file itself does not count as a change.
func TestSweepRefusesDirtyTree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	results := filepath.Join(dir, "reproductions", "p", "results")
	os.MkdirAll(results, 0o755)
	os.WriteFile(filepath.Join(results, "small.jsonl"), []byte("{}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "code.go"), []byte("package x\n"), 0o644)
	git("init", "-q")
	git("add", ".")
	git("commit", "-q", "-m", "init")
	t.Chdir(dir)

	os.WriteFile(filepath.Join(results, "small.jsonl"), []byte("{}\n{}\n"), 0o644)
	env, err := provenance(results, false)
	if err != nil || env["git_dirty"] != false || env["allow_dirty"] != nil {
		t.Fatalf("clean tree (results appended): env %v, err %v", env, err)
	}
	os.WriteFile(filepath.Join(dir, "code.go"), []byte("package y\n"), 0o644)
	if _, err := provenance(results, false); err == nil || !strings.Contains(err.Error(), "code.go") || !strings.Contains(err.Error(), "--allow-dirty") {
		t.Errorf("dirty tree: err %v, want a refusal naming code.go and --allow-dirty", err)
	}
	if _, err := provenance("reproductions/p/results", false); err == nil {
		t.Error("dirty tree, relative results path: accepted")
	}
	env, err = provenance(results, true)
	if err != nil || env["git_dirty"] != true || env["allow_dirty"] != true {
		t.Errorf("--allow-dirty: env %v, err %v", env, err)
	}
	// Outside reproductions/ (a user's scratch results) a dirty tree is recorded, not refused.
	env, err = provenance(filepath.Join(dir, "scratch"), false)
	if err != nil || env["git_dirty"] != true || env["allow_dirty"] != nil {
		t.Errorf("scratch results: env %v, err %v", env, err)
	}
}
