package evaluate

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
)

// Six 2-D points on the unit circle at angles (degrees) 0, 10, 20 (class 0) and 90, 100, 200
// (class 1). Cosine ranking by angular distance:
//
//	query 0°:   10°(0), 20°(0), 90°(1), 100°(1), 200°(1)  -> R@1 hit, MAP@R (R=2): (1+1)/2 = 1
//	query 10°:  0°(0)/20°(0) tie at 10° -> 0 first (smaller index), then 20; hit, MAP@R 1
//	query 20°:  10°(0), 0°(0), ...      -> hit, MAP@R 1
//	query 90°:  100°(1), 20°(0), 10°(0), 0°(0), 200°(1)
//	            hit; positives at ranks 1 and 5; MAP@R with R=2: (P@1·1 + P@2·0)/2 = 1/2
//	query 100°: 90°(1), 20°, 10°, 0°, 200°(1) at 100° apart... 200° is 100° away, 0° is 100° away:
//	            tie 0° (index 0) before 200° (index 5); positives at ranks 1 and 5 -> MAP@R 1/2
//	query 200°: nearest: 100°(1) [100°], 90°(1) [110°] -> ranks 1, 2 -> MAP@R 1
//
// R@1 = 1; MAP@R = (1+1+1+0.5+0.5+1)/6 = 5/6.
func circle() Inputs {
	deg := []float64{0, 10, 20, 90, 100, 200}
	emb := make([]float32, 0, 12)
	for _, a := range deg {
		r := a * math.Pi / 180
		emb = append(emb, float32(math.Cos(r)), float32(math.Sin(r)))
	}
	return Inputs{Emb: emb, N: 6, D: 2, Labels: []int64{0, 0, 0, 1, 1, 1}}
}

func TestSelfRetrievalHandWorked(t *testing.T) {
	res, err := Run(circle(), Options{NoOPIS: true, K: []int{1, 2, 8}})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Metrics
	if m["R@1"] != 1 || math.Abs(m["MAP@R"]-5.0/6) > 1e-6 {
		t.Fatalf("R@1 = %v (want 1), MAP@R = %v (want 5/6)", m["R@1"], m["MAP@R"])
	}
	if _, ok := m["R@8"]; ok {
		t.Error("R@8 reported for a set with 5 candidates per query")
	}
}

// Two tight, opposite arcs (0–20° and 180–200°): k-means with K = 2 recovers the classes exactly,
// so NMI = AMI = 1.
func TestClusteringSeparatedArcs(t *testing.T) {
	in := circle()
	for i, a := range []float64{180, 190, 200} {
		r := a * math.Pi / 180
		in.Emb[2*(3+i)], in.Emb[2*(3+i)+1] = float32(math.Cos(r)), float32(math.Sin(r))
	}
	res, err := Run(in, Options{NoOPIS: true, K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metrics; math.Abs(m["NMI"]-1) > 1e-12 || math.Abs(m["AMI"]-1) > 1e-12 {
		t.Errorf("NMI = %v, AMI = %v, want 1", m["NMI"], m["AMI"])
	}
}

func TestQueryGalleryAndReID(t *testing.T) {
	in := circle()
	// Queries: 0° (class 0) and 90° (class 1); the rest is the gallery.
	in.QueryMask = []bool{true, false, false, true, false, false}
	res, err := Run(in, Options{NoOPIS: true, NoCluster: true, K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	// Query 0°: gallery order 10°(0), 20°(0), ... -> hit. Query 90°: 100°(1) -> hit.
	if res.Metrics["R@1"] != 1 || res.Metrics["n_queries"] != 2 {
		t.Fatalf("query/gallery metrics %v", res.Metrics)
	}
	// Re-id (Market-1501 rules): cameras 1,1,1,2,2,3. Query 0° (id 0, cam 1): its only same-id
	// gallery entries 10° and 20° share its camera, so they are junk and the query has no correct
	// match -> skipped. Query 90° (id 1, cam 2): 100° (same id, same camera) is junk; the gallery
	// left is 10°(0) at 80°, 20°(0) at 70°, 200°(1) at 110° -> ranking 20°, 10°, 200°: the only
	// correct match is at rank 3. So CMC@1 = 0, AP = 1/3, INP = |G|/R_hardest = 1/3, 1 skipped.
	in.Cameras = []int64{1, 1, 1, 2, 2, 3}
	res, err = Run(in, Options{NoOPIS: true, NoCluster: true, K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if m := res.Metrics; m["CMC@1"] != 0 || math.Abs(m["mAP"]-1.0/3) > 1e-12 || math.Abs(m["mINP"]-1.0/3) > 1e-12 || m["n_skipped"] != 1 {
		t.Fatalf("re-id metrics %v, want CMC@1 = 0, mAP = mINP = 1/3, n_skipped = 1", m)
	}
}

func TestVerificationAndOPISKeys(t *testing.T) {
	in := circle()
	in.Pairs = []metrics.VerifyPair{{I: 0, J: 1, Same: true}, {I: 3, J: 4, Same: true}, {I: 0, J: 3, Same: false}, {I: 2, J: 5, Same: false}}
	res, err := Run(in, Options{NoCluster: true, OPIS: metrics.OPISOptions{Sampling: metrics.OPISExhaustive, FARMin: 0.2, FARMax: 0.6, GridN: 10}})
	if err != nil {
		t.Fatal(err)
	}
	// Same-pair distances (10°) are below both different-pair distances (90°, 180°): AUC = 1.
	if res.Metrics["AUC"] != 1 {
		t.Errorf("AUC = %v, want 1", res.Metrics["AUC"])
	}
	for _, k := range []string{"OPIS", "10%-OPIS", "R@1", "MAP@R"} {
		if _, ok := res.Metrics[k]; !ok {
			t.Errorf("missing key %q in %v", k, res.Metrics)
		}
	}
	if res.OPIS == nil || len(res.OPIS.Utility) != 10 {
		t.Errorf("OPIS curves missing")
	}
}

func TestBadInputs(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Inputs)
		want string
	}{
		{func(in *Inputs) { in.Labels = in.Labels[:5] }, "5 labels for 6 embeddings"},
		{func(in *Inputs) { in.Emb[3] = float32(math.NaN()) }, "row 1, column 1"},
		{func(in *Inputs) { in.Emb[4], in.Emb[5] = 0, 0 }, "row 2 has zero norm"},
		{func(in *Inputs) { in.QueryMask = []bool{true} }, "1 query mask for 6 embeddings"},
		{func(in *Inputs) { in.Cameras = []int64{1, 1, 1, 1, 1, 1} }, "camera ids need a query mask"},
		{func(in *Inputs) { in.QueryMask = make([]bool, 6) }, "0 queries"},
	} {
		in := circle()
		tc.mod(&in)
		_, err := Run(in, Options{NoOPIS: true, NoCluster: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want it to contain %q", err, tc.want)
		}
	}
}
