// Package reproduce connects the sweep workbench (package sweep) to the trainer and records where a run
// came from: the trainer as the sweep's runner ([Register], [TrainRunner]) and the provenance of
// every stored record ([Environment], [TreeState]). The CLI and the notebooks call it alike.
package reproduce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/benchreport"
)

// Tree is the state of the git work tree a sweep runs from.
type Tree struct {
	Root    string   // top-level directory of the work tree
	Commit  string   // HEAD
	Dirty   bool     // uncommitted changes to tracked files, or untracked files git does not ignore
	Changed []string // the changed paths, relative to Root, as git status lists them
}

// TreeState reports the git state of the work tree holding dir. Paths under any of ignore
// (absolute, or relative to dir) do not count as changes: a sweep appends to its own results
// file, which must not make its records look dirty. It returns an error when dir is not in a git
// work tree or git cannot run.
func TreeState(dir string, ignore ...string) (Tree, error) {
	git := func(args ...string) ([]byte, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s in %s: %w: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
	var t Tree
	out, err := git("rev-parse", "--show-toplevel", "HEAD")
	if err != nil {
		return t, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return t, fmt.Errorf("git rev-parse in %s: unexpected output %q", dir, out)
	}
	t.Root, t.Commit = lines[0], lines[1]
	var skip []string
	for _, p := range ignore {
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return t, err
		}
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		skip = append(skip, abs)
	}
	root := t.Root
	if real, err := filepath.EvalSymlinks(root); err == nil {
		root = real
	}
	st, err := git("status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return t, err
	}
	entries := strings.Split(string(st), "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		code, path := e[:2], e[3:]
		if code[0] == 'R' || code[0] == 'C' { // a rename's source follows as its own entry
			i++
		}
		abs := filepath.Join(root, filepath.FromSlash(path))
		if under(abs, skip) {
			continue
		}
		t.Changed = append(t.Changed, path)
	}
	t.Dirty = len(t.Changed) > 0
	return t, nil
}

func under(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// Environment describes where runs execute, for every stored record: the backend
// ([backend.Describe]: backend, devices, Go / GoMLX versions, SIMD), "hostname", "cpu_model",
// "num_cpu", and from tree (when its Commit is set) "git_commit" and "git_dirty" with
// "git_changed" (at most 20 paths) when dirty.
func Environment(tree Tree) map[string]any {
	env := map[string]any{}
	if b, err := json.Marshal(backend.Describe()); err == nil {
		_ = json.Unmarshal(b, &env)
	}
	if h, err := os.Hostname(); err == nil {
		env["hostname"] = h
	}
	env["cpu_model"] = CPUModel()
	env["num_cpu"] = runtime.NumCPU()
	if tree.Commit != "" {
		env["git_commit"] = tree.Commit
		env["git_dirty"] = tree.Dirty
		if tree.Dirty {
			ch := tree.Changed
			if len(ch) > 20 {
				ch = append(append([]string(nil), ch[:20]...), fmt.Sprintf("… %d more", len(ch)-20))
			}
			env["git_changed"] = ch
		}
	}
	return env
}

// CPUModel is the processor's model name (Linux: /proc/cpuinfo "model name"), else GOARCH:
// [benchreport.CPUModel]. Speed ratios move 2× between CPU types, so every timing is stored beside it.
func CPUModel() string { return benchreport.CPUModel() }
