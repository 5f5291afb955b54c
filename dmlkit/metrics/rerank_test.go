package metrics

import (
	"math"
	"testing"
)

// Contextual re-ranking by hand. Unit vectors at a=0°, b=10°, c=30°, d=45° (cosine), K = 3 so N(i) is i and
// its two nearest neighbours:
//
//	a: b10 c30 d45 → N(a) = {a,b,c}      b: a10 c20 d35 → N(b) = {a,b,c}
//	c: d15 b20 a30 → N(c) = {b,c,d}      d: c15 b35 a45 → N(d) = {b,c,d}
//
// For query c: w̃(c,d) = |{b,c,d}∩{b,c,d}|/3 = 1, w̃(c,b) = |{b,c,d}∩{a,b,c}|/3 = 2/3, w̃(c,a) = 0 (a ∉ N(c)).
// With β = 0.9: score = 0.9·w̃ + 0.1·exp(2cos θ − 2):
//
//	d: 0.9 + 0.1·exp(2cos15° − 2), b: 0.6 + 0.1·exp(2cos20° − 2), a: 0.1·exp(2cos30° − 2)
//
// For query a: w̃(a,b) = |{a,b,c}∩{a,b,c}|/3 = 1, w̃(a,c) = |{a,b,c}∩{b,c,d}|/3 = 2/3, w̃(a,d) = 0.
func TestContextualRerankHandWorked(t *testing.T) {
	emb := retrievalAngles(0, 10, 30, 45)
	nb, err := KNNSelf(emb, 4, 2, KNNOptions{K: 3})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := ContextualRerank(nb, RerankOptions{K: 3, Beta: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	rs := func(w, deg float64) float64 { return 0.9*w + 0.1*math.Exp(2*math.Cos(deg*math.Pi/180)-2) }
	idx, sc := rr.Row(2)
	want := []struct {
		z int32
		s float64
	}{{3, rs(1, 15)}, {1, rs(2.0/3, 20)}, {0, rs(0, 30)}}
	for t2, w := range want {
		if idx[t2] != w.z || math.Abs(float64(sc[t2])-w.s) > 1e-6 {
			t.Errorf("query c rank %d: (%d, %v), want (%d, %v)", t2, idx[t2], sc[t2], w.z, w.s)
		}
	}
	idx, sc = rr.Row(0)
	wantA := []struct {
		z int32
		s float64
	}{{1, rs(1, 10)}, {2, rs(2.0/3, 30)}, {3, rs(0, 45)}}
	for t2, w := range wantA {
		if idx[t2] != w.z || math.Abs(float64(sc[t2])-w.s) > 1e-6 {
			t.Errorf("query a rank %d: (%d, %v), want (%d, %v)", t2, idx[t2], sc[t2], w.z, w.s)
		}
	}
}

// Re-ranking that reorders, through Retrieval. With β = 1 only w̃ counts (ties by smaller index). Points at
// a=0°, b=20°, c=24°, e=26°, labels a,e = 0 and b,c = 1, K = 3:
//
//	a: b20 c24 e26 → N(a) = {a,b,c}
//	b: c4 e6 a20   → N(b) = {b,c,e}
//	c: e2 b4 a24   → N(c) = {b,c,e}
//	e: c2 b6 a26   → N(e) = {b,c,e}
//
// Plain R@1: a→b −, b→c +, c→e −, e→c − → 1/4.
// Re-ranked: a: w̃(a,b) = w̃(a,c) = |{a,b,c}∩{b,c,e}|/3 = 2/3, w̃(a,e) = 0 → b first −;
// b: w̃(b,c) = w̃(b,e) = 1 → c first +; c: w̃(c,e) = w̃(c,b) = 1 → tie, b (index 1) before e (index 3) +;
// e: w̃(e,c) = w̃(e,b) = 1 → b first −. ctx/R@1 = 2/4 = 0.5.
func TestContextualRerankThroughRetrieval(t *testing.T) {
	emb := retrievalAngles(0, 20, 24, 26)
	got, err := Retrieval(emb, 4, 2, []int64{0, 1, 1, 0}, Options{K: []int{1}, Rerank: &RerankOptions{K: 3, Beta: 1}})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"R@1": 0.25, "ctx/R@1": 0.5})
	if _, ok := got["ctx/n_queries"]; ok {
		t.Error("counts must not be duplicated under ctx/")
	}
	if _, err := ContextualRerank(&Neighbors{NQ: 1, K: 1, Index: []int32{0}, Score: []float32{1}}, RerankOptions{K: 1}); err == nil {
		t.Error("K = 1: want an error")
	}
}
