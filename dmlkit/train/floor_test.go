package train

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/npy"
)

// The zero-shot floor: runs of no optimiser step (epochs 0, steps 0) with a frozen backbone and
// the identity or pca head, or the untrained linear head. The frozen backbone's features come
// from a second route, ExtractFeatures (the same backbone run by the .npy extractor), and the
// expected embeddings are computed here from them.

// floorConfig is frozenConfig with the backbone frozen and no optimiser step.
func floorConfig(head string) Config {
	cfg := frozenConfig()
	cfg.Model.FreezeBackbone = true
	cfg.Model.Head = head
	cfg.Epochs, cfg.Steps = 0, 0
	return cfg
}

// extracted returns the backbone features of cfg's train and test sets, [n, F] row-major, by
// ExtractFeatures.
func extracted(t *testing.T, cfg Config) (train []float32, nTrain int, test []float32, nTest, f int) {
	t.Helper()
	dir := t.TempDir()
	c := cfg
	c.Model.FreezeBackbone, c.Model.Head = false, "linear" // the head does not touch the features
	if err := ExtractFeatures(c, "", dir); err != nil {
		t.Fatal(err)
	}
	tr, trShape, err := npy.ReadFloat32(filepath.Join(dir, "train_features.npy"))
	if err != nil {
		t.Fatal(err)
	}
	te, teShape, err := npy.ReadFloat32(filepath.Join(dir, "test_features.npy"))
	if err != nil {
		t.Fatal(err)
	}
	return tr, trShape[0], te, teShape[0], trShape[1]
}

