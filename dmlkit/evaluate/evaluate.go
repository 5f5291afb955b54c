// Package evaluate composes dmlkit's metric suite: given embeddings and whatever side information
// is available (labels, a query/gallery mask, coarse labels, camera ids, verification pairs) it
// computes every applicable metric and returns them under the names papers use. It is what
// `dmlkit eval`, the trainer's evaluation hooks and the experiments record.
//
// The metrics themselves, with their definitions and sources, live in package metrics. The paper
// diagnostics (Diagnostics: one paper's figure protocols, e.g. seed 000's per-alphabet thresholds)
// live here too, computed only for the runs of a spec that names them.
package evaluate

import (
	"fmt"
	"maps"

	"github.com/dmlkit/dmlkit/dmlkit/metrics"
)

// Inputs are the data to evaluate. Emb is row-major [N, D].
type Inputs struct {
	Emb    []float32
	N, D   int
	Labels []int64 // class (or identity) of every row

	// QueryMask, when set, splits the rows into queries (true) and gallery (false): In-Shop style
	// query/gallery retrieval instead of leave-one-out self-retrieval.
	QueryMask []bool
	// Coarse labels (SOP super-class, Omniglot alphabet) add hierarchical HR@k.
	Coarse []int64
	// Cameras, with QueryMask, switch retrieval to the re-identification protocol (Market-1501
	// rules: same id + same camera and id −1 removed from each query's gallery).
	Cameras []int64
	// Pairs add verification metrics (ROC AUC, TAR@FAR, 10-fold accuracy).
	Pairs []metrics.VerifyPair
}

// Options selects and configures the metrics. The zero value computes everything applicable with
// the papers' defaults.
type Options struct {
	K      []int // R@k / Recall@k cutoffs (default 1, 2, 4, 8, 16, 32)
	MAPAtK []int // mAP@k cutoffs (default none)
	// Peers adds mAP@k and precision@k as OML and/or PML define them (oml/…, pml/… keys; see
	// metrics.Options.Peers). Not with Cameras (re-identification has its own mAP).
	Peers     []metrics.Convention
	NoFullMAP bool // skip the exact full-ranking mAP
	// NoNormalize evaluates the embeddings as given (inner product); by default rows are
	// L2-normalised first, so similarities are cosines.
	NoNormalize bool
	NoOPIS      bool                // skip OPIS and ε-OPIS
	OPIS        metrics.OPISOptions // OPIS settings (zero value: the paper's)
	NoCluster   bool                // skip k-means NMI/AMI
	KMeans      metrics.KMeansOptions
	Rerank      *metrics.RerankOptions // contextual re-ranking keys ctx/… (self-retrieval only)
	Verify      metrics.VerifyOptions
	Progress    func(stage string, done, total int)
}

// DefaultK are the R@k cutoffs reported by default.
var DefaultK = []int{1, 2, 4, 8, 16, 32}

// Result holds the metric map and the detailed OPIS result (for utility-curve plots).
type Result struct {
	Metrics map[string]float64
	OPIS    *metrics.OPISResult // nil when skipped
}

