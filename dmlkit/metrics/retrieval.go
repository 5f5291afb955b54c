package metrics

import (
	"fmt"
	"slices"
	"strconv"
)

// Options configures Retrieval and RetrievalQG.
//
// Keys of the returned map (k ranges over K, MAPAtK as given):
//
//	R@k          hit rate: fraction of queries with at least one positive among the k nearest neighbours
//	             (seed 003 §4.1 "r@k", seed 004 §5 "R@k"; the R@k of CUB/Cars/SOP/In-Shop tables).
//	Recall@k     fraction of the query's positives retrieved in the top k: |P ∩ top-k| / |P|
//	             (seed 003 Eq. 1 — divided by |P|, not by min(k, |P|)).
//	MAP@R        (1/R) Σ_{i≤R} P@i·rel_i with R = |P| (Musgrave et al. 2020, PML AccuracyCalculator).
//	R-Precision  |P ∩ top-R| / R (same source).
//	mAP@k        (1/min(k, |P|)) Σ_{i≤k} P@i·rel_i: a perfect ranking scores 1 whatever k and |P| (the
//	             common recommender-systems mAP@k; OML's calc_map used it before Feb 2023). Neither peer
//	             divides this way today; their conventions are the keys below, on request (Peers).
//	mAP          full-ranking average precision (1/|P|) Σ_{p∈P} (#positives ranked ≤ p)/rank(p), exact, only
//	             when FullMAP is set (it tracks every positive's rank during the search).
//	oml/mAP@k    OML's map@k (oml.functional.metrics.calc_map since Feb 2023): (1/n_k) Σ_{i≤k} P@i·rel_i with
//	             n_k the positives found in the top k (0 when none is found). It does not fall when positives
//	             are missing from the top k: a query with one hit at rank 1 scores 1 whatever |P|.
//	pml/mAP@k    PML's mean_average_precision (AccuracyCalculator(k=k)): (1/R) Σ_{i≤k} P@i·rel_i with R = |P|,
//	             the number of positives (count_per_query), not capped at k: with |P| > k even a perfect
//	             ranking scores k/|P|.
//	oml/P@k      OML's precision@k (calc_precision): |P ∩ top-k| / min(k, |P|).
//	pml/P@k      PML's precision_at_k: |P ∩ top-k| / k.
//	             The peer keys come only with Options.Peers: mAP@k at the MAPAtK cutoffs (at K when MAPAtK
//	             is empty), P@k at K. Queries without positives are left out as everywhere here (PML does
//	             the same; OML would count such a query as 0).
//	HR@k         hierarchical hit rate, only when coarse labels are given: fraction of queries with at least one
//	             reference of the same coarse label (SOP super-class, Omniglot alphabet) among the top k.
//	ctx/…        the same keys after contextual re-ranking (Rerank), self-retrieval only.
//	n_queries    number of queries evaluated; n_skipped: queries without any positive (see below);
//	n_skipped_coarse: queries without any coarse positive (skipped in HR@k).
//
// Positives P of a query are the references with its label, excluding the query itself in self-retrieval
// (leave-one-out). A query with |P| = 0 (a class of size 1 in self-retrieval) has no defined metric: it is
// left out of every average and counted in n_skipped; the metrics are never NaN. If every query is skipped,
// Retrieval returns an error.
//
// The ranking order is that of KNN: score descending, ties by smaller reference index.
type Options struct {
	// K lists the cutoffs for R@k, Recall@k and HR@k (default 1, 2, 4, 8).
	K []int
	// MAPAtK lists the cutoffs for mAP@k (default none).
	MAPAtK []int
	// Peers adds the keys of other libraries' conventions: ConventionOML (oml/mAP@k, oml/P@k) and
	// ConventionPML (pml/mAP@k, pml/P@k), see the key list above.
	Peers []Convention
	// Similarity is the scoring rule (default Cosine).
	Similarity Similarity
	// FullMAP adds the exact full-ranking "mAP" key.
	FullMAP bool
	// Coarse holds coarse labels of the embeddings (self-retrieval) or of the queries (query/gallery);
	// GalleryCoarse those of the gallery. When set, HR@k keys are added.
	Coarse, GalleryCoarse []int64
	// Rerank, when non-nil, adds ctx/… keys computed after contextual re-ranking (self-retrieval only).
	Rerank *RerankOptions
	// Workers, QueryBlock, RefBlock and Progress are passed to the kNN engine (see KNNOptions).
	Workers              int
	QueryBlock, RefBlock int
	Progress             func(done, total int)
}

