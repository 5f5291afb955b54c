package reproduce

// The evaluation protocols a spec can ask for beside self-retrieval (train.EvalConfig.FullMAP,
// Cluster, ReID, Verify, Rerank, Hierarchical): computed by the runner on the final test embeddings, so retrieval,
// re-identification and verification metrics come from the same embeddings (seed 001 Tables 1, 2,
// 4-7 report all three for one trained network).

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

// protocolSeed fixes the sampled verification pairs: every run of a sweep is scored on the same
// pairs, so the paired differences between runs compare networks, not pair samples.
const protocolSeed = 20221001

// rocFPRs are the false-positive rates at which the ROC curve is stored (series verify/roc_fpr and
// verify/roc_tpr, seed 001 Fig. 2): 1e-5 … 1, five points per decade.
var rocFPRs = func() []float64 {
	var f []float64
	for i := -25; i <= 0; i++ {
		f = append(f, math.Pow(10, float64(i)/5))
	}
	return f
}()

// protocolMetrics adds to m and series the metrics of the protocols cfg.Eval asks for:
//
//   - eval.full_map: "mAP", the exact full-ranking mean average precision of leave-one-out
//     self-retrieval (cosine similarity), as seed 001 Table 2's mAP.
//   - eval.cluster: "NMI" and "AMI" of k-means (K = number of test classes, k-means++ seeded by the
//     run seed) against the labels (seed 001 Tables 7-8).
//   - eval.reid: "reid/CMC@1", "reid/CMC@5", "reid/CMC@10", "reid/mAP", "reid/mINP" and
//     "reid/n_queries" of the protocol [ReIDSplit] builds (metrics.ReID, Market-1501 rules).
//   - eval.verify: "verify/AUC", "verify/TAR@FAR=…" (reachable FARs only), "verify/Acc(10-fold)",
//     "verify/n_pos", "verify/n_neg", "verify/fa@FAR=…" (the number of false accepts a FAR allows,
//     ⌊FAR·n_neg⌋: a TAR resting on fewer than 10 is noisy) and the ROC as the series
//     "verify/roc_fpr", "verify/roc_tpr" (TPR at each of rocFPRs); with eval.verify.hard_negatives
//     (which needs coarse labels), the same keys under "verify_hard/" for the positives against
//     same-coarse-label negatives. A count of negatives beyond the distinct pairs of the test set
//     ([NegativePairCount]) is an error.
//   - eval.rerank (k > 0): "rerank/R@k" for k in eval.ks (and 1), "rerank/MAP@R", "rerank/Recall@k",
//     "rerank/R-Precision" after seed 004's contextual re-ranking (App. I.5, Table 10;
//     metrics.ContextualRerank with K = eval.rerank.k, β = eval.rerank.beta or the paper's 0.1,
//     ε = eval.rerank.eps), and "rerank/k", "rerank/beta"; the same keys under "rerank_k<k>/" for
//     eval.rerank.k and each of eval.rerank.more_k (e.g. "rerank_k16/R@1", "rerank_k32/R@1":
//     Table 10's two columns from one trained network).
//   - eval.hierarchical with coarse labels (Omniglot alphabets, testCoarse): "HR@k" (a neighbour of
//     the same coarse label among the top k) and the retrieval metrics with the coarse labels as
//     the classes, "coarse/R@k", "coarse/MAP@R" (seed 004 Table 9's coarse level), and with
//     eval.full_map also "mAP/coarse", the exact full-ranking mAP at the coarse level (Table 9's
//     "coarse AP" beside the fine "mAP"; it tracks every same-coarse pair, memory Σ |coarse class|²).
//     Without coarse labels nothing is added.
//
// coarse is the coarse label of every test row (nil when the dataset has none).
func protocolMetrics(ev train.EvalConfig, seed int64, emb []float32, n, d int, labels, coarse []int64, m map[string]float64, series map[string][]float64) error {
	if ev.FullMAP {
		r, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: []int{1}, FullMAP: true})
		if err != nil {
			return fmt.Errorf("eval.full_map: %w", err)
		}
		m["mAP"] = r["mAP"]
	}
	if ev.Cluster {
		c, err := metrics.ClusterScores(emb, n, d, labels, metrics.KMeansOptions{Seed: uint64(seed)})
		if err != nil {
			return fmt.Errorf("eval.cluster: %w", err)
		}
		m["NMI"], m["AMI"] = c.NMI, c.AMI
	}
	if ev.ReID.Queries > 0 {
		sp, err := ReIDSplit(labels, ev.ReID.Queries, ev.ReID.Cameras)
		if err != nil {
			return fmt.Errorf("eval.reid: %w", err)
		}
		q, g := gatherRows(emb, d, sp.Query), gatherRows(emb, d, sp.Gallery)
		r, err := metrics.ReID(q, len(sp.Query), g, len(sp.Gallery), d, sp.QueryID, sp.QueryCam, sp.GalleryID, sp.GalleryCam,
			metrics.ReIDOptions{CMC: []int{1, 5, 10}})
		if err != nil {
			return fmt.Errorf("eval.reid: %w", err)
		}
		for _, k := range []string{"CMC@1", "CMC@5", "CMC@10", "mAP", "mINP", "n_queries"} {
			m["reid/"+k] = r[k]
		}
	}
	if ev.Rerank.K > 0 {
		if err := rerankMetrics(ev, emb, n, d, labels, m); err != nil {
			return err
		}
	}
	if ev.Hierarchical && coarse != nil {
		if err := hierarchicalMetrics(ev, emb, n, d, labels, coarse, m); err != nil {
			return err
		}
	}
	if v := ev.Verify; v.Negatives > 0 {
		// Pairs are drawn one by one until the count is reached: a count beyond the distinct pairs
		// the test set has would not sample anything new (and one of 10⁹ ran out of memory).
		if most := NegativePairCount(labels, nil); int64(v.Negatives) > most {
			return fmt.Errorf("eval.verify.negatives: %d is more than the %d distinct negative pairs of the %d test images", v.Negatives, most, n)
		}
		if v.HardNegatives > 0 {
			if coarse == nil {
				return fmt.Errorf("eval.verify.hard_negatives: %d needs coarse test labels (Omniglot alphabets); the test set has none", v.HardNegatives)
			}
			if most := NegativePairCount(labels, coarse); int64(v.HardNegatives) > most {
				return fmt.Errorf("eval.verify.hard_negatives: %d is more than the %d distinct same-coarse-label negative pairs of the %d test images", v.HardNegatives, most, n)
			}
		}
		pos := PositivePairs(labels, v.MaxPositives, protocolSeed)
		neg := NegativePairs(labels, nil, v.Negatives, protocolSeed+1)
		if err := verifySet("verify", emb, n, d, pos, neg, v.FARs, m, series); err != nil {
			return fmt.Errorf("eval.verify: %w", err)
		}
		if v.HardNegatives > 0 {
			hard := NegativePairs(labels, coarse, v.HardNegatives, protocolSeed+2)
			if err := verifySet("verify_hard", emb, n, d, pos, hard, v.FARs, m, series); err != nil {
				return fmt.Errorf("eval.verify (hard negatives): %w", err)
			}
		}
	}
	return nil
}

