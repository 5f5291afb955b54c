package losses

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "contextual",
		Paper:   "Liao et al., Supervised metric learning to rank for retrieval via contextual similarity optimization (seed 004), Eq. 1–7, 10",
		Summary: "MSE between labels and a differentiable contextual (neighbourhood-overlap) similarity, plus contrastive and similarity regulariser",
		New:     func() Loss { return DefaultContextual() },
	})
}

// ContextualConfig is the contextual-similarity loss of seed 004 (Eq. 1–7, matrix form Eq. 23–31).
//
// With s the cosine similarities of the batch ([B, D] embeddings, L2-normalised), D = 2 − 2s the
// squared distances and θ the Heaviside step with the straight-through gradient ∂θ/∂x = α (Eq. 1/20):
//
//	N(i,j)   = θ(−D(i,j) + sg(D(i,p_k)) + ε)       p_k: k-th closest to i, i itself counted (Eq. 2)
//	W̃        = ½ (N Nᵀ / sg(|N(i)|) + (1−N)(1−N)ᵀ / sg(|Nᶜ(i)|)) ⊙ N                        (Eq. 3/24)
//	R        = N½ ⊙ N½ᵀ with N½ the same indicator at the (k/2)-th neighbour                (Eq. 4/26)
//	w        = ½ (Ŵ + Ŵᵀ),  Ŵ = R W̃ / |R(i)|                                               (Eq. 4/27)
//	L_ctx    = (1/n²) Σ_{i≠j} (y_ij − w_ij)²                                                  (Eq. 5)
//	L_reg    = (s̃ − (1/n²) Σ_{i,j} s_ij)²                                                      (Eq. 7)
//	L_contr  = cosine contrastive with δ₊, δ₋, each term over its active pairs (Eq. 29; [ContrastiveConfig])
//	L        = λ L_ctx + (1 − λ) L_contr + γ L_reg                                             (Eq. 6)
//
// y_ij = "i and j share a label" ([B] labels or [B, S] label sets). |N(i)| = Σ_p N(i,p). The k-th
// neighbour distance is found with k rounds of max-and-mask (no Sort/TopK); k larger than the batch
// is clipped to B. Degenerate batches stay finite: empty normalisers are replaced by 1.
//
// Stop-gradients: as the equations put them — the k-th neighbour distances and the row sums
// |N(i)|, |Nᶜ(i)| of Eq. 3 are detached; the query-expansion normaliser |R(i)| of Eq. 4/27 is not
// (neither in Eq. 27, the paper's pseudocode, nor the authors' losses.py). DetachQENorm also detaches
// |R(i)|, following the paper's prose ("we do not backpropagate gradients through the normalization
// factors"). Minor code differences not offered: the code's strict ">" in the neighbour test
// (differs only on exact ties) and its clamp D = max(2 − 2s, 0) (differs only by rounding).
//
// Options: CodeWeights uses the 256-px code's (1 − λ − γ) weight on the contrastive term
// (main.py:275) instead of the paper's (1 − λ). ClampGradients is the Table 1 experiment (Eq. 10):
// a custom gradient between D and the contextual term keeps ∂D(i,j) ≥ 0 where y_ij = 1 and
// ∂D(i,j) ≤ 0 otherwise (the contrastive and regulariser terms are unaffected).
//
// Defaults: α = 10, k = 4, δ₊ = 0.75, δ₋ = 0.6, s̃ = 0.3, γ = 0.1 (paper §5 fixed values);
// λ = 0.4, ε = 0.05 (App. G's values "approximately optimal across all datasets"; §5 tunes them per
// dataset). References (Inputs.RefEmb) are not supported.
type ContextualConfig struct {
	K              int     `yaml:"k" doc:"neighbourhood size k (the sample itself counts); query expansion uses k/2"`
	Eps            float64 `yaml:"eps" doc:"ε: neighbourhood margin in squared-distance units"`
	Alpha          float64 `yaml:"alpha" doc:"α: straight-through gradient of the Heaviside step"`
	Lambda         float64 `yaml:"lambda" doc:"λ: weight of the contextual term (contrastive gets 1-λ)"`
	Gamma          float64 `yaml:"gamma" doc:"γ: weight of the similarity regulariser"`
	PosMargin      float64 `yaml:"pos_margin" doc:"δ+ of the contrastive term"`
	NegMargin      float64 `yaml:"neg_margin" doc:"δ- of the contrastive term"`
	TargetSim      float64 `yaml:"target_sim" doc:"s̃: target mean cosine similarity of the regulariser"`
	CodeWeights    bool    `yaml:"code_weights" doc:"256-px code: contrastive weight 1-λ-γ instead of the paper's 1-λ"`
	DetachQENorm   bool    `yaml:"detach_qe_norm" doc:"also stop the gradient through the query-expansion normaliser |R(i)|"`
	ClampGradients bool    `yaml:"clamp_gradients" doc:"Table 1 / Eq. 10: clamp the contextual term's distance gradients to the label sign"`
}