// Convention names a peer library's definition of mAP@k and precision@k ([Options].Peers).
type Convention string

const (
	// ConventionOML is open-metric-learning's (oml.functional.metrics): map@k divides by the
	// positives found in the top k, precision@k by min(k, |P|).
	ConventionOML Convention = "oml"
	// ConventionPML is pytorch-metric-learning's (AccuracyCalculator): mean_average_precision
	// divides by R = |P|, precision_at_k by k.
	ConventionPML Convention = "pml"
)

// ParseConvention returns the convention named s ("oml" or "pml").
func ParseConvention(s string) (Convention, error) {
	switch c := Convention(s); c {
	case ConventionOML, ConventionPML:
		return c, nil
	}
	return "", fmt.Errorf("metrics: unknown convention %q: want oml or pml", s)
}

func (o *Options) ks() []int {
	if len(o.K) == 0 {
		return []int{1, 2, 4, 8}
	}
	return o.K
}

// PositiveCounts returns, for every query, the number of references sharing its label — the R of MAP@R and
// the |P| of Recall@k — from label counts alone (no search). selfIncluded says that query i is reference i
// (self-retrieval), in which case the query itself is not counted.
func PositiveCounts(queryLabels, refLabels []int64, selfIncluded bool) []int {
	cnt := make(map[int64]int, len(refLabels)/2+1)
	for _, l := range refLabels {
		cnt[l]++
	}
	out := make([]int, len(queryLabels))
	for i, l := range queryLabels {
		out[i] = cnt[l]
		if selfIncluded {
			out[i]--
		}
	}
	return out
}

// Retrieval evaluates self-retrieval (leave-one-out: each embedding queries all the others) of emb
// ([n, d], row-major) with the given labels. See Options for the keys and conventions.
func Retrieval(emb []float32, n, d int, labels []int64, opt Options) (map[string]float64, error) {
	if err := validateLabels(labels, n, "labels"); err != nil {
		return nil, err
	}
	if opt.Coarse != nil {
		if err := validateLabels(opt.Coarse, n, "coarse labels"); err != nil {
			return nil, err
		}
	}
	return retrievalRun(emb, n, emb, n, d, labels, labels, opt.Coarse, opt.Coarse, true, opt)
}

// RetrievalQG evaluates query/gallery retrieval (In-Shop style): queries [nq, d] are ranked against a
// separate gallery [ng, d]; nothing is excluded. Coarse labels (optional) are opt.Coarse for the queries and
// opt.GalleryCoarse for the gallery.
func RetrievalQG(query []float32, nq int, gallery []float32, ng int, d int, queryLabels, galleryLabels []int64, opt Options) (map[string]float64, error) {
	if err := validateLabels(queryLabels, nq, "query labels"); err != nil {
		return nil, err
	}
	if err := validateLabels(galleryLabels, ng, "gallery labels"); err != nil {
		return nil, err
	}
	if (opt.Coarse == nil) != (opt.GalleryCoarse == nil) {
		return nil, fmt.Errorf("metrics: query/gallery coarse labels: give both Coarse and GalleryCoarse or neither")
	}
	if opt.Coarse != nil {
		if err := validateLabels(opt.Coarse, nq, "query coarse labels"); err != nil {
			return nil, err
		}
		if err := validateLabels(opt.GalleryCoarse, ng, "gallery coarse labels"); err != nil {
			return nil, err
		}
	}
	if opt.Rerank != nil {
		return nil, fmt.Errorf("metrics: contextual re-ranking needs self-retrieval (Retrieval), not query/gallery")
	}
	return retrievalRun(query, nq, gallery, ng, d, queryLabels, galleryLabels, opt.Coarse, opt.GalleryCoarse, false, opt)
}