// runFloor runs cfg and returns its result and its test embeddings [n, d].
func runFloor(t *testing.T, cfg Config) (*Result, []float32, int) {
	t.Helper()
	dir := t.TempDir()
	res, err := Run(context.Background(), cfg, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	emb, shape, err := npy.ReadFloat32(filepath.Join(dir, "test_embeddings.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if ck, _ := LatestCheckpoint(dir); ck != "" {
		t.Errorf("a run of no step wrote checkpoint %s", ck)
	}
	return res, emb, shape[1]
}

// normalized divides each row of x [n, d] by its norm (float64).
func normalized(x []float64, n, d int) []float64 {
	out := make([]float64, len(x))
	for i := 0; i < n; i++ {
		s := 0.0
		for _, v := range x[i*d : (i+1)*d] {
			s += v * v
		}
		s = math.Sqrt(s)
		for j := 0; j < d; j++ {
			out[i*d+j] = x[i*d+j] / s
		}
	}
	return out
}

// TestFloorIdentityHead: with the identity head and no step, the run's test embeddings are the
// frozen backbone's features as they come, L2-normalised (model.l2_normalize), F wide whatever
// model.dim says; the run evaluates once, at step 0. Tolerance 1e-6: float32 features divided by
// a float32 norm in the graph against the float64 division here (relative error ≈ 1e-7).
func TestFloorIdentityHead(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	cfg := floorConfig("identity")
	_, _, te, nTe, f := extracted(t, cfg)
	res, emb, d := runFloor(t, cfg)
	if res.Steps != 0 || len(res.History) != 1 || res.History[0].Step != 0 {
		t.Fatalf("steps %d, %d evaluations (want 0 steps and one evaluation at step 0)", res.Steps, len(res.History))
	}
	if _, ok := res.Metrics["test/R@1"]; !ok {
		t.Fatalf("no test/R@1 among %v", res.Metrics)
	}
	if d != f || len(emb) != nTe*f {
		t.Fatalf("embeddings %d wide (%d values), want the features' %d × %d", d, len(emb), nTe, f)
	}
	want := make([]float64, len(te))
	for i, v := range te {
		want[i] = float64(v)
	}
	want = normalized(want, nTe, f)
	for i := range emb {
		if math.Abs(float64(emb[i])-want[i]) > 1e-6 {
			t.Fatalf("embedding value %d = %g, want the normalised feature %g", i, emb[i], want[i])
		}
	}
}

// topEigenvectors is a second implementation of PCA's directions: the sample covariance of x
// [n, f] in float64 and its top k eigenvectors by power iteration with deflation (each iterated
// until it moves less than 1e-13), as columns of [f, k], with their eigenvalues.
func topEigenvectors(x []float32, n, f, k int) ([]float64, []float64) {
	mean := make([]float64, f)
	for i := 0; i < n; i++ {
		for j := 0; j < f; j++ {
			mean[j] += float64(x[i*f+j]) / float64(n)
		}
	}
	cov := make([]float64, f*f)
	for i := 0; i < n; i++ {
		for a := 0; a < f; a++ {
			for b := 0; b < f; b++ {
				cov[a*f+b] += (float64(x[i*f+a]) - mean[a]) * (float64(x[i*f+b]) - mean[b])
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	out, lambdas := make([]float64, f*k), make([]float64, k)
	for c := 0; c < k; c++ {
		v := make([]float64, f)
		for j := range v {
			v[j] = r.NormFloat64()
		}
		for it := 0; it < 100000; it++ {
			w := make([]float64, f)
			for a := 0; a < f; a++ {
				for b := 0; b < f; b++ {
					w[a] += cov[a*f+b] * v[b]
				}
			}
			norm := 0.0
			for _, e := range w {
				norm += e * e
			}
			norm = math.Sqrt(norm)
			moved := 0.0
			for j := range w {
				w[j] /= norm
				moved = math.Max(moved, math.Abs(w[j]-v[j]))
			}
			v = w
			if moved < 1e-13 {
				break
			}
		}
		lambda := 0.0
		for a := 0; a < f; a++ {
			for b := 0; b < f; b++ {
				lambda += v[a] * cov[a*f+b] * v[b]
			}
		}
		lambdas[c] = lambda
		for a := 0; a < f; a++ { // deflate: cov −= λ v vᵀ
			for b := 0; b < f; b++ {
				cov[a*f+b] -= lambda * v[a] * v[b]
			}
			out[a*k+c] = v[a]
		}
	}
	return out, lambdas
}

// TestFloorPCAHead: the pca head with no step embeds a test image as its feature minus the
// training features' mean, projected on their top model.dim principal directions and
// L2-normalised. The directions here come from power iteration (topEigenvectors), each column up
// to its sign. Tolerance 1e-4 on unit vectors: the float32 projection of features of magnitude
// ~1 (relative error ~1e-6) and float64 eigenvectors that agree to ~1e-9 when the eigenvalues are
// well separated (the test checks a relative gap of ≥ 1 % between the kept ones and the next).
func TestFloorPCAHead(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	const k = 3
	cfg := floorConfig("pca")
	cfg.Model.Dim = k
	tr, nTr, te, nTe, f := extracted(t, cfg)
	res, emb, d := runFloor(t, cfg)
	if res.Steps != 0 || d != k {
		t.Fatalf("steps %d, embeddings %d wide; want 0 and %d", res.Steps, d, k)
	}
	vecs, lambdas := topEigenvectors(tr, nTr, f, k+1)
	for c := 0; c < k; c++ {
		if gap := (lambdas[c] - lambdas[c+1]) / lambdas[c]; !(gap >= 0.01) {
			t.Fatalf("eigenvalues %v: gap %.3g after component %d, too small to fix the directions", lambdas, gap, c)
		}
	}
	mean := make([]float64, f)
	for i := 0; i < nTr; i++ {
		for j := 0; j < f; j++ {
			mean[j] += float64(tr[i*f+j]) / float64(nTr)
		}
	}
	want := make([]float64, nTe*k)
	for i := 0; i < nTe; i++ {
		for c := 0; c < k; c++ {
			for j := 0; j < f; j++ {
				want[i*k+c] += (float64(te[i*f+j]) - mean[j]) * vecs[j*(k+1)+c]
			}
		}
	}
	want = normalized(want, nTe, k)
	for c := 0; c < k; c++ {
		dot := 0.0
		for i := 0; i < nTe; i++ {
			dot += float64(emb[i*k+c]) * want[i*k+c]
		}
		sign := 1.0
		if dot < 0 {
			sign = -1
		}
		for i := 0; i < nTe; i++ {
			if got := float64(emb[i*k+c]); math.Abs(got-sign*want[i*k+c]) > 1e-4 {
				t.Fatalf("test image %d, component %d: %g, want %g (sign %g)", i, c, got, sign*want[i*k+c], sign)
			}
		}
	}
	// The pca head is fitted, not trained: a head of more components than features is refused.
	bad := floorConfig("pca")
	bad.Model.Dim = f + 1
	if _, err := Run(context.Background(), bad, t.TempDir(), nil); err == nil {
		t.Errorf("pca head of %d components on %d features accepted", f+1, f)
	}
}

// TestFloorUntrainedHead: a run of no step with the default linear head reports what a trained
// run of the same seed reports before its first step (eval.initial): the same test metrics, to
// the bit (the same initialisation, the same evaluation).
func TestFloorUntrainedHead(t *testing.T) {
	t.Setenv(FeatureCacheEnv, t.TempDir())
	cfg := floorConfig("linear")
	res, _, d := runFloor(t, cfg)
	if d != cfg.Model.Dim {
		t.Fatalf("embeddings %d wide, want model.dim %d", d, cfg.Model.Dim)
	}
	trained := floorConfig("linear")
	trained.Epochs = 1
	trained.Eval.Initial = true
	ref, err := Run(context.Background(), trained, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ref.History[0].Step != 0 || ref.Steps == 0 {
		t.Fatalf("reference run: first evaluation at step %d, %d steps", ref.History[0].Step, ref.Steps)
	}
	for _, m := range []string{"test/R@1", "test/MAP@R"} {
		if a, b := res.Metrics[m], ref.History[0].Metrics[m]; a != b {
			t.Errorf("%s: %g with no step, %g at step 0 of a trained run", m, a, b)
		}
	}
	// From scratch: the untrained network, evaluated once.
	scratch := frozenConfig()
	scratch.Epochs, scratch.Steps = 0, 0
	sres, err := Run(context.Background(), scratch, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if sres.Steps != 0 || len(sres.History) != 1 {
		t.Errorf("untrained network: %d steps, %d evaluations", sres.Steps, len(sres.History))
	}
}
