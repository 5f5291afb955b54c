package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Scores (higher = more similar) with a tie between a positive and a negative at 0.8:
//
//	0.9 P, 0.8 P, 0.8 N, 0.7 N, 0.6 P, 0.5 N      (3 positives, 3 negatives)
//
// ROC points (FPR, TPR): +Inf (0,0); 0.9 (0,1/3); 0.8 (1/3,2/3); 0.7 (2/3,2/3); 0.6 (2/3,1); 0.5 (1,1).
// AUC by pairs: P0.9 beats 3 negatives; P0.8 ties N0.8 (1/2) and beats 2; P0.6 beats 1 → 6.5/9 = 13/18.
// Trapezoids give the same: 1/3·(1/3+2/3)/2 + 1/3·2/3 + 1/3·1 = 1/6 + 2/9 + 1/3 = 13/18.
var verifyTieScores = []float64{0.9, 0.8, 0.8, 0.7, 0.6, 0.5}
var verifyTieSame = []bool{true, true, false, false, true, false}

func TestROCAndAUCWithTies(t *testing.T) {
	c, err := ROC(verifyTieScores, verifyTieSame)
	if err != nil {
		t.Fatal(err)
	}
	wantF := []float64{0, 0, 1.0 / 3, 2.0 / 3, 2.0 / 3, 1}
	wantT := []float64{0, 1.0 / 3, 2.0 / 3, 2.0 / 3, 1, 1}
	wantTh := []float64{math.Inf(1), 0.9, 0.8, 0.7, 0.6, 0.5}
	if !slices.Equal(c.FPR, wantF) || !slices.Equal(c.TPR, wantT) || !slices.Equal(c.Thresholds, wantTh) {
		t.Errorf("ROC = FPR %v TPR %v thr %v", c.FPR, c.TPR, c.Thresholds)
	}
	auc, err := AUC(verifyTieScores, verifyTieSame)
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "AUC", auc, 13.0/18, 1e-15)
	// Trapezoidal area of the ROC equals the midrank AUC.
	var area float64
	for k := 1; k < len(c.FPR); k++ {
		area += (c.FPR[k] - c.FPR[k-1]) * (c.TPR[k] + c.TPR[k-1]) / 2
	}
	opisNear(t, "trapezoid", area, 13.0/18, 1e-15)
}

func TestTARAtFARSmall(t *testing.T) {
	for _, tc := range []struct {
		far, tar, thr, achieved float64
		reachable               bool
	}{
		{1.0 / 3, 2.0 / 3, 0.8, 1.0 / 3, true}, // k = 1 false accept allowed
		{0.5, 2.0 / 3, 0.8, 1.0 / 3, true},     // k = ⌊1.5⌋ = 1
		{2.0 / 3, 1, 0.6, 2.0 / 3, true},       // k = 2
		{1, 1, 0.5, 1, true},
		{0.1, 1.0 / 3, 0.9, 0, false}, // 3 negatives < 1/0.1: FAR 0 operating point, flagged
	} {
		p, err := TARAtFAR(verifyTieScores, verifyTieSame, tc.far)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.TAR-tc.tar) > 1e-15 || p.Threshold != tc.thr || math.Abs(p.AchievedFAR-tc.achieved) > 1e-15 ||
			p.Reachable != tc.reachable {
			t.Errorf("FAR %.3g: got %+v, want TAR %.4g thr %v achieved %.4g reachable %v", tc.far, p, tc.tar,
				tc.thr, tc.achieved, tc.reachable)
		}
	}
	if _, err := TARAtFAR(verifyTieScores, verifyTieSame, 0); err == nil {
		t.Error("FAR 0: no error")
	}
}

