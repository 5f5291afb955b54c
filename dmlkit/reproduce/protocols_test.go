package reproduce

import (
	"math"
	"slices"
	"strings"
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

// angles returns unit vectors at the given angles (degrees), [n, 2] row-major.
func angles(deg ...float64) []float32 {
	var out []float32
	for _, a := range deg {
		r := a * math.Pi / 180
		out = append(out, float32(math.Cos(r)), float32(math.Sin(r)))
	}
	return out
}

// TestRerankProtocol: contextual re-ranking (seed 004 Table 10, the paper's β = 0.1) changes a known
// neighbour. Unit vectors at a 0°, x −10°, y 14°, p1 −15°,
// p2 −17° (rows 0–4), labels a, y = 0 and x, p1, p2 = 1, k = 3 (N(i) = i and its 2 nearest):
//
//	N(a) = {a, x, y} (x 10°, y 14°, p1 15°)     N(x) = {x, p1, p2} (5°, 7°; a 10°)
//	N(y) = {y, a, x} (a 14°, x 24°)             N(p1) = N(p2) = {x, p1, p2}
//
// Plain R@1: a → x (10°) is wrong, the other four are right: 4/5. Re-ranked, query a: x scores
// 0.1·|N(a)∩N(x)|/3 + 0.9·exp(2cos10° − 2) = 0.1/3 + 0.9·0.97007 = 0.90640, y scores
// 0.1·3/3 + 0.9·exp(2cos14° − 2) = 0.1 + 0.9·0.94232 = 0.94809 → y (right) first. The others keep
// their nearest neighbour (x → p1: w̃ 1 against a's 0; y → a: 0.94809 against x's
// 0.1/3 + 0.9·exp(2cos24° − 2) = 0.79044; p1 ↔ p2: w̃ 1 and the larger s̃). rerank/R@1 = 5/5.
// k 3 is also stored under rerank_k3/, and more_k 4 under rerank_k4/, equal to a direct
// metrics.Retrieval call.
func TestRerankProtocol(t *testing.T) {
	emb := angles(0, -10, 14, -15, -17)
	labels := []int64{0, 1, 0, 1, 1}
	ev := train.EvalConfig{Ks: []int{2}, Rerank: train.RerankProtocol{K: 3, MoreK: []int{4}}}
	m := map[string]float64{}
	if err := protocolMetrics(ev, 0, emb, 5, 2, labels, nil, m, map[string][]float64{}); err != nil {
		t.Fatal(err)
	}
	plain, err := metrics.Retrieval(emb, 5, 2, labels, metrics.Options{K: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(plain["R@1"]-0.8) > 1e-12 || m["rerank/R@1"] != 1 || m["rerank/R@2"] != 1 || m["rerank/k"] != 3 || m["rerank/beta"] != 0.1 {
		t.Errorf("R@1 %g → rerank/R@1 %g (R@2 %g, k %g, beta %g), want 0.8 → 1 (k 3, beta 0.1)",
			plain["R@1"], m["rerank/R@1"], m["rerank/R@2"], m["rerank/k"], m["rerank/beta"])
	}
	k4, err := metrics.Retrieval(emb, 5, 2, labels, metrics.Options{K: []int{1, 2}, Rerank: &metrics.RerankOptions{K: 4, Beta: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"R@1", "R@2", "MAP@R"} {
		if m["rerank_k4/"+k] != k4["ctx/"+k] {
			t.Errorf("rerank_k4/%s = %g, want %g (metrics.Retrieval, K 4)", k, m["rerank_k4/"+k], k4["ctx/"+k])
		}
	}
	if m["rerank_k3/R@1"] != 1 || m["rerank_k3/MAP@R"] != m["rerank/MAP@R"] {
		t.Errorf("rerank_k3/R@1 %g, rerank_k3/MAP@R %g: want the rerank/ values", m["rerank_k3/R@1"], m["rerank_k3/MAP@R"])
	}
	if _, ok := m["rerank/n_queries"]; ok {
		t.Error("counts stored under rerank/")
	}
}

// TestHierarchicalProtocol: HR@k and the coarse-level metrics equal metrics.Retrieval called on
// the coarse labels, and by hand: points at 0°, 5° (fine 0), 30°, 33° (fine 1), 45°, 100° (fine
// 2); coarse {fine 0, 1} = 0, {fine 2} = 1. Nearest neighbours: 0°↔5°, 30°↔33°, 45° → 33° (coarse
// 0: a miss), 100° → 45° (hit): HR@1 = coarse/R@1 = 5/6. Coarse MAP@R (R = 3 for coarse 0, 1 for
// coarse 1): rows 0, 1 rank their three coarse-0 peers first (1); row 2 (30°) ranks 33° +, 45° −
// (15°), 5° + → (1 + 2/3)/3 = 5/9, row 3 (33°) likewise 30° +, 45° −, 5° + → 5/9; row 4 (45°)
// ranks 33° − → 0; row 5 → 45° + → 1: (3 + 10/9)/6 = 37/54. With eval.full_map, mAP/coarse is the
// full-ranking AP at the coarse level: rows 0, 1, 5 → 1; rows 2 and 3 find their coarse peers at
// ranks 1, 3, 4 → (1 + 2/3 + 3/4)/3 = 29/36; row 4 finds 100° at rank 5 → 1/5:
// (3 + 29/18 + 1/5)/6 = 433/540. Without coarse labels nothing is stored.
func TestHierarchicalProtocol(t *testing.T) {
	emb := angles(0, 5, 30, 33, 45, 100)
	labels := []int64{0, 0, 1, 1, 2, 2}
	coarse := []int64{0, 0, 0, 0, 1, 1}
	ev := train.EvalConfig{Ks: []int{1, 2}, Hierarchical: true, FullMAP: true}
	m := map[string]float64{}
	if err := protocolMetrics(ev, 0, emb, 6, 2, labels, coarse, m, map[string][]float64{}); err != nil {
		t.Fatal(err)
	}
	if math.Abs(m["mAP/coarse"]-433.0/540) > 1e-12 {
		t.Errorf("mAP/coarse = %g, want 433/540 = %g", m["mAP/coarse"], 433.0/540)
	}
	if math.Abs(m["HR@1"]-5.0/6) > 1e-12 || math.Abs(m["coarse/R@1"]-5.0/6) > 1e-12 || math.Abs(m["coarse/MAP@R"]-37.0/54) > 1e-12 {
		t.Errorf("HR@1 %g, coarse/R@1 %g, coarse/MAP@R %g: want 5/6, 5/6, 37/54", m["HR@1"], m["coarse/R@1"], m["coarse/MAP@R"])
	}
	hr, err := metrics.Retrieval(emb, 6, 2, labels, metrics.Options{K: []int{1, 2}, Coarse: coarse})
	if err != nil {
		t.Fatal(err)
	}
	cr, err := metrics.Retrieval(emb, 6, 2, coarse, metrics.Options{K: []int{1, 2}, FullMAP: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key  string
		want float64
	}{{"HR@1", hr["HR@1"]}, {"HR@2", hr["HR@2"]}, {"coarse/R@1", cr["R@1"]}, {"coarse/R@2", cr["R@2"]}, {"coarse/MAP@R", cr["MAP@R"]}, {"mAP/coarse", cr["mAP"]}} {
		if v, ok := m[c.key]; !ok || v != c.want {
			t.Errorf("%s = %g (stored %v), want %g (metrics.Retrieval)", c.key, v, ok, c.want)
		}
	}
	none := map[string]float64{}
	ev.FullMAP = false
	if err := protocolMetrics(ev, 0, emb, 6, 2, labels, nil, none, map[string][]float64{}); err != nil || len(none) != 0 {
		t.Errorf("without coarse labels: %v %v", none, err)
	}
}

// TestNegativePairCount: labels {5,5,9,5,9,4} have C(6,2) = 15 pairs, of which 3 (label 5) + 1
// (label 9) share a label: 11 negatives. With coarse {0,0,0,0,0,1}, coarse group 0 (rows 0–4) has
// C(5,2) = 10 pairs less 3 + 1 same-label ones: 6; row 5 is alone: 0.
func TestNegativePairCount(t *testing.T) {
	labels := []int64{5, 5, 9, 5, 9, 4}
	for _, tc := range []struct {
		coarse []int64
		want   int64
	}{
		{nil, 11},
		{[]int64{0, 0, 0, 0, 0, 1}, 6},
		{[]int64{0, 1, 2, 3, 4, 5}, 0},
	} {
		if got := NegativePairCount(labels, tc.coarse); got != tc.want {
			t.Errorf("coarse %v: %d negative pairs, want %d", tc.coarse, got, tc.want)
		}
	}
}

// TestVerifyCountsBounded: eval.verify.negatives beyond the test set's distinct negative pairs
// (12 images in 3 classes of 4: C(12,2) − 3·C(4,2) = 66 − 18 = 48) and hard_negatives without
// coarse labels or beyond the distinct same-coarse ones are errors naming the field and the
// bound; before, 1000 was drawn with repeats (10⁹ hung, growing memory) and hard negatives
// without coarse labels were silently left out.
func TestVerifyCountsBounded(t *testing.T) {
	emb := make([]float32, 24)
	var labels []int64
	for i := range 12 {
		emb[2*i], emb[2*i+1] = float32(i%3), 1
		labels = append(labels, int64(i%3))
	}
	// Coarse: classes 0 and 1 share group 0 (8 rows, C(8,2) − 2·6 = 16 hard pairs), class 2 alone.
	coarse := make([]int64, 12)
	for i, l := range labels {
		coarse[i] = l / 2
	}
	for _, tc := range []struct {
		v      train.VerifyProtocol
		coarse []int64
		want   string // "" = no error
	}{
		{train.VerifyProtocol{Negatives: 48}, nil, ""},
		{train.VerifyProtocol{Negatives: 49}, nil, "eval.verify.negatives: 49 is more than the 48 distinct negative pairs of the 12 test images"},
		{train.VerifyProtocol{Negatives: 1000000000}, nil, "eval.verify.negatives: 1000000000 is more than the 48 distinct"},
		{train.VerifyProtocol{Negatives: 40, HardNegatives: 10}, nil, "eval.verify.hard_negatives: 10 needs coarse test labels"},
		{train.VerifyProtocol{Negatives: 40, HardNegatives: 16}, coarse, ""},
		{train.VerifyProtocol{Negatives: 40, HardNegatives: 17}, coarse, "eval.verify.hard_negatives: 17 is more than the 16 distinct same-coarse-label negative pairs"},
	} {
		tc.v.FARs = []float64{0.1}
		err := protocolMetrics(train.EvalConfig{Verify: tc.v}, 0, emb, 12, 2, labels, tc.coarse, map[string]float64{}, map[string][]float64{})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v (coarse %v): error %v, want %q", tc.v, tc.coarse != nil, err, tc.want)
		}
	}
}

// TestValidateHardNegativesNeedCoarse: eval.verify.hard_negatives on a dataset without coarse
// labels is refused before training, naming the field, the value and data.name; Omniglot (its
// alphabets) is accepted.
func TestValidateHardNegativesNeedCoarse(t *testing.T) {
	for _, tc := range []struct {
		data, want string
	}{
		{"omniglot", ""},
		{"mnist", `eval.verify.hard_negatives: 500: data.name "mnist" has no coarse labels`},
	} {
		cfg := map[string]any{"data": map[string]any{"name": tc.data}, "loss": map[string]any{"name": "contrastive"},
			"eval": map[string]any{"verify": map[string]any{"negatives": 1000, "hard_negatives": 500}}}
		err := ValidateTrainConfig(cfg)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.data, err, tc.want)
		}
	}
}
