// Package losstest holds the shared test harness for dmlkit losses: evaluation of a loss on a
// concrete float64 batch through the Go backend, finite-difference gradient checks, and
// permutation-invariance checks. It is imported only by tests.
package losstest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
)

// Batch is a small test batch: B×D embeddings (row-major) and labels ([B], or [B, SetSize]).
type Batch struct {
	Emb     []float64
	B, D    int
	Labels  []int64
	SetSize int // 0 or 1: plain labels
}

// Random returns a batch with embeddings drawn uniformly from [-1, 1) and the given labels.
func Random(seed uint64, d int, labels []int64) Batch {
	r := rand.New(rand.NewPCG(seed, 7))
	emb := make([]float64, len(labels)*d)
	for i := range emb {
		emb[i] = 2*r.Float64() - 1
	}
	return Batch{Emb: emb, B: len(labels), D: d, Labels: labels}
}

// Value evaluates l on the batch (float64) and returns the loss and its gradient.
func Value(t testing.TB, l losses.Loss, b Batch, opt losses.EvalOptions) (float64, []float64) {
	t.Helper()
	opt.Grad = true
	res, err := losses.Evaluate(backend.MustShared(), l, b.Emb, b.B, b.D, b.Labels, b.SetSize, opt)
	if err != nil {
		t.Fatalf("%s: %v", l.Name(), err)
	}
	return res.Value, res.Grad
}

// CheckGradient compares the analytic gradient of l at b with central finite differences
// (step h = 1e-6 in float64; truncation error O(h²·L”') ≈ 1e-12 and rounding error
// O(ε/h) ≈ 1e-10, so tol around 1e-6 is comfortable for smooth losses). Hinge kinks within
// h of a coordinate can spoil a difference; keep test batches away from them.
func CheckGradient(t testing.TB, l losses.Loss, b Batch, opt losses.EvalOptions, tol float64) {
	t.Helper()
	_, grad := Value(t, l, b, opt)
	const h = 1e-6
	worst, worstI := 0.0, -1
	for i := range b.Emb {
		orig := b.Emb[i]
		b.Emb[i] = orig + h
		fp := mustValue(t, l, b, opt)
		b.Emb[i] = orig - h
		fm := mustValue(t, l, b, opt)
		b.Emb[i] = orig
		fd := (fp - fm) / (2 * h)
		if diff := math.Abs(fd - grad[i]); diff > worst {
			worst, worstI = diff, i
		}
	}
	if worst > tol {
		t.Errorf("%s: gradient mismatch %.3g > tol %.3g at element %d (row %d, col %d)",
			l.Name(), worst, tol, worstI, worstI/b.D, worstI%b.D)
	}
}

func mustValue(t testing.TB, l losses.Loss, b Batch, opt losses.EvalOptions) float64 {
	t.Helper()
	opt.Grad = false
	res, err := losses.Evaluate(backend.MustShared(), l, b.Emb, b.B, b.D, b.Labels, b.SetSize, opt)
	if err != nil {
		t.Fatalf("%s: %v", l.Name(), err)
	}
	return res.Value
}

// Permute returns the batch with its rows (and labels) reordered by perm.
func Permute(b Batch, perm []int) Batch {
	s := max(b.SetSize, 1)
	out := Batch{Emb: make([]float64, len(b.Emb)), B: b.B, D: b.D, Labels: make([]int64, len(b.Labels)), SetSize: b.SetSize}
	for i, p := range perm {
		copy(out.Emb[i*b.D:(i+1)*b.D], b.Emb[p*b.D:(p+1)*b.D])
		copy(out.Labels[i*s:(i+1)*s], b.Labels[p*s:(p+1)*s])
	}
	return out
}

// CheckPermutationInvariant asserts l gives the same value (to tol) on a random permutation of b.
// Losses that require class-contiguous batches by design (documented) should not call it.
func CheckPermutationInvariant(t testing.TB, l losses.Loss, b Batch, opt losses.EvalOptions, tol float64) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 13))
	v0 := mustValue(t, l, b, opt)
	v1 := mustValue(t, l, Permute(b, r.Perm(b.B)), opt)
	if math.Abs(v0-v1) > tol {
		t.Errorf("%s: value changed under permutation: %.12g vs %.12g", l.Name(), v0, v1)
	}
}

// Row returns row i of a row-major [·, d] slice.
func Row(x []float64, d, i int) []float64 { return x[i*d : (i+1)*d] }

// Cosine returns the cosine similarity of two vectors (float64 reference implementation).
func Cosine(a, b []float64) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += a[i] * b[i]
		aa += a[i] * a[i]
		bb += b[i] * b[i]
	}
	return ab / math.Sqrt(aa*bb)
}

// Dist returns the Euclidean distance between two vectors, after L2-normalising both if normalize.
func Dist(a, b []float64, normalize bool) float64 {
	na, nb := 1.0, 1.0
	if normalize {
		na, nb = norm(a), norm(b)
	}
	s := 0.0
	for i := range a {
		d := a[i]/na - b[i]/nb
		s += d * d
	}
	return math.Sqrt(s)
}

func norm(a []float64) float64 {
	s := 0.0
	for _, v := range a {
		s += v * v
	}
	return math.Sqrt(s)
}
