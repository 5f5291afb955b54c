package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/gomlx/core/graph"
)

func blSigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// blRankAP is an independent float64 loop for rank-based AP losses: for query i, positives are
// the other samples with i's label (plus i itself when queryIn), the retrieval set all other
// samples (plus i when queryIn); hPos smooths steps towards positives, hNeg towards the rest.
func blRankAP(b losstest.Batch, queryIn bool, hPos, hNeg func(float64) float64) float64 {
	return blRankAPRefs(b, 0, queryIn, hPos, hNeg)
}

// blRankAPRefs is blRankAP with queries = rows [0, nq) and references = rows [nq, B) when nq > 0.
func blRankAPRefs(b losstest.Batch, nq int, queryIn bool, hPos, hNeg func(float64) float64) float64 {
	sum, n := 0.0, 0
	for i := 0; i < blNumQueries(b, nq); i++ {
		var ret, pos []int
		for j := nq; j < b.B; j++ {
			if j == i && !queryIn {
				continue
			}
			ret = append(ret, j)
			if b.Labels[j] == b.Labels[i] {
				pos = append(pos, j)
			}
		}
		if len(pos) == 0 {
			continue
		}
		s := func(j int) float64 {
			return losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
		}
		ap := 0.0
		for _, p := range pos {
			rp, ra := 1.0, 1.0
			for _, k := range ret {
				if k == p {
					continue
				}
				t := s(k) - s(p)
				if b.Labels[k] == b.Labels[i] {
					rp += hPos(t)
					ra += hPos(t)
				} else {
					ra += hNeg(t)
				}
			}
			ap += rp / ra
		}
		sum += 1 - ap/float64(len(pos))
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestSmoothAPHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1. Query 0: s01=0, s02=1/√2.
	// Paper form, τ=0.01: only positive p=1; rank⁺=1, rank=1+G((1/√2−0)/τ)≈2 -> AP≈1/2.
	// Query 1 symmetric -> AP≈1/2. Query 2 has no positive: skipped. L ≈ 1 − 1/2 = 1/2.
	// Exactly: G(70.71) = 1 − 2e−31, so L = 1/2 to 1e−15.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, losses.DefaultSmoothAP(), b, losses.EvalOptions{})
	if math.Abs(got-0.5) > 1e-12 {
		t.Fatalf("smoothap = %.15g, want 1/2", got)
	}
	// Code form: query 0's positives {0,1}, retrieved {0,1,2}. p=0 (s=1): nothing above -> 1/1.
	// p=1 (s=0): above it 0 (pos) and 2 (neg): rank⁺=2, rank=3 -> 2/3. AP0 = (1+2/3)/2 = 5/6.
	// Query 1 symmetric: 5/6. Query 2: only itself -> AP 1. L = 1 − (5/6+5/6+1)/3 = 1/9.
	c := &losses.SmoothAPConfig{Tau: 0.01, QueryAsPositive: true}
	got, _ = losstest.Value(t, c, b, losses.EvalOptions{})
	if math.Abs(got-1.0/9) > 1e-12 {
		t.Fatalf("smoothap query_as_positive = %.15g, want 1/9", got)
	}
}

func TestSmoothAPMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.SmoothAPConfig{
		{Tau: 0.5}, // large τ keeps the gradient check well conditioned
		{Tau: 0.01},
		{Tau: 0.2, QueryAsPositive: true},
	} {
		b := losstest.Random(4, 4, labels)
		g := func(x float64) float64 { return blSigmoid(x / c.Tau) }
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blRankAP(b, c.QueryAsPositive, g, g); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		if c.Tau >= 0.2 { // at τ=0.01 the sigmoid's curvature (1/τ²) makes h=1e-6 differences inaccurate
			losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		}
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestSmoothAPDegenerate(t *testing.T) {
	// No positives: every query skipped -> 0. One class: every other sample is a positive -> AP 1 -> 0.
	for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		b := losstest.Random(5, 3, labels)
		v, g := losstest.Value(t, losses.DefaultSmoothAP(), b, losses.EvalOptions{})
		if math.Abs(v) > 1e-12 {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatalf("labels %v: NaN gradient", labels)
			}
		}
	}
}

// blNumQueries is the number of query rows: nq with references, else the batch size.
func blNumQueries(b losstest.Batch, nq int) int {
	if nq > 0 {
		return nq
	}
	return b.B
}

// blRefSplit evaluates a loss with queries = the first NQ rows of the batch and references
// (Inputs.RefEmb, RefLabels) = the remaining rows, to test the cross-batch-memory path.
type blRefSplit struct {
	l  losses.Loss
	nq int
}

