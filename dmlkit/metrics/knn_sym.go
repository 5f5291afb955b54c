package metrics

import (
	"math"
	"sync"
	"sync/atomic"
)

// Symmetric self-retrieval. When the queries are the references (KNNSelf, or Retrieval of a set
// against itself) under Cosine or InnerProduct, the score of (i, j) equals the score of (j, i) bit for
// bit: the kernels accumulate one fused multiply-add chain per pair in the order of the dimensions,
// and x_i[k]·x_j[k] = x_j[k]·x_i[k] exactly. So each block pair (I, J) with J after I is scored once
// and feeds both sides: row i ∈ I is offered (j, s_ij) and row j ∈ J is offered (i, s_ij). Half the
// arithmetic of the full product; the results (indices and scores) equal the blocked search's,
// because both keep the unique top K of every row under one total order (score descending, then
// reference index ascending), whatever order the candidates arrive in.
//
// Every row's heap lives for the whole search (a row receives candidates from blocks scored by
// different goroutines); a mutex per row block guards it. L2 is left to the blocked search (its
// augmented score 2q·r − |r|² is not symmetric), and so are extra exclusions and exact-mAP accounting.

// symmetricOK reports whether the symmetric search applies.
func (e *knnEngine) symmetricOK() bool {
	if !e.same || e.nq != e.nr || e.posr != nil || e.sim == L2 {
		return false
	}
	if s := e.symBlock(); (e.nq+s-1)/s < 2 {
		return false // one block: nothing to share
	}
	for i := 0; i < e.nq; i++ {
		if e.excl[2*i+1] >= 0 || e.excl[2*i] != int32(i) {
			return false
		}
	}
	return true
}

