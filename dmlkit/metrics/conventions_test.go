package metrics

import "testing"

// TestPeerConventionsHandWorked: mAP@k and precision@k as OML and PML define them, on a
// query/gallery case built as neighbour lists. Gallery labels g0..g3 = 0, g4 = 1, g5, g6 = 2.
//
//	q1 (label 0, |P| = 4): g5− g0+ g1+ g4− g2+   hits at ranks 2, 3, 5
//	q2 (label 1, |P| = 1): g0− g4+ g1− g2− g3−   hit at rank 2
//
// Σ P@i·rel_i: q1 top 3 = 1/2 + 2/3 = 7/6, top 5 = 7/6 + 3/5 = 53/30; q2 top 3 and top 5 = 1/2.
//
//	mAP@3   ÷ min(k,|P|): q1 (7/6)/3,   q2 (1/2)/1  OML ÷ hits: q1 (7/6)/2,   q2 (1/2)/1  PML ÷ |P|: q1 (7/6)/4,   q2 1/2
//	mAP@5   ÷ min(k,|P|): q1 (53/30)/4, q2 1/2      OML ÷ hits: q1 (53/30)/3, q2 1/2      PML ÷ |P|: q1 (53/30)/4, q2 1/2
//	P@3     OML ÷ min(k,|P|): q1 2/3, q2 1/1        PML ÷ k: q1 2/3, q2 1/3
//	P@5     OML: q1 3/4, q2 1/1                     PML: q1 3/5, q2 1/5
//	k = 1: no hit for either query: every mAP@1 and P@1 is 0 (OML's 0 hits give 0, not NaN).
func TestPeerConventionsHandWorked(t *testing.T) {
	nb := &Neighbors{NQ: 2, K: 5, Index: []int32{5, 0, 1, 4, 2, 0, 4, 1, 2, 3}, Score: make([]float32, 10)}
	qLab := []int64{0, 1}
	gLab := []int64{0, 0, 0, 0, 1, 2, 2}
	got, err := RetrievalFromNeighbors(nb, qLab, gLab, nil, nil, false, []int{1, 3, 5}, []int{1, 3, 5}, ConventionOML, ConventionPML)
	if err != nil {
		t.Fatal(err)
	}
	half := 0.5
	retrievalCheck(t, got, map[string]float64{
		"mAP@1": 0, "oml/mAP@1": 0, "pml/mAP@1": 0, "oml/P@1": 0, "pml/P@1": 0,
		"mAP@3": (7.0/18 + half) / 2, "oml/mAP@3": (7.0/12 + half) / 2, "pml/mAP@3": (7.0/24 + half) / 2,
		"mAP@5": (53.0/120 + half) / 2, "oml/mAP@5": (53.0/90 + half) / 2, "pml/mAP@5": (53.0/120 + half) / 2,
		"oml/P@3": (2.0/3 + 1) / 2, "pml/P@3": (2.0/3 + 1.0/3) / 2,
		"oml/P@5": (3.0/4 + 1) / 2, "pml/P@5": (3.0/5 + 1.0/5) / 2,
	})
	// Without Peers, none of the peer keys.
	got, _ = RetrievalFromNeighbors(nb, qLab, gLab, nil, nil, false, []int{1, 3, 5}, []int{3})
	for _, k := range []string{"oml/mAP@3", "pml/mAP@3", "oml/P@3", "pml/P@3"} {
		if _, ok := got[k]; ok {
			t.Errorf("key %s without Peers", k)
		}
	}
	// Through Retrieval on the 5-point self-retrieval case of TestRetrievalHandWorked: every |P| ≤ 2
	// and all positives lie in the top 4, so at k = 4 the three mAP conventions agree (0.65), while at
	// k = 2 OML's ÷ hits gives (1 + 1 + 0 + 1 + 0)/5 = 0.6 against 0.4; P@2 as OML: a 1/2, b 1/2, c 0,
	// d 1/1, e 0 → 0.4; as PML ÷ 2: a, b, d 1/2 → 0.3.
	emb := retrievalAngles(0, 10, 25, 55, 105)
	got, err = Retrieval(emb, 5, 2, []int64{0, 0, 1, 1, 0}, Options{K: []int{2, 4}, MAPAtK: []int{2, 4}, Peers: []Convention{ConventionOML, ConventionPML}})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"mAP@2": 0.4, "oml/mAP@2": 0.6, "pml/mAP@2": 0.4, "mAP@4": 0.65, "oml/mAP@4": 0.65, "pml/mAP@4": 0.65,
		"oml/P@2": 0.4, "pml/P@2": 0.3})
	if _, err := Retrieval(emb, 5, 2, []int64{0, 0, 1, 1, 0}, Options{Peers: []Convention{"faiss"}}); err == nil {
		t.Error("unknown convention accepted")
	}
}
