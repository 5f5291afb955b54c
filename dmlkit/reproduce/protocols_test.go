package reproduce

import (
	"math"
	"slices"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

// TestReIDSplit checks the split by hand: labels in test order 7 7 7 3 3 7 3 with one query per
// identity and two cameras. Class 7 has rows 0, 1, 2, 5 (its images 0-3: cameras 0, 1, 0, 1),
// class 3 rows 3, 4, 6 (cameras 0, 1, 0); image 0 of each class is the query.
func TestReIDSplit(t *testing.T) {
	s, err := ReIDSplit([]int64{7, 7, 7, 3, 3, 7, 3}, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := ReIDProtocolSplit{
		Query: []int{0, 3}, QueryID: []int64{7, 3}, QueryCam: []int64{0, 0},
		Gallery: []int{1, 2, 4, 5, 6}, GalleryID: []int64{7, 7, 3, 7, 3}, GalleryCam: []int64{1, 0, 1, 1, 0},
	}
	for _, c := range []struct {
		name      string
		got, want any
	}{{"Query", s.Query, want.Query}, {"QueryID", s.QueryID, want.QueryID}, {"QueryCam", s.QueryCam, want.QueryCam},
		{"Gallery", s.Gallery, want.Gallery}, {"GalleryID", s.GalleryID, want.GalleryID}, {"GalleryCam", s.GalleryCam, want.GalleryCam}} {
		if !equalAny(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, err := ReIDSplit([]int64{1, 2}, 1, 2); err == nil {
		t.Error("a split without gallery images: want an error")
	}
	if _, err := ReIDSplit([]int64{1, 1}, 1, 1); err == nil {
		t.Error("one camera: want an error")
	}
}

func equalAny(a, b any) bool {
	switch x := a.(type) {
	case []int:
		return slices.Equal(x, b.([]int))
	case []int64:
		return slices.Equal(x, b.([]int64))
	}
	return false
}

// TestPositiveNegativePairs: classes of sizes 3 and 2 have 3 + 1 = 4 positive pairs; sampling 2
// keeps 2 distinct ones of them; negatives never share a label, hard negatives also share the
// coarse label.
func TestPositiveNegativePairs(t *testing.T) {
	labels := []int64{5, 5, 9, 5, 9, 4}
	pos := PositivePairs(labels, 0, 1)
	want := []metrics.VerifyPair{{I: 0, J: 1, Same: true}, {I: 0, J: 3, Same: true}, {I: 1, J: 3, Same: true}, {I: 2, J: 4, Same: true}}
	if !slices.Equal(pos, want) {
		t.Fatalf("positives %v, want %v", pos, want)
	}
	sub := PositivePairs(labels, 2, 1)
	if len(sub) != 2 || sub[0] == sub[1] || !slices.Contains(want, sub[0]) || !slices.Contains(want, sub[1]) {
		t.Errorf("2 sampled positives: %v", sub)
	}
	neg := NegativePairs(labels, nil, 50, 3)
	if len(neg) != 50 {
		t.Fatalf("%d negatives, want 50", len(neg))
	}
	for _, p := range neg {
		if labels[p.I] == labels[p.J] || p.Same {
			t.Fatalf("negative pair %v shares label %d", p, labels[p.I])
		}
	}
	coarse := []int64{0, 0, 0, 0, 0, 1} // row 5 (class 4) is alone in its coarse group: never paired
	hard := NegativePairs(labels, coarse, 50, 3)
	for _, p := range hard {
		if labels[p.I] == labels[p.J] || coarse[p.I] != coarse[p.J] || p.I == 5 || p.J == 5 {
			t.Fatalf("hard negative %v", p)
		}
	}
	if !slices.Equal(NegativePairs(labels, nil, 20, 3), NegativePairs(labels, nil, 20, 3)) {
		t.Error("negatives differ between two draws with one seed")
	}
}

// TestTPRAt reads a hand-made ROC: points (0,0) (0.1,0.5) (0.3,0.8) (1,1).
func TestTPRAt(t *testing.T) {
	c := &metrics.ROCCurve{FPR: []float64{0, 0.1, 0.3, 1}, TPR: []float64{0, 0.5, 0.8, 1}}
	for _, tc := range []struct{ f, want float64 }{{0.05, 0}, {0.1, 0.5}, {0.2, 0.5}, {0.3, 0.8}, {1, 1}} {
		if got := tprAt(c, tc.f); got != tc.want {
			t.Errorf("TPR at FPR %g = %g, want %g", tc.f, got, tc.want)
		}
	}
}

// TestProtocolMetrics: on 2-D embeddings of three well-separated classes (4 images each) every
// protocol is perfect by construction (CMC@1 = mAP = mINP = AUC = TAR = 1); the values of a
// perturbed set equal the metrics package called directly on the split built by hand.
func TestProtocolMetrics(t *testing.T) {
	centres := [][2]float32{{1, 0}, {0, 1}, {-1, 0}}
	var emb []float32
	var labels []int64
	for i := 0; i < 12; i++ {
		c := i % 3
		jit := float32(i) * 0.01
		emb = append(emb, centres[c][0]+jit, centres[c][1]-jit)
		labels = append(labels, int64(c))
	}
	ev := train.EvalConfig{FullMAP: true, Cluster: true, ReID: train.ReIDProtocol{Queries: 1, Cameras: 2},
		Verify: train.VerifyProtocol{Negatives: 40, FARs: []float64{0.1}}}
	m, series := map[string]float64{}, map[string][]float64{}
	if err := protocolMetrics(ev, 0, emb, 12, 2, labels, nil, m, series); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mAP", "NMI", "reid/CMC@1", "reid/mAP", "reid/mINP", "verify/AUC", "verify/TAR@FAR=1e-1"} {
		if math.Abs(m[k]-1) > 1e-9 {
			t.Errorf("%s = %g, want 1 (separated classes)", k, m[k])
		}
	}
	// Each class has 4 images: 1 query (camera 0) and 3 gallery images on cameras 1, 0, 1: the
	// camera-0 one is junk, so 2 correct matches per query and 3 queries.
	if m["reid/n_queries"] != 3 {
		t.Errorf("reid/n_queries = %g, want 3", m["reid/n_queries"])
	}
	// 3 classes × C(4,2) = 18 positive pairs.
	if m["verify/n_pos"] != 18 || m["verify/n_neg"] != 40 || m["verify/fa@FAR=1e-1"] != 4 {
		t.Errorf("n_pos %g, n_neg %g, fa@FAR=1e-1 %g: want 18, 40, 4", m["verify/n_pos"], m["verify/n_neg"], m["verify/fa@FAR=1e-1"])
	}
	if len(series["verify/roc_fpr"]) != 26 || series["verify/roc_tpr"][25] != 1 {
		t.Errorf("ROC series: %d points, last TPR %v", len(series["verify/roc_fpr"]), series["verify/roc_tpr"])
	}

	// Swap two embeddings across classes: rows 0 (class 0) and 1 (class 1).
	emb[0], emb[1], emb[2], emb[3] = emb[2], emb[3], emb[0], emb[1]
	m = map[string]float64{}
	if err := protocolMetrics(ev, 0, emb, 12, 2, labels, nil, m, map[string][]float64{}); err != nil {
		t.Fatal(err)
	}
	// By hand: the queries are rows 0, 1, 2 (first image of classes 0, 1, 2), cameras 0.
	q := gatherRows(emb, 2, []int{0, 1, 2})
	gal := []int{3, 4, 5, 6, 7, 8, 9, 10, 11}
	gid := []int64{0, 1, 2, 0, 1, 2, 0, 1, 2}
	gcam := []int64{1, 1, 1, 0, 0, 0, 1, 1, 1}
	r, err := metrics.ReID(q, 3, gatherRows(emb, 2, gal), 9, 2, []int64{0, 1, 2}, []int64{0, 0, 0}, gid, gcam, metrics.ReIDOptions{CMC: []int{1, 5, 10}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"CMC@1", "mAP", "mINP"} {
		if m["reid/"+k] != r[k] {
			t.Errorf("reid/%s = %g, want %g (metrics.ReID on the hand-built split)", k, m["reid/"+k], r[k])
		}
	}
	if m["reid/CMC@1"] >= 1 {
		t.Errorf("reid/CMC@1 = %g after swapping two images: want < 1", m["reid/CMC@1"])
	}
}
