package train

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// modelVars initialises a fresh store for cfg as RunWithOptions does at step 0 (initModel, then
// the engine with cfg.Seed), embeds one batch so that every model variable exists, and returns
// the float32 values of the variables under /model/ by path. before lists the store's variables
// right after initModel (what was taken from model.init_from).
func modelVars(t *testing.T, cfg Config) (vars map[string][]float32, before []string) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	split, err := loadData(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	store := model.NewStore()
	if err := initModel(store, cfg.Model); err != nil {
		t.Fatal(err)
	}
	for v := range store.IterVariables() {
		before = append(before, v.Path())
	}
	tr := split.train
	h, w, c := tr.Dims()
	eng, err := newEngine(&cfg, backend.MustShared(), store, len(classesOf(tr)), h, w, c)
	if err != nil {
		t.Fatal(err)
	}
	idx := make([]int, 8)
	for i := range idx {
		idx[i] = i
	}
	pix := make([]float32, len(idx)*h*w*c)
	tr.Fill(idx, pix)
	if _, err := eng.embed.Call(eng.imageTensor(pix, len(idx))); err != nil {
		t.Fatal(err)
	}
	return storeVars(t, store, "/"+modelScope+"/"), before
}

// storeVars returns the float32 values of the store's variables under prefix.
func storeVars(t *testing.T, store *model.Store, prefix string) map[string][]float32 {
	t.Helper()
	out := map[string][]float32{}
	for v := range store.IterVariables() {
		if !strings.HasPrefix(v.Path(), prefix) {
			continue
		}
		x := v.MustValue()
		if x.DType() != dtypes.Float32 {
			t.Fatalf("%s: dtype %s, want float32", v.Path(), x.DType())
		}
		out[v.Path()] = tensors.MustCopyFlatData[float32](x)
	}
	return out
}

// TestInitFromRun: a run trained 5 steps and saved; a second run (another seed) with
// model.init_from = its directory (or its checkpoint file) starts with bit-identical backbone
// variables (all of /model/backbone/, BatchNorm statistics included), takes nothing else from the
// checkpoint (no head, loss or optimiser variables), and its head is the fresh initialisation of its
// own seed — equal to the head of a run without init_from, and different from the trained head.
// With model.init_head the head is the stored one too.
func TestInitFromRun(t *testing.T) {
	src := testConfig()
	src.Steps = 5
	dir := t.TempDir()
	if _, err := Run(context.Background(), src, dir, nil); err != nil {
		t.Fatal(err)
	}
	ck, err := LatestCheckpoint(dir)
	if err != nil || ck == "" {
		t.Fatalf("no checkpoint in %s (%v)", dir, err)
	}
	stored := model.NewStore()
	if _, err := loadCheckpoint(ck, stored); err != nil {
		t.Fatal(err)
	}
	saved := storeVars(t, stored, "/"+modelScope+"/")

	base := testConfig()
	base.Seed = src.Seed + 6
	fresh, _ := modelVars(t, base)
	isBackbone := func(p string) bool { return strings.HasPrefix(p, "/model/backbone/") }
	var nBackbone, nHead int
	for p := range fresh {
		if isBackbone(p) {
			nBackbone++
		} else {
			nHead++
		}
	}
	if nBackbone == 0 || nHead == 0 {
		t.Fatalf("model has %d backbone and %d other variables: want both", nBackbone, nHead)
	}

	for _, tc := range []struct {
		name     string
		initFrom string
		initHead bool
	}{
		{"run directory", dir, false},
		{"checkpoint file", ck, false},
		{"run directory, init_head", dir, true},
	} {
		cfg := base
		cfg.Model.InitFrom, cfg.Model.InitHead = tc.initFrom, tc.initHead
		got, before := modelVars(t, cfg)
		for _, p := range before {
			if !strings.HasPrefix(p, "/model/") || (!tc.initHead && !isBackbone(p)) {
				t.Errorf("%s: %s was taken from the stored run", tc.name, p)
			}
		}
		if len(got) != len(fresh) {
			t.Errorf("%s: %d model variables, a fresh run has %d", tc.name, len(got), len(fresh))
		}
		for p, v := range got {
			fromRun := isBackbone(p) || tc.initHead
			switch {
			case fromRun && !slices.Equal(v, saved[p]):
				t.Errorf("%s: %s differs from the stored run's", tc.name, p)
			case !fromRun && !slices.Equal(v, fresh[p]):
				t.Errorf("%s: %s is not the fresh initialisation of seed %d", tc.name, p, cfg.Seed)
			}
			// The stored run trained its weights and had another seed: taking them is visible.
			if w, ok := fresh[p]; ok && fromRun && slices.Equal(v, w) && strings.HasSuffix(p, "weights") {
				t.Errorf("%s: %s equals the fresh initialisation: the test cannot tell", tc.name, p)
			}
		}
	}
	// A run started from the stored one trains (the wiring in RunWithOptions).
	cfg := base
	cfg.Steps = 1
	cfg.Model.InitFrom = dir
	if _, err := Run(context.Background(), cfg, t.TempDir(), nil); err != nil {
		t.Fatalf("run with model.init_from: %v", err)
	}
}

// TestInitFromErrors: a missing path, a directory without checkpoints and inconsistent options are
// refused with errors that name the field.
func TestInitFromErrors(t *testing.T) {
	empty := t.TempDir()
	missing := filepath.Join(empty, "no-such-run")
	notCkpt := filepath.Join(empty, "notes.txt")
	if err := os.WriteFile(notCkpt, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mod  func(*Config)
		want []string
	}{
		{func(c *Config) { c.Model.InitFrom = missing }, []string{"model.init_from", missing, "no such run directory or checkpoint file"}},
		{func(c *Config) { c.Model.InitFrom = empty }, []string{"model.init_from", "holds no checkpoint"}},
		{func(c *Config) { c.Model.InitFrom = notCkpt }, []string{"model.init_from", notCkpt}},
		{func(c *Config) { c.Model.InitHead = true }, []string{"model.init_head", "model.init_from"}},
		{func(c *Config) { c.Model.Backbone, c.Model.InitFrom, c.Model.Pretrained = "resnet18", empty, "w.onnx" }, []string{"model.init_from", "model.pretrained", "exclusive"}},
	}
	for i, tc := range cases {
		cfg := testConfig()
		cfg.Steps = 1
		tc.mod(&cfg)
		_, err := Run(context.Background(), cfg, t.TempDir(), nil)
		if err == nil {
			t.Errorf("case %d: no error", i)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("case %d: error %q does not mention %q", i, err, w)
			}
		}
	}
	// The models package refuses init_from for the precomputed-features backbone.
	mc := models.Default()
	mc.Backbone, mc.InitFrom = "features", empty
	if err := mc.Validate("model"); err == nil || !strings.Contains(err.Error(), "model.init_from") {
		t.Errorf("backbone features with init_from: error %v, want one naming model.init_from", err)
	}
}