// protocolKs are the cutoffs of the re-ranking and hierarchical protocols: eval.ks with 1 added
// (the tables report R@1), ascending.
func protocolKs(ks []int) []int {
	if len(ks) == 0 {
		ks = []int{1, 2, 4, 8}
	}
	out := slices.Clone(ks)
	if !slices.Contains(out, 1) {
		out = append(out, 1)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// rerankMetrics stores the retrieval metrics after contextual re-ranking (the "ctx/" keys of
// metrics.Retrieval) under "rerank_k<k>/" for eval.rerank.k and each more_k, and those of
// eval.rerank.k also under "rerank/".
func rerankMetrics(ev train.EvalConfig, emb []float32, n, d int, labels []int64, m map[string]float64) error {
	r := ev.Rerank
	beta := r.BetaOrDefault()
	for i, k := range append([]int{r.K}, r.MoreK...) {
		res, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: protocolKs(ev.Ks),
			Rerank: &metrics.RerankOptions{K: k, Beta: beta, Eps: r.Eps}})
		if err != nil {
			return fmt.Errorf("eval.rerank (k %d): %w", k, err)
		}
		prefix := fmt.Sprintf("rerank_k%d/", k)
		for key, v := range res {
			if name, ok := strings.CutPrefix(key, "ctx/"); ok {
				m[prefix+name] = v
				if i == 0 {
					m["rerank/"+name] = v
				}
			}
		}
	}
	m["rerank/k"] = float64(r.K)
	m["rerank/beta"] = beta
	return nil
}

