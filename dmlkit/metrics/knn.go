package metrics

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Similarity selects how the kNN engine scores a (query, reference) pair. Higher scores are always better.
type Similarity int

const (
	// Cosine scores pairs by the inner product of the L2-normalised rows. The engine normalises private
	// copies (the inputs are never mutated); a zero-norm row is an error.
	Cosine Similarity = iota
	// InnerProduct scores pairs by the raw inner product (faiss IndexFlatIP).
	InnerProduct
	// L2 ranks by squared Euclidean distance (faiss IndexFlatL2). The returned score is minus the squared
	// distance, so that higher is better for every Similarity.
	L2
)

// String returns "cosine", "ip" or "l2".
func (s Similarity) String() string {
	switch s {
	case Cosine:
		return "cosine"
	case InnerProduct:
		return "ip"
	case L2:
		return "l2"
	}
	return fmt.Sprintf("Similarity(%d)", int(s))
}

// ParseSimilarity maps "cosine", "ip" (or "inner_product", "dot") and "l2" to a Similarity.
func ParseSimilarity(name string) (Similarity, error) {
	switch name {
	case "cosine", "cos":
		return Cosine, nil
	case "ip", "inner_product", "dot":
		return InnerProduct, nil
	case "l2", "euclidean":
		return L2, nil
	}
	return 0, fmt.Errorf("metrics: unknown similarity %q (want cosine, ip or l2)", name)
}

// KNNOptions configures KNN and KNNSelf.
type KNNOptions struct {
	// K is the number of neighbours returned per query (required, 1 ≤ K ≤ number of candidate references).
	K int
	// Similarity is the scoring rule (default Cosine).
	Similarity Similarity
	// ExcludeSelf drops reference i from the neighbours of query i (queries are part of the references,
	// with query i ↔ reference i). It requires nq ≤ nr. KNNSelf always sets it.
	ExcludeSelf bool
	// Exclude, when non-nil, has one entry per query: a reference index that query i must never return
	// (−1 for none). It may be combined with ExcludeSelf (both are dropped).
	Exclude []int
	// Workers is the number of goroutines (default GOMAXPROCS).
	Workers int
	// QueryBlock and RefBlock set the block shape (queries × references) scored at once; zero picks
	// defaults (224 × 512 with the AVX-512 kernel). They are rounded up to the micro-kernel shape. Results do
	// not depend on them.
	QueryBlock, RefBlock int
	// Progress, when non-nil, is called after each finished query block with the number of queries done
	// and the total. Calls are serialised.
	Progress func(done, total int)
}

// Neighbors holds the top-K lists of a kNN search: Index[i*K+r] and Score[i*K+r] are the reference index
// and score of the r-th best neighbour of query i (r = 0 is the best).
//
// Order: by score, highest first; equal scores are broken by the smaller reference index. Scores are
// float32 dot products accumulated in float32 with fused multiply-adds in index order of the dimensions
// (one deterministic chain per pair, independent of blocking and of the number of workers). For L2 the
// score is minus the squared Euclidean distance, clamped to ≤ 0.
type Neighbors struct {
	NQ, K      int
	Similarity Similarity
	Index      []int32
	Score      []float32
}

// Row returns the neighbour indices and scores of query i (sub-slices of Index and Score).
func (nb *Neighbors) Row(i int) ([]int32, []float32) {
	return nb.Index[i*nb.K : (i+1)*nb.K], nb.Score[i*nb.K : (i+1)*nb.K]
}

// KNN returns the K best references for every query: q is [nq, d] and r is [nr, d], both row-major.
//
// The search is exact and blocked: query blocks are scored against reference blocks with a packed
// micro-kernel (AVX-512 or AVX2 assembly on amd64 when the CPU has it, plain Go otherwise), and each query
// keeps a bounded heap of its K best, so memory is O((nq+nr)·d + nq·K) — never an nq×nr matrix. Query blocks
// run in parallel on Workers goroutines.
func KNN(q []float32, nq int, r []float32, nr int, d int, opt KNNOptions) (*Neighbors, error) {
	e, err := newKNNEngine(q, nq, r, nr, d, opt, false)
	if err != nil {
		return nil, err
	}
	return e.run(nil)
}

