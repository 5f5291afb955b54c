package metrics

import (
	"fmt"
	"math"
)

// ValidateEmbeddings checks that emb holds exactly n rows of d finite values. what names the argument
// in the error ("embeddings", "query", "gallery", …). When cosine is true, zero-norm rows are rejected too.
func ValidateEmbeddings(emb []float32, n, d int, what string, cosine bool) error {
	switch {
	case n <= 0:
		return fmt.Errorf("metrics: %s: empty input (n = %d rows)", what, n)
	case d <= 0:
		return fmt.Errorf("metrics: %s: dimension d = %d must be positive", what, d)
	case len(emb) != n*d:
		return fmt.Errorf("metrics: %s: len = %d, want n·d = %d·%d = %d", what, len(emb), n, d, n*d)
	}
	for i := 0; i < n; i++ {
		row := emb[i*d : (i+1)*d]
		var s float64
		for t, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("metrics: %s: row %d, column %d is %v (embeddings must be finite)", what, i, t, v)
			}
			s += float64(v) * float64(v)
		}
		if cosine && s == 0 {
			return fmt.Errorf("metrics: %s: row %d has zero norm; cosine similarity is undefined", what, i)
		}
		if s > 1e36 {
			return fmt.Errorf("metrics: %s: row %d has squared norm %.3g, too large for float32 dot products", what, i, s)
		}
	}
	return nil
}

// L2Normalize scales every row of emb ([n, d], row-major) to unit Euclidean norm in place (norms are
// accumulated in float64). It returns an error naming the row when a row has zero norm or a non-finite
// value, and leaves emb unchanged in that case.
func L2Normalize(emb []float32, n, d int) error {
	if err := ValidateEmbeddings(emb, n, d, "embeddings", true); err != nil {
		return err
	}
	return knnNormalizeRows(emb, n, d, "embeddings")
}

// validateLabels checks a label slice against the number of rows it labels.
func validateLabels(labels []int64, n int, what string) error {
	if labels == nil {
		return fmt.Errorf("metrics: %s: labels are nil", what)
	}
	if len(labels) != n {
		return fmt.Errorf("metrics: %s: %d labels for %d rows", what, len(labels), n)
	}
	return nil
}

// validateKs checks the list of k values against the number of candidate references.
func validateKs(ks []int, candidates int, what string) error {
	for _, k := range ks {
		if k < 1 {
			return fmt.Errorf("metrics: %s: k = %d must be ≥ 1", what, k)
		}
		if k > candidates {
			return fmt.Errorf("metrics: %s: k = %d is larger than the %d candidate references per query", what, k, candidates)
		}
	}
	return nil
}

func validateKNNInputs(q []float32, nq int, r []float32, nr int, d int, opt KNNOptions) error {
	cos := opt.Similarity == Cosine
	if opt.Similarity < Cosine || opt.Similarity > L2 {
		return fmt.Errorf("metrics: unknown Similarity %d", int(opt.Similarity))
	}
	if err := ValidateEmbeddings(q, nq, d, "query embeddings", cos); err != nil {
		return err
	}
	if !knnSameRows(q, r) || nr != nq { // the same rows need checking once
		if err := ValidateEmbeddings(r, nr, d, "reference embeddings", cos); err != nil {
			return err
		}
	}
	cand := nr
	if opt.ExcludeSelf {
		if nq > nr {
			return fmt.Errorf("metrics: ExcludeSelf needs nq ≤ nr (query i is reference i), got nq = %d, nr = %d", nq, nr)
		}
		cand--
	}
	if opt.Exclude != nil {
		if len(opt.Exclude) != nq {
			return fmt.Errorf("metrics: Exclude has %d entries for %d queries", len(opt.Exclude), nq)
		}
		for i, x := range opt.Exclude {
			if x < -1 || x >= nr {
				return fmt.Errorf("metrics: Exclude[%d] = %d is outside [-1, %d)", i, x, nr)
			}
			if x >= 0 && !(opt.ExcludeSelf && x == i) && cand == nr-knnBoolInt(opt.ExcludeSelf) {
				cand--
			}
		}
	}
	if opt.K < 1 {
		return fmt.Errorf("metrics: K = %d must be ≥ 1", opt.K)
	}
	if opt.K > cand {
		return fmt.Errorf("metrics: K = %d is larger than the %d candidate references per query (gallery of %d)", opt.K, cand, nr)
	}
	if nr > math.MaxInt32 {
		return fmt.Errorf("metrics: %d references exceed the int32 index range", nr)
	}
	return nil
}

func knnBoolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// knnSameRows reports whether a and b share their first element (the same backing rows).
func knnSameRows(a, b []float32) bool {
	return len(a) > 0 && len(b) > 0 && &a[0] == &b[0]
}
