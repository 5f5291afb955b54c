package train

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func init() {
	// A closed split: 6 classes × 12 images, the first 8 of each class for training and the last 4
	// for testing (the same classes, as data.options.closed on fashion-mnist).
	prepare.RegisterDataset("synth-closed-test", func(map[string]any) (*data.Split, error) {
		all := synthImages(5, 6, 12, 12, 0)
		var tr, te []int
		for i := 0; i < all.N; i++ {
			if i%12 < 8 {
				tr = append(tr, i)
			} else {
				te = append(te, i)
			}
		}
		return &data.Split{Train: all.Subset(tr), Test: all.Subset(te)}, nil
	})
}

// TestMixWeights: originals weigh (1, 0); a mixed image (λ, 1 − λ); a mix of one class, whose set
// holds the class once, (1, 0).
func TestMixWeights(t *testing.T) {
	sets := []int64{0, -1, 1, -1, 2, -1, 0, 1, 1, -1, 2, 0}
	got := MixWeights(sets, 0.25)
	want := []float32{1, 0, 1, 0, 1, 0, 0.25, 0.75, 1, 0, 0.25, 0.75}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("MixWeights = %v, want %v", got, want)
		}
	}
}

// TestCutMixBox: four 8×6 two-channel images filled with 0, 1, 2, 3. Each cut-mixed image keeps
// its own value outside one rectangle and takes its partner's (the label set's second class, or
// its own class for a self-pair) inside; the rectangle is the same for the whole batch, and the
// returned λ' is 1 − its area / 48. The originals pass unchanged; label sets as Mixup's.
func TestCutMixBox(t *testing.T) {
	const h, w, c, n = 8, 6, 2, 4
	for seed := uint64(0); seed < 20; seed++ {
		pix := make([]float32, n*h*w*c)
		for i := range pix {
			pix[i] = float32(i / (h * w * c))
		}
		labels := []int64{0, 1, 2, 3}
		out, sets, lam := CutMix(rand.New(rand.NewPCG(seed, 1)), 1, pix, labels, h, w, c)
		if len(out) != 2*len(pix) || len(sets) != 4*n {
			t.Fatalf("sizes %d, %d", len(out), len(sets))
		}
		for i := 0; i < n*h*w*c; i++ {
			if out[i] != pix[i] {
				t.Fatalf("seed %d: original pixel %d changed", seed, i)
			}
		}
		var box []int // pixel positions (y·w + x) inside the box, from the first image with a partner
		for i := 0; i < n; i++ {
			if sets[2*i] != labels[i] || sets[2*i+1] != -1 || sets[2*(n+i)] != labels[i] {
				t.Fatalf("seed %d: sets %v", seed, sets)
			}
			partner := sets[2*(n+i)+1]
			if partner == -1 {
				partner = labels[i]
			}
			var in []int
			for p := 0; p < h*w; p++ {
				for ch := 0; ch < c; ch++ {
					v := out[((n+i)*h*w+p)*c+ch]
					switch {
					case v == float32(labels[i]) && partner != labels[i]:
					case v == float32(partner):
						if ch == 0 && partner != labels[i] {
							in = append(in, p)
						}
					default:
						t.Fatalf("seed %d: image %d pixel %d = %v (own %d, partner %d)", seed, i, p, v, labels[i], partner)
					}
				}
			}
			if partner == labels[i] {
				continue
			}
			if box == nil {
				box = in
			} else if len(in) != len(box) {
				t.Fatalf("seed %d: boxes of %d and %d pixels", seed, len(box), len(in))
			}
		}
		if box == nil {
			continue
		}
		y0, y1, x0, x1 := h, -1, w, -1
		for _, p := range box {
			y0, y1, x0, x1 = min(y0, p/w), max(y1, p/w), min(x0, p%w), max(x1, p%w)
		}
		if area := (y1 - y0 + 1) * (x1 - x0 + 1); area != len(box) || math.Abs(lam-(1-float64(area)/48)) > 1e-15 {
			t.Fatalf("seed %d: %d pixels in a %d×%d bounding box, λ' = %v", seed, len(box), y1-y0+1, x1-x0+1, lam)
		}
	}
}

