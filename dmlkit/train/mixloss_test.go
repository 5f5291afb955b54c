package train

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"gopkg.in/yaml.v3"
)

// mixBatch is a fixed mixup batch as Mixup lays it out: n originals of 4 classes × 2 (labels y),
// then n mixed rows with label sets {y_i, y_π(i)} ({y_i, −1} for a mix of one class) and
// MixWeights' slot weights for λ; the embeddings [2n, d] are random, float32 values.
type mixBatch struct {
	n, d      int
	emb       []float32 // [2n, d]
	sets      []int64   // [2n, 2]
	weights   []float32 // [2n, 2]
	y, ya, yb []int64   // [n] each: the three terms' hard labels, worked out here from perm
}

func newMixBatch(seed uint64, d int, perm []int, lam float64) mixBatch {
	y := []int64{0, 0, 1, 1, 2, 2, 3, 3}
	n := len(y)
	r := rand.New(rand.NewPCG(seed, 5))
	b := mixBatch{n: n, d: d, emb: make([]float32, 2*n*d), sets: make([]int64, 4*n), y: y}
	for i := range b.emb {
		b.emb[i] = float32(2*r.Float64() - 1)
	}
	for i := 0; i < n; i++ {
		b.sets[2*i], b.sets[2*i+1] = y[i], -1
		b.sets[2*(n+i)], b.sets[2*(n+i)+1] = y[i], y[perm[i]]
		if y[perm[i]] == y[i] {
			b.sets[2*(n+i)+1] = -1
		}
		b.ya = append(b.ya, y[i])
		b.yb = append(b.yb, y[perm[i]])
	}
	b.weights = MixWeights(b.sets, lam)
	return b
}

// rows returns the float64 copy of rows [lo, hi) of the embeddings (losses.Evaluate's input).
func (b mixBatch) rows(lo, hi int) []float64 {
	out := make([]float64, (hi-lo)*b.d)
	for i := range out {
		out[i] = float64(b.emb[lo*b.d+i])
	}
	return out
}

// engineMixLoss evaluates the engine's loss graph (buildLossDiag with the batch's label sets and
// slot weights, as the mixup step builds it) on the batch in store, and returns the loss and the
// diagnostics by name.
func engineMixLoss(t *testing.T, cfg *Config, store *model.Store, b mixBatch, nClass int) (float64, map[string]float64) {
	t.Helper()
	terms, err := cfg.lossTerms()
	if err != nil {
		t.Fatal(err)
	}
	e := &engine{cfg: cfg, terms: terms, nClass: nClass}
	var names []string
	exec, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, emb, y, w *Node) []*Node {
		loss, diags := e.buildLossDiag(scope, emb, y, w, true)
		outs := []*Node{ConvertDType(loss, dtypes.Float64)}
		names = names[:0]
		for _, d := range diags {
			names = append(names, d.Name)
			outs = append(outs, ConvertDType(d.Value, dtypes.Float64))
		}
		return outs
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Call(tensors.FromFlatDataAndDimensions(b.emb, 2*b.n, b.d),
		tensors.FromFlatDataAndDimensions(b.sets, 2*b.n, 2), tensors.FromFlatDataAndDimensions(b.weights, 2*b.n, 2))
	if err != nil {
		t.Fatal(err)
	}
	diags := map[string]float64{}
	for i, name := range names {
		diags[name] = scalarValue(out[i+1])
	}
	return scalarValue(out[0]), diags
}