// DefaultContextual returns the paper's defaults (see the type documentation).
func DefaultContextual() *ContextualConfig {
	return &ContextualConfig{K: 4, Eps: 0.05, Alpha: 10, Lambda: 0.4, Gamma: 0.1, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3}
}

// Name implements Loss.
func (c *ContextualConfig) Name() string { return "contextual" }

// Validate implements Validator.
func (c *ContextualConfig) Validate() error {
	if c.K < 2 {
		return fmt.Errorf("k %d: must be ≥ 2 (query expansion uses k/2 ≥ 1)", c.K)
	}
	if c.Eps < 0 || c.Alpha < 0 || c.Gamma < 0 {
		return fmt.Errorf("eps %g, alpha %g, gamma %g: must be ≥ 0", c.Eps, c.Alpha, c.Gamma)
	}
	if c.Lambda < 0 || c.Lambda > 1 {
		return fmt.Errorf("lambda %g: want a value in [0, 1]", c.Lambda)
	}
	return nil
}

// Build implements Loss.
func (c *ContextualConfig) Build(in Inputs) *Node {
	if in.RefEmb != nil {
		panic("losses: contextual works within the batch; Inputs.RefEmb is not supported")
	}
	if c.K < 2 {
		panic(fmt.Sprintf("losses: contextual: k = %d, want ≥ 2", c.K))
	}
	// One similarity matrix for all three terms: building it three times (as separate Build calls
	// would) cost ≈ 30% more time at B = 1024 on the Go backend.
	s := CosineSim(in.Emb, in.Emb)
	lctx := c.contextTerm(in, s)
	reg := Square(Sub(ScalarLike(s, c.TargetSim), ReduceAllMean(s)))
	// Contrastive term on the same s: exactly ContrastiveConfig{Distance: "cosine", δ₊, δ₋, AvgNonZero}.
	pos, neg := PairMasks(in)
	contr := Add(reducePairs(relu(Sub(ScalarLike(s, c.PosMargin), s)), pos, true),
		reducePairs(relu(AddScalar(s, -c.NegMargin)), neg, true))
	wContr := 1 - c.Lambda
	if c.CodeWeights {
		wContr = 1 - c.Lambda - c.Gamma
	}
	return Add(Add(MulScalar(lctx, c.Lambda), MulScalar(contr, wContr)), MulScalar(reg, c.Gamma))
}

// ContextTerm returns L_ctx (Eq. 5) alone, the scalar (1/n²) Σ_{i≠j} (y_ij − w_ij)².
func (c *ContextualConfig) ContextTerm(in Inputs) *Node {
	return c.contextTerm(in, CosineSim(in.Emb, in.Emb))
}

