package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blBlackboxAP is an independent float64 implementation of the value and of the blackbox gradient
// rule (per ranking call: ∂L/∂s = −(rank(s + λ·∂L/∂rank) − rank(s))/λ on the ranked entries),
// chained to the embeddings through the cosine similarity by hand.
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
	loss := 0.0
	for k, q := range qs {
		i := qi[k]
		np := float64(len(q.pos))
		ap := 0.0
		vAll := make([]float64, n)
		vPos := make([]float64, n)
		for _, p := range q.pos {
			ra, rp := rank(q.sh, q.all, p), rank(q.s, q.pos, p)
			ap += rp / ra / np
			vPos[p] = -1 / (nv * np * ra)
			vAll[p] = rp / (nv * np * ra * ra)
		}
		loss += (1 - ap) / nv
		xa, xp := make([]float64, n), make([]float64, n)
		for j := range xa {
			xa[j] = q.sh[j] + c.Lambda*vAll[j]
			xp[j] = q.s[j] + c.Lambda*vPos[j]
		}
		for _, j := range q.all {
			ds[i][j] += -(rank(xa, q.all, j) - rank(q.sh, q.all, j)) / c.Lambda
		}
		for _, j := range q.pos {
			ds[i][j] += -(rank(xp, q.pos, j) - rank(q.s, q.pos, j)) / c.Lambda
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