// TestMixupWeightedLoss: mixup.loss weighted is the authors' L(x, y) + λ·L(x̃, y_a) + (1 − λ)·L(x̃, y_b),
// and the default ("" or "set") is still one loss over the label sets. The engine's loss graph on
// a fixed batch of 8 originals (4 classes × 2) and 8 mixes is compared with the losses package's
// own evaluation (losses.Evaluate, in float32 like the engine, sharing the engine's store so a proxy
// loss scores against the same proxies) of each part separately: the originals with y, the mixed
// rows with y_a and with y_b, the labels worked out here from the permutation (y_b = y_π(i) also for
// a mix of one class, whose set holds −1), combined with the λ given to MixWeights, not the one the
// engine derives. One permutation mixes mostly two classes (λ = 0.3 applies); the other only pairs
// within classes, where every slot-0 weight is 1: λ is 1 and the loss is L(x, y) + L(x̃, y_a).
//
// Tolerance: every value is a float32 loss of ≤ 16 rows (relative rounding ~1e-7 per operation,
// a few dozen operations), combined in float32 by the engine and in float64 here; 1e-5 relative
// is far above that and far below the gaps the test checks it can see: the weighted and the set
// losses differ, and L(x̃, y_a) and L(x̃, y_b) differ, by more than 1e-2 (asserted), so a wrong
// λ, a swapped λ / 1 − λ, the wrong rows or labels would fail.
func TestMixupWeightedLoss(t *testing.T) {
	const tol = 1e-5
	const lam = 0.3
	twoClass := []int{3, 0, 5, 1, 7, 2, 6, 4} // rows 1 and 6 mix within their class
	sameClass := []int{1, 0, 3, 2, 5, 4, 7, 6}
	for _, tc := range []struct {
		name     string
		loss     LossConfig
		perm     []int
		wantLam  float64
		wantDiag []string // diagnostic names the engine must log besides the four of the weighted loss
	}{
		{"contrastive", LossConfig{Name: "contrastive"}, twoClass, lam, nil},
		{"proxyanchor", LossConfig{Name: "proxyanchor"}, twoClass, lam, nil},
		{"proxyanchor/same-class mixes", LossConfig{Name: "proxyanchor"}, sameClass, 1, nil},
		// IDML (its default base) on [B, 3 + 3] dual embeddings: the originals' diagnostics keep
		// their names, the mixed terms' are prefixed.
		{"idml", LossConfig{Name: "idml"}, twoClass, lam, []string{"unc_norm", "mix_a/unc_norm", "mix_b/unc_norm"}},
		{"terms: contrastive + proxyanchor", LossConfig{Terms: []LossTerm{{Name: "contrastive", Weight: 0.5}, {Name: "proxyanchor", Weight: 2}}}, twoClass, lam,
			[]string{"loss/contrastive", "loss/proxyanchor", "mix_a/loss/contrastive", "mix_b/loss/proxyanchor"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newMixBatch(3, 6, tc.perm, lam)
			type part struct {
				rows   []float64
				labels []int64
			}
			orig, mixA, mixB := part{b.rows(0, b.n), b.y}, part{b.rows(b.n, 2*b.n), b.ya}, part{b.rows(b.n, 2*b.n), b.yb}
			for _, mode := range []string{"", MixupLossSet, MixupLossWeighted} {
				cfg := testConfig()
				cfg.Loss = tc.loss
				cfg.Sampler.M = 2
				cfg.Mixup = MixupConfig{Enabled: true, Alpha: 1, Loss: mode}
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				store := model.NewStore()
				if err := store.SetRNGStateFromSeed(7); err != nil {
					t.Fatal(err)
				}
				got, diags := engineMixLoss(t, &cfg, store, b, 4)
				terms, _ := cfg.lossTerms()
				// ref is Σ wᵢ·Lᵢ of the configured terms evaluated by the losses package, each
				// term in the scope the engine gives it.
				ref := func(emb []float64, rows int, labels []int64, setSize int, weights []float64, bound int) float64 {
					v := 0.0
					for i, term := range terms {
						st := store
						if len(terms) > 1 {
							// losses.Evaluate builds in scope "loss", the engine's term i in
							// "loss/term_<i>": its proxies are copied to "loss" in a store of their own.
							st = termStore(t, store, i)
						}
						res, err := losses.Evaluate(backend.MustShared(), term.loss, emb, rows, b.d, labels, setSize,
							losses.EvalOptions{DType: dtypes.Float32, NumClasses: 4, Store: st, ClassBound: bound, LabelWeights: weights})
						if err != nil {
							t.Fatal(err)
						}
						v += term.weight * res.Value
					}
					return v
				}
				w := make([]float64, len(b.weights))
				for i, x := range b.weights {
					w[i] = float64(x)
				}
				if mode != MixupLossWeighted {
					want := ref(b.rows(0, 2*b.n), 2*b.n, b.sets, 2, w, 0)
					if math.Abs(got-want) > tol*max(1, math.Abs(want)) {
						t.Errorf("mixup.loss %q: loss %.7g, want the label-set loss %.7g", mode, got, want)
					}
					continue
				}
				lo := ref(orig.rows, b.n, orig.labels, 1, nil, 2)
				la := ref(mixA.rows, b.n, mixA.labels, 1, nil, 2)
				lb := ref(mixB.rows, b.n, mixB.labels, 1, nil, 2)
				want := lo + tc.wantLam*la + (1-tc.wantLam)*lb
				t.Logf("weighted: %.7g (want %.7g = %.7g + %g·%.7g + %g·%.7g)", got, want, lo, tc.wantLam, la, 1-tc.wantLam, lb)
				if math.Abs(got-want) > tol*max(1, math.Abs(want)) {
					t.Errorf("weighted: loss %.7g, want %.7g + %g·%.7g + %g·%.7g = %.7g", got, lo, tc.wantLam, la, 1-tc.wantLam, lb, want)
				}
				for name, v := range map[string]float64{"loss_orig": lo, "loss_mix_a": la, "loss_mix_b": lb, "mix_lambda": tc.wantLam} {
					if d, ok := diags[name]; !ok || math.Abs(d-v) > tol*max(1, math.Abs(v)) {
						t.Errorf("diagnostic %s = %.7g (logged %v), want %.7g", name, d, ok, v)
					}
				}
				for _, name := range tc.wantDiag {
					if _, ok := diags[name]; !ok {
						t.Errorf("no diagnostic %q; have %v", name, diags)
					}
				}
				// The test sees a wrong λ and a wrong loss form only if these gaps are real.
				set := ref(b.rows(0, 2*b.n), 2*b.n, b.sets, 2, w, 0)
				if math.Abs(want-set) < 1e-2 {
					t.Errorf("weighted %.7g and label-set %.7g losses are too close for the test to tell them apart", want, set)
				}
				if tc.wantLam != 1 && math.Abs(la-lb) < 1e-2 {
					t.Errorf("L(x̃, y_a) %.7g and L(x̃, y_b) %.7g are too close for the test to see λ", la, lb)
				}
			}
		})
	}
}