func retrievalRun(q []float32, nq int, r []float32, nr int, d int, qLab, rLab, qCoarse, rCoarse []int64, self bool, opt Options) (map[string]float64, error) {
	cand := nr
	if self {
		cand--
	}
	ks := opt.ks()
	if err := validateKs(ks, cand, "K"); err != nil {
		return nil, err
	}
	if err := validateKs(opt.MAPAtK, cand, "MAPAtK"); err != nil {
		return nil, err
	}
	pos := PositiveCounts(qLab, rLab, self)
	kmax := 0
	for _, k := range ks {
		kmax = max(kmax, k)
	}
	for _, k := range opt.MAPAtK {
		kmax = max(kmax, k)
	}
	for _, p := range pos {
		kmax = max(kmax, p) // MAP@R and R-Precision need the top R
	}
	if opt.Rerank != nil {
		if err := opt.Rerank.validate(cand); err != nil {
			return nil, err
		}
		kmax = max(kmax, opt.Rerank.KPrime, opt.Rerank.K)
	}
	kmax = min(kmax, cand)
	kopt := KNNOptions{K: kmax, Similarity: opt.Similarity, ExcludeSelf: self, Workers: opt.Workers,
		QueryBlock: opt.QueryBlock, RefBlock: opt.RefBlock, Progress: opt.Progress}
	e, err := newKNNEngine(q, nq, r, nr, d, kopt, self && knnSameRows(q, r))
	if err != nil {
		return nil, err
	}
	if opt.FullMAP {
		e.posr = e.knnBuildPosRanks(qLab, rLab, false, nil)
	}
	nb, err := e.run(nil)
	if err != nil {
		return nil, err
	}
	for _, c := range opt.Peers {
		if _, err := ParseConvention(string(c)); err != nil {
			return nil, err
		}
	}
	res, err := RetrievalFromNeighbors(nb, qLab, rLab, qCoarse, rCoarse, self, ks, opt.MAPAtK, opt.Peers...)
	if err != nil {
		return nil, err
	}
	if e.posr != nil {
		m, _ := knnFullMAP(e.posr, nq)
		res["mAP"] = m
	}
	if opt.Rerank != nil {
		rr, err := ContextualRerank(nb, *opt.Rerank)
		if err != nil {
			return nil, err
		}
		res2, err := RetrievalFromNeighbors(rr, qLab, rLab, qCoarse, rCoarse, self, ks, opt.MAPAtK, opt.Peers...)
		if err != nil {
			return nil, err
		}
		for k, v := range res2 {
			if k[0] != 'n' { // counts are unchanged
				res["ctx/"+k] = v
			}
		}
	}
	return res, nil
}

// knnFullMAP averages the exact full-ranking AP over the queries with positives.
func knnFullMAP(pr *knnPosRanks, nq int) (float64, int) {
	var sum float64
	used := 0
	var rk []int
	for i := 0; i < nq; i++ {
		rk = pr.ranks(i, rk)
		if len(rk) == 0 {
			continue
		}
		var ap float64
		for t, r := range rk {
			ap += float64(t+1) / float64(r)
		}
		sum += ap / float64(len(rk))
		used++
	}
	if used == 0 {
		return 0, 0
	}
	return sum / float64(used), used
}

