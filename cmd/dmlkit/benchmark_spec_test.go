package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// benchSpecPath is reproductions/benchmark/spec.yaml seen from this package's directory.
var benchSpecPath = filepath.Join("..", "..", "reproductions", "benchmark", "spec.yaml")

// benchMethods is the benchmark's field (issue 31): 22 methods, each the config field "name" of
// its final runs.
const benchMethods = 22

// benchFloors are the zero-shot floor's arms of each scale (issue 46): runs of no training, not
// tuned, 5 seeds each (smoke: one seed).
var benchFloors = map[string][]string{
	"smoke": {"floor-init"}, "small": {"floor-init"}, "pretrained": {"floor-features", "floor-pca", "floor-init"},
}

// TestBenchmarkSpecPlans: smoke is 3 runs and its floor run; small and pretrained without stored
// runs are each the 22 × 7 = 154 learning-rate tuning runs and the floor's 5 seeds per arm (1
// arm from scratch, 3 pretrained: they wait for no tuning), with every other point pending on
// them; full is the 22 × 4 = 88 learning-rate runs on CUB; every run is a valid trainer
// configuration. Each regime then plans to completion (simulated records): 154 rate runs,
// 22 × 2 main-option runs (the third value of each option grid is its paper default, the rate
// step's selected run, which the plan shares: Run.Also) and 22 × 5 final runs, one method per
// name with 5 seeds, besides the floor's runs.
func TestBenchmarkSpecPlans(t *testing.T) {
	reproduce.Register()
	s := mustLoadSpec(t, benchSpecPath)
	for _, c := range []struct {
		scale   string
		runs    int
		pending bool
	}{{"smoke", 3 + 1, false}, {"small", 154 + 5, true}, {"pretrained", 154 + 3*5, true}, {"full", 88, true}} {
		p, err := s.Plan(c.scale)
		if err != nil {
			t.Fatalf("%s: %v", c.scale, err)
		}
		if len(p.Runs) != c.runs || (len(p.Pending) > 0) != c.pending {
			t.Errorf("%s: %d runs, %d pending; want %d, pending %v", c.scale, len(p.Runs), len(p.Pending), c.runs, c.pending)
		}
		for _, r := range p.Runs {
			if err := reproduce.ValidateTrainConfig(r.Config); err != nil {
				t.Errorf("%s run %s: %v", c.scale, r.Label(), err)
			}
		}
	}
	for _, scale := range []string{"small", "pretrained", "full"} {
		p, _ := simulateSweep(t, s, scale)
		seeds := map[string]int{}
		tune := 0
		for _, r := range p.Runs {
			if r.Tune != "" {
				tune++
				continue
			}
			if err := reproduce.ValidateTrainConfig(r.Config); err != nil {
				t.Errorf("%s run %s: %v", scale, r.Label(), err)
			}
			v, _ := sweep.Get(r.Config, "name")
			name, _ := v.(string)
			seeds[name]++
		}
		for _, f := range benchFloors[scale] {
			if seeds[f] != 5 {
				t.Errorf("%s: floor arm %s has %d runs, want 5", scale, f, seeds[f])
			}
			delete(seeds, f)
		}
		wantTune := benchMethods * (7 + 2)
		if scale == "full" {
			wantTune = benchMethods * 4
		}
		if tune != wantTune {
			t.Errorf("%s: %d tuning runs, want %d", scale, tune, wantTune)
		}
		if len(seeds) != benchMethods {
			t.Errorf("%s: %d methods, want %d: %v", scale, len(seeds), benchMethods, seeds)
		}
		for name, n := range seeds {
			if n != 5 {
				t.Errorf("%s: method %s has %d final runs, want 5", scale, name, n)
			}
		}
	}
}

// TestBenchmarkClaimsMatchSpec: 26 claims, 13 per regime, each pretrained claim the twin of its
// from-scratch original; in the simulated records of each regime every claim pairs 5 seeds and
// each arm has n = 5.
func TestBenchmarkClaimsMatchSpec(t *testing.T) {
	reproduce.Register()
	s := mustLoadSpec(t, benchSpecPath)
	cs, err := judge.LoadClaims(filepath.Join(filepath.Dir(benchSpecPath), "claims.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Claims) != 26 {
		t.Errorf("%d claims, want 26", len(cs.Claims))
	}
	ids := map[string]bool{}
	for _, c := range cs.Claims {
		ids[c.ID] = true
	}
	for _, scale := range []string{"small", "pretrained"} {
		_, recs := simulateSweep(t, s, scale)
		for i := range recs {
			recs[i].Metrics["OPIS"] = fakeValue(recs[i].Hash, "OPIS")
		}
		n := 0
		for _, c := range cs.Claims {
			cscale := c.Scale
			if cscale == "" {
				cscale = "small"
			}
			if cscale != scale {
				continue
			}
			n++
			if scale == "pretrained" && (c.Twin == "" || !ids[c.Twin] || c.ID != "p-"+c.Twin) {
				t.Errorf("%s: twin %q, want the from-scratch claim %q", c.ID, c.Twin, strings.TrimPrefix(c.ID, "p-"))
			}
			v, err := judge.EvaluateClaim(c, cs, recs, judge.ClaimOptions{Scale: scale, Spec: s})
			if err != nil {
				t.Errorf("%s: %v", c.ID, err)
				continue
			}
			if len(v.Seeds) != 5 {
				t.Errorf("%s: %d paired seeds %v, want 5", c.ID, len(v.Seeds), v.Seeds)
			}
			for _, a := range v.Arms {
				if a.N != 5 {
					t.Errorf("%s: arm %q has n = %d, want 5", c.ID, a.Label, a.N)
				}
			}
		}
		if n != 13 {
			t.Errorf("%s: %d claims, want 13", scale, n)
		}
	}
}

// TestBenchmarkEmitSlurm: the README's cluster example, `dmlkit run benchmark --scale full --emit
// slurm`, writes one array job per phase; the first has one task per run of the full scale's first
// round (the 88 learning-rate runs on CUB: array indices 0-87), each asking for a GPU, and the
// tasks call dmlkit with the benchmark spec.
func TestBenchmarkEmitSlurm(t *testing.T) {
	out := filepath.Join(t.TempDir(), "bench.slurm")
	if code, stdout, stderr := runCLI("run", benchSpecPath, "--scale", "full", "--emit", "slurm", "--out", out); code != 0 {
		t.Fatalf("emit: code %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if m := regexp.MustCompile(`--array=0-(\d+) [^\n]* --gres=gpu:1 `).FindStringSubmatch(text); m == nil || m[1] != "87" {
		t.Errorf("array line %v, want 0-87:\n%s", m, text)
	}
	if !strings.Contains(text, "benchmark") || !strings.Contains(text, "--scale full") {
		t.Errorf("the job does not run the benchmark's full scale:\n%s", text)
	}
}

// TestBenchmarkStoredResultsMatchSpec: each committed regime with stored records is exactly its
// plan, every record from a clean tree (a regime without records yet is skipped: its sweep has not
// started).
func TestBenchmarkStoredResultsMatchSpec(t *testing.T) {
	s := mustLoadSpec(t, benchSpecPath)
	recs, _, err := sweep.NewStore(filepath.Join(filepath.Dir(benchSpecPath), "results")).Load()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, r := range recs {
		have[r.Scale] = true
	}
	for _, scale := range []string{"small", "pretrained"} {
		if !have[scale] {
			t.Logf("%s: no stored records", scale)
			continue
		}
		checkStoredScaleMatchesSpec(t, s, benchSpecPath, scale, false)
	}
}