// hierarchicalMetrics stores HR@k (fine-label retrieval scored at the coarse level) and the
// retrieval metrics with the coarse labels as classes under "coarse/" (and "mAP/coarse" with
// eval.full_map).
func hierarchicalMetrics(ev train.EvalConfig, emb []float32, n, d int, labels, coarse []int64, m map[string]float64) error {
	ks := protocolKs(ev.Ks)
	hr, err := metrics.Retrieval(emb, n, d, labels, metrics.Options{K: ks, Coarse: coarse})
	if err != nil {
		return fmt.Errorf("eval.hierarchical: %w", err)
	}
	for key, v := range hr {
		if strings.HasPrefix(key, "HR@") {
			m[key] = v
		}
	}
	cr, err := metrics.Retrieval(emb, n, d, coarse, metrics.Options{K: ks, FullMAP: ev.FullMAP})
	if err != nil {
		return fmt.Errorf("eval.hierarchical (coarse labels): %w", err)
	}
	for _, k := range ks {
		key := fmt.Sprintf("R@%d", k)
		m["coarse/"+key] = cr[key]
	}
	m["coarse/MAP@R"] = cr["MAP@R"]
	if ev.FullMAP {
		m["mAP/coarse"] = cr["mAP"]
	}
	return nil
}

// verifySet scores the positive and negative pairs (shuffled together with a fixed seed, so the
// contiguous folds of the k-fold accuracy mix both) and stores the keys under prefix.
func verifySet(prefix string, emb []float32, n, d int, pos, neg []metrics.VerifyPair, fars []float64, m map[string]float64, series map[string][]float64) error {
	pairs := append(append([]metrics.VerifyPair{}, pos...), neg...)
	rng := rand.New(rand.NewPCG(protocolSeed, 3))
	rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	res, err := metrics.Verification(emb, n, d, pairs, metrics.VerifyOptions{FARs: fars})
	if err != nil {
		return err
	}
	for k, v := range res.Metrics {
		m[prefix+"/"+k] = v
	}
	m[prefix+"/n_pos"] = float64(len(pos))
	m[prefix+"/n_neg"] = float64(len(neg))
	for _, t := range res.TAR {
		if t.Reachable {
			m[prefix+"/fa@FAR="+metrics.FARKey(t.FAR)] = math.Floor(t.FAR * float64(len(neg)))
		}
	}
	tpr := make([]float64, len(rocFPRs))
	for i, f := range rocFPRs {
		tpr[i] = tprAt(res.ROC, f)
	}
	series[prefix+"/roc_fpr"] = append([]float64(nil), rocFPRs...)
	series[prefix+"/roc_tpr"] = tpr
	return nil
}

// tprAt is the largest TPR of the ROC points whose FPR is ≤ f (the TAR@FAR convention of
// metrics.TARAtFARPoint).
func tprAt(c *metrics.ROCCurve, f float64) float64 {
	best := 0.0
	for i, x := range c.FPR {
		if x <= f && c.TPR[i] > best {
			best = c.TPR[i]
		}
	}
	return best
}

// ReIDProtocolSplit is a query/gallery split with identities and cameras, as metrics.ReID takes it.
type ReIDProtocolSplit struct {
	Query, Gallery       []int // row indices into the test set
	QueryID, GalleryID   []int64
	QueryCam, GalleryCam []int64
}

// ReIDSplit builds the re-identification stand-in of train.ReIDProtocol from class labels (test
// order): the i-th image (0-based) of every class is seen by camera i mod cameras and is a query
// when i < queries, else in the gallery. A class with no more than queries images keeps all of
// them as queries (they then have no correct match and metrics.ReID skips them).
//
// Omniglot (20 drawings of each character by 20 drawers): with queries 4 and cameras 4 every
// character has one query per camera and 16 gallery drawings, of which 12 (the other cameras) are
// correct matches and 4 junk.
func ReIDSplit(labels []int64, queries, cameras int) (*ReIDProtocolSplit, error) {
	if queries < 1 || cameras < 2 {
		return nil, fmt.Errorf("queries %d and cameras %d: want ≥ 1 and ≥ 2", queries, cameras)
	}
	seen := map[int64]int{}
	s := &ReIDProtocolSplit{}
	for i, l := range labels {
		k := seen[l]
		seen[l] = k + 1
		cam := int64(k % cameras)
		if k < queries {
			s.Query, s.QueryID, s.QueryCam = append(s.Query, i), append(s.QueryID, l), append(s.QueryCam, cam)
		} else {
			s.Gallery, s.GalleryID, s.GalleryCam = append(s.Gallery, i), append(s.GalleryID, l), append(s.GalleryCam, cam)
		}
	}
	if len(s.Gallery) == 0 {
		return nil, fmt.Errorf("no gallery images: every class has at most %d images", queries)
	}
	return s, nil
}

