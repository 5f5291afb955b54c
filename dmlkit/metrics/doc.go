// Package metrics evaluates embeddings: an exact, blocked kNN engine and the retrieval, re-identification,
// clustering, verification and threshold-consistency metrics the reproduced papers report. It is pure Go
// host code (float32 inputs, float64 metric arithmetic) and knows nothing of GoMLX or training.
//
// # kNN engine
//
// KNN and KNNSelf return the exact top-K neighbours per query under Cosine, InnerProduct or L2. Query blocks
// are scored against reference blocks by a packed micro-kernel (AVX-512 14×32 or AVX2 6×16 assembly on
// amd64, a portable Go 4×4 kernel elsewhere or with the purego build tag), each query keeping a bounded heap,
// so memory stays O((nq+nr)·d + nq·K) and no n×n matrix is ever formed. Self-matches are removed by index
// (ExcludeSelf, or a per-query Exclude index). Lists are sorted best-first, ties broken by the smaller
// reference index. Scores are float32 FMA chains in dimension order, deterministic for a pair whatever
// the blocking or number of workers. Self-retrieval under Cosine or InnerProduct (KNNSelf, Retrieval of a
// set against itself) scores each pair of blocks once and feeds both rows' heaps, since s(i, j) = s(j, i)
// bit for bit: half the arithmetic, the same neighbours and scores.
//
// # Retrieval metrics
//
// Retrieval (self-retrieval, leave-one-out) and RetrievalQG (query/gallery, In-Shop style) return a map with
// keys as papers write them: R@k (hit rate), Recall@k (fraction of positives, seed 003 Eq. 1), MAP@R and
// R-Precision (Musgrave et al. 2020), mAP@k (÷ min(k, |P|)), exact full-ranking mAP, hierarchical HR@k, and
// ctx/… after contextual re-ranking (seed 004 App. I.5); on request (Options.Peers) mAP@k and precision@k as
// OML and PML define them (oml/…, pml/…). Options documents every definition. Queries without
// positives are skipped and counted (n_skipped), never NaN. PositiveCounts gives R = |P| per query from the
// labels alone.
//
// # Re-identification
//
// ReID implements the Market-1501 protocol (junk removal, distractors kept) with CMC@k, mAP, mINP and,
// optionally, layumi's trapezoidal AP.
//
// # Validation
//
// Every entry point validates its input first and returns an error naming the argument and row: length
// mismatches, NaN/Inf values, zero-norm rows under Cosine, empty input, k larger than the gallery.
// L2Normalize normalises rows in place and rejects zero rows.
//
// # Benchmark
//
// TestSOPBench (bench_test.go) runs only with DMLKIT_BENCH=1: it times top-100 self-retrieval on a synthetic
// SOP-sized set (60,502 × 512, about 11,300 clusters) next to faiss IndexFlatIP (benchref/faiss_knn.py via
// /usr/bin/python3 and Debian python3-faiss) and prints time, peak memory and the Go/faiss ratio.
package metrics
