package metrics

import (
	"fmt"
	"strconv"
)

// ReIDOptions configures ReID.
type ReIDOptions struct {
	// CMC lists the ranks k of the CMC@k keys (default 1, 5, 10, 20).
	CMC []int
	// Similarity is the scoring rule (default Cosine).
	Similarity Similarity
	// TrapezoidAP also reports "mAP(trapz)": the AP of layumi/Person_reID_baseline_pytorch
	// (evaluate_gpu.py), which averages the precision before and after each correct match:
	// AP = Σ_i (1/|G|)·(P_old + P_i)/2 with P_i = i/rank_i, P_old = (i−1)/(rank_i−1) (1 when rank_i = 1).
	TrapezoidAP bool
	// Workers, QueryBlock, RefBlock and Progress are passed to the kNN engine.
	Workers              int
	QueryBlock, RefBlock int
	Progress             func(done, total int)
}

// ReID evaluates person/vehicle re-identification under the Market-1501 protocol (Zheng et al. 2015):
// query [nq, d] against gallery [ng, d] with person ids and camera ids.
//
// For each query:
//   - junk gallery entries are removed from its ranking: those with the query's id AND camera, and those
//     with id −1 (Market-1501 "junk" images);
//   - distractors (id 0) stay, as negatives;
//   - the correct matches G are the remaining entries with the query's id (other cameras).
//
// Keys:
//
//	CMC@k      fraction of queries whose first correct match is at rank ≤ k (cumulative match characteristic).
//	mAP        mean of the non-interpolated AP = (1/|G|) Σ_i i/rank_i over the ranked, junk-free gallery.
//	mINP       mean inverse negative penalty (Ye et al., "Deep Learning for Person Re-identification: A Survey
//	           and Outlook", TPAMI 2021): INP = |G| / R_hardest, R_hardest = rank of the last correct match.
//	mAP(trapz) layumi's trapezoidal AP (only with TrapezoidAP).
//	n_queries, n_skipped  queries evaluated / queries without any correct match (left out of all averages).
//
// The ranking is exact over the whole gallery (no top-K truncation): every correct match's rank is
// counted during the blocked search. Ties are broken by smaller gallery index.
func ReID(query []float32, nq int, gallery []float32, ng int, d int, qID, qCam, gID, gCam []int64, opt ReIDOptions) (map[string]float64, error) {
	for _, c := range []struct {
		l    []int64
		n    int
		what string
	}{{qID, nq, "query ids"}, {qCam, nq, "query cameras"}, {gID, ng, "gallery ids"}, {gCam, ng, "gallery cameras"}} {
		if err := validateLabels(c.l, c.n, c.what); err != nil {
			return nil, err
		}
	}
	cmc := opt.CMC
	if len(cmc) == 0 {
		cmc = []int{1, 5, 10, 20}
	}
	for _, k := range cmc {
		if k < 1 {
			return nil, fmt.Errorf("metrics: re-id: CMC rank %d must be ≥ 1", k)
		}
	}
	kopt := KNNOptions{K: 1, Similarity: opt.Similarity, Workers: opt.Workers, QueryBlock: opt.QueryBlock,
		RefBlock: opt.RefBlock, Progress: opt.Progress}
	e, err := newKNNEngine(query, nq, gallery, ng, d, kopt, false)
	if err != nil {
		return nil, err
	}
	// Same-id entries are positives unless they share the query's camera (junk); id −1 is junk.
	e.posr = e.knnBuildPosRanks(qID, gID, true, func(i int, z int32) bool {
		return gID[z] != -1 && gCam[z] != qCam[i]
	})
	if _, err := e.run(nil); err != nil {
		return nil, err
	}
	hits := make([]float64, len(cmc))
	var mAP, mINP, trapz float64
	used := 0
	var rk []int
	for i := 0; i < nq; i++ {
		if qID[i] == -1 {
			continue // a junk query has no defined matches
		}
		rk = e.posr.ranks(i, rk)
		if len(rk) == 0 {
			continue
		}
		used++
		for u, k := range cmc {
			if rk[0] <= k {
				hits[u]++
			}
		}
		g := float64(len(rk))
		var ap, apt float64
		for t, r := range rk {
			p := float64(t+1) / float64(r)
			ap += p
			old := 1.0
			if r > 1 {
				old = float64(t) / float64(r-1)
			}
			apt += (old + p) / 2
		}
		mAP += ap / g
		trapz += apt / g
		mINP += g / float64(rk[len(rk)-1])
	}
	if used == 0 {
		return nil, fmt.Errorf("metrics: re-id: no query has a correct match in the gallery (after junk removal)")
	}
	u := float64(used)
	res := map[string]float64{"mAP": mAP / u, "mINP": mINP / u, "n_queries": float64(nq), "n_skipped": float64(nq - used)}
	for j, k := range cmc {
		res["CMC@"+strconv.Itoa(k)] = hits[j] / u
	}
	if opt.TrapezoidAP {
		res["mAP(trapz)"] = trapz / u
	}
	return res, nil
}
