package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blMultiSimilarity is an independent float64 loop (miner included).
func blMultiSimilarity(b losstest.Batch, c *losses.MultiSimilarityConfig) float64 {
	return blMultiSimilarityRefs(b, 0, c)
}

// blMultiSimilarityRefs: anchors = rows [0, nq), references = rows [nq, B) when nq > 0.
func blMultiSimilarityRefs(b losstest.Batch, nq int, c *losses.MultiSimilarityConfig) float64 {
	total := 0.0
	for i := 0; i < blNumQueries(b, nq); i++ {
		s := make([]float64, b.B)
		minPos, maxNeg := math.Inf(1), math.Inf(-1)
		for k := nq; k < b.B; k++ {
			s[k] = losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, k))
			if k == i {
				continue
			}
			if b.Labels[k] == b.Labels[i] {
				minPos = math.Min(minPos, s[k])
			} else {
				maxNeg = math.Max(maxNeg, s[k])
			}
		}
		ps, ns := 0.0, 0.0
		for k := nq; k < b.B; k++ {
			if k == i {
				continue
			}
			if b.Labels[k] == b.Labels[i] {
				if !c.Mining || s[k] < maxNeg+c.Epsilon {
					ps += math.Exp(-c.Alpha * (s[k] - c.Base))
				}
			} else if !c.Mining || s[k] > minPos-c.Epsilon {
				ns += math.Exp(c.Beta * (s[k] - c.Base))
			}
		}
		total += math.Log1p(ps)/c.Alpha + math.Log1p(ns)/c.Beta
	}
	return total / float64(blNumQueries(b, nq))
}

func TestMultiSimilarityHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1; s01=0, s02=s12=1/√2=r.
	// Anchors 0 and 1: ½·log(1+e^{−2(0−0.5)}) + (1/50)·log(1+e^{50(r−0.5)});
	// anchor 2: no positive -> (1/50)·log(1+2e^{50(r−0.5)}). L = mean of the three.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	r := 1 / math.Sqrt2
	a01 := math.Log1p(math.E)/2 + math.Log1p(math.Exp(50*(r-0.5)))/50
	a2 := math.Log1p(2*math.Exp(50*(r-0.5))) / 50
	want := (2*a01 + a2) / 3
	got, _ := losstest.Value(t, losses.DefaultMultiSimilarity(), b, losses.EvalOptions{})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("multisimilarity = %.15g, want %.15g", got, want)
	}
}

func TestMultiSimilarityMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	mined := losses.DefaultMultiSimilarity()
	mined.Mining = true
	for _, c := range []*losses.MultiSimilarityConfig{losses.DefaultMultiSimilarity(), mined, {Alpha: 1, Beta: 5, Base: 0.2, Mining: true, Epsilon: 0.3}} {
		b := losstest.Random(10, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := blMultiSimilarity(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
	// The miner must matter on this batch, or the mined case tests nothing.
	b := losstest.Random(10, 4, labels)
	if a, m := blMultiSimilarity(b, losses.DefaultMultiSimilarity()), blMultiSimilarity(b, mined); a == m {
		t.Error("miner drops no pair on the test batch")
	}
}

func TestMultiSimilarityDegenerate(t *testing.T) {
	// Huge similarities must not overflow (stable log-sum-exp): all-equal embeddings, distinct labels
	// give s=1 -> each anchor (1/50)·log(1+3e^{25}).
	b := losstest.Batch{Emb: []float64{1, 1, 1, 1, 1, 1, 1, 1}, B: 4, D: 2, Labels: []int64{0, 1, 2, 3}}
	want := math.Log1p(3*math.Exp(25)) / 50
	for _, mining := range []bool{false, true} {
		c := losses.DefaultMultiSimilarity()
		c.Mining = mining
		v, g := losstest.Value(t, c, b, losses.EvalOptions{})
		// No positives: with mining every negative is dropped (min over no positives = +∞) -> 0.
		w := want
		if mining {
			w = 0
		}
		if math.Abs(v-w) > 1e-12 {
			t.Errorf("mining=%v: %v, want %v", mining, v, w)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatal("NaN gradient")
			}
		}
	}
	v, _ := losstest.Value(t, losses.DefaultMultiSimilarity(), losstest.Random(3, 3, []int64{1, 1, 1}), losses.EvalOptions{})
	if math.IsNaN(v) || v <= 0 {
		t.Errorf("single class: %v", v)
	}
}

func TestMultiSimilarityWithReferences(t *testing.T) {
	b := losstest.Random(36, 4, []int64{0, 1, 2, 3, 0, 0, 1, 2, 2, 3, 1})
	c := &losses.MultiSimilarityConfig{Alpha: 2, Beta: 10, Base: 0.3, Mining: true, Epsilon: 0.3}
	got, _ := losstest.Value(t, &blRefSplit{c, 4}, b, losses.EvalOptions{})
	if want := blMultiSimilarityRefs(b, 4, c); math.Abs(got-want) > 1e-12 {
		t.Errorf("with references: graph %.15g, brute force %.15g", got, want)
	}
}
