package evaluate

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
)

// ISMOptions configures retrieval ranked by seed 002's introspective similarity metric (ISM),
// [ISMRetrieval]. The zero value is not valid: Tau must be > 0.
type ISMOptions struct {
	// Tau (τ > 0) and Gamma (γ ≥ 0) are the metric's weakening degree and introspective bias
	// (Eq. 5–6); a run is tested with the values its idml loss trained with.
	Tau, Gamma float64
	// Metric is "sim" (ISM-Sim, Eq. 6/19; the default when empty) or "dis" (ISM-Dis, Eq. 20).
	Metric string
	// CodeMetric is the authors' code's variant: L2-normalised uncertainty and squared norms,
	// r = (‖û_i + û_j‖² + γ)/α² (papers-vs-code §4).
	CodeMetric bool
	// Form is the ranking score: "cos" (default when empty) ranks by C_IN (Eq. 19, or C·e for
	// ISM-Dis, Eq. 20), higher first; "dist" ranks by D_IN (Eq. 6, or sqrt(2 − 2C·e) for ISM-Dis),
	// lower first. The two orders differ: C_IN = 1 − ½α²e while D_IN = αe.
	Form string
	// K lists the R@k cutoffs (default [DefaultK], clamped to n − 1).
	K []int
	// Workers is the number of goroutines scoring query blocks (0: GOMAXPROCS).
	Workers int
}

func (o *ISMOptions) check() error {
	if !(o.Tau > 0) || math.IsInf(o.Tau, 0) {
		return fmt.Errorf("evaluate: ISM: tau %g: want a finite τ > 0", o.Tau)
	}
	if !(o.Gamma >= 0) || math.IsInf(o.Gamma, 0) {
		return fmt.Errorf("evaluate: ISM: gamma %g: want a finite γ ≥ 0", o.Gamma)
	}
	if o.Metric != "" && o.Metric != "sim" && o.Metric != "dis" {
		return fmt.Errorf("evaluate: ISM: metric %q: want sim or dis", o.Metric)
	}
	if o.Form != "" && o.Form != "cos" && o.Form != "dist" {
		return fmt.Errorf("evaluate: ISM: form %q: want cos or dist", o.Form)
	}
	return nil
}

// ISMPairScore is the ranking score of one pair under opt: C_IN ("cos" form) or −D_IN ("dist"),
// from the cosine c = ŝ_i·ŝ_j of the normalised semantic embeddings and the norm² beta2 =
// ‖u_i + u_j‖² of the uncertainty sum (of the normalised u with CodeMetric). With α = sqrt(2 − 2c)
// (the distance of unit vectors, floored at 1e−12 as the idml loss does), r = (β + γ)/α (Eq. 5;
// code: (β² + γ)/α²) and e = exp(−r/τ):
//
//	ISM-Sim: C_IN = 1 − (1 − c)·e,  D_IN = α·e
//	ISM-Dis: C_IN = c·e,            D_IN = sqrt(2 − 2c·e)
func ISMPairScore(c, beta2 float64, opt ISMOptions) float64 {
	a2 := math.Max(2-2*c, 0)
	alpha := math.Max(math.Sqrt(a2), 1e-12)
	beta2 = math.Max(beta2, 0)
	var r float64
	if opt.CodeMetric {
		r = (beta2 + opt.Gamma) / (alpha * alpha)
	} else {
		r = (math.Sqrt(beta2) + opt.Gamma) / alpha
	}
	e := math.Exp(-r / opt.Tau)
	dis := opt.Metric == "dis"
	if opt.Form == "dist" {
		if dis {
			return -math.Sqrt(math.Max(2-2*c*e, 0))
		}
		return -math.Sqrt(a2) * e
	}
	if dis {
		return c * e
	}
	return 1 - (1-c)*e
}

// ISMNeighbors returns, for each of the n rows, its k best other rows (leave-one-out
// self-retrieval) ranked by [ISMPairScore] between the semantic embeddings sem [n, d] (L2-normalised
// here) and the raw uncertainty embeddings unc [n, du] (row-major, same row order). The lists are
// sorted best first, ties broken by the smaller index (as the kNN engine); Score holds the pair
// scores as float32 (C_IN, or −D_IN for the "dist" form). Every pair is scored exactly, in
// float64: O(n²·(d + du)) time, O(workers·n) memory.
func ISMNeighbors(sem []float32, unc []float32, n, d, du, k int, opt ISMOptions) (*metrics.Neighbors, error) {
	if err := opt.check(); err != nil {
		return nil, err
	}
	if err := metrics.ValidateEmbeddings(sem, n, d, "semantic embeddings", true); err != nil {
		return nil, err
	}
	if err := metrics.ValidateEmbeddings(unc, n, du, "uncertainty embeddings", opt.CodeMetric); err != nil {
		return nil, err
	}
	if k < 1 || k > n-1 {
		return nil, fmt.Errorf("evaluate: ISM: k = %d outside [1, %d] (other rows)", k, n-1)
	}
	s := append([]float32(nil), sem...)
	if err := metrics.L2Normalize(s, n, d); err != nil {
		return nil, err
	}
	u := append([]float32(nil), unc...)
	if opt.CodeMetric {
		if err := metrics.L2Normalize(u, n, du); err != nil {
			return nil, err
		}
	}
	un := make([]float64, n) // ‖u_i‖²
	for i := range un {
		un[i] = dot64(u[i*du:(i+1)*du], u[i*du:(i+1)*du])
	}
	nb := &metrics.Neighbors{NQ: n, K: k, Similarity: metrics.Cosine, Index: make([]int32, n*k), Score: make([]float32, n*k)}
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const qBlock, rBlock = 16, 256
	blocks := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scores := make([][]float64, qBlock)
			for i := range scores {
				scores[i] = make([]float64, n)
			}
			h := ismHeap{}
			for q0 := range blocks {
				q1 := min(q0+qBlock, n)
				for r0 := 0; r0 < n; r0 += rBlock {
					r1 := min(r0+rBlock, n)
					for q := q0; q < q1; q++ {
						sq, uq, row := s[q*d:(q+1)*d], u[q*du:(q+1)*du], scores[q-q0]
						for r := r0; r < r1; r++ {
							c := dot64(sq, s[r*d:(r+1)*d])
							b2 := un[q] + un[r] + 2*dot64(uq, u[r*du:(r+1)*du])
							row[r] = ISMPairScore(c, b2, opt)
						}
					}
				}
				for q := q0; q < q1; q++ {
					h.top(scores[q-q0], q, k, nb.Index[q*k:(q+1)*k], nb.Score[q*k:(q+1)*k])
				}
			}
		}()
	}
	for q0 := 0; q0 < n; q0 += qBlock {
		blocks <- q0
	}
	close(blocks)
	wg.Wait()
	return nb, nil
}

