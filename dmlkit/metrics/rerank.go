package metrics

import (
	"fmt"
	"math"
	"slices"
)

// RerankOptions configures contextual re-ranking (seed 004, Kim et al.-style contextual similarity,
// App. I.5 and Table 10).
//
// For a self-retrieval set with cosine similarities s_ij (unit-norm embeddings):
//
//	N(i)   = {i} ∪ the k−1 nearest other samples of i, extended by every retrieved j with
//	         D_ij ≤ D_ip + Eps, where D = 2 − 2s is the squared distance and p the k-th member
//	         (seed 004 Eq. 15, "we include i in N(i)"; Eq. 23 for the ε in squared-distance units)
//	w̃_ij   = |N(i) ∩ N(j)| / |N(i)| if j ∈ N(i), else 0            (Eq. 16; no query expansion — the
//	         "simplified version" App. I.5 uses Eq. 15 and 16 only)
//	s̃_ij   = exp(2 s_ij − 2)                                       (rectified to [0, 1], App. I.5)
//	score  = Beta·w̃_ij + (1 − Beta)·s̃_ij                           (Beta = 0.1 in Table 10)
//
// The retrieved neighbours of each query (KPrime of them in Retrieval) are re-scored and re-sorted (ties by
// smaller index). Every candidate outside the retrieved list has w̃ = 0 and a lower s̃ than every listed one,
// so the re-ranked list is exactly the head of the full re-ranked order (N(i) ⊆ list since KPrime ≥ k−1).
// Eps > 0 only considers retrieved neighbours.
type RerankOptions struct {
	// K is the neighbourhood size k of N(i), counting i itself (Table 10: 16 or 32 for CUB/Cars, 4 for SOP).
	K int
	// KPrime is the number of neighbours Retrieval retrieves and re-scores per query (at least K−1; the
	// default is the largest cutoff the metrics need, at least K).
	KPrime int
	// Beta weights the contextual similarity (Table 10: 0.1).
	Beta float64
	// Eps extends N(i) by near-ties, in squared-distance units (default 0).
	Eps float64
}

func (o *RerankOptions) validate(candidates int) error {
	if o.K < 2 {
		return fmt.Errorf("metrics: rerank: K = %d must be ≥ 2 (N(i) holds i and its k−1 nearest neighbours)", o.K)
	}
	if o.KPrime != 0 && o.KPrime < o.K-1 {
		return fmt.Errorf("metrics: rerank: KPrime = %d must be ≥ K−1 = %d", o.KPrime, o.K-1)
	}
	if o.K-1 > candidates || o.KPrime > candidates {
		return fmt.Errorf("metrics: rerank: K = %d / KPrime = %d exceed the %d candidate references", o.K, o.KPrime, candidates)
	}
	if o.Beta < 0 || o.Beta > 1 || math.IsNaN(o.Beta) {
		return fmt.Errorf("metrics: rerank: Beta = %v must be in [0, 1]", o.Beta)
	}
	if o.Eps < 0 || math.IsNaN(o.Eps) {
		return fmt.Errorf("metrics: rerank: Eps = %v must be ≥ 0", o.Eps)
	}
	return nil
}

// ContextualRerank re-ranks self-retrieval neighbour lists (from KNNSelf with Cosine, or InnerProduct on
// unit-norm rows; query i is sample i) with the contextual similarity of RerankOptions. It returns new lists
// of the same length whose scores are the re-ranking scores; KPrime is ignored here.
func ContextualRerank(nb *Neighbors, opt RerankOptions) (*Neighbors, error) {
	if nb.Similarity == L2 {
		return nil, fmt.Errorf("metrics: rerank: needs cosine similarities, got %v", nb.Similarity)
	}
	if err := opt.validate(nb.K); err != nil {
		return nil, err
	}
	kp := nb.K
	n := nb.NQ
	// Neighbourhood sets N(i), sorted by index for intersections.
	sets := make([][]int32, n)
	for i := 0; i < n; i++ {
		idx, sc := nb.Row(i)
		// p: k-th member of N(i) counting i itself → the (k−1)-th neighbour, D_ip = 2 − 2 s.
		dp := 2 - 2*float64(sc[opt.K-2])
		set := []int32{int32(i)}
		for t := 0; t < nb.K; t++ {
			if t < opt.K-1 || (opt.Eps > 0 && 2-2*float64(sc[t]) <= dp+opt.Eps) {
				set = append(set, idx[t])
			} else {
				break
			}
		}
		slices.Sort(set)
		sets[i] = set
	}
	out := &Neighbors{NQ: n, K: kp, Similarity: nb.Similarity, Index: make([]int32, n*kp), Score: make([]float32, n*kp)}
	type cand struct {
		z int32
		s float64
	}
	buf := make([]cand, nb.K)
	for i := 0; i < n; i++ {
		idx, sc := nb.Row(i)
		si := sets[i]
		for t := 0; t < nb.K; t++ {
			z := idx[t]
			var w float64
			if _, in := slices.BinarySearch(si, z); in && int(z) < n {
				w = float64(knnIntersectCount(si, sets[z])) / float64(len(si))
			}
			buf[t] = cand{z, opt.Beta*w + (1-opt.Beta)*math.Exp(2*float64(sc[t])-2)}
		}
		slices.SortStableFunc(buf, func(a, b cand) int {
			if a.s != b.s {
				if a.s > b.s {
					return -1
				}
				return 1
			}
			return int(a.z - b.z)
		})
		for t := 0; t < kp; t++ {
			out.Index[i*kp+t] = buf[t].z
			out.Score[i*kp+t] = float32(buf[t].s)
		}
	}
	return out, nil
}

// knnIntersectCount counts common elements of two sorted index lists.
func knnIntersectCount(a, b []int32) int {
	c, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			c++
			i++
			j++
		}
	}
	return c
}