// KNNSelf is KNN of a set against itself with self-matches removed by index (ExcludeSelf). Under Cosine
// and InnerProduct it scores each pair of row blocks once and offers the scores to both sides (the
// score is symmetric bit for bit), half the blocked search's arithmetic with identical results; L2 runs
// the blocked search.
func KNNSelf(emb []float32, n, d int, opt KNNOptions) (*Neighbors, error) {
	opt.ExcludeSelf = true
	e, err := newKNNEngine(emb, n, emb, n, d, opt, true)
	if err != nil {
		return nil, err
	}
	return e.run(nil)
}

// knnKernel is a packed micro-kernel computing an mr×nr tile (see knn_amd64.go).
type knnKernel struct {
	name   string
	mr, nr int
	fn     func(a, b, c *float32, kc, ldc int)
}

var knnGenericKernel = knnKernel{name: "go-4x4", mr: 4, nr: 4, fn: knnDotGeneric4x4}

// knnActiveKernel is chosen once at start-up; tests may swap it.
var knnActiveKernel = knnDetectKernel()

// KNNKernelName reports which micro-kernel the engine uses on this machine ("avx512-14x32", "avx2-6x16"
// or "go-4x4").
func KNNKernelName() string { return knnActiveKernel.name }

// knnDotGeneric4x4 is the portable kernel: same contract as the assembly ones, mr = nr = 4.
func knnDotGeneric4x4(a, b, c *float32, kc, ldc int) {
	as := unsafe.Slice(a, kc*4)
	bs := unsafe.Slice(b, kc*4)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 float32
	for k := 0; k < kc; k++ {
		av := as[k*4 : k*4+4 : k*4+4]
		bv := bs[k*4 : k*4+4 : k*4+4]
		a0, a1, a2, a3 := av[0], av[1], av[2], av[3]
		b0, b1, b2, b3 := bv[0], bv[1], bv[2], bv[3]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	cs := unsafe.Slice(c, 3*ldc+4)
	cs[0], cs[1], cs[2], cs[3] = c00, c01, c02, c03
	cs[ldc], cs[ldc+1], cs[ldc+2], cs[ldc+3] = c10, c11, c12, c13
	cs[2*ldc], cs[2*ldc+1], cs[2*ldc+2], cs[2*ldc+3] = c20, c21, c22, c23
	cs[3*ldc], cs[3*ldc+1], cs[3*ldc+2], cs[3*ldc+3] = c30, c31, c32, c33
}

// knnEngine holds the prepared (normalised / augmented) inputs and the packed references.
type knnEngine struct {
	kern       knnKernel
	nq, nr, dA int
	k          int
	sim        Similarity
	qprep      []float32 // [nq, dA]
	rprep      []float32 // [nr, dA]
	qnorm2     []float32 // L2 only: squared norms of the queries
	bpack      []float32 // packed reference panels: panel p holds refs p*nr..p*nr+nr-1, [dA][nrK]
	excl       []int32   // per query: up to two excluded reference indices (−1 none)
	workers    int
	mb, nb     int
	progress   func(done, total int)
	posr       *knnPosRanks // optional exact-mAP accounting
	same       bool         // the queries are the references (same rows): see runSymmetric
	noSym      bool         // tests: force the blocked search
}

func newKNNEngine(q []float32, nq int, r []float32, nr int, d int, opt KNNOptions, same bool) (*knnEngine, error) {
	if err := validateKNNInputs(q, nq, r, nr, d, opt); err != nil {
		return nil, err
	}
	e := &knnEngine{kern: knnActiveKernel, nq: nq, nr: nr, k: opt.K, sim: opt.Similarity, progress: opt.Progress, same: same}
	// Prepare inputs.
	switch opt.Similarity {
	case InnerProduct:
		e.dA = d
		e.qprep, e.rprep = q, r
	case Cosine:
		e.dA = d
		qn := append([]float32(nil), q[:nq*d]...)
		if err := knnNormalizeRows(qn, nq, d, "query"); err != nil {
			return nil, err
		}
		e.qprep = qn
		if same {
			e.rprep = qn
		} else {
			rn := append([]float32(nil), r[:nr*d]...)
			if err := knnNormalizeRows(rn, nr, d, "reference"); err != nil {
				return nil, err
			}
			e.rprep = rn
		}
	case L2:
		// score' = 2 q·r − |r|² = [2q, −1]·[r, |r|²]; distance² = |q|² − score'.
		e.dA = d + 1
		e.qprep = make([]float32, nq*(d+1))
		e.qnorm2 = make([]float32, nq)
		for i := 0; i < nq; i++ {
			var s float64
			for t := 0; t < d; t++ {
				v := q[i*d+t]
				e.qprep[i*(d+1)+t] = 2 * v
				s += float64(v) * float64(v)
			}
			e.qprep[i*(d+1)+d] = -1
			e.qnorm2[i] = float32(s)
		}
		e.rprep = make([]float32, nr*(d+1))
		for i := 0; i < nr; i++ {
			var s float64
			for t := 0; t < d; t++ {
				v := r[i*d+t]
				e.rprep[i*(d+1)+t] = v
				s += float64(v) * float64(v)
			}
			e.rprep[i*(d+1)+d] = float32(s)
		}
	default:
		return nil, fmt.Errorf("metrics: unknown Similarity %d", int(opt.Similarity))
	}
	// Exclusions.
	e.excl = make([]int32, 2*nq)
	for i := 0; i < nq; i++ {
		e.excl[2*i], e.excl[2*i+1] = -1, -1
		if opt.ExcludeSelf {
			e.excl[2*i] = int32(i)
		}
		if opt.Exclude != nil && opt.Exclude[i] >= 0 {
			e.excl[2*i+1] = int32(opt.Exclude[i])
		}
	}
	e.workers = opt.Workers
	if e.workers <= 0 {
		e.workers = runtime.GOMAXPROCS(0)
	}
	mr, nrK := e.kern.mr, e.kern.nr
	e.mb = opt.QueryBlock
	if e.mb <= 0 {
		e.mb = 16 * mr
	}
	e.mb = (e.mb + mr - 1) / mr * mr
	e.nb = opt.RefBlock
	if e.nb <= 0 {
		e.nb = 512
	}
	e.nb = (e.nb + nrK - 1) / nrK * nrK
	// Few queries: make sure every worker gets a block.
	if per := (nq + e.workers - 1) / e.workers; per < e.mb {
		e.mb = max((per+mr-1)/mr*mr, mr)
	}
	e.bpack = knnPackPanels(e.rprep, nr, e.dA, nrK, e.workers)
	return e, nil
}

// knnNormalizeRows normalises rows in place (float64 norm), failing on a zero-norm row.
func knnNormalizeRows(x []float32, n, d int, what string) error {
	for i := 0; i < n; i++ {
		row := x[i*d : (i+1)*d]
		var s float64
		for _, v := range row {
			s += float64(v) * float64(v)
		}
		if s == 0 {
			return fmt.Errorf("metrics: %s row %d has zero norm; cosine similarity is undefined", what, i)
		}
		inv := 1 / math.Sqrt(s)
		for t, v := range row {
			row[t] = float32(float64(v) * inv)
		}
	}
	return nil
}

// knnPackPanels packs n rows of width dA into panels of `panel` rows: out[p*dA*panel + k*panel + j] =
// x[(p*panel+j)*dA + k], zero-padded past n.
func knnPackPanels(x []float32, n, dA, panel, workers int) []float32 {
	np := (n + panel - 1) / panel
	out := make([]float32, np*dA*panel)
	var wg sync.WaitGroup
	var next atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				p := int(next.Add(1) - 1)
				if p >= np {
					return
				}
				knnPackPanel(out[p*dA*panel:(p+1)*dA*panel], x, p*panel, min(panel, n-p*panel), dA, panel)
			}
		}()
	}
	wg.Wait()
	return out
}

