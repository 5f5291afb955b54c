package evaluate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
)

// PullOptions configures [IDMLPull].
type PullOptions struct {
	// Loss is the run's idml loss (τ, γ, metric, base). Its base must be a pair loss (contrastive,
	// margin, triplet, multisimilarity or fastap): the proxy bases need the training classes'
	// proxies, which test images do not have.
	Loss *losses.IDMLConfig
	// Classes × PerClass images make one batch (defaults 8 × 4, the sampler's m = 4).
	Classes, PerClass int
	// Batches is the number of batches drawn (default 100); Seed seeds the draw.
	Batches int
	Seed    uint64
}

// PullResult is what [IDMLPull] measured, one entry per sampled row (batch after batch).
type PullResult struct {
	// Unc is ‖u_i‖; Base and IDML are the norms of the loss gradient with respect to the row's
	// semantic embedding, ‖∂L/∂s_i‖, under the base loss and under IDML.
	Unc, Base, IDML []float64
	// DecileUnc and DecileRatio are, for the ten tenths of the rows ordered by ‖u‖ (lowest first),
	// the mean ‖u‖ and the ratio of the tenth's summed IDML pull to its summed base pull — a ratio
	// of sums, not a mean of per-row ratios, which a row with a vanishing base gradient (FastAP
	// gives some) would dominate. NaN for a tenth whose base pulls are all 0.
	DecileUnc, DecileRatio []float64
}

// IDMLPull is seed 002 Fig. 7's question asked of embeddings: how hard does a loss pull each
// image, and does IDML pull the uncertain ones less? The paper shows (t-SNE of one gradient step on
// Cars196) that "for a dark (and ambiguous) image the original method pulls it quite closer to the
// positive sample, while IDML is more cautious and only slightly pulls it". The pull on an image in
// one step is the gradient of the loss with respect to its embedding: a step of size η moves s_i by
// −η·∂L/∂s_i in embedding space (a network step moves it through the backbone's Jacobian as well).
//
// Batches of Classes × PerClass images are drawn from the embeddings (semantic emb [n, d], raw
// uncertainty unc [n, du], labels [n]); for each the gradient of the loss with respect to the
// semantic rows is evaluated twice on the same semantic embeddings: under IDML (opt.Loss with the
// images' u) and under the base loss (the same configuration with u = 0 and γ = 0, which is exactly
// the base: e = 1; TestIDMLZeroUncertaintyIsPlainBase). With ISM-Sim a large ‖u‖ drives e → 0 and
// with it D_IN = α·e and its gradient, so IDML's pull on an uncertain image should fall below the
// base's: DecileRatio should fall from the low-‖u‖ tenths to the high ones. Fewer than 10 rows
// give no deciles.
func IDMLPull(emb, unc []float32, n, d, du int, labels []int64, opt PullOptions) (*PullResult, error) {
	if opt.Loss == nil {
		return nil, fmt.Errorf("evaluate: pull: no idml loss")
	}
	switch opt.Loss.Base {
	case "contrastive", "margin", "triplet", "multisimilarity", "fastap":
	default:
		return nil, fmt.Errorf("evaluate: pull: base %q: want a pair loss (contrastive, margin, triplet, multisimilarity or fastap); the proxy bases need the training classes' proxies", opt.Loss.Base)
	}
	if len(emb) != n*d || len(unc) != n*du || len(labels) != n || d <= 0 || du <= 0 {
		return nil, fmt.Errorf("evaluate: pull: embeddings %d, uncertainty %d, labels %d values: want %d × %d, %d × %d, %d", len(emb), len(unc), len(labels), n, d, n, du, n)
	}
	classes, per, batches := opt.Classes, opt.PerClass, opt.Batches
	if classes <= 0 {
		classes = 8
	}
	if per <= 0 {
		per = 4
	}
	if batches <= 0 {
		batches = 100
	}
	byClass := map[int64][]int{}
	for i, l := range labels {
		byClass[l] = append(byClass[l], i)
	}
	var eligible []int64
	for l, rows := range byClass {
		if len(rows) >= per {
			eligible = append(eligible, l)
		}
	}
	sort.Slice(eligible, func(i, j int) bool { return eligible[i] < eligible[j] })
	if len(eligible) < classes {
		return nil, fmt.Errorf("evaluate: pull: %d classes have ≥ %d images, want %d per batch", len(eligible), per, classes)
	}
	idml := *opt.Loss
	idml.UncDim = du
	base := idml
	base.Gamma = 0
	r := rand.New(rand.NewPCG(opt.Seed, 0x9e3779b97f4a7c15))
	b, w := classes*per, d+du
	x := make([]float64, b*w)
	x0 := make([]float64, b*w)
	lab := make([]int64, b)
	res := &PullResult{}
	be := backend.MustShared()
	for range batches {
		perm := r.Perm(len(eligible))[:classes]
		rows := make([]int, 0, b)
		for _, k := range perm {
			l := eligible[k]
			pick := r.Perm(len(byClass[l]))[:per]
			for _, p := range pick {
				rows = append(rows, byClass[l][p])
			}
		}
		for k, i := range rows {
			lab[k] = labels[i]
			for j := range d {
				x[k*w+j] = float64(emb[i*d+j])
				x0[k*w+j] = x[k*w+j]
			}
			for j := range du {
				x[k*w+d+j] = float64(unc[i*du+j])
				x0[k*w+d+j] = 0
			}
		}
		seed := int64(r.Uint64() >> 1)
		gi, err := losses.Evaluate(be, &idml, x, b, w, lab, 1, losses.EvalOptions{Grad: true, Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("evaluate: pull: idml: %w", err)
		}
		gb, err := losses.Evaluate(be, &base, x0, b, w, lab, 1, losses.EvalOptions{Grad: true, Seed: seed})
		if err != nil {
			return nil, fmt.Errorf("evaluate: pull: base: %w", err)
		}
		for k := range b {
			res.Unc = append(res.Unc, norm64(x[k*w+d:(k+1)*w]))
			res.IDML = append(res.IDML, norm64(gi.Grad[k*w:k*w+d]))
			res.Base = append(res.Base, norm64(gb.Grad[k*w:k*w+d]))
		}
	}
	res.DecileUnc, res.DecileRatio = pullDeciles(res.Unc, res.Base, res.IDML)
	return res, nil
}

func norm64(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return math.Sqrt(s)
}

// pullDeciles orders the rows by ‖u‖ and returns, per tenth (rows ⌊k·m/10⌋ … ⌊(k+1)·m/10⌋ − 1 of
// the m rows), the mean ‖u‖ and Σ idml / Σ base (NaN when Σ base = 0); nil when m < 10.
func pullDeciles(unc, base, idml []float64) (du, ratio []float64) {
	m := len(unc)
	if m < 10 {
		return nil, nil
	}
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return unc[idx[a]] < unc[idx[b]] })
	for k := range 10 {
		lo, hi := k*m/10, (k+1)*m/10
		var su, sb, si float64
		for _, i := range idx[lo:hi] {
			su += unc[i]
			sb += base[i]
			si += idml[i]
		}
		du = append(du, su/float64(hi-lo))
		r := math.NaN()
		if sb > 0 {
			r = si / sb
		}
		ratio = append(ratio, r)
	}
	return du, ratio
}