// 1000 negatives at i/1000 (i = 0..999) and 4 positives. FAR = 1e-3 allows k = 1 false accept, so pairs scoring
// above the 2nd-highest negative (0.998) are accepted: positives 0.9985 and 0.9995 yes, 0.998 (tied with that
// negative) and 0.5 no → TAR = 2/4. FAR = 1e-2 allows 10: accept above the 11th highest (0.989) → 3/4.
// FAR = 1e-4 needs 10,000 negatives → unreachable, its key is omitted.
func TestTARAtFARLarge(t *testing.T) {
	var dist []float64
	var same []bool
	for i := range 1000 {
		dist = append(dist, 1-float64(i)/1000) // distance = 1 − score
		same = append(same, false)
	}
	for _, s := range []float64{0.9985, 0.9995, 0.5, 0.998} {
		dist = append(dist, 1-s)
		same = append(same, true)
	}
	r, err := VerificationFromDistances(dist, same, VerifyOptions{Thresholds: []float64{0.5}})
	if err != nil {
		t.Fatal(err)
	}
	opisNear(t, "TAR@FAR=1e-3", r.Metrics["TAR@FAR=1e-3"], 0.5, 0)
	opisNear(t, "TAR@FAR=1e-2", r.Metrics["TAR@FAR=1e-2"], 0.75, 0)
	opisNear(t, "TAR@FAR=1e-1", r.Metrics["TAR@FAR=1e-1"], 0.75, 0)
	if _, ok := r.Metrics["TAR@FAR=1e-4"]; ok || r.TAR[3].Reachable {
		t.Errorf("TAR@FAR=1e-4 should be unreachable with 1000 negatives: %+v", r.TAR[3])
	}
	if p := r.TAR[2]; p.AchievedFAR != 0.001 {
		t.Errorf("achieved FAR at 1e-3 = %v", p.AchievedFAR)
	}
	for k, v := range r.Metrics {
		if math.IsNaN(v) {
			t.Errorf("%s is NaN", k)
		}
	}
}

// KFoldAccuracy on 5 pairs, 2 folds (sizes 3, 2), thresholds {1, 2, 3}, predicted "same" iff dist < threshold:
//
//	k: dist same | th=1 th=2 th=3 (✓ = correct)
//	0: 0.5  S    |  ✓    ✓    ✓
//	1: 1.5  S    |  ✗    ✓    ✓
//	2: 2.5  D    |  ✓    ✓    ✗
//	3: 1.5  D    |  ✓    ✗    ✗
//	4: 2.5  S    |  ✗    ✗    ✓
//
// Fold 0 ({0,1,2}) trains on {3,4}: accuracies 1/2, 0, 1/2 → first maximum th=1 → test 2/3.
// Fold 1 ({3,4}) trains on {0,1,2}: 2/3, 1, 2/3 → th=2 → test 0/2.
// Mean 1/3, population std 1/3.
func TestKFoldAccuracyByHand(t *testing.T) {
	dist := []float64{0.5, 1.5, 2.5, 1.5, 2.5}
	same := []bool{true, true, false, false, true}
	r, err := KFoldAccuracy(dist, same, 2, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.FoldThreshold, []float64{1, 2}) || !slices.Equal(r.FoldSize, []int{3, 2}) {
		t.Errorf("thresholds %v sizes %v", r.FoldThreshold, r.FoldSize)
	}
	opisNear(t, "fold 0", r.FoldAccuracy[0], 2.0/3, 1e-15)
	opisNear(t, "fold 1", r.FoldAccuracy[1], 0, 0)
	opisNear(t, "mean", r.Accuracy, 1.0/3, 1e-15)
	opisNear(t, "std", r.Std, 1.0/3, 1e-15)
}

// Default protocol on 23 separable pairs: same at squared distance 0.5, different at 1.5. Every training split is
// separated perfectly first at 0.51 (the first of 0, 0.01, … above 0.5); folds are 3,3,3,2,…,2 (23 = 10·2 + 3).
func TestKFoldAccuracyDefaults(t *testing.T) {
	var dist []float64
	var same []bool
	for i := range 23 {
		s := i%3 != 0
		same = append(same, s)
		if s {
			dist = append(dist, 0.5)
		} else {
			dist = append(dist, 1.5)
		}
	}
	r, err := KFoldAccuracy(dist, same, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.FoldSize, []int{3, 3, 3, 2, 2, 2, 2, 2, 2, 2}) {
		t.Errorf("fold sizes %v", r.FoldSize)
	}
	for f, th := range r.FoldThreshold {
		if th != 0.51 || r.ThresholdIndex[f] != 51 {
			t.Errorf("fold %d threshold %v (index %d), want 0.51 (51)", f, th, r.ThresholdIndex[f])
		}
	}
	opisNear(t, "accuracy", r.Accuracy, 1, 0)
}