// TestClassifyRun: a closed-split run with the cosine classifier (normsoftmax with ISM on a dual
// head 8 + 3) under cutmix stores test acc@1 and acc@5 at every evaluation, and the final ones
// equal an argmax/top-5 count recomputed here from test_embeddings.npy and the class weights of
// the final checkpoint. eval.classify without class weights, with held-out validation classes, or
// with a mismatched unc_dim is refused.
func TestClassifyRun(t *testing.T) {
	cfg := testConfig()
	cfg.Data = DataConfig{Name: "synth-closed-test"}
	cfg.Model.DualHead, cfg.Model.UncDim = true, 3
	cfg.Loss = LossConfig{Name: "normsoftmax", Set: map[string]any{"ism": true, "unc_dim": 3}}
	cfg.Mixup = MixupConfig{Enabled: true, Alpha: 1, Mode: "cutmix"}
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 12, M: 2}
	cfg.Epochs, cfg.Steps = 0, 6
	cfg.Eval = EvalConfig{EverySteps: 3, Ks: []int{1}, BatchSize: 16, Metric: "R@1", Classify: true}
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.History) != 2 {
		t.Fatalf("%d evaluations, want 2", len(res.History))
	}
	for _, h := range res.History {
		for _, k := range []string{"test/acc@1", "test/acc@5", "test/R@1"} {
			if v, ok := h.Metrics[k]; !ok || v < 0 || v > 1 {
				t.Errorf("step %d: %s = %v (%v)", h.Step, k, v, ok)
			}
		}
	}
	emb, shape, err := npy.ReadFloat32(filepath.Join(dir, "test_embeddings.npy"))
	if err != nil || shape[0] != 24 || shape[1] != 8 {
		t.Fatalf("test embeddings %v %v", shape, err)
	}
	labels, _, err := npy.ReadInt64(filepath.Join(dir, "test_labels.npy"))
	if err != nil {
		t.Fatal(err)
	}
	ck, err := LatestCheckpoint(dir)
	if err != nil || ck == "" {
		t.Fatalf("checkpoint %q %v", ck, err)
	}
	store := model.NewStore()
	if _, err := loadCheckpoint(ck, store); err != nil {
		t.Fatal(err)
	}
	v := store.GetVariable("/loss/weights")
	if v == nil {
		t.Fatal("no /loss/weights in the checkpoint")
	}
	w := tensors.MustCopyFlatData[float32](v.MustValue())
	hit1, hit5 := 0, 0
	for i := 0; i < 24; i++ {
		cos := make([]float64, 6)
		for k := range cos {
			var dot, nx, nw float64
			for j := 0; j < 8; j++ {
				x, y := float64(emb[i*8+j]), float64(w[k*8+j])
				dot, nx, nw = dot+x*y, nx+x*x, nw+y*y
			}
			cos[k] = dot / math.Sqrt(nx*nw)
		}
		better := 0
		for k := range cos {
			if cos[k] > cos[labels[i]] {
				better++
			}
		}
		if better == 0 {
			hit1++
		}
		if better < 5 {
			hit5++
		}
	}
	if got := res.Metrics["test/acc@1"]; math.Abs(got-float64(hit1)/24) > 1e-12 {
		t.Errorf("test/acc@1 = %v, recomputed %v", got, float64(hit1)/24)
	}
	if got := res.Metrics["test/acc@5"]; math.Abs(got-float64(hit5)/24) > 1e-12 {
		t.Errorf("test/acc@5 = %v, recomputed %v", got, float64(hit5)/24)
	}

	for _, c := range []struct {
		mod  func(*Config)
		frag string
	}{
		{func(c *Config) { c.Loss = LossConfig{Name: "contrastive"}; c.Model.DualHead, c.Model.UncDim = false, 0 }, "no class weights"},
		{func(c *Config) { c.Data.ValClasses = 0.2 }, "closed split"},
		{func(c *Config) { c.Loss.Set = map[string]any{"ism": true} }, "loss.set.unc_dim: 0"},
		{func(c *Config) { c.Mixup.Mode = "mosaic" }, "mixup.mode"},
	} {
		bad := cfg
		bad.Loss.Set = map[string]any{"ism": true, "unc_dim": 3}
		c.mod(&bad)
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.frag) {
			t.Errorf("want an error containing %q, got %v", c.frag, err)
		}
	}
}
