package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blBlackboxAP is an independent float64 implementation of the value and of the blackbox gradient
// rule on the ranking over all candidates, with ranks normalised by n = B − 1:
// ∂L/∂s = (r(s + λ·∂L/∂r) − r(s))/λ, r = rank/n (rank⁺ a constant), chained to the embeddings
// through the cosine similarity by hand.
func blBlackboxAP(b losstest.Batch, c *losses.BlackboxAPConfig) (float64, []float64) {
	n, d := b.B, b.D
	unit := make([][]float64, n)
	norms := make([]float64, n)
	for i := range unit {
		r := losstest.Row(b.Emb, d, i)
		norms[i] = math.Sqrt(blDot(r, r))
		unit[i] = make([]float64, d)
		for k := range r {
			unit[i][k] = r[k] / norms[i]
		}
	}
	rank := func(x []float64, set []int, p int) float64 {
		r := 1.0
		for _, k := range set {
			if x[k] > x[p] {
				r++
			}
		}
		return r
	}
	ds := make([][]float64, n) // ∂L/∂s_ij
	type query struct {
		pos, all         []int
		s, sh            []float64
		rankAll, rankPos map[int]float64
	}
	var qs []query
	qi := []int{}
	for i := 0; i < n; i++ {
		ds[i] = make([]float64, n)
		q := query{s: make([]float64, n), sh: make([]float64, n), rankAll: map[int]float64{}, rankPos: map[int]float64{}}
		for j := 0; j < n; j++ {
			if j == i {
				continue
			}
			q.s[j] = blDot(unit[i], unit[j])
			q.sh[j] = q.s[j]
			q.all = append(q.all, j)
			if b.Labels[j] == b.Labels[i] {
				q.pos = append(q.pos, j)
			} else {
				q.sh[j] += c.Margin
			}
		}
		if len(q.pos) == 0 {
			continue
		}
		qs = append(qs, q)
		qi = append(qi, i)
	}
	if len(qs) == 0 {
		return 0, make([]float64, n*d)
	}
	nv := float64(len(qs))
	nc := float64(n - 1) // candidates per row: the normaliser of the ranks
	loss := 0.0
	for k, q := range qs {
		i := qi[k]
		np := float64(len(q.pos))
		ap := 0.0
		vAll := make([]float64, n) // ∂L/∂(rank/nc)
		for _, p := range q.pos {
			ra, rp := rank(q.sh, q.all, p), rank(q.s, q.pos, p)
			ap += rp / ra / np
			vAll[p] = nc * rp / (nv * np * ra * ra)
		}
		loss += (1 - ap) / nv
		xa := make([]float64, n)
		for j := range xa {
			xa[j] = q.sh[j] + c.Lambda*vAll[j]
		}
		for _, j := range q.all {
			ds[i][j] += (rank(xa, q.all, j) - rank(q.sh, q.all, j)) / (nc * c.Lambda)
		}
	}
	grad := make([]float64, n*d)
	for i := 0; i < n; i++ {
		gu := make([]float64, d) // ∂L/∂û_i
		for j := 0; j < n; j++ {
			for k := 0; k < d; k++ {
				gu[k] += ds[i][j]*unit[j][k] + ds[j][i]*unit[j][k]
			}
		}
		proj := blDot(gu, unit[i])
		for k := 0; k < d; k++ {
			grad[i*d+k] = (gu[k] - proj*unit[i][k]) / norms[i]
		}
	}
	return loss, grad
}

func TestBlackboxAPHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1 (s01=0, s02=s12=1/√2). Query 0: its positive
	// is ranked 2nd behind the negative -> AP 1/2; query 1 the same; L = 1/2.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, losses.DefaultBlackboxAP(), b, losses.EvalOptions{})
	if math.Abs(got-0.5) > 1e-12 {
		t.Fatalf("blackboxap = %.15g, want 1/2", got)
	}
}

func TestBlackboxAPMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.BlackboxAPConfig{losses.DefaultBlackboxAP(), {Lambda: 20, Margin: 0.1}} {
		b := losstest.Random(39, 4, labels)
		got, grad := losstest.Value(t, c, b, losses.EvalOptions{})
		want, wantGrad := blBlackboxAP(b, c)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		nonzero := false
		for i := range grad {
			if math.Abs(grad[i]-wantGrad[i]) > 1e-12 {
				t.Fatalf("%+v: gradient[%d] = %.12g, blackbox rule %.12g", *c, i, grad[i], wantGrad[i])
			}
			nonzero = nonzero || wantGrad[i] != 0
		}
		if !nonzero {
			t.Errorf("%+v: all-zero gradient: λ too small for this batch, the test checks nothing", *c)
		}
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	for _, l := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		if v, _ := losstest.Value(t, losses.DefaultBlackboxAP(), losstest.Random(40, 3, l), losses.EvalOptions{}); v != 0 {
			t.Errorf("labels %v: %v, want 0", l, v)
		}
	}
}

// Descent on the blackbox gradient must improve the ranking: on a three-image batch whose two
// same-class queries each rank their positive behind the other class's image (e2 lies between
// e0 and e1 but off their plane, so it can be pushed out), plain gradient descent on the
// embeddings lifts AP to 1; on random batches it lowers 1 − mAP to at most 0.6 of its start. The rule with the opposite sign (the
// one dmlkit had until 2026-11-26) moves positives down and fails both.
func TestBlackboxAPDescentRaisesAP(t *testing.T) {
	for _, tc := range []struct {
		name     string
		b        losstest.Batch
		lr       float64
		steps    int
		maxRatio float64 // final loss / initial loss
	}{
		{"between", losstest.Batch{Emb: []float64{1, 0, 0, 0.3, 1, 0, 1, 1, 0.3}, B: 3, D: 3, Labels: []int64{0, 0, 1}}, 0.2, 60, 0},
		{"random 41", losstest.Random(41, 8, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}), 0.2, 60, 0.6},
		{"random 42", losstest.Random(42, 8, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}), 0.2, 60, 0.6},
	} {
		c := losses.DefaultBlackboxAP()
		b := tc.b
		b.Emb = append([]float64(nil), b.Emb...)
		first, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		last := first
		for step := 0; step < tc.steps && last > 0; step++ {
			v, g := losstest.Value(t, c, b, losses.EvalOptions{})
			last = v
			for i := range b.Emb {
				b.Emb[i] -= tc.lr * g[i]
			}
		}
		last, _ = losstest.Value(t, c, b, losses.EvalOptions{})
		if first <= 0 || last > tc.maxRatio*first+1e-12 {
			t.Errorf("%s: 1 − mAP %.4g → %.4g after descent, want ≤ %.2g × the start", tc.name, first, last, tc.maxRatio)
		}
	}
}
