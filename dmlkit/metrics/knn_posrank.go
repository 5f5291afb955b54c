package metrics

import (
	"cmp"
	"slices"
)

// knnPosRanks counts, during the blocked search, how many negatives rank before each positive of each
// query — enough for exact full-ranking AP, CMC and INP without storing any ranking.
//
// Positives of query i are listed (CSR, start[i]..start[i+1]) best-first with scores computed by the same
// kernel as the search (bit-identical), so ties between a negative and a positive are broken by reference
// index exactly as in the neighbour lists. negBefore[p] first receives, for each negative z, +1 at the first
// positive that z precedes; the prefix sum then gives the negatives ranked before each positive.
type knnPosRanks struct {
	qLab, rLab []int64
	junkNeg1   bool // re-id: gallery label −1 is junk (neither positive nor negative)
	start      []int
	score      []float32
	index      []int32
	negBefore  []int32
}

// knnBuildPosRanks lists the positives of every query. isPos(i, z) decides whether reference z (same label as
// query i) is a positive; excluded references (ExcludeSelf / Exclude) are never positives.
func (e *knnEngine) knnBuildPosRanks(qLab, rLab []int64, junkNeg1 bool, isPos func(i int, z int32) bool) *knnPosRanks {
	pr := &knnPosRanks{qLab: qLab, rLab: rLab, junkNeg1: junkNeg1, start: make([]int, e.nq+1)}
	byLabel := map[int64][]int32{}
	for z, l := range rLab {
		byLabel[l] = append(byLabel[l], int32(z))
	}
	qByLabel := map[int64][]int32{}
	for i, l := range qLab {
		qByLabel[l] = append(qByLabel[l], int32(i))
	}
	// First pass: counts.
	for i, l := range qLab {
		c := 0
		for _, z := range byLabel[l] {
			if e.excl[2*i] != z && e.excl[2*i+1] != z && (isPos == nil || isPos(i, z)) {
				c++
			}
		}
		pr.start[i+1] = c
	}
	for i := 0; i < e.nq; i++ {
		pr.start[i+1] += pr.start[i]
	}
	total := pr.start[e.nq]
	pr.score = make([]float32, total)
	pr.index = make([]int32, total)
	pr.negBefore = make([]int32, total)
	type ps struct {
		s float32
		z int32
	}
	var buf []float32
	var tmp []ps
	for l, qs := range qByLabel {
		refs := byLabel[l]
		if len(refs) == 0 {
			continue
		}
		buf = slices.Grow(buf[:0], len(qs)*len(refs))[:len(qs)*len(refs)]
		e.knnPairScores(qs, refs, buf)
		for a, i32 := range qs {
			i := int(i32)
			tmp = tmp[:0]
			for b, z := range refs {
				if e.excl[2*i] != z && e.excl[2*i+1] != z && (isPos == nil || isPos(i, z)) {
					tmp = append(tmp, ps{buf[a*len(refs)+b], z})
				}
			}
			slices.SortFunc(tmp, func(x, y ps) int {
				if c := cmp.Compare(y.s, x.s); c != 0 {
					return c
				}
				return cmp.Compare(x.z, y.z)
			})
			for t, p := range tmp {
				pr.score[pr.start[i]+t] = p.s
				pr.index[pr.start[i]+t] = p.z
			}
		}
	}
	return pr
}

// A query with at least knnPosTableMin positives (coarse labels: hundreds) finds the first positive a
// negative precedes through a table of knnPosBuckets score buckets (knnPosTable) instead of a binary search
// over all its positives.
const (
	knnPosTableMin = 32
	knnPosBuckets  = 1024
)

// knnPosTable narrows, for one query, where a score falls among its positives. The bucket of a score v is
// B(v) = ⌊(v − lo)·scale⌋ clamped to [0, knnPosBuckets): monotone in v, so a positive in a higher bucket
// than v scores above v and one in a lower bucket below it. first[b] is the first positive (best-first)
// whose bucket is ≤ b; a score in bucket b therefore precedes none before first[b] and every one from
// first[b−1] (n for b = 0) on, and only the positives between are compared with it.
type knnPosTable struct {
	ok        bool // the query has a table (enough positives)
	lo, scale float32
	first     []int32
}

// bucket is B(v) of the table.
func (t *knnPosTable) bucket(v float32) int {
	f := (v - t.lo) * t.scale
	switch {
	case !(f > 0): // v at lo (or a zero scale)
		return 0
	case f >= knnPosBuckets-1:
		return knnPosBuckets - 1
	}
	return int(f)
}

// table fills t for query qi (t.first must hold knnPosBuckets entries); queries with few positives get
// none (t.ok false).
func (pr *knnPosRanks) table(qi int, t *knnPosTable) {
	a, b := pr.start[qi], pr.start[qi+1]
	t.ok = b-a >= knnPosTableMin
	if !t.ok {
		return
	}
	ps := pr.score[a:b]
	hi, lo := ps[0], ps[len(ps)-1]
	t.lo, t.scale = lo, 0
	if sc := float64(knnPosBuckets) / (float64(hi) - float64(lo)); hi > lo && sc < 1e30 {
		t.scale = float32(sc)
	}
	m := 0
	for bk := knnPosBuckets - 1; bk >= 0; bk-- {
		for m < len(ps) && t.bucket(ps[m]) > bk {
			m++
		}
		t.first[bk] = int32(m)
	}
}

// scan is the block-row consumer used instead of the plain top-K loop when positive ranks are tracked;
// t is the query's table (t.ok false: none).
func (pr *knnPosRanks) scan(qi, r0 int, row []float32, s *knnTopState, idx []int32, sc []float32, t *knnPosTable) {
	thr := s.thr
	a, b := pr.start[qi], pr.start[qi+1]
	if a == b {
		for j, v := range row {
			if v > thr {
				thr = knnHeapOffer(s, idx, sc, int32(r0+j), v)
			}
		}
		return
	}
	pmin := pr.score[b-1]
	lab := pr.qLab[qi]
	ps, pz := pr.score[a:b], pr.index[a:b]
	neg := pr.negBefore[a:b]
	for j, v := range row {
		if v > thr {
			thr = knnHeapOffer(s, idx, sc, int32(r0+j), v)
		}
		if v >= pmin {
			z := int32(r0 + j)
			rl := pr.rLab[z]
			if rl == lab || (pr.junkNeg1 && rl == -1) {
				continue
			}
			// first positive that z precedes: score below v, or equal score and larger index.
			lo, hi := 0, len(ps)
			if t.ok {
				bk := t.bucket(v)
				lo = int(t.first[bk])
				if bk > 0 {
					hi = int(t.first[bk-1])
				}
			}
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if ps[m] < v || (ps[m] == v && pz[m] > z) {
					hi = m
				} else {
					lo = m + 1
				}
			}
			if lo < len(neg) {
				neg[lo]++
			}
		}
	}
}

// ranks returns the 1-based ranks of the positives of query i, in order (nil when it has none). The rank
// counts the excluded references out and, in re-id mode, junk gallery entries out.
func (pr *knnPosRanks) ranks(i int, dst []int) []int {
	a, b := pr.start[i], pr.start[i+1]
	dst = dst[:0]
	cum := 0
	for t := a; t < b; t++ {
		cum += int(pr.negBefore[t])
		dst = append(dst, t-a+1+cum)
	}
	return dst
}
