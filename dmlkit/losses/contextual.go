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
		Paper:   "Liao et al., Supervised metric learning to rank for retrieval via contextual similarity optimization (seed 004), Eq. 1–7, 10; Table 5 ablations as options",
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
// is clipped to B. Degenerate batches stay finite: empty normalisers (count 0) are replaced by 1.
//
// Stop-gradients: as the equations put them — the k-th neighbour distances and the row sums
// |N(i)|, |Nᶜ(i)| of Eq. 3 are detached; the query-expansion normaliser |R(i)| of Eq. 4/27 is not
// (neither in Eq. 27, the paper's pseudocode, nor the authors' losses.py). DetachQENorm also detaches
// |R(i)|, following the paper's prose ("we do not backpropagate gradients through the normalization
// factors"). Minor code difference not offered: the clamp D = max(2 − 2s, 0) (differs only by
// rounding). The neighbour test is "≥" as in the code's GreaterThan ((x >= y).float(), losses.py
// and 224x224/losses.py at 8433dcb).
//
// Options: CodeWeights uses the 256-px code's (1 − λ − γ) weight on the contrastive term
// (main.py:275) instead of the paper's (1 − λ). ClampGradients is the Table 1 experiment (Eq. 10):
// a custom gradient between D and the contextual term keeps ∂D(i,j) ≥ 0 where y_ij = 1 and
// ∂D(i,j) ≤ 0 otherwise (the contrastive and regulariser terms are unaffected).
//
// Table 5 ablations (App. F/G.1; run there with γ = 0 and λ ∈ {0.8, 1}) are options that change
// only L_ctx; the defaults give the final row. They follow the authors' ablations.py (commit
// 8433dcb; as published its contrastive_jaccard is imported from losses.py, so the ablated
// get_jaccard_similarity there is never called — dmlkit implements that function's text):
//
//	row 1  Eq. 32, step 1 only        Steps "step1":           w = N (no symmetrisation)
//	row 2  Eq. 32 with θ_σ            Steps "step1", Heaviside "sigmoid"
//	row 3  Eq. 33, skip step 3 (QE)   Steps "no_qe":           w = W̃ (no symmetrisation)
//	row 4  W̃ = N, skip step 2         Steps "no_intersection": W̃ = N, then Eq. 25–27
//	row 5  min for logical-and        LogicalAnd "min"
//	row 6  θ_σ for all steps          Heaviside "sigmoid"
//	row 7  no M₋ term in Eq. 24       DropMMinus:              W̃ = (M₊ / sg|N(i)|) ⊙ N (no ½)
//	row 8  no stop gradient in Eq. 24 LiveEq24Norms:           |N(i)|, |Nᶜ(i)| not detached
//
// Heaviside "sigmoid" replaces θ in Eq. 23 and 25 by θ_σ(x) = 1/(1 + exp(−x/τ)) in the forward
// and backward pass (α unused); Eq. 21 prints exp(x/τ), a sign slip: the code's greater_than is
// sigmoid((x − y)/τ), τ = 0.01. Its normalisers are sums of the soft values. LogicalAnd "min"
// replaces every ⊙ of Eq. 24–27 by an element-wise min, ties splitting the gradient equally
// (torch.minimum): M₊(i,j) = Σ_p min(N(i,p), N(j,p)), M₋ likewise on 1 − N, W̃ = min(½(…), N),
// R = min(N½, N½ᵀ) and Ŵ(i,j) = Σ_p min(R(i,p), W̃(p,j)) / |R(i)|. With the exact step its value
// equals the default's (0/1 operands), only the gradient differs; it builds [B, B, B] tensors
// (B³ entries per product: 1.1·10⁹ at B = 1024, 2.1·10⁶ at the paper's B = 128). Rows 1–2
// ran with ε = 1e-5 in ablations.py ("eps=1e-5"); set Eps for that, Steps "step1" uses Eps as
// Eq. 32 does. Options that touch a step that is skipped are rejected by Validate. Detaching
// |R(i)| (DetachQENorm) is Fig. 17, not a Table 5 row.
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
	Steps          string  `yaml:"steps" doc:"Table 5 rows 1-4: all (Eq. 23-28), step1 (row 1, L_1 Eq. 32), no_qe (row 3, L_2 Eq. 33), no_intersection (row 4, W~ = N)"`
	Heaviside      string  `yaml:"heaviside" doc:"straight_through (Eq. 20: exact step, gradient α) or sigmoid (Table 5 rows 2 and 6: θ_σ of Eq. 21)"`
	SigmoidTau     float64 `yaml:"sigmoid_tau" doc:"τ of θ_σ with heaviside=sigmoid (0.01 as the authors' ablations.py)"`
	LogicalAnd     string  `yaml:"logical_and" doc:"mul (⊙) or min (Table 5 row 5: min for logical-and)"`
	DropMMinus     bool    `yaml:"drop_m_minus" doc:"Table 5 row 7: remove the M- term of Eq. 24"`
	LiveEq24Norms  bool    `yaml:"live_eq24_norms" doc:"Table 5 row 8: no stop gradient on |N(i)|, |N^c(i)| in Eq. 24"`
}

