package metrics

// Pair verification metrics: ROC, AUC, TAR@FAR and the LFW-style k-fold best-threshold accuracy
// (deepinsight/insightface recognition/arcface_torch/eval/verification.py).

import (
	"fmt"
	"math"
	"sort"
)

// VerifyPair is one verification trial: rows I and J of an embedding matrix, and whether they show the same
// identity/class.
type VerifyPair struct {
	I, J int
	Same bool
}

// VerifyOptions configures Verification. The zero value is the insightface protocol.
type VerifyOptions struct {
	// FARs for TAR@FAR; nil → {1e-1, 1e-2, 1e-3, 1e-4}.
	FARs []float64
	// Folds of the best-threshold accuracy; 0 → 10. Folds are contiguous blocks of pairs (scikit-learn KFold
	// without shuffling: the first n mod k folds hold ⌊n/k⌋+1 pairs, the others ⌊n/k⌋).
	Folds int
	// Thresholds on the squared L2 distance scanned by the k-fold accuracy; nil → 0, 0.01, …, 3.99
	// (numpy.arange(0, 4, 0.01), i.e. float64(i)·0.01 for i = 0..399).
	Thresholds []float64
}

// VerifyDefaultFARs are the FAR targets reported by default.
var VerifyDefaultFARs = []float64{1e-1, 1e-2, 1e-3, 1e-4}

// ROCCurve is the full ROC of a set of scored pairs, "higher score = more similar", one point per distinct score.
// Point k accepts every pair with score ≥ Thresholds[k]; point 0 is (0, 0) with Thresholds[0] = +Inf, the last
// point is (1, 1).
type ROCCurve struct {
	Thresholds []float64
	FPR, TPR   []float64
	NumPos     int
	NumNeg     int
}

// TARAtFARPoint is the true-accept rate at a false-accept-rate target.
//
// Convention: TAR = max{TPR(t) : FPR(t) ≤ FAR} over the ROC points (no interpolation; a pair is accepted when its
// score ≥ t). Equivalently, with k = ⌊FAR·NumNeg⌋, accept the pairs scoring strictly above the (k+1)-th highest
// negative score. Reachable is false when NumNeg·FAR < 1 (fewer negatives than 1/FAR, so the FAR cannot be
// resolved); TAR and Threshold then describe the FAR = 0 operating point, and the metric map omits the key.
type TARAtFARPoint struct {
	FAR         float64 // the target
	TAR         float64
	Threshold   float64 // accept score ≥ Threshold (+Inf when no pair can be accepted)
	AchievedFAR float64 // FPR at Threshold, ≤ FAR
	Reachable   bool
}

// TenFoldResult is the k-fold best-threshold accuracy.
type TenFoldResult struct {
	Accuracy       float64   // mean of FoldAccuracy
	Std            float64   // population standard deviation of FoldAccuracy (numpy.std)
	FoldAccuracy   []float64 // test accuracy per fold
	FoldThreshold  []float64 // best threshold chosen on the other folds
	FoldSize       []int
	ThresholdIndex []int
}

// VerificationResult gathers all verification metrics.
type VerificationResult struct {
	// Metrics has keys "AUC", "TAR@FAR=1e-1", "TAR@FAR=1e-2", … (reachable targets only) and "Acc(10-fold)"
	// (with the actual number of folds). Accuracies and rates are fractions in [0, 1].
	Metrics map[string]float64
	ROC     *ROCCurve
	AUC     float64
	// TAR per target FAR; here Threshold is a distance (accept dist ≤ Threshold; −Inf when nothing is accepted).
	TAR   []TARAtFARPoint
	KFold TenFoldResult
}

// PairSquaredL2 returns, for every pair, the squared L2 distance between the L2-normalised rows I and J of emb
// ([n, d] row-major), as in insightface verification.py (in [0, 4]).
func PairSquaredL2(emb []float32, n, d int, pairs []VerifyPair) ([]float64, error) {
	x, err := opisNormalizeRows(emb, n, d)
	if err != nil {
		return nil, fmt.Errorf("metrics.PairSquaredL2: %w", err)
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("metrics.PairSquaredL2: no pairs")
	}
	out := make([]float64, len(pairs))
	for k, p := range pairs {
		if p.I < 0 || p.I >= n || p.J < 0 || p.J >= n {
			return nil, fmt.Errorf("metrics.PairSquaredL2: pair %d = (%d, %d) out of range [0, %d)", k, p.I, p.J, n)
		}
		v := opisL2(x, d, p.I, p.J)
		out[k] = v * v
	}
	return out, nil
}

