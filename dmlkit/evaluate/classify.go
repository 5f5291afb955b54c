package evaluate

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
)

// DefaultAccK are the top-k accuracy cutoffs of [Classification] by default (top-1 and top-5, as
// ImageNet-style tables report).
var DefaultAccK = []int{1, 5}

// Classification is closed-set classification by a cosine classifier: each of the n embeddings
// emb [n, d] is scored against the c class weights w [c, d] (both L2-normalised here) by cosine,
// and labels [n] are class indices in [0, c). It returns "acc@k" for every k of ks (default
// [DefaultAccK]; cutoffs above c are dropped): the fraction of rows whose class is among the k best
// scores, ties broken by the smaller class index (as argmax and top-k do), i.e. whose rank
// #{j : s_j > s_y} + #{j < y : s_j = s_y} is below k; and "n_classified" = n.
func Classification(emb []float32, n, d int, w []float32, c int, labels []int64, ks []int) (map[string]float64, error) {
	if err := metrics.ValidateEmbeddings(emb, n, d, "embeddings", true); err != nil {
		return nil, err
	}
	if err := metrics.ValidateEmbeddings(w, c, d, "class weights", true); err != nil {
		return nil, err
	}
	if len(labels) != n {
		return nil, fmt.Errorf("evaluate: classification: %d labels for %d embeddings", len(labels), n)
	}
	for i, y := range labels {
		if y < 0 || y >= int64(c) {
			return nil, fmt.Errorf("evaluate: classification: row %d has class %d, outside the %d classes of the classifier", i, y, c)
		}
	}
	if len(ks) == 0 {
		ks = DefaultAccK
	}
	var use []int
	for _, k := range ks {
		if k < 1 {
			return nil, fmt.Errorf("evaluate: classification: k = %d: want ≥ 1", k)
		}
		if k <= c {
			use = append(use, k)
		}
	}
	x := append([]float32(nil), emb...)
	if err := metrics.L2Normalize(x, n, d); err != nil {
		return nil, err
	}
	wn := append([]float32(nil), w...)
	if err := metrics.L2Normalize(wn, c, d); err != nil {
		return nil, err
	}
	hits := make([]int, len(use))
	s := make([]float64, c)
	for i := 0; i < n; i++ {
		xi := x[i*d : (i+1)*d]
		for j := range s {
			s[j] = dot64(xi, wn[j*d:(j+1)*d])
		}
		y := int(labels[i])
		rank := 0
		for j, v := range s {
			if v > s[y] || v == s[y] && j < y {
				rank++
			}
		}
		for q, k := range use {
			if rank < k {
				hits[q]++
			}
		}
	}
	out := map[string]float64{"n_classified": float64(n)}
	for q, k := range use {
		out[fmt.Sprintf("acc@%d", k)] = float64(hits[q]) / float64(n)
	}
	return out, nil
}