func (s *blRefSplit) Name() string { return s.l.Name() }
func (s *blRefSplit) Build(in losses.Inputs) *graph.Node {
	q := graph.Slice(in.Emb, graph.AxisRange(0, s.nq))
	r := graph.Slice(in.Emb, graph.AxisRange(s.nq))
	ql := graph.Slice(in.Labels, graph.AxisRange(0, s.nq))
	rl := graph.Slice(in.Labels, graph.AxisRange(s.nq))
	return s.l.Build(losses.Inputs{Emb: q, Labels: ql, RefEmb: r, RefLabels: rl, Scope: in.Scope, NumClasses: in.NumClasses})
}

func TestRankAPWithReferences(t *testing.T) {
	// 4 queries against 6 references (disjoint rows): the query is never among the references, so
	// query_as_positive has no effect there.
	b := losstest.Random(34, 4, []int64{0, 1, 2, 3, 0, 0, 1, 2, 2, 3})
	for _, qp := range []bool{false, true} {
		c := &losses.SmoothAPConfig{Tau: 0.3, QueryAsPositive: qp}
		g := func(x float64) float64 { return blSigmoid(x / c.Tau) }
		got, _ := losstest.Value(t, &blRefSplit{c, 4}, b, losses.EvalOptions{})
		if want := blRankAPRefs(b, 4, false, g, g); math.Abs(got-want) > 1e-12 {
			t.Errorf("smoothap with references (query_as_positive=%v): graph %.15g, brute force %.15g", qp, got, want)
		}
	}
	losstest.CheckGradient(t, &blRefSplit{&losses.SmoothAPConfig{Tau: 0.3}, 4}, b, losses.EvalOptions{}, 1e-6)
}

func TestSmoothAPCodeReference(t *testing.T) {
	// Reference values from a float64 PyTorch 1.13 transcription of the authors' index-based
	// Smooth_AP_loss.py (Andrew-Brown1/Smooth_AP 59927ec: masks 1 − I remove only k = p, class-sorted
	// batch of 4 classes × 2, preds L2-normalised first), run with /usr/bin/python3. Only
	// query_as_positive reproduces it.
	emb := []float64{0.9, 0.1, -0.3, 0.5, 0.6, 0.2, -0.4, 0.8, 0.1, 0.1, -0.7, 0.6,
		0.3, 0.2, 0.9, -0.6, -0.2, 0.4, 0.7, -0.5, -0.1, 0.2, 0.9, -0.4}
	b := losstest.Batch{Emb: emb, B: 8, D: 3, Labels: []int64{0, 0, 1, 1, 2, 2, 3, 3}}
	for _, tc := range []struct{ tau, want float64 }{{0.01, 0.27245572928131234}, {0.1, 0.3010677222705168}} {
		got, _ := losstest.Value(t, &losses.SmoothAPConfig{Tau: tc.tau, QueryAsPositive: true}, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("τ=%g: %.15g, authors' code %.15g", tc.tau, got, tc.want)
		}
		paper, _ := losstest.Value(t, &losses.SmoothAPConfig{Tau: tc.tau}, b, losses.EvalOptions{})
		if math.Abs(paper-tc.want) < 0.05 {
			t.Errorf("τ=%g: paper form %.6g should differ clearly from the code's %.6g", tc.tau, paper, tc.want)
		}
	}
}

// TestSmoothAPMaxClassSize: ranking only at the positives ([B, c, B]) gives the dense [B, B, B]
// value and gradient (the same sums, fewer of the terms that are masked out anyway: 1e-12 in
// float64), for the paper form and the code form; a class larger than the bound gives NaN.
func TestSmoothAPMaxClassSize(t *testing.T) {
	b := losstest.Random(9, 5, []int64{0, 1, 0, 2, 1, 0, 3, 1, 0, 2})
	for _, qap := range []bool{false, true} {
		dense := &losses.SmoothAPConfig{Tau: 0.1, QueryAsPositive: qap}
		v, g := losstest.Value(t, dense, b, losses.EvalOptions{})
		for _, c := range []int{4, 7, 10, 0} {
			bound := &losses.SmoothAPConfig{Tau: 0.1, QueryAsPositive: qap, MaxClassSize: c}
			got, gg := losstest.Value(t, bound, b, losses.EvalOptions{})
			if math.Abs(got-v) > 1e-12 {
				t.Errorf("query_as_positive %v, max_class_size %d: %.15g, dense %.15g", qap, c, got, v)
			}
			for i := range g {
				if math.Abs(gg[i]-g[i]) > 1e-12 {
					t.Fatalf("query_as_positive %v, max_class_size %d: gradient %d: %g vs %g", qap, c, i, gg[i], g[i])
				}
			}
		}
		over := &losses.SmoothAPConfig{Tau: 0.1, QueryAsPositive: qap, MaxClassSize: 3} // class 0 has 4 samples
		if got, _ := losstest.Value(t, over, b, losses.EvalOptions{}); !math.IsNaN(got) {
			t.Errorf("query_as_positive %v: class larger than max_class_size gave %v, want NaN", qap, got)
		}
	}
	if _, err := losses.New("smoothap", map[string]any{"max_class_size": -1}); err == nil {
		t.Error("max_class_size -1 accepted")
	}
}
