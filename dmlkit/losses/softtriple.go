package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "softtriple",
		Paper:   "Qian, Shang, Sun, Hu, Li & Jin, SoftTriple Loss: Deep Metric Learning Without Triplet Sampling, ICCV 2019, Eq. 9-10 (code: idstcv/SoftTriple)",
		Summary: "softmax over classes with K learnable centres each, soft-max-pooled similarities, margin δ",
		New:     func() Loss { return DefaultSoftTriple() },
		Proxies: true,
	})
}

// SoftTripleConfig is the SoftTriple loss. Each class c has K learnable centres w_c^k (variable
// "centers" [C·K, D] in Inputs.Scope, rows c·K … c·K+K−1; L2-normalised like the embeddings x):
//
//	S_c(x) = Σ_k softmax_k(xᵀw_c^k / γ) · xᵀw_c^k
//	L_ST = −1/B Σ_i log( e^{λ(S_{y_i} − δ)} / (e^{λ(S_{y_i} − δ)} + Σ_{j≠y_i} e^{λ S_j}) )
//	L = L_ST + τ · Σ_c Σ_{k<k'} √(2 + 10⁻⁵ − 2 w_c^kᵀw_c^k') / (C·K·(K−1))
//
// The regulariser (paper Eq. 10, the authors' normalisation and ε) merges redundant centres; it
// does not depend on the embeddings. Labels must be plain [B] class indices < NumClasses.
//
// Defaults: K = 10, λ = 20, γ = 0.1, δ = 0.01 (paper and pytorch-metric-learning), τ = 0.2
// (paper; pytorch-metric-learning's SoftTripleLoss has no centre regulariser, i.e. τ = 0).
type SoftTripleConfig struct {
	Centers int     `yaml:"centers_per_class" doc:"K: centres per class"`
	Lambda  float64 `yaml:"la" doc:"λ: logit scale"`
	Gamma   float64 `yaml:"gamma" doc:"γ: temperature of the soft max over a class's centres"`
	Margin  float64 `yaml:"margin" doc:"δ: margin on the target class"`
	Tau     float64 `yaml:"tau" doc:"τ: weight of the centre-merging regulariser (0 disables)"`
}

// DefaultSoftTriple returns the paper's defaults.
func DefaultSoftTriple() *SoftTripleConfig {
	return &SoftTripleConfig{Centers: 10, Lambda: 20, Gamma: 0.1, Margin: 0.01, Tau: 0.2}
}

// Name implements Loss.
func (c *SoftTripleConfig) Name() string { return "softtriple" }

// Validate implements Validator.
func (c *SoftTripleConfig) Validate() error {
	switch {
	case c.Centers < 1:
		return fmt.Errorf("centers_per_class = %d: want ≥ 1", c.Centers)
	case c.Gamma <= 0:
		return fmt.Errorf("gamma = %g: want > 0", c.Gamma)
	case c.Lambda <= 0:
		return fmt.Errorf("la = %g: want > 0", c.Lambda)
	case c.Margin < 0:
		return fmt.Errorf("margin = %g: want ≥ 0", c.Margin)
	case c.Tau < 0:
		return fmt.Errorf("tau = %g: want ≥ 0", c.Tau)
	}
	return nil
}

// Build implements Loss.
func (c *SoftTripleConfig) Build(in Inputs) *Node {
	blPlainLabels(in, "softtriple")
	nc, k := in.NumClasses, c.Centers
	w := normalizeRows(blProxies(in, "softtriple", "centers", nc*k)) // [C·K, D]
	b := in.Emb.Shape().Dim(0)
	sim := Reshape(MatMul(normalizeRows(in.Emb), Transpose(w, 0, 1)), b, nc, k) // [B, C, K]
	weights := Softmax(MulScalar(sim, 1/c.Gamma), -1)
	s := ReduceSum(Mul(weights, sim), -1) // [B, C]
	target := blClassMask(in, nc)
	logits := MulScalar(Where(target, AddScalar(s, -c.Margin), s), c.Lambda)
	loss := marginSoftmaxCE(logits, target)
	if c.Tau == 0 || k == 1 {
		return loss
	}
	// Within-class pairs k < k' of the [C·K, C·K] centre similarities.
	// The regulariser sums the distances between centres of the same class only, so it is computed per
	// class: [C, K, K] Gram blocks instead of the [C·K, C·K] matrix (1 / C of the work and memory — 964
	// Omniglot classes × 10 centres would otherwise build a 9,640² matrix and mask every step).
	w3 := Reshape(w, nc, k, w.Shape().Dim(1)) // [C, K, D]
	ww := Einsum("cid,cjd->cij", w3, w3)      // [C, K, K]
	dist := Sqrt(Max(Sub(ScalarLike(ww, 2+1e-5), MulScalar(ww, 2)), ScalarLike(ww, 1e-12)))
	upper := make([][]bool, k) // pairs i < j within a class
	for i := range upper {
		upper[i] = make([]bool, k)
		for j := i + 1; j < k; j++ {
			upper[i][j] = true
		}
	}
	mask := BroadcastPrefix(Const(in.Emb.Graph(), upper), nc)
	reg := MaskedReduceAllSum(dist, mask)
	norm := float64(nc * k * (k - 1))
	return Add(loss, MulScalar(reg, c.Tau/norm))
}