// Embedding path: 2-D rows (1,0), (0,1), (−2,0), (3,0), (0,−1).
// Squared L2 after normalisation: (0,1) → 2, (0,2) → 4, (0,3) → 0, (1,4) → 4.
func TestVerificationFromEmbeddings(t *testing.T) {
	emb := []float32{1, 0, 0, 1, -2, 0, 3, 0, 0, -1}
	pairs := []VerifyPair{{0, 1, false}, {0, 2, false}, {0, 3, true}, {1, 4, false}}
	d2, err := PairSquaredL2(emb, 5, 2, pairs)
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range []float64{2, 4, 0, 4} {
		opisNear(t, "squared L2", d2[k], want, 1e-15)
	}
	r, err := Verification(emb, 5, 2, pairs, VerifyOptions{Folds: 2})
	if err != nil {
		t.Fatal(err)
	}
	// The only positive has the smallest distance: AUC 1; 3 negatives cannot resolve FAR ≤ 1e-1.
	opisNear(t, "AUC", r.Metrics["AUC"], 1, 0)
	if _, ok := r.Metrics["Acc(2-fold)"]; !ok {
		t.Errorf("keys %v", r.Metrics)
	}
	if _, ok := r.Metrics["TAR@FAR=1e-1"]; ok {
		t.Errorf("TAR@FAR=1e-1 present with 3 negatives")
	}
	for _, bad := range [][]VerifyPair{{{0, 5, true}, {0, 1, false}}, {{-1, 1, true}, {0, 1, false}}} {
		if _, err := Verification(emb, 5, 2, bad, VerifyOptions{}); err == nil || !strings.Contains(err.Error(), "out of range") {
			t.Errorf("pairs %v: err = %v", bad, err)
		}
	}
}

func TestVerifyInputErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		scores []float64
		same   []bool
		want   string
	}{
		{"length", []float64{1, 2}, []bool{true}, "2 scores but 1"},
		{"empty", nil, nil, "no pairs"},
		{"NaN", []float64{1, math.NaN()}, []bool{true, false}, "pair 1"},
		{"no positives", []float64{1, 2}, []bool{false, false}, "no positive"},
		{"no negatives", []float64{1, 2}, []bool{true, true}, "no negative"},
	} {
		if _, err := AUC(tc.scores, tc.same); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AUC %s: err = %v", tc.name, err)
		}
		if _, err := ROC(tc.scores, tc.same); err == nil {
			t.Errorf("ROC %s: no error", tc.name)
		}
		if _, err := KFoldAccuracy(tc.scores, tc.same, 10, nil); err == nil {
			t.Errorf("KFoldAccuracy %s: no error", tc.name)
		}
	}
}

// AUC equals the brute-force pair count on random scores with many ties, and is invariant to the pair order.
func TestAUCBruteForceAndPermutation(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 20 {
		n := 5 + rng.IntN(60)
		scores := make([]float64, n)
		same := make([]bool, n)
		for i := range n {
			same[i] = rng.IntN(2) == 0
			v := float64(rng.IntN(7)) // heavy ties
			if same[i] {
				v += 1.5
			}
			scores[i] = v
		}
		same[0], same[1] = true, false
		var wins float64
		var np, nn int
		for i := range n {
			if !same[i] {
				nn++
				continue
			}
			np++
			for j := range n {
				if !same[j] {
					switch {
					case scores[i] > scores[j]:
						wins++
					case scores[i] == scores[j]:
						wins += 0.5
					}
				}
			}
		}
		auc, err := AUC(scores, same)
		if err != nil {
			t.Fatal(err)
		}
		opisNear(t, "AUC vs brute force", auc, wins/float64(np*nn), 1e-12)
		perm := rng.Perm(n)
		s2, m2 := make([]float64, n), make([]bool, n)
		for i, p := range perm {
			s2[i], m2[i] = scores[p], same[p]
		}
		auc2, _ := AUC(s2, m2)
		opisNear(t, "AUC permuted", auc2, auc, 1e-12)
		c, _ := ROC(s2, m2)
		var area float64
		for k := 1; k < len(c.FPR); k++ {
			area += (c.FPR[k] - c.FPR[k-1]) * (c.TPR[k] + c.TPR[k-1]) / 2
		}
		if math.Abs(area-auc) > 1e-12 {
			t.Errorf("trial %d: trapezoid %v vs AUC %v", trial, area, auc)
		}
	}
}