// Verification computes ROC, AUC, TAR@FAR and the k-fold accuracy for the pairs of embeddings emb ([n, d]
// row-major), using squared L2 distances between L2-normalised rows (score = −distance for ROC/AUC/TAR).
func Verification(emb []float32, n, d int, pairs []VerifyPair, opt VerifyOptions) (*VerificationResult, error) {
	dist, err := PairSquaredL2(emb, n, d, pairs)
	if err != nil {
		return nil, err
	}
	same := make([]bool, len(pairs))
	for k, p := range pairs {
		same[k] = p.Same
	}
	return VerificationFromDistances(dist, same, opt)
}

// VerificationFromDistances is Verification on precomputed distances (smaller = more similar; the k-fold
// accuracy expects squared L2 distances on normalised embeddings when opt.Thresholds is nil).
func VerificationFromDistances(dist []float64, same []bool, opt VerifyOptions) (*VerificationResult, error) {
	if err := verifyCheck(dist, same); err != nil {
		return nil, fmt.Errorf("metrics.VerificationFromDistances: %w", err)
	}
	scores := make([]float64, len(dist))
	for k, v := range dist {
		scores[k] = -v
	}
	res := &VerificationResult{Metrics: map[string]float64{}}
	var err error
	if res.ROC, err = ROC(scores, same); err != nil {
		return nil, err
	}
	if res.AUC, err = AUC(scores, same); err != nil {
		return nil, err
	}
	res.Metrics["AUC"] = res.AUC
	fars := opt.FARs
	if fars == nil {
		fars = VerifyDefaultFARs
	}
	for _, f := range fars {
		p, err := tarFromROC(res.ROC, f)
		if err != nil {
			return nil, fmt.Errorf("metrics.VerificationFromDistances: %w", err)
		}
		p.Threshold = -p.Threshold // back to a distance: accept dist ≤ Threshold
		res.TAR = append(res.TAR, p)
		if p.Reachable {
			res.Metrics["TAR@FAR="+FARKey(f)] = p.TAR
		}
	}
	if res.KFold, err = KFoldAccuracy(dist, same, opt.Folds, opt.Thresholds); err != nil {
		return nil, err
	}
	res.Metrics[fmt.Sprintf("Acc(%d-fold)", len(res.KFold.FoldAccuracy))] = res.KFold.Accuracy
	return res, nil
}

// FARKey names a false accept rate in metric keys ("TAR@FAR=1e-3"): 10^-k as "1e-k", anything
// else with %g.
func FARKey(f float64) string {
	for k := 0; k <= 12; k++ {
		if f == math.Pow(10, -float64(k)) {
			return fmt.Sprintf("1e-%d", k)
		}
	}
	return fmt.Sprintf("%g", f)
}

func verifyCheck(values []float64, same []bool) error {
	if len(values) != len(same) {
		return fmt.Errorf("%d scores but %d same/different flags", len(values), len(same))
	}
	if len(values) == 0 {
		return fmt.Errorf("no pairs")
	}
	np := 0
	for k, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("score of pair %d is %v", k, v)
		}
		if same[k] {
			np++
		}
	}
	if np == 0 {
		return fmt.Errorf("no positive (same) pair among %d", len(values))
	}
	if np == len(values) {
		return fmt.Errorf("no negative (different) pair among %d", len(values))
	}
	return nil
}

// ROC computes the ROC curve of scores (higher = more similar) against the same/different flags. Tied scores form
// one point (all pairs with that score are accepted together).
func ROC(scores []float64, same []bool) (*ROCCurve, error) {
	if err := verifyCheck(scores, same); err != nil {
		return nil, fmt.Errorf("metrics.ROC: %w", err)
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return scores[idx[a]] > scores[idx[b]] })
	c := &ROCCurve{}
	for _, s := range same {
		if s {
			c.NumPos++
		} else {
			c.NumNeg++
		}
	}
	c.Thresholds = append(c.Thresholds, math.Inf(1))
	c.FPR = append(c.FPR, 0)
	c.TPR = append(c.TPR, 0)
	tp, fp := 0, 0
	for k := 0; k < len(idx); {
		s := scores[idx[k]]
		for ; k < len(idx) && scores[idx[k]] == s; k++ {
			if same[idx[k]] {
				tp++
			} else {
				fp++
			}
		}
		c.Thresholds = append(c.Thresholds, s)
		c.FPR = append(c.FPR, float64(fp)/float64(c.NumNeg))
		c.TPR = append(c.TPR, float64(tp)/float64(c.NumPos))
	}
	return c, nil
}

