package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const specYAML = `
paper: toy
description: a toy sweep
base:
  data: {name: omniglot, limit_classes: 0}
  loss: {name: contrastive, margin: 0.5}
  train: {epochs: 10, lr: 0.001}
scales:
  smoke: {train.epochs: 1, data: {limit_classes: 20}, seeds: [7]}
  small: {train.epochs: 3}
  full:  {data.name: inat, grid: {loss.name: [rsk]}}
sweep:
  grid: {loss.name: [contrastive, rsk], loss.margin: [0.2, 0.5]}
  seeds: [0, 1, 2]
  seed_key: train.seed
reference:
  - {match: {loss.name: rsk}, metric: R@1, value: 70.5, source: "seed 003 Table 1, CUB row"}
tables:
  - {name: main, rows: [loss.name, loss.margin], metrics: [R@1], factor: 100}
figures:
  - {name: curve, kind: line, series: [val_r1], group: [loss.name]}
`

func mustParse(t *testing.T, y string) *Spec {
	t.Helper()
	s, err := Parse([]byte(y), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHashIsCanonical(t *testing.T) {
	// sha256(`{"a":1,"b":{"c":"x","d":[1,2.5]}}`)[:16] computed with Python's hashlib.
	const want = "4fb9d4ab7ea712c6"
	a := map[string]any{"b": map[string]any{"d": []any{1, 2.5}, "c": "x"}, "a": 1}
	b := map[string]any{"a": 1.0, "b": map[string]any{"c": "x", "d": []any{1.0, 2.5}}}
	for i, cfg := range []map[string]any{a, b} {
		h, err := Hash(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if h != want {
			t.Errorf("config %d: hash %s, want %s", i, h, want)
		}
	}
}

func TestResolveExpandsAndOverrides(t *testing.T) {
	s := mustParse(t, specYAML)
	p, err := s.Resolve("small")
	if err != nil {
		t.Fatal(err)
	}
	// 2 losses × 2 margins × 3 seeds; keys in sorted order (loss.margin, then loss.name), the last
	// key varying fastest, seeds innermost.
	if len(p.Runs) != 12 {
		t.Fatalf("%d runs, want 12", len(p.Runs))
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, r.Label())
	}
	want := []string{
		"loss.margin=0.2 loss.name=contrastive seed=0", "loss.margin=0.2 loss.name=contrastive seed=1", "loss.margin=0.2 loss.name=contrastive seed=2",
		"loss.margin=0.2 loss.name=rsk seed=0", "loss.margin=0.2 loss.name=rsk seed=1", "loss.margin=0.2 loss.name=rsk seed=2",
		"loss.margin=0.5 loss.name=contrastive seed=0", "loss.margin=0.5 loss.name=contrastive seed=1", "loss.margin=0.5 loss.name=contrastive seed=2",
		"loss.margin=0.5 loss.name=rsk seed=0", "loss.margin=0.5 loss.name=rsk seed=1", "loss.margin=0.5 loss.name=rsk seed=2",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("run order:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	r := p.Runs[4]
	wantCfg := map[string]any{
		"data":  map[string]any{"name": "omniglot", "limit_classes": 0},
		"loss":  map[string]any{"name": "rsk", "margin": 0.2},
		"train": map[string]any{"epochs": 3, "lr": 0.001, "seed": int64(1)},
	}
	if FormatValue(r.Config) != FormatValue(wantCfg) {
		t.Errorf("run 4 config %s, want %s", FormatValue(r.Config), FormatValue(wantCfg))
	}
	hashes := map[string]bool{}
	for i, r := range p.Runs {
		if r.Index != i {
			t.Errorf("run %d has Index %d", i, r.Index)
		}
		hashes[r.Hash] = true
	}
	if len(hashes) != 12 {
		t.Errorf("%d distinct hashes, want 12", len(hashes))
	}
	// The base must not have been modified by resolution.
	if v, _ := Get(s.Base, "train.epochs"); FormatValue(v) != "10" {
		t.Errorf("base train.epochs changed to %v", v)
	}

	// smoke: nested override merged (data.name kept), seeds replaced by [7].
	p, err = s.Resolve("smoke")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 4 {
		t.Fatalf("smoke: %d runs, want 4", len(p.Runs))
	}
	for _, r := range p.Runs {
		name, _ := Get(r.Config, "data.name")
		lim, _ := Get(r.Config, "data.limit_classes")
		if r.Seed != 7 || name != "omniglot" || FormatValue(lim) != "20" {
			t.Errorf("smoke run %s: seed %d data.name %v limit %v", r.Label(), r.Seed, name, lim)
		}
	}
	// full: the scale's grid replaces loss.name only → 1 loss × 2 margins × 3 seeds.
	p, err = s.Resolve("full")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Runs) != 6 {
		t.Fatalf("full: %d runs, want 6", len(p.Runs))
	}
	if v, _ := Get(p.Runs[0].Config, "data.name"); v != "inat" {
		t.Errorf("full: data.name %v", v)
	}
	if _, err := s.Resolve("huge"); err == nil || !strings.Contains(err.Error(), `unknown scale "huge"`) {
		t.Errorf("unknown scale error = %v", err)
	}
}

func TestListCrossesGrid(t *testing.T) {
	s := mustParse(t, `
paper: x
base: {a: 1}
sweep:
  grid: {g: [1, 2]}
  list: [{l: a}, {l: b, m: {n: 3}}]
`)
	p, err := s.Resolve("")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Runs {
		got = append(got, r.Label())
	}
	want := []string{"g=1 l=a seed=0", "g=1 l=b m.n=3 seed=0", "g=2 l=a seed=0", "g=2 l=b m.n=3 seed=0"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// TestListEntrySeeds: a list entry's own seeds replace the sweep's for that point only, and never
// reach the configuration.
func TestListEntrySeeds(t *testing.T) {
	s := mustParse(t, `
paper: x
base: {a: 1}
sweep:
  list: [{l: a}, {l: b, seeds: [7]}]
  seeds: [0, 1]
scales:
  s: {list: [{l: c, seeds: [4, 5]}]}
`)
	for _, tc := range []struct {
		scale string
		want  []string
	}{
		{"", []string{"l=a seed=0", "l=a seed=1", "l=b seed=7"}},
		{"s", []string{"l=c seed=4", "l=c seed=5"}},
	} {
		spec := *s
		if tc.scale == "" {
			spec.Scales = nil // the empty scale is allowed only without scales
		}
		p, err := spec.Resolve(tc.scale)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range p.Runs {
			got = append(got, r.Label())
			if _, ok := r.Config["seeds"]; ok {
				t.Errorf("run %s: \"seeds\" leaked into the configuration", r.Label())
			}
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("scale %q: got %q, want %q", tc.scale, got, tc.want)
		}
	}
}

func TestSpecStructuralErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"paper: x\nbase: {}\nsweeps: {}\n", "line 3: field sweeps not found"},
		{"paper: x\nsweep: {seeds: [a]}\n", "line 2: cannot unmarshal"},
		{"paper: x\nsweep: {seeds: [1, 1]}\n", `field "sweep.seeds": seed 1 listed twice`},
		{"paper: x\nsweep: {grid: {a: []}}\n", `field "sweep.grid.a": no values`},
		{"base: {}\n", `field "paper": missing`},
		{"paper: X Y\n", `field "paper"`},
		{"paper: x\nreference: [{metric: R@1, value: 1}]\n", `field "reference[0].source": missing`},
		{"paper: x\nfigures: [{name: f, kind: pie}]\n", `field "figures[0]" (f): field "kind": unknown kind "pie"`},
		{"paper: x\nfigures: [{name: f, kind: heatmap, x: a}]\n", `field "y": required for kind "heatmap"`},
		{"paper: x\ntables: [{name: t}]\n", `field "tables[0]" (t): field "metrics": missing`},
		{"paper: x\nscales: {s: {seeds: 3}}\n", `field "scales.s.seeds": want a list`},
		{"paper: x\nsweep: {list: [{a: 1, seeds: 3}]}\n", `field "sweep.list[0].seeds": want a list`},
		{"paper: x\nscales: {s: {list: [{a: 1, seeds: x}]}}\n", `field "scales.s.list[0].seeds": want a list`},
		{"paper: x\nbase: {a: 1}\nsweep: {list: [{a: 1}, {a: 1}]}\n", "resolve to the same configuration"},
	} {
		s, err := Parse([]byte(tc.yaml), "bad.yaml")
		if err == nil {
			_, err = s.Resolve("")
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("spec %q: error = %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

// toyConfig is the typed configuration the test validator checks resolved configs against.
type toyConfig struct {
	Data struct {
		Name         string `yaml:"name"`
		LimitClasses int    `yaml:"limit_classes"`
	} `yaml:"data"`
	Loss struct {
		Name   string  `yaml:"name"`
		Margin float64 `yaml:"margin"`
	} `yaml:"loss"`
	Train struct {
		Epochs int     `yaml:"epochs"`
		LR     float64 `yaml:"lr"`
		Seed   int64   `yaml:"seed"`
	} `yaml:"train"`
}

func toyValidator() Validator {
	return StructValidator(func() any { return &toyConfig{} }, func(v any) error {
		c := v.(*toyConfig)
		if err := OneOf("loss.name", c.Loss.Name, []string{"contrastive", "rsk"}); err != nil {
			return err
		}
		return OneOf("data.name", c.Data.Name, []string{"omniglot", "inat"})
	})
}

func TestBadValuesFailBeforeTrainingWithFieldPath(t *testing.T) {
	SetValidator(toyValidator())
	defer SetValidator(nil)
	for _, tc := range []struct{ edit, want string }{
		{"loss.name: [contrastive, rsk]", ""}, // the valid spec
		{"loss.name: [contrastive, smoothapx]", `run loss.margin=0.2 loss.name=smoothapx seed=0: field "loss.name": unknown value "smoothapx"`},
		{"loss.name: [rsk], data.name: [mnistx]", `field "data.name": unknown value "mnistx"`},
		{"loss.name: [rsk], loss.temperature: [0.1]", `unknown field "loss.temperature" (valid here: name, margin)`},
		{"loss.name: [rsk], train.epochs: [ten]", `field "train.epochs": cannot parse "ten" as an integer`},
		{"loss.name: [rsk], train.epochs: [2.5]", `field "train.epochs": want an integer`},
	} {
		y := strings.Replace(specYAML, "loss.name: [contrastive, rsk]", tc.edit, 1)
		s := mustParse(t, y)
		calls := 0
		runner := func(ctx contextT, r RunSpec, _ func(string)) (*Outcome, error) {
			calls++
			return &Outcome{Metrics: map[string]float64{"R@1": 0.5}}, nil
		}
		_, _, err := RunSweep(bg(), s, SweepOptions{Scale: "small", ExecOptions: ExecOptions{Runner: runner, Store: NewStore(t.TempDir()), WorkDir: t.TempDir()}})
		if tc.want == "" {
			if err != nil || calls != 12 {
				t.Errorf("valid spec: err %v, %d calls", err, calls)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to contain %q", tc.edit, err, tc.want)
		}
		if calls != 0 {
			t.Errorf("%s: the runner was called %d times before validation failed", tc.edit, calls)
		}
	}
	// A bad value in the scale preset is named too.
	s := mustParse(t, strings.Replace(specYAML, "small: {train.epochs: 3}", "small: {train.epochs: three}", 1))
	if _, err := s.Plan("small"); err == nil || !strings.Contains(err.Error(), `field "train.epochs"`) {
		t.Errorf("bad scale value: %v", err)
	}
}

func TestFilterAndShardCoverage(t *testing.T) {
	s := mustParse(t, specYAML)
	p, _ := s.Resolve("small")
	only, err := ParseOnly([]string{"loss.name=rsk", "train.seed=0", "train.seed=2"})
	if err != nil {
		t.Fatal(err)
	}
	f := Filter(p.Runs, only)
	if len(f) != 4 { // rsk × 2 margins × seeds {0, 2}
		t.Fatalf("filter kept %d runs, want 4", len(f))
	}
	for _, r := range f {
		if r.Params["loss.name"] != "rsk" || r.Seed == 1 {
			t.Errorf("filter kept %s", r.Label())
		}
	}
	// Property: for every plan size and shard count, shards partition the plan.
	for size := 0; size <= 40; size++ {
		runs := make([]Run, size)
		for i := range runs {
			runs[i] = Run{Index: i, Hash: fmt.Sprint(i)}
		}
		for n := 1; n <= 13; n++ {
			count := make([]int, size)
			for i := 0; i < n; i++ {
				sh, err := Shard(runs, i, n)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range sh {
					count[r.Index]++
				}
				// Shards are balanced: sizes differ by at most one.
				if lo, hi := size/n, (size+n-1)/n; len(sh) < lo || len(sh) > hi {
					t.Errorf("size %d, n %d: shard %d has %d runs", size, n, i, len(sh))
				}
			}
			for j, c := range count {
				if c != 1 {
					t.Fatalf("size %d, n %d: run %d in %d shards", size, n, j, c)
				}
			}
		}
	}
	for _, bad := range [][2]int{{-1, 3}, {3, 3}, {0, 0}} {
		if _, err := Shard(p.Runs, bad[0], bad[1]); err == nil {
			t.Errorf("Shard(%d, %d) accepted", bad[0], bad[1])
		}
	}
}

func TestLoadAppendsPaperYAML(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(specYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	paper := "reference:\n  - {match: {loss.name: contrastive}, metric: R@1, value: 61.2, source: \"seed 003 Table 1, contrastive row\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "paper.yaml"), []byte(paper), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Reference) != 2 || s.Reference[1].Value != 61.2 || s.Dir != dir {
		t.Fatalf("references %+v, dir %s", s.Reference, s.Dir)
	}
	if err := os.WriteFile(filepath.Join(dir, "paper.yaml"), []byte("reference:\n  - {metric: R@1, value: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "paper.yaml") {
		t.Fatalf("uncited paper.yaml reference: %v", err)
	}
}

// TestSpecCommittedScales: "committed" names further scales of the spec, each once; small and
// pretrained (always committed) and undefined scales are refused, naming the field.
func TestSpecCommittedScales(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		committed string
		ok        bool
	}{
		{"[long]", true},
		{"[short]", false},
		{"[small]", false},
		{"[long, long]", false},
	} {
		path := filepath.Join(dir, "spec.yaml")
		src := "paper: p\nscales:\n  small: {}\n  long: {epochs: 3}\ncommitted: " + tc.committed + "\nsweep:\n  grid: {optimizer.lr: [0.1]}\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Load(path)
		switch {
		case tc.ok && (err != nil || !slices.Equal(s.Committed, []string{"long"})):
			t.Errorf("committed %s: %v", tc.committed, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), `"committed[`)):
			t.Errorf("committed %s accepted or wrong error: %v", tc.committed, err)
		}
	}
}