// termStore returns a store holding the variables of the engine's loss term i ("/loss/term_<i>/…")
// under "/loss/…", where losses.Evaluate builds a loss.
func termStore(t *testing.T, src *model.Store, i int) *model.Store {
	t.Helper()
	dst := model.NewStore()
	prefix := fmt.Sprintf("/%s/term_%d/", lossScope, i)
	for v := range src.IterVariables() {
		if !strings.HasPrefix(v.Path(), prefix) {
			continue
		}
		val, err := v.Value()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dst.CreateVariable("/"+lossScope+"/"+strings.TrimPrefix(v.Path(), prefix), val); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestMixupLossValidation: mixup.loss takes "", set or weighted; weighted needs mixup.enabled and
// works with either mode (cutmix's box is one per batch, so its realised λ' weighs the batch as
// mixup's λ does). Errors name the field.
func TestMixupLossValidation(t *testing.T) {
	for _, tc := range []struct {
		mix     MixupConfig
		wantErr bool
	}{
		{MixupConfig{Alpha: 1}, false},
		{MixupConfig{Alpha: 1, Loss: "set"}, false},
		{MixupConfig{Enabled: true, Alpha: 1, Loss: "set"}, false},
		{MixupConfig{Enabled: true, Alpha: 1, Loss: "weighted"}, false},
		{MixupConfig{Enabled: true, Alpha: 1, Mode: "cutmix", Loss: "weighted"}, false},
		{MixupConfig{Enabled: true, Alpha: 1, Loss: "lambda"}, true},
		{MixupConfig{Alpha: 1, Loss: "Weighted"}, true},
		{MixupConfig{Alpha: 1, Loss: "weighted"}, true}, // without mixup.enabled
	} {
		cfg := testConfig()
		cfg.Mixup = tc.mix
		err := cfg.Validate()
		if tc.wantErr != (err != nil) || (err != nil && !strings.HasPrefix(err.Error(), "mixup.loss: ")) {
			t.Errorf("%+v: error %v, want one naming mixup.loss: %v", tc.mix, err, tc.wantErr)
		}
	}
}

// TestMixupLossResolvedUnchanged: an unset mixup.loss is absent from config.resolved.yaml (the
// mixup group keeps exactly the keys it had before the option, so configurations resolve to the
// same text), and a set one is written.
func TestMixupLossResolvedUnchanged(t *testing.T) {
	keys := func(cfg Config) []string {
		y, err := cfg.YAML()
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(y, &m); err != nil {
			t.Fatal(err)
		}
		mix, _ := m["mixup"].(map[string]any)
		var ks []string
		for k := range mix {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	cfg := testConfig()
	cfg.Mixup.Enabled = true
	if got := strings.Join(keys(cfg), " "); got != "alpha enabled mode" {
		t.Errorf("mixup keys of the resolved config: %s, want alpha enabled mode", got)
	}
	if err := cfg.Apply(map[string]any{"mixup.loss": "weighted"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(cfg), " "); got != "alpha enabled loss mode" {
		t.Errorf("mixup keys with mixup.loss weighted: %s, want alpha enabled loss mode", got)
	}
}

// TestMixupWeightedTrains: a short run with mixup.loss weighted (pixel mixup and cutmix) trains
// with finite losses and logs, at every step, the three terms and λ with
// loss = loss_orig + λ·loss_mix_a + (1 − λ)·loss_mix_b (float32 values of order 1: 1e-5
// relative), λ in [0, 1].
func TestMixupWeightedTrains(t *testing.T) {
	for _, mode := range []string{"mixup", "cutmix"} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig()
			cfg.Mixup = MixupConfig{Enabled: true, Alpha: 1, Mode: mode, Loss: MixupLossWeighted}
			cfg.Epochs, cfg.Steps = 0, 3
			cfg.Log.EverySteps = 1
			cfg.Eval = EvalConfig{Ks: []int{1}, BatchSize: 32, Metric: "R@1"}
			res, err := Run(context.Background(), cfg, t.TempDir(), nil)
			if err != nil {
				t.Fatal(err)
			}
			sl := res.StepLog
			if sl.Len() != 3 {
				t.Fatalf("%d logged steps, want 3", sl.Len())
			}
			for i := range sl.Steps {
				v := func(k string) float64 { return sl.Values[k][i] }
				lam := v("mix_lambda")
				t.Logf("step %d: loss %.6g = %.6g + %.3g·%.6g + %.3g·%.6g", sl.Steps[i], v("loss"), v("loss_orig"), lam, v("loss_mix_a"), 1-lam, v("loss_mix_b"))
				want := v("loss_orig") + lam*v("loss_mix_a") + (1-lam)*v("loss_mix_b")
				if !(lam >= 0 && lam <= 1) || math.IsNaN(want) || math.Abs(v("loss")-want) > 1e-5*max(1, math.Abs(want)) {
					t.Errorf("step %d: loss %.7g, λ %.4g, terms %.7g %.7g %.7g (%v)", sl.Steps[i], v("loss"), lam,
						v("loss_orig"), v("loss_mix_a"), v("loss_mix_b"), sl.Values)
				}
			}
		})
	}
}