// AUC is the exact area under the ROC curve: the Mann–Whitney probability that a random positive scores higher
// than a random negative, ties counting 1/2 (midranks). Equals the trapezoidal area under ROC.
func AUC(scores []float64, same []bool) (float64, error) {
	if err := verifyCheck(scores, same); err != nil {
		return 0, fmt.Errorf("metrics.AUC: %w", err)
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var rankSumPos float64
	np, nn := 0, 0
	for k := 0; k < len(idx); {
		e := k
		for e < len(idx) && scores[idx[e]] == scores[idx[k]] {
			e++
		}
		mid := float64(k+1+e) / 2 // average of ranks k+1..e
		for t := k; t < e; t++ {
			if same[idx[t]] {
				rankSumPos += mid
				np++
			} else {
				nn++
			}
		}
		k = e
	}
	return (rankSumPos - float64(np)*float64(np+1)/2) / (float64(np) * float64(nn)), nil
}

// TARAtFAR returns the true-accept rate at the false-accept-rate target far (scores: higher = more similar). See
// TARAtFARPoint for the convention.
func TARAtFAR(scores []float64, same []bool, far float64) (TARAtFARPoint, error) {
	c, err := ROC(scores, same)
	if err != nil {
		return TARAtFARPoint{}, fmt.Errorf("metrics.TARAtFAR: %w", err)
	}
	p, err := tarFromROC(c, far)
	if err != nil {
		return TARAtFARPoint{}, fmt.Errorf("metrics.TARAtFAR: %w", err)
	}
	return p, nil
}

func tarFromROC(c *ROCCurve, far float64) (TARAtFARPoint, error) {
	if !(far > 0 && far <= 1) {
		return TARAtFARPoint{}, fmt.Errorf("FAR target %v, want 0 < FAR ≤ 1", far)
	}
	p := TARAtFARPoint{FAR: far, Reachable: float64(c.NumNeg)*far >= 1-1e-9, Threshold: math.Inf(1)}
	// Allowed false accepts k = ⌊far·NumNeg⌋ (with a tolerance for 1e-3·1000 rounding).
	limit := math.Floor(far*float64(c.NumNeg)+1e-9) / float64(c.NumNeg)
	for k := range c.FPR { // FPR and TPR are non-decreasing
		if c.FPR[k] > limit {
			break
		}
		p.TAR, p.Threshold, p.AchievedFAR = c.TPR[k], c.Thresholds[k], c.FPR[k]
	}
	return p, nil
}

// KFoldAccuracy is the insightface/LFW best-threshold accuracy: pairs are split into `folds` contiguous blocks
// (0 → 10; capped at the number of pairs); for each fold the threshold maximising the accuracy on the other folds
// is chosen (first maximum in threshold order, numpy.argmax) and the accuracy at that threshold is measured on the
// fold. A pair is predicted "same" when dist < threshold (numpy.less). thresholds nil → 0, 0.01, …, 3.99.
func KFoldAccuracy(dist []float64, same []bool, folds int, thresholds []float64) (TenFoldResult, error) {
	if err := verifyCheck(dist, same); err != nil {
		return TenFoldResult{}, fmt.Errorf("metrics.KFoldAccuracy: %w", err)
	}
	if folds == 0 {
		folds = 10
	}
	if folds < 2 {
		return TenFoldResult{}, fmt.Errorf("metrics.KFoldAccuracy: folds=%d, want ≥ 2", folds)
	}
	n := len(dist)
	folds = min(folds, n)
	if thresholds == nil {
		thresholds = make([]float64, 400)
		for i := range thresholds {
			thresholds[i] = float64(i) * 0.01
		}
	}
	if len(thresholds) == 0 {
		return TenFoldResult{}, fmt.Errorf("metrics.KFoldAccuracy: empty threshold list")
	}
	// correct[t][f]: number of correct predictions in fold f at threshold t.
	bounds := make([]int, folds+1)
	for f := range folds {
		size := n / folds
		if f < n%folds {
			size++
		}
		bounds[f+1] = bounds[f] + size
	}
	correct := make([][]int, len(thresholds))
	for t, th := range thresholds {
		correct[t] = make([]int, folds)
		for f := range folds {
			c := 0
			for k := bounds[f]; k < bounds[f+1]; k++ {
				if (dist[k] < th) == same[k] {
					c++
				}
			}
			correct[t][f] = c
		}
	}
	res := TenFoldResult{}
	for f := range folds {
		trainN := n - (bounds[f+1] - bounds[f])
		best, bestAcc := 0, -1.0
		for t := range thresholds {
			c := 0
			for g := range folds {
				if g != f {
					c += correct[t][g]
				}
			}
			if acc := float64(c) / float64(trainN); acc > bestAcc {
				best, bestAcc = t, acc
			}
		}
		size := bounds[f+1] - bounds[f]
		res.FoldAccuracy = append(res.FoldAccuracy, float64(correct[best][f])/float64(size))
		res.FoldThreshold = append(res.FoldThreshold, thresholds[best])
		res.ThresholdIndex = append(res.ThresholdIndex, best)
		res.FoldSize = append(res.FoldSize, size)
	}
	for _, a := range res.FoldAccuracy {
		res.Accuracy += a
	}
	res.Accuracy /= float64(folds)
	for _, a := range res.FoldAccuracy {
		res.Std += (a - res.Accuracy) * (a - res.Accuracy)
	}
	res.Std = math.Sqrt(res.Std / float64(folds))
	return res, nil
}