// Run computes the metrics. Keys: "R@k", "Recall@k", "MAP@R", "R-Precision", "mAP", "mAP@k",
// "HR@k" (coarse), "NMI", "AMI", "OPIS", "10%-OPIS" (ε-OPIS with ε = OPIS.Epsilon, named by its
// percentage), re-id "CMC@k", "mAP", "mINP", verification "AUC", "TAR@FAR=…", "Acc(10-fold)", and
// bookkeeping "n_queries", "n_skipped". Inputs are validated first; errors name the problem.
func Run(in Inputs, opt Options) (*Result, error) {
	if err := metrics.ValidateEmbeddings(in.Emb, in.N, in.D, "embeddings", !opt.NoNormalize); err != nil {
		return nil, err
	}
	if len(in.Labels) != in.N {
		return nil, fmt.Errorf("evaluate: %d labels for %d embeddings", len(in.Labels), in.N)
	}
	for name, side := range map[string]int{"query mask": len(in.QueryMask), "coarse labels": len(in.Coarse), "camera ids": len(in.Cameras)} {
		if side != 0 && side != in.N {
			return nil, fmt.Errorf("evaluate: %d %s for %d embeddings", side, name, in.N)
		}
	}
	if in.Cameras != nil && in.QueryMask == nil {
		return nil, fmt.Errorf("evaluate: camera ids need a query mask (re-identification is query/gallery)")
	}
	if in.Cameras != nil && len(opt.Peers) > 0 {
		return nil, fmt.Errorf("evaluate: the OML/PML conventions (Peers) apply to retrieval, not to re-identification with camera ids")
	}
	emb := in.Emb
	sim := metrics.InnerProduct
	if !opt.NoNormalize {
		emb = append([]float32(nil), in.Emb...)
		if err := metrics.L2Normalize(emb, in.N, in.D); err != nil {
			return nil, err
		}
	}
	ks := opt.K
	if len(ks) == 0 {
		ks = DefaultK
	}
	progress := func(stage string) func(done, total int) {
		if opt.Progress == nil {
			return nil
		}
		return func(done, total int) { opt.Progress(stage, done, total) }
	}
	out := &Result{Metrics: map[string]float64{}}

	// Retrieval.
	switch {
	case in.QueryMask == nil:
		ro := metrics.Options{K: clampK(ks, in.N-1), MAPAtK: opt.MAPAtK, Peers: opt.Peers, Similarity: sim, FullMAP: !opt.NoFullMAP,
			Coarse: in.Coarse, Rerank: opt.Rerank, Progress: progress("retrieval")}
		m, err := metrics.Retrieval(emb, in.N, in.D, in.Labels, ro)
		if err != nil {
			return nil, err
		}
		maps.Copy(out.Metrics, m)
	default:
		q, g := split(in, emb)
		if q.n == 0 || g.n == 0 {
			return nil, fmt.Errorf("evaluate: query mask selects %d queries and %d gallery rows; both must be non-empty", q.n, g.n)
		}
		if in.Cameras != nil {
			m, err := metrics.ReID(q.emb, q.n, g.emb, g.n, in.D, q.labels, q.cams, g.labels, g.cams,
				metrics.ReIDOptions{CMC: clampK(ks, g.n), Similarity: sim, Progress: progress("re-identification")})
			if err != nil {
				return nil, err
			}
			maps.Copy(out.Metrics, m)
		} else {
			ro := metrics.Options{K: clampK(ks, g.n), MAPAtK: opt.MAPAtK, Peers: opt.Peers, Similarity: sim, FullMAP: !opt.NoFullMAP, Progress: progress("retrieval")}
			if in.Coarse != nil {
				ro.Coarse, ro.GalleryCoarse = q.coarse, g.coarse
			}
			m, err := metrics.RetrievalQG(q.emb, q.n, g.emb, g.n, in.D, q.labels, g.labels, ro)
			if err != nil {
				return nil, err
			}
			maps.Copy(out.Metrics, m)
		}
	}

	// Threshold consistency (seed 000) over the whole set.
	if !opt.NoOPIS {
		if opt.Progress != nil {
			opt.Progress("OPIS", 0, 1)
		}
		o := opt.OPIS
		o.SkipClassesWithoutPositives = true
		r, err := metrics.OPIS(emb, in.N, in.D, in.Labels, o)
		if err != nil {
			return nil, fmt.Errorf("evaluate: OPIS: %w", err)
		}
		out.OPIS = r
		maps.Copy(out.Metrics, r.Metrics())
		if opt.Progress != nil {
			opt.Progress("OPIS", 1, 1)
		}
	}

	// Clustering quality.
	if !opt.NoCluster {
		if opt.Progress != nil {
			opt.Progress("k-means NMI/AMI", 0, 1)
		}
		c, err := metrics.ClusterScores(emb, in.N, in.D, in.Labels, opt.KMeans)
		if err != nil {
			return nil, fmt.Errorf("evaluate: clustering: %w", err)
		}
		maps.Copy(out.Metrics, c.Metrics)
		if opt.Progress != nil {
			opt.Progress("k-means NMI/AMI", 1, 1)
		}
	}

	// Verification pairs.
	if len(in.Pairs) > 0 {
		v, err := metrics.Verification(emb, in.N, in.D, in.Pairs, opt.Verify)
		if err != nil {
			return nil, fmt.Errorf("evaluate: verification: %w", err)
		}
		maps.Copy(out.Metrics, v.Metrics)
	}
	return out, nil
}

// clampK drops cutoffs larger than the number of candidates (R@32 on a 20-image set is undefined).
func clampK(ks []int, candidates int) []int {
	var out []int
	for _, k := range ks {
		if k <= candidates {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		out = []int{1}
	}
	return out
}

type part struct {
	n                    int
	emb                  []float32
	labels, coarse, cams []int64
}

func split(in Inputs, emb []float32) (q, g part) {
	for i := 0; i < in.N; i++ {
		p := &g
		if in.QueryMask[i] {
			p = &q
		}
		p.n++
		p.emb = append(p.emb, emb[i*in.D:(i+1)*in.D]...)
		p.labels = append(p.labels, in.Labels[i])
		if in.Coarse != nil {
			p.coarse = append(p.coarse, in.Coarse[i])
		}
		if in.Cameras != nil {
			p.cams = append(p.cams, in.Cameras[i])
		}
	}
	return q, g
}