// symBlock is the side of the square blocks: a multiple of both micro-kernel dimensions (so that a
// block's columns are whole packed reference panels) near the blocked search's query block.
func (e *knnEngine) symBlock() int {
	mr, nrK := e.kern.mr, e.kern.nr
	l := mr / gcd(mr, nrK) * nrK
	target := max(e.mb, e.nb/2, l)
	s := (target + l - 1) / l * l
	// Enough blocks for every worker: at least 2 per worker along the diagonal where n allows it.
	for s > l && (e.nq+s-1)/s < 2*e.workers {
		s -= l
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// runSymmetric is run for symmetric self-retrieval (see symmetricOK).
func (e *knnEngine) runSymmetric(out *Neighbors) (*Neighbors, error) {
	n, k := e.nq, e.k
	if out == nil {
		out = &Neighbors{NQ: n, K: k, Similarity: e.sim, Index: make([]int32, n*k), Score: make([]float32, n*k)}
	}
	s := e.symBlock()
	nB := (n + s - 1) / s
	st := make([]knnTopState, n)
	negInf := float32(math.Inf(-1))
	for i := range st {
		st[i].thr = negInf
	}
	locks := make([]sync.Mutex, nB)
	// A task is a row block I with all its pairs (I, J ≥ I): the rows' packing is done once, and two
	// workers rarely lock the same block at once. Rows in order, longest first, balance the load.
	total := nB * (nB + 1) / 2
	var next atomic.Int64
	var wg sync.WaitGroup
	var pmu sync.Mutex
	doneTasks, reported := 0, 0
	for w := 0; w < min(e.workers, nB); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			abuf := make([]float32, s*e.dA)
			cbuf := make([]float32, s*s)
			for {
				bi := int(next.Add(1) - 1)
				if bi >= nB {
					return
				}
				e.symPack(abuf, bi, s)
				for bj := bi; bj < nB; bj++ {
					e.symScore(abuf, cbuf, bi, bj, s)
					e.symOffer(cbuf, bi, bj, s, st, out, locks)
				}
				if e.progress != nil {
					pmu.Lock()
					doneTasks += nB - bi
					// Rows are finished only at the end; report the share of the work done, in
					// rows, whenever it grows.
					if d := int(int64(n) * int64(doneTasks) / int64(total)); d > reported {
						reported = d
						e.progress(d, n)
					}
					pmu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		knnHeapSortBestFirst(out.Index[i*k:(i+1)*k], out.Score[i*k:(i+1)*k])
	}
	return out, nil
}

// symPack packs the rows of block bi into micro-kernel panels of mr rows.
func (e *knnEngine) symPack(abuf []float32, bi, s int) {
	mr, dA := e.kern.mr, e.dA
	r0 := bi * s
	rows := min(s, e.nq-r0)
	for p := 0; p*mr < rows; p++ {
		knnPackPanel(abuf[p*mr*dA:(p+1)*mr*dA], e.qprep, r0+p*mr, min(mr, rows-p*mr), dA, mr)
	}
}

// symScore fills cbuf[i*s+j] with the score of row bi·s+i against reference bj·s+j.
func (e *knnEngine) symScore(abuf, cbuf []float32, bi, bj, s int) {
	mr, nrK, dA := e.kern.mr, e.kern.nr, e.dA
	rows := min(s, e.nq-bi*s)
	c0 := bj * s
	c1 := min(c0+s, e.nr)
	fn := e.kern.fn
	for p := c0 / nrK; p*nrK < c1; p++ {
		bp := &e.bpack[p*dA*nrK]
		col := p*nrK - c0
		for qp := 0; qp*mr < rows; qp++ {
			fn(&abuf[qp*mr*dA], bp, &cbuf[qp*mr*s+col], dA, s)
		}
	}
}

// symOffer offers block (bi, bj)'s scores to the rows of bi and, off the diagonal, transposed to the
// rows of bj, under each block's lock. A candidate enters a full heap only if it ranks before the
// root by the full order (knnWorse): candidates do not arrive in index order here, so the blocked
// search's strict "score > threshold" would drop a tie with a smaller index. The transposed side
// walks the block in tiles of symTile columns, so that its reads stay contiguous.
func (e *knnEngine) symOffer(cbuf []float32, bi, bj, s int, st []knnTopState, out *Neighbors, locks []sync.Mutex) {
	k := e.k
	r0, c0 := bi*s, bj*s
	rows, cols := min(s, e.nq-r0), min(s, e.nr-c0)
	negInf := float32(math.Inf(-1))
	if bi == bj {
		for i := 0; i < rows; i++ {
			cbuf[i*s+i] = negInf // self
		}
	}
	locks[bi].Lock()
	for i := 0; i < rows; i++ {
		qi := r0 + i
		idx, sc, t := out.Index[qi*k:(qi+1)*k], out.Score[qi*k:(qi+1)*k], &st[qi]
		thr := t.thr
		for j, v := range cbuf[i*s : i*s+cols] {
			if v < thr || v == negInf {
				continue
			}
			if z := int32(c0 + j); t.cnt < k || knnWorse(sc[0], idx[0], v, z) {
				thr = knnHeapOffer(t, idx, sc, z, v)
			}
		}
	}
	locks[bi].Unlock()
	if bi == bj {
		return
	}
	locks[bj].Lock()
	var thr [symTile]float32
	for j0 := 0; j0 < cols; j0 += symTile {
		j1 := min(j0+symTile, cols)
		for j := j0; j < j1; j++ {
			thr[j-j0] = st[c0+j].thr
		}
		for i := 0; i < rows; i++ {
			z := int32(r0 + i)
			for jj, v := range cbuf[i*s+j0 : i*s+j1] {
				if v < thr[jj] {
					continue
				}
				qj := c0 + j0 + jj
				idx, sc, t := out.Index[qj*k:(qj+1)*k], out.Score[qj*k:(qj+1)*k], &st[qj]
				if t.cnt < k || knnWorse(sc[0], idx[0], v, z) {
					thr[jj] = knnHeapOffer(t, idx, sc, z, v)
				}
			}
		}
	}
	locks[bj].Unlock()
}

// symTile is the number of columns the transposed offers walk at once (one 64-byte line of float32).
const symTile = 16