// contextTerm is L_ctx from the [B, B] cosine similarities s of the batch.
func (c *ContextualConfig) contextTerm(in Inputs, s *Node) *Node {
	g := s.Graph()
	b := s.Shape().Dim(0)
	dt := s.DType()
	y := SameLabel(in.Labels, in.Labels)
	d := Sub(ScalarLike(s, 2), MulScalar(s, 2)) // D = 2 − 2s
	if c.ClampGradients {
		d = IdentityWithCustomGradient(d, func(_, v *Node) *Node {
			zero := ZerosLike(v)
			return Where(y, Max(v, zero), Min(v, zero))
		})
	}
	k := min(c.K, b)
	thrK, thrHalf := contextualKthDistances(StopGradient(d), k, max(k/2, 1))
	nK := c.contextualNeighbours(d, thrK)
	nH := c.contextualNeighbours(d, thrHalf)
	sumK := ReduceSum(nK, 1) // |N(i)| (live)
	one := OnesLike(sumK)
	rowK := InsertAxes(StopGradient(Max(sumK, one)), 1)
	rowNot := InsertAxes(StopGradient(Max(Sub(Scalar(g, dt, float64(b)), sumK), one)), 1) // |Nᶜ(i)| = n − |N(i)|
	mPlus := MatMul(nK, Transpose(nK, 0, 1))
	// M₋ = (1−N)(1−N)ᵀ = n − |N(i)| − |N(j)| + M₊: an identity in N (so also for its gradient) that
	// saves one B³ product forward and two backward.
	mMinus := Add(Sub(Sub(Scalar(g, dt, float64(b)), InsertAxes(sumK, 1)), InsertAxes(sumK, 0)), mPlus)
	wTilde := Mul(MulScalar(Add(Div(mPlus, rowK), Div(mMinus, rowNot)), 0.5), nK)
	r := Mul(nH, Transpose(nH, 0, 1))
	rowR := ReduceSum(r, 1)
	rowR = Where(GreaterThan(rowR, ZerosLike(rowR)), rowR, OnesLike(rowR))
	if c.DetachQENorm {
		rowR = StopGradient(rowR)
	}
	wHat := Div(MatMul(r, wTilde), InsertAxes(rowR, 1))
	w := MulScalar(Add(wHat, Transpose(wHat, 0, 1)), 0.5)
	offDiag := LogicalNot(Diagonal(g, b))
	diff := Sub(ConvertDType(y, dt), w)
	return DivScalar(MaskedReduceAllSum(Square(diff), offDiag), float64(b*b))
}

// contextualNeighbours is θ(−D + thr + ε) with the exact step in the forward pass and the constant
// gradient α with respect to its argument in the backward pass (value exact: x − sg(x) = 0).
func (c *ContextualConfig) contextualNeighbours(d, thr *Node) *Node {
	x := AddScalar(Add(Neg(d), InsertAxes(thr, 1)), c.Eps)
	step := ConvertDType(GreaterOrEqual(x, ZerosLike(x)), x.DType())
	ax := MulScalar(x, c.Alpha)
	return Add(StopGradient(step), Sub(ax, StopGradient(ax)))
}

// contextualKthDistances returns, per row of the [B, B] distance matrix d, the k1-th and k2-th
// smallest entries (k2 ≤ k1, counting the diagonal), by k1 rounds of max-and-mask on −d: O(k·B²)
// work, no Sort/TopK. The result carries no gradient (callers pass a stop-gradient d).
func contextualKthDistances(d *Node, k1, k2 int) (kth1, kth2 *Node) {
	g := d.Graph()
	b := d.Shape().Dim(0)
	x := Neg(d)
	cols := Iota(g, shapes.Make(dtypes.Int32, 1, b), 1)
	negInf := Scalar(g, d.DType(), math.Inf(-1))
	for r := 1; r <= k1; r++ {
		m := ReduceMax(x, 1)
		if r == k2 {
			kth2 = Neg(m)
		}
		if r == k1 {
			kth1 = Neg(m)
			break
		}
		idx := ArgMax(x, 1, dtypes.Int32)
		x = Where(Equal(cols, InsertAxes(idx, 1)), negInf, x)
	}
	return StopGradient(kth1), StopGradient(kth2)
}