// Values of ContextualConfig's enumerated options ("" is the default, the first of each list).
const (
	CtxStepsAll            = "all"
	CtxStepsStep1          = "step1"
	CtxStepsNoQE           = "no_qe"
	CtxStepsNoIntersection = "no_intersection"
	CtxHeavisideST         = "straight_through"
	CtxHeavisideSigmoid    = "sigmoid"
	CtxAndMul              = "mul"
	CtxAndMin              = "min"
)

// DefaultContextual returns the paper's defaults (see the type documentation).
func DefaultContextual() *ContextualConfig {
	return &ContextualConfig{K: 4, Eps: 0.05, Alpha: 10, Lambda: 0.4, Gamma: 0.1, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3,
		Steps: CtxStepsAll, Heaviside: CtxHeavisideST, SigmoidTau: 0.01, LogicalAnd: CtxAndMul}
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
	steps := c.steps()
	switch steps {
	case CtxStepsAll, CtxStepsStep1, CtxStepsNoQE, CtxStepsNoIntersection:
	default:
		return fmt.Errorf("steps %q: want all, step1, no_qe or no_intersection", c.Steps)
	}
	switch c.heaviside() {
	case CtxHeavisideST:
	case CtxHeavisideSigmoid:
		if !(c.SigmoidTau > 0) {
			return fmt.Errorf("sigmoid_tau %g: must be > 0 with heaviside sigmoid", c.SigmoidTau)
		}
	default:
		return fmt.Errorf("heaviside %q: want straight_through or sigmoid", c.Heaviside)
	}
	if c.SigmoidTau < 0 {
		return fmt.Errorf("sigmoid_tau %g: must be ≥ 0", c.SigmoidTau)
	}
	switch c.logicalAnd() {
	case CtxAndMul, CtxAndMin:
	default:
		return fmt.Errorf("logical_and %q: want mul or min", c.LogicalAnd)
	}
	noStep2 := steps == CtxStepsStep1 || steps == CtxStepsNoIntersection
	if c.DropMMinus && noStep2 {
		return fmt.Errorf("drop_m_minus with steps %s: there is no step 2 (Eq. 24) to change", steps)
	}
	if c.LiveEq24Norms && noStep2 {
		return fmt.Errorf("live_eq24_norms with steps %s: there is no step 2 (Eq. 24) to change", steps)
	}
	if c.logicalAnd() == CtxAndMin && steps == CtxStepsStep1 {
		return fmt.Errorf("logical_and min with steps step1: step 1 has no logical-and")
	}
	if c.DetachQENorm && (steps == CtxStepsStep1 || steps == CtxStepsNoQE) {
		return fmt.Errorf("detach_qe_norm with steps %s: there is no query expansion (step 3)", steps)
	}
	return nil
}

// steps, heaviside and logicalAnd return the enumerated options with "" read as the default.
func (c *ContextualConfig) steps() string      { return orDefault(c.Steps, CtxStepsAll) }
func (c *ContextualConfig) heaviside() string  { return orDefault(c.Heaviside, CtxHeavisideST) }
func (c *ContextualConfig) logicalAnd() string { return orDefault(c.LogicalAnd, CtxAndMul) }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
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
	reg := similarityRegulariser(s, c.TargetSim) // Eq. 7, as the simreg loss
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

// contextTerm is L_ctx from the [B, B] cosine similarities s of the batch (with the Table 5
// ablation options applied).
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
	steps := c.steps()
	thrK, thrHalf := contextualKthDistances(StopGradient(d), k, max(k/2, 1))
	nK := c.contextualNeighbours(d, thrK)
	var w *Node
	if steps == CtxStepsStep1 {
		w = nK // Eq. 32
	} else {
		w = c.contextualSteps23(nK, d, thrHalf, steps)
	}
	offDiag := LogicalNot(Diagonal(g, b))
	diff := Sub(ConvertDType(y, dt), w)
	return DivScalar(MaskedReduceAllSum(Square(diff), offDiag), float64(b*b))
}