// ISMRetrieval is leave-one-out self-retrieval ranked by the introspective similarity
// ([ISMNeighbors]): the keys of [metrics.RetrievalFromNeighbors] ("R@k" for opt.K, "Recall@k",
// "MAP@R", "R-Precision", "n_queries", "n_skipped"), with the same definitions as the cosine
// ranking's, so the two can be compared key by key (seed 002 Table 8).
func ISMRetrieval(sem []float32, unc []float32, n, d, du int, labels []int64, opt ISMOptions) (map[string]float64, error) {
	if len(labels) != n {
		return nil, fmt.Errorf("evaluate: ISM: %d labels for %d embeddings", len(labels), n)
	}
	if n < 2 {
		return nil, fmt.Errorf("evaluate: ISM: %d embeddings: want at least 2", n)
	}
	ks := opt.K
	if len(ks) == 0 {
		ks = DefaultK
	}
	ks = clampK(ks, n-1)
	k := 0
	for _, x := range ks {
		k = max(k, x)
	}
	for _, p := range metrics.PositiveCounts(labels, labels, true) {
		k = max(k, p) // MAP@R and R-Precision need the top R
	}
	nb, err := ISMNeighbors(sem, unc, n, d, du, min(k, n-1), opt)
	if err != nil {
		return nil, err
	}
	return metrics.RetrievalFromNeighbors(nb, labels, labels, nil, nil, true, ks, nil)
}

// dot64 is the float64 inner product of two float32 vectors of equal length.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += float64(a[i]) * float64(b[i])
		s1 += float64(a[i+1]) * float64(b[i+1])
		s2 += float64(a[i+2]) * float64(b[i+2])
		s3 += float64(a[i+3]) * float64(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += float64(a[i]) * float64(b[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// ismHeap selects the k best entries of a score row, excluding the query itself.
type ismHeap struct {
	idx []int32
	sc  []float64
}

// worse reports whether (va, ja) ranks below (vb, jb): a lower score, or an equal score at a
// larger index.
func ismWorse(va float64, ja int32, vb float64, jb int32) bool {
	return va < vb || va == vb && ja > jb
}

// top writes the k best entries of row (all j ≠ self) best first into idx and sc.
func (h *ismHeap) top(row []float64, self, k int, idx []int32, sc []float32) {
	h.idx, h.sc = h.idx[:0], h.sc[:0]
	for j, v := range row {
		if j == self {
			continue
		}
		jj := int32(j)
		if len(h.idx) < k {
			h.idx, h.sc = append(h.idx, jj), append(h.sc, v)
			h.up(len(h.idx) - 1)
			continue
		}
		if !ismWorse(h.sc[0], h.idx[0], v, jj) { // the k-th best so far ranks above v
			continue
		}
		h.idx[0], h.sc[0] = jj, v
		h.down(0)
	}
	// Pop the worst first into the back of the output.
	for m := len(h.idx) - 1; m >= 0; m-- {
		idx[m], sc[m] = h.idx[0], float32(h.sc[0])
		last := len(h.idx) - 1
		h.idx[0], h.sc[0] = h.idx[last], h.sc[last]
		h.idx, h.sc = h.idx[:last], h.sc[:last]
		if last > 0 {
			h.down(0)
		}
	}
}

// The heap keeps the worst entry at the root.
func (h *ismHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !ismWorse(h.sc[i], h.idx[i], h.sc[p], h.idx[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *ismHeap) down(i int) {
	n := len(h.idx)
	for {
		l, w := 2*i+1, i
		if l < n && ismWorse(h.sc[l], h.idx[l], h.sc[w], h.idx[w]) {
			w = l
		}
		if r := l + 1; r < n && ismWorse(h.sc[r], h.idx[r], h.sc[w], h.idx[w]) {
			w = r
		}
		if w == i {
			return
		}
		h.swap(i, w)
		i = w
	}
}

func (h *ismHeap) swap(i, j int) {
	h.idx[i], h.idx[j] = h.idx[j], h.idx[i]
	h.sc[i], h.sc[j] = h.sc[j], h.sc[i]
}

// MeanRowNorm is the mean Euclidean norm of the rows of x [n, d] (row norms in float64; 0 for no
// rows): e.g. the mean ‖u‖ of IDML's uncertainty embeddings.
func MeanRowNorm(x []float32, d int) float64 {
	n := len(x) / max(d, 1)
	var sum float64
	for i := range n {
		var s float64
		for _, v := range x[i*d : (i+1)*d] {
			s += float64(v) * float64(v)
		}
		sum += math.Sqrt(s)
	}
	return sum / float64(max(n, 1))
}
