// Package pca fits principal components on the host (gonum, float64) and projects data onto
// them. dmlkit uses it for the untrained baseline of the demo (raw pixels reduced by PCA — a
// fixed, non-learned projection) and for 2-D views of embeddings.
package pca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// Model is a fitted PCA: Mean [D] and Components [K, D] (rows are unit-norm principal directions
// in order of decreasing explained variance, each with its largest-magnitude coordinate positive
// so the sign is deterministic), and the variance explained by each component.
type Model struct {
	D, K       int
	Mean       []float64
	Components []float64 // row-major [K, D]
	Variance   []float64 // [K], eigenvalues of the sample covariance (divisor n−1)
}

// Fit computes the top k principal components of x, n rows of dimension d (row-major float32).
func Fit(x []float32, n, d, k int) (*Model, error) {
	if n < 2 || d < 1 || len(x) != n*d {
		return nil, fmt.Errorf("pca: need at least 2 rows of [n, d] data, got n=%d d=%d len=%d", n, d, len(x))
	}
	if k < 1 || k > d {
		return nil, fmt.Errorf("pca: k=%d must be in [1, %d]", k, d)
	}
	mean := make([]float64, d)
	for i := 0; i < n; i++ {
		for j, v := range x[i*d : (i+1)*d] {
			mean[j] += float64(v)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	c := mat.NewDense(n, d, nil)
	for i := 0; i < n; i++ {
		row := c.RawRowView(i)
		for j, v := range x[i*d : (i+1)*d] {
			row[j] = float64(v) - mean[j]
			if math.IsNaN(row[j]) || math.IsInf(row[j], 0) {
				return nil, fmt.Errorf("pca: non-finite value at row %d, column %d", i, j)
			}
		}
	}
	var cov mat.SymDense
	cov.SymOuterK(1/float64(n-1), c.T())
	var eig mat.EigenSym
	if ok := eig.Factorize(&cov, true); !ok {
		return nil, fmt.Errorf("pca: eigendecomposition did not converge")
	}
	vals := eig.Values(nil) // ascending
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	m := &Model{D: d, K: k, Mean: mean, Components: make([]float64, k*d), Variance: make([]float64, k)}
	for c := 0; c < k; c++ {
		col := d - 1 - c
		m.Variance[c] = vals[col]
		comp := m.Components[c*d : (c+1)*d]
		big := 0.0
		for j := 0; j < d; j++ {
			comp[j] = vecs.At(j, col)
			if math.Abs(comp[j]) > math.Abs(big) {
				big = comp[j]
			}
		}
		if big < 0 {
			for j := range comp {
				comp[j] = -comp[j]
			}
		}
	}
	return m, nil
}

// Transform projects n rows of x ([n, D]) onto the components: out[i, c] = (x_i − mean)·comp_c.
func (m *Model) Transform(x []float32, n int) ([]float32, error) {
	if len(x) != n*m.D {
		return nil, fmt.Errorf("pca: Transform got %d values for %d rows of dimension %d", len(x), n, m.D)
	}
	out := make([]float32, n*m.K)
	centered := make([]float64, m.D)
	for i := 0; i < n; i++ {
		for j, v := range x[i*m.D : (i+1)*m.D] {
			centered[j] = float64(v) - m.Mean[j]
		}
		for c := 0; c < m.K; c++ {
			comp := m.Components[c*m.D : (c+1)*m.D]
			s := 0.0
			for j, v := range centered {
				s += v * comp[j]
			}
			out[i*m.K+c] = float32(s)
		}
	}
	return out, nil
}