// knnPackPanel packs rows [r0, r0+rows) of x (width dA) into dst ([dA][panel]), zero-padding missing rows.
func knnPackPanel(dst, x []float32, r0, rows, dA, panel int) {
	for j := 0; j < rows; j++ {
		src := x[(r0+j)*dA : (r0+j+1)*dA]
		for k, v := range src {
			dst[k*panel+j] = v
		}
	}
	for j := rows; j < panel; j++ {
		for k := 0; k < dA; k++ {
			dst[k*panel+j] = 0
		}
	}
}

// knnPackList packs the listed rows of x (width dA) into dst ([dA][panel]), zero-padding to panel rows.
func knnPackList(dst, x []float32, rows []int32, dA, panel int) {
	for j, r := range rows {
		src := x[int(r)*dA : (int(r)+1)*dA]
		for k, v := range src {
			dst[k*panel+j] = v
		}
	}
	for j := len(rows); j < panel; j++ {
		for k := 0; k < dA; k++ {
			dst[k*panel+j] = 0
		}
	}
}

// knnTopState is the bounded heap bookkeeping of one query.
type knnTopState struct {
	cnt int
	thr float32
}

func (e *knnEngine) run(out *Neighbors) (*Neighbors, error) {
	if !e.noSym && e.symmetricOK() {
		return e.runSymmetric(out)
	}
	if out == nil {
		out = &Neighbors{NQ: e.nq, K: e.k, Similarity: e.sim,
			Index: make([]int32, e.nq*e.k), Score: make([]float32, e.nq*e.k)}
	}
	nBlocks := (e.nq + e.mb - 1) / e.mb
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < min(e.workers, nBlocks); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			abuf := make([]float32, e.mb*e.dA)
			cbuf := make([]float32, e.mb*e.nb)
			st := make([]knnTopState, e.mb)
			var tabs []knnPosTable
			if e.posr != nil {
				tabs = make([]knnPosTable, e.mb)
			}
			for {
				b := int(next.Add(1) - 1)
				if b >= nBlocks {
					return
				}
				q0 := b * e.mb
				q1 := min(q0+e.mb, e.nq)
				e.block(q0, q1, abuf, cbuf, st, tabs, out)
				if e.progress != nil {
					mu.Lock()
					done += q1 - q0
					e.progress(done, e.nq)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	// Heap-sort every list best-first.
	for i := 0; i < e.nq; i++ {
		knnHeapSortBestFirst(out.Index[i*e.k:(i+1)*e.k], out.Score[i*e.k:(i+1)*e.k])
	}
	if e.sim == L2 {
		for i := 0; i < e.nq; i++ {
			row := out.Score[i*e.k : (i+1)*e.k]
			for t, s := range row {
				d2 := e.qnorm2[i] - s
				if d2 < 0 {
					d2 = 0
				}
				row[t] = -d2
			}
		}
	}
	return out, nil
}

// block scores queries [q0, q1) against every reference block and updates their heaps; with positive
// ranks tracked, tabs holds (at least q1 − q0) tables for the queries' positives.
func (e *knnEngine) block(q0, q1 int, abuf, cbuf []float32, st []knnTopState, tabs []knnPosTable, out *Neighbors) {
	mr, nrK, dA, nb := e.kern.mr, e.kern.nr, e.dA, e.nb
	rows := q1 - q0
	nPanels := (rows + mr - 1) / mr
	for p := 0; p < nPanels; p++ {
		knnPackPanel(abuf[p*mr*dA:(p+1)*mr*dA], e.qprep, q0+p*mr, min(mr, rows-p*mr), dA, mr)
	}
	negInf := float32(math.Inf(-1))
	for i := 0; i < rows; i++ {
		st[i] = knnTopState{thr: negInf}
	}
	if e.posr != nil {
		for i := 0; i < rows; i++ {
			if tabs[i].first == nil {
				tabs[i].first = make([]int32, knnPosBuckets)
			}
			e.posr.table(q0+i, &tabs[i])
		}
	}
	fn := e.kern.fn
	for r0 := 0; r0 < e.nr; r0 += nb {
		r1 := min(r0+nb, e.nr)
		for p := r0 / nrK; p*nrK < r1; p++ {
			bp := &e.bpack[p*dA*nrK]
			col := p*nrK - r0
			for qp := 0; qp < nPanels; qp++ {
				fn(&abuf[qp*mr*dA], bp, &cbuf[qp*mr*nb+col], dA, nb)
			}
		}
		w := r1 - r0
		for i := 0; i < rows; i++ {
			qi := q0 + i
			row := cbuf[i*nb : i*nb+w]
			for _, x := range e.excl[2*qi : 2*qi+2] {
				if x >= int32(r0) && x < int32(r1) {
					row[int(x)-r0] = negInf
				}
			}
			idx := out.Index[qi*e.k : (qi+1)*e.k]
			sc := out.Score[qi*e.k : (qi+1)*e.k]
			s := &st[i]
			if e.posr != nil {
				e.posr.scan(qi, r0, row, s, idx, sc, &tabs[i])
				continue
			}
			thr := s.thr
			for j, v := range row {
				if v > thr {
					thr = knnHeapOffer(s, idx, sc, int32(r0+j), v)
				}
			}
		}
	}
}

// knnHeapOffer inserts (j, v) into the bounded heap of one query (root = worst: lowest score, then highest
// index) and returns the new acceptance threshold. References arrive in increasing index order, so a later
// reference with a score equal to the threshold is never better and is rejected by the caller's strict >.
func knnHeapOffer(s *knnTopState, idx []int32, sc []float32, j int32, v float32) float32 {
	k := len(idx)
	if s.cnt < k {
		// sift up
		c := s.cnt
		s.cnt++
		for c > 0 {
			p := (c - 1) / 2
			if !knnWorse(v, j, sc[p], idx[p]) {
				break
			}
			idx[c], sc[c] = idx[p], sc[p]
			c = p
		}
		idx[c], sc[c] = j, v
		if s.cnt == k {
			s.thr = sc[0]
		}
		return s.thr
	}
	// replace root, sift down
	c := 0
	for {
		l := 2*c + 1
		if l >= k {
			break
		}
		m := l
		if r := l + 1; r < k && knnWorse(sc[r], idx[r], sc[l], idx[l]) {
			m = r
		}
		if !knnWorse(sc[m], idx[m], v, j) {
			break
		}
		idx[c], sc[c] = idx[m], sc[m]
		c = m
	}
	idx[c], sc[c] = j, v
	s.thr = sc[0]
	return s.thr
}

// knnWorse reports whether (va, ja) ranks after (vb, jb): lower score, or equal score and larger index.
func knnWorse(va float32, ja int32, vb float32, jb int32) bool {
	return va < vb || (va == vb && ja > jb)
}

// knnHeapSortBestFirst turns a full worst-rooted heap into a best-first list.
func knnHeapSortBestFirst(idx []int32, sc []float32) {
	for end := len(idx) - 1; end > 0; end-- {
		idx[0], idx[end] = idx[end], idx[0]
		sc[0], sc[end] = sc[end], sc[0]
		c := 0
		for {
			l := 2*c + 1
			if l >= end {
				break
			}
			m := l
			if r := l + 1; r < end && knnWorse(sc[r], idx[r], sc[l], idx[l]) {
				m = r
			}
			if !knnWorse(sc[m], idx[m], sc[c], idx[c]) {
				break
			}
			idx[c], idx[m] = idx[m], idx[c]
			sc[c], sc[m] = sc[m], sc[c]
			c = m
		}
	}
}

// knnPairScores scores the listed queries against the listed references with the engine's kernel, so that
// the scores are bit-identical to those the blocked search sees. out is [len(queries), len(refs)].
func (e *knnEngine) knnPairScores(queries []int32, refs []int32, out []float32) {
	mr, nrK, dA := e.kern.mr, e.kern.nr, e.dA
	abuf := make([]float32, mr*dA)
	bbuf := make([]float32, nrK*dA)
	cbuf := make([]float32, mr*nrK)
	nr := len(refs)
	for q0 := 0; q0 < len(queries); q0 += mr {
		qs := queries[q0:min(q0+mr, len(queries))]
		knnPackList(abuf, e.qprep, qs, dA, mr)
		for r0 := 0; r0 < nr; r0 += nrK {
			rs := refs[r0:min(r0+nrK, nr)]
			knnPackList(bbuf, e.rprep, rs, dA, nrK)
			e.kern.fn(&abuf[0], &bbuf[0], &cbuf[0], dA, nrK)
			for i := range qs {
				copy(out[(q0+i)*nr+r0:(q0+i)*nr+r0+len(rs)], cbuf[i*nrK:i*nrK+len(rs)])
			}
		}
	}
}