// RetrievalFromNeighbors computes R@k, Recall@k, MAP@R, R-Precision, mAP@k (and HR@k when coarse labels are
// given) from precomputed neighbour lists. nb must hold at least max(k) neighbours and, for MAP@R, at least
// R of every query; selfIncluded says query i is reference i (excluded from its own list and from its
// positives). peers adds the keys of those conventions (Options.Peers). See Options for the
// definitions and keys.
func RetrievalFromNeighbors(nb *Neighbors, qLab, rLab, qCoarse, rCoarse []int64, selfIncluded bool, ks, mapAtK []int, peers ...Convention) (map[string]float64, error) {
	if len(qLab) != nb.NQ {
		return nil, fmt.Errorf("metrics: %d query labels for %d neighbour lists", len(qLab), nb.NQ)
	}
	for _, k := range append(slices.Clone(ks), mapAtK...) {
		if k < 1 || k > nb.K {
			return nil, fmt.Errorf("metrics: k = %d outside [1, %d] (neighbours per query)", k, nb.K)
		}
	}
	pos := PositiveCounts(qLab, rLab, selfIncluded)
	var coarsePos []int
	if qCoarse != nil {
		coarsePos = PositiveCounts(qCoarse, rCoarse, selfIncluded)
	}
	hit := make([]float64, len(ks))
	rec := make([]float64, len(ks))
	hhit := make([]float64, len(ks))
	mapk := make([]float64, len(mapAtK))
	peerMapK := mapAtK
	if len(peerMapK) == 0 {
		peerMapK = ks
	}
	var omlMap, pmlMap, omlP, pmlP []float64
	for _, c := range peers {
		switch c {
		case ConventionOML:
			omlMap, omlP = make([]float64, len(peerMapK)), make([]float64, len(ks))
		case ConventionPML:
			pmlMap, pmlP = make([]float64, len(peerMapK)), make([]float64, len(ks))
		default:
			return nil, fmt.Errorf("metrics: unknown convention %q: want oml or pml", c)
		}
	}
	var mapr, rprec float64
	used, usedCoarse, skipped, skippedCoarse := 0, 0, 0, 0
	for i := 0; i < nb.NQ; i++ {
		idx, _ := nb.Row(i)
		if qCoarse != nil {
			if coarsePos[i] == 0 {
				skippedCoarse++
			} else {
				usedCoarse++
				first := -1
				for t, z := range idx {
					if z >= 0 && rCoarse[z] == qCoarse[i] {
						first = t
						break
					}
				}
				for u, k := range ks {
					if first >= 0 && first < k {
						hhit[u]++
					}
				}
			}
		}
		P := pos[i]
		if P == 0 {
			skipped++
			continue
		}
		if P > nb.K {
			return nil, fmt.Errorf("metrics: query %d has R = %d positives but only %d neighbours were retrieved (MAP@R needs K ≥ R)", i, P, nb.K)
		}
		used++
		lab := qLab[i]
		// Walk the list once, accumulating the cumulative relevant count and precision sum.
		found := 0
		var apSum float64 // Σ_{t≤pos} P@t·rel_t
		for t := 0; t < nb.K; t++ {
			if z := idx[t]; z >= 0 && rLab[z] == lab {
				found++
				apSum += float64(found) / float64(t+1)
			}
			n := t + 1
			if n == P {
				mapr += apSum / float64(P)
				rprec += float64(found) / float64(P)
			}
			for u, k := range ks {
				if k == n {
					if found > 0 {
						hit[u]++
					}
					rec[u] += float64(found) / float64(P)
					if omlP != nil {
						omlP[u] += float64(found) / float64(min(k, P))
					}
					if pmlP != nil {
						pmlP[u] += float64(found) / float64(k)
					}
				}
			}
			for u, k := range mapAtK {
				if k == n {
					mapk[u] += apSum / float64(min(k, P))
				}
			}
			for u, k := range peerMapK {
				if k == n {
					if omlMap != nil && found > 0 {
						omlMap[u] += apSum / float64(found)
					}
					if pmlMap != nil {
						pmlMap[u] += apSum / float64(P)
					}
				}
			}
		}
	}
	if used == 0 {
		return nil, fmt.Errorf("metrics: no query has a positive (all %d queries are alone in their class)", nb.NQ)
	}
	res := map[string]float64{"n_queries": float64(nb.NQ), "n_skipped": float64(skipped)}
	u := float64(used)
	for j, k := range ks {
		ks := strconv.Itoa(k)
		res["R@"+ks] = hit[j] / u
		res["Recall@"+ks] = rec[j] / u
		if qCoarse != nil && usedCoarse > 0 {
			res["HR@"+ks] = hhit[j] / float64(usedCoarse)
		}
	}
	if qCoarse != nil {
		res["n_skipped_coarse"] = float64(skippedCoarse)
	}
	for j, k := range mapAtK {
		res["mAP@"+strconv.Itoa(k)] = mapk[j] / u
	}
	for j, k := range peerMapK {
		if omlMap != nil {
			res["oml/mAP@"+strconv.Itoa(k)] = omlMap[j] / u
		}
		if pmlMap != nil {
			res["pml/mAP@"+strconv.Itoa(k)] = pmlMap[j] / u
		}
	}
	for j, k := range ks {
		if omlP != nil {
			res["oml/P@"+strconv.Itoa(k)] = omlP[j] / u
		}
		if pmlP != nil {
			res["pml/P@"+strconv.Itoa(k)] = pmlP[j] / u
		}
	}
	res["MAP@R"] = mapr / u
	res["R-Precision"] = rprec / u
	return res, nil
}
