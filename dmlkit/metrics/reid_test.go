package metrics

import "testing"

// Hand-made Market-1501 case, inner product with d = 1 so the score is query·gallery value.
//
// Gallery (value, id, camera):
//
//	g0: 9, id 1, cam 1   junk for q0 (same id and camera)
//	g1: 8, id 2, cam 2
//	g2: 7, id 1, cam 2   correct match for q0
//	g3: 6, id −1, cam 3  junk for every query
//	g4: 5, id 0, cam 2   distractor: a negative
//	g5: 4, id 1, cam 3   correct match for q0
//	g6: 3, id 3, cam 1   correct match for q1
//
// q0 = +1 (id 1, cam 1): junk-free ranking g1− g2+ g4− g5+ g6− → correct ranks 2, 4.
//
//	CMC@1 = 0, CMC@2 = 1; AP = (1/2 + 2/4)/2 = 0.5; INP = |G|/R_hardest = 2/4 = 0.5
//	trapezoid AP = ½[(0/1 + 1/2)/2 + (1/3 + 2/4)/2] = ½[0.25 + 0.416667] = 0.333333
//
// q1 = −1 (id 3, cam 2): ranking reversed, g6+ first → CMC@1 = 1, AP = 1, INP = 1, trapezoid AP = 1.
// q2 = +1 (id 5, cam 1): no correct match → skipped.
//
// Means over the 2 evaluated queries: CMC@1 = 0.5, CMC@2 = 1, mAP = 0.75, mINP = 0.75, mAP(trapz) = 2/3.
func TestReIDHandWorked(t *testing.T) {
	gallery := []float32{9, 8, 7, 6, 5, 4, 3}
	gID := []int64{1, 2, 1, -1, 0, 1, 3}
	gCam := []int64{1, 2, 2, 3, 2, 3, 1}
	query := []float32{1, -1, 1}
	qID := []int64{1, 3, 5}
	qCam := []int64{1, 2, 1}
	got, err := ReID(query, 3, gallery, 7, 1, qID, qCam, gID, gCam,
		ReIDOptions{CMC: []int{1, 2}, Similarity: InnerProduct, TrapezoidAP: true, QueryBlock: 1, RefBlock: 3})
	if err != nil {
		t.Fatal(err)
	}
	retrievalCheck(t, got, map[string]float64{"CMC@1": 0.5, "CMC@2": 1, "mAP": 0.75, "mINP": 0.75,
		"mAP(trapz)": 2.0 / 3, "n_queries": 3, "n_skipped": 1})
}

func TestReIDErrors(t *testing.T) {
	g := []float32{1, 2}
	if _, err := ReID([]float32{1}, 1, g, 2, 1, []int64{1}, []int64{1}, []int64{1}, []int64{1, 2}, ReIDOptions{}); err == nil {
		t.Error("mismatched gallery ids: want an error")
	}
	if _, err := ReID([]float32{1}, 1, g, 2, 1, []int64{1}, []int64{1}, []int64{1, 1}, []int64{1, 1}, ReIDOptions{Similarity: InnerProduct}); err == nil {
		t.Error("every match is same-camera junk: want an error")
	}
}