// PositivePairs returns every same-label pair (i < j, in row order) or, when max > 0 and there
// are more, max of them drawn without replacement with seed (then sorted by (i, j)).
func PositivePairs(labels []int64, max int, seed uint64) []metrics.VerifyPair {
	groups := map[int64][]int{}
	var order []int64
	for i, l := range labels {
		if _, ok := groups[l]; !ok {
			order = append(order, l)
		}
		groups[l] = append(groups[l], i)
	}
	var out []metrics.VerifyPair
	for _, l := range order {
		g := groups[l]
		for a := 0; a < len(g); a++ {
			for b := a + 1; b < len(g); b++ {
				out = append(out, metrics.VerifyPair{I: g[a], J: g[b], Same: true})
			}
		}
	}
	if max > 0 && len(out) > max {
		rng := rand.New(rand.NewPCG(seed, 1))
		idx := rng.Perm(len(out))[:max]
		slices.Sort(idx)
		sel := make([]metrics.VerifyPair, max)
		for k, i := range idx {
			sel[k] = out[i]
		}
		out = sel
	}
	return out
}

// NegativePairCount is the number of distinct unordered pairs of rows with different labels, and
// with coarse non-nil the same coarse label: the most negative pairs [NegativePairs] can draw
// without repeating itself.
func NegativePairCount(labels, coarse []int64) int64 {
	pairs := func(k int64) int64 { return k * (k - 1) / 2 }
	type key struct{ coarse, label int64 }
	byCoarse := map[int64]int64{}
	byLabel := map[key]int64{}
	for i, l := range labels {
		var c int64
		if coarse != nil {
			c = coarse[i]
		}
		byCoarse[c]++
		byLabel[key{c, l}]++
	}
	var total int64
	for _, k := range byCoarse {
		total += pairs(k)
	}
	for _, k := range byLabel {
		total -= pairs(k)
	}
	return total
}

// NegativePairs draws count pairs (i, j), i ≠ j, of different labels uniformly with seed (with
// replacement: at these counts repeats are rare and harmless). With coarse non-nil the two rows
// must also share their coarse label (hard negatives: another character of the same alphabet); a
// row whose coarse group holds a single class is redrawn.
func NegativePairs(labels, coarse []int64, count int, seed uint64) []metrics.VerifyPair {
	n := len(labels)
	rng := rand.New(rand.NewPCG(seed, 2))
	var byCoarse map[int64][]int
	if coarse != nil {
		byCoarse = map[int64][]int{}
		for i, c := range coarse {
			byCoarse[c] = append(byCoarse[c], i)
		}
	}
	out := make([]metrics.VerifyPair, 0, count)
	for tries := 0; len(out) < count && tries < 1000*count; tries++ {
		i := rng.IntN(n)
		var j int
		if coarse != nil {
			g := byCoarse[coarse[i]]
			j = g[rng.IntN(len(g))]
		} else {
			j = rng.IntN(n)
		}
		if labels[i] == labels[j] {
			continue
		}
		out = append(out, metrics.VerifyPair{I: i, J: j})
	}
	return out
}

// testCoarse returns the coarse label of every test row when the dataset has one the runner knows:
// Omniglot's alphabets (data.OmniglotAlphabet of the character label); nil otherwise.
func testCoarse(dataset string, labels []int64) []int64 {
	if dataset != "omniglot" {
		return nil
	}
	out := make([]int64, len(labels))
	for i, l := range labels {
		out[i] = int64(data.OmniglotAlphabet(int(l)))
	}
	return out
}

func gatherRows(emb []float32, d int, rows []int) []float32 {
	out := make([]float32, 0, len(rows)*d)
	for _, r := range rows {
		out = append(out, emb[r*d:(r+1)*d]...)
	}
	return out
}