// contextualSteps23 returns w of Eq. 27 (or W̃ of Eq. 24 with Steps "no_qe") from the live
// indicator nK = 1_{N_{k+ε}} and the detached (k/2)-th neighbour distances thrHalf.
func (c *ContextualConfig) contextualSteps23(nK, d, thrHalf *Node, steps string) *Node {
	g := nK.Graph()
	b := nK.Shape().Dim(0)
	dt := nK.DType()
	useMin := c.logicalAnd() == CtxAndMin
	and := Mul
	if useMin {
		and = tieMin
	}
	var wTilde *Node
	if steps == CtxStepsNoIntersection {
		wTilde = nK // Table 5 row 4
	} else {
		sumK := ReduceSum(nK, 1) // |N(i)| (live)
		rowK := nonEmpty(sumK)
		rowNot := nonEmpty(Sub(Scalar(g, dt, float64(b)), sumK)) // |Nᶜ(i)| = n − |N(i)|
		if !c.LiveEq24Norms {
			rowK, rowNot = StopGradient(rowK), StopGradient(rowNot)
		}
		rowK, rowNot = InsertAxes(rowK, 1), InsertAxes(rowNot, 1)
		mPlus := c.andMatMul(nK, Transpose(nK, 0, 1))
		inter := Div(mPlus, rowK)
		if !c.DropMMinus {
			// M₋ = (1−N)(1−N)ᵀ = n − |N(i)| − |N(j)| + M₊: an identity in N (so also for its gradient) that
			// saves one B³ product forward and two backward. It holds for min too (min(1−a, 1−b) =
			// 1 − a − b + min(a, b), ties splitting equally on both sides).
			mMinus := Add(Sub(Sub(Scalar(g, dt, float64(b)), InsertAxes(sumK, 1)), InsertAxes(sumK, 0)), mPlus)
			inter = MulScalar(Add(inter, Div(mMinus, rowNot)), 0.5)
		}
		wTilde = and(inter, nK)
	}
	if steps == CtxStepsNoQE {
		return wTilde // Eq. 33
	}
	nH := c.contextualNeighbours(d, thrHalf)
	r := and(nH, Transpose(nH, 0, 1))
	rowR := nonEmpty(ReduceSum(r, 1))
	if c.DetachQENorm {
		rowR = StopGradient(rowR)
	}
	wHat := Div(c.andMatMul(r, wTilde), InsertAxes(rowR, 1))
	return MulScalar(Add(wHat, Transpose(wHat, 0, 1)), 0.5)
}

// nonEmpty replaces the entries ≤ 0 of a count (an empty set) by 1, keeping the gradient elsewhere.
func nonEmpty(n *Node) *Node { return Where(GreaterThan(n, ZerosLike(n)), n, OnesLike(n)) }

// andMatMul is the matrix product a·b ([B, P]·[P, C]) with the logical-and of LogicalAnd in place
// of the product: Σ_p a(i,p)·b(p,j), or Σ_p min(a(i,p), b(p,j)) through a [B, C, P] tensor.
func (c *ContextualConfig) andMatMul(a, b *Node) *Node {
	if c.logicalAnd() != CtxAndMin {
		return MatMul(a, b)
	}
	bb, p, cc := a.Shape().Dim(0), a.Shape().Dim(1), b.Shape().Dim(1)
	x := BroadcastToDims(InsertAxes(a, 1), bb, cc, p)
	y := BroadcastToDims(InsertAxes(Transpose(b, 0, 1), 0), bb, cc, p)
	return ReduceSum(tieMin(x, y), 2)
}

// tieMin is the element-wise min of two same-shape nodes whose gradient goes to the smaller
// operand and splits equally on ties (as torch.minimum; the value is exact: (a + a)/2 = a).
func tieMin(a, b *Node) *Node {
	return Where(LessThan(a, b), a, Where(GreaterThan(a, b), b, MulScalar(Add(a, b), 0.5)))
}

// contextualNeighbours is θ(−D + thr + ε): with Heaviside "straight_through" the exact step in the
// forward pass and the constant gradient α with respect to its argument in the backward pass
// (value exact: x − sg(x) = 0); with "sigmoid" θ_σ(x) = σ(x/τ) in both passes.
func (c *ContextualConfig) contextualNeighbours(d, thr *Node) *Node {
	x := AddScalar(Add(Neg(d), InsertAxes(thr, 1)), c.Eps)
	if c.heaviside() == CtxHeavisideSigmoid {
		return Sigmoid(DivScalar(x, c.SigmoidTau))
	}
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
