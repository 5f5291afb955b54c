package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "pel",
		Paper:   "Oh et al., Modeling uncertainty with hedged instance embeddings (ICLR 2019); IDML's (seed 002) probabilistic-embedding baseline",
		Summary: "probabilistic embeddings (μ, log σ²): Monte-Carlo match probability σ(−a·d + b), soft contrastive loss + KL regulariser; or a base loss (proxyanchor, margin) on each draw",
		New:     func() Loss { return DefaultPEL() },
	})
}

// PELConfig is the probabilistic embedding loss of hedged instance embeddings (HIB, Oh et al. 2019),
// the Monte-Carlo-sampling baseline that IDML (seed 002 §3.1, [40]) compares against.
//
// Embedding layout: Inputs.Emb is [B, 2D] = concat(μ, log σ²) along the feature axis. Each sample
// is N(μ, diag σ²); K samples per embedding via the reparameterisation trick z⁽ᵏ⁾ = μ + σ ⊙ ε⁽ᵏ⁾,
// ε ~ N(0, I), drawn from the Scope's RNG (reproducible with the store's seed) or given by Noise.
//
//	p(m | x_i, x_j) = (1/K²) Σ_{k,l} σ(−a ‖z_i⁽ᵏ⁾ − z_j⁽ˡ⁾‖ + b)        (match probability)
//	L_pair          = mean_{positive (i,j)} −log p  +  mean_{negative (i,j)} −log(1 − p)
//	L               = L_pair + β · mean_i KL(N(μ_i, σ_i²) ‖ N(0, I)),
//	KL              = ½ Σ_d (σ² + μ² − 1 − log σ²)
//
// Pairs are all ordered (i, j), i ≠ j ([B] labels or [B, S] label sets). The positive and negative
// means are taken separately (balanced soft contrastive loss; HIB samples balanced pairs). 1 − p is
// computed as the mean of σ(a·d − b), and both probabilities are floored at 1e−30 before the log.
// a > 0 and b are learnable scalars of Inputs.Scope ("a", "b"), initialised to A and B, unless
// FixedAB; without a Scope they are fixed. A term without pairs is 0.
//
// PEL on another loss (Base, seed 002 Table 3's PEL-MDW and PEL-PA: "we reproduced the
// probabilistic embedding learning (PEL) framework [40] on each loss"). The paper gives no formula;
// dmlkit applies the base loss to each Monte-Carlo draw of the batch and averages, keeping HIB's
// sampling and KL regulariser:
//
//	L = (1/K) Σ_k L_base(z⁽ᵏ⁾, y) + β · mean_i KL(N(μ_i, σ_i²) ‖ N(0, I))
//
// with z⁽ᵏ⁾ = μ + σ ⊙ ε⁽ᵏ⁾ [B, D] as above. Base "proxyanchor" is [ProxyAnchorConfig] (margin δ =
// Margin, scale α = Scale; its learnable proxies [NumClasses, D] are the variable "proxies" of
// Inputs.Scope, shared by the K draws); "margin" is [MarginConfig] (α = PairMargin, β = PairBeta,
// PairSampling "distance" draws negatives independently for each z⁽ᵏ⁾ from the Scope's RNG, or
// "all"). Both L2-normalise z⁽ᵏ⁾ as their registry losses do, and accept label sets (mixup). The
// soft contrastive match probability (a, b) is not used with a base. Base "" (default) or
// "soft_contrastive" is HIB's loss above.
//
// Defaults: K = 8 samples, β = 1e−4 (HIB's VIB weight), a = 1, b = 0 initially; base
// soft_contrastive; the bases' own defaults (ProxyAnchor δ = 0.1, α = 32; margin α = 0.2, β = 1.2,
// distance-weighted sampling).
type PELConfig struct {
	Samples  int     `yaml:"samples" doc:"K: Monte-Carlo samples per embedding"`
	KLWeight float64 `yaml:"kl_weight" doc:"β: weight of the KL(N(μ,σ²) || N(0,I)) regulariser"`
	A        float64 `yaml:"a" doc:"initial (or fixed) scale a > 0 of the distance in the match probability"`
	B        float64 `yaml:"b" doc:"initial (or fixed) offset b of the match probability"`
	FixedAB  bool    `yaml:"fixed_ab" doc:"keep a and b fixed instead of learning them"`
	Base     string  `yaml:"base" doc:"loss on each Monte-Carlo draw: soft_contrastive (HIB, default), proxyanchor or margin (seed 002 Table 3)"`
	Margin   float64 `yaml:"margin" doc:"proxyanchor base: margin δ"`
	Scale    float64 `yaml:"scale" doc:"proxyanchor base: scale α"`
	// Margin-base parameters: [MarginConfig]'s α, β and sampling.
	PairMargin   float64   `yaml:"pair_margin" doc:"margin base: α of the margin loss"`
	PairBeta     float64   `yaml:"pair_beta" doc:"margin base: boundary β of the margin loss"`
	PairSampling string    `yaml:"pair_sampling" doc:"margin base: distance (distance-weighted negatives) or all"`
	Noise        []float64 `yaml:"-"` // tests: ε as [K·B·D] row-major (k, i, d) instead of the RNG
}

// DefaultPEL returns HIB's defaults (and the bases' defaults).
func DefaultPEL() *PELConfig {
	return &PELConfig{Samples: 8, KLWeight: 1e-4, A: 1, B: 0, Base: "soft_contrastive", Margin: 0.1, Scale: 32,
		PairMargin: 0.2, PairBeta: 1.2, PairSampling: "distance"}
}

// pelBase returns the base loss applied to each draw, or nil for HIB's soft contrastive loss.
func (c *PELConfig) pelBase() Loss {
	switch c.Base {
	case "proxyanchor":
		return &ProxyAnchorConfig{Margin: c.Margin, Alpha: c.Scale}
	case "margin":
		return &MarginConfig{Margin: c.PairMargin, Beta: c.PairBeta, Sampling: c.PairSampling, Cutoff: 0.5, NonzeroLossCutoff: 1.4}
	}
	return nil
}

// Name implements Loss.
func (c *PELConfig) Name() string { return "pel" }

// Validate implements Validator.
func (c *PELConfig) Validate() error {
	if c.Samples < 1 {
		return fmt.Errorf("samples %d: must be ≥ 1", c.Samples)
	}
	if c.A <= 0 {
		return fmt.Errorf("a %g: must be > 0", c.A)
	}
	if c.KLWeight < 0 {
		return fmt.Errorf("kl_weight %g: must be ≥ 0", c.KLWeight)
	}
	switch c.Base {
	case "", "soft_contrastive":
	case "proxyanchor", "margin":
		if v, ok := c.pelBase().(Validator); ok {
			if err := v.Validate(); err != nil {
				return fmt.Errorf("base %s: %w", c.Base, err)
			}
		}
	default:
		return fmt.Errorf("base %q: want soft_contrastive, proxyanchor or margin", c.Base)
	}
	return nil
}

// Build implements Loss.
func (c *PELConfig) Build(in Inputs) *Node {
	if in.RefEmb != nil {
		panic("losses: pel: Inputs.RefEmb is not supported")
	}
	g := in.Emb.Graph()
	dt := in.Emb.DType()
	b, d2 := in.Emb.Shape().Dim(0), in.Emb.Shape().Dim(1)
	if d2%2 != 0 {
		panic(fmt.Sprintf("losses: pel: embeddings %s: want [B, 2D] = concat(μ, log σ²)", in.Emb.Shape()))
	}
	d, k := d2/2, c.Samples
	mu := Slice(in.Emb, AxisRange(), AxisRange(0, d))
	logVar := Slice(in.Emb, AxisRange(), AxisRange(d, d2))
	var eps *Node
	if c.Noise != nil {
		if len(c.Noise) != k*b*d {
			panic(fmt.Sprintf("losses: pel: Noise has %d values, want K·B·D = %d", len(c.Noise), k*b*d))
		}
		eps = ConvertDType(Const(g, c.Noise), dt)
		eps = Reshape(eps, k, b, d)
	} else {
		if in.Scope == nil {
			panic("losses: pel needs Inputs.Scope for its sampling noise (or an explicit Noise)")
		}
		eps = StopGradient(in.Scope.RandomNormal(g, shapes.Make(dt, k, b, d)))
	}
	sigma := Exp(MulScalar(logVar, 0.5))
	z := Add(InsertAxes(mu, 0), Mul(InsertAxes(sigma, 0), eps)) // [K, B, D]
	if base := c.pelBase(); base != nil {
		var sum *Node
		for s := 0; s < k; s++ {
			zs := Reshape(Slice(z, AxisElem(s), AxisRange(), AxisRange()), b, d)
			l := base.Build(Inputs{Emb: zs, Labels: in.Labels, Scope: in.Scope, NumClasses: in.NumClasses, ClassBound: in.ClassBound, LabelWeights: in.LabelWeights})
			if sum == nil {
				sum = l
			} else {
				sum = Add(sum, l)
			}
		}
		return c.pelWithKL(DivScalar(sum, float64(k)), mu, logVar)
	}
	flat := Reshape(z, k*b, d)
	dist := Reshape(Distances(flat, flat), k, b, k, b)
	a, off := c.pelScalars(in, dt)
	logit := Add(Mul(Neg(a), dist), off)                          // −a·d + b
	p := DivScalar(ReduceSum(Sigmoid(logit), 0, 2), float64(k*k)) // [B, B]
	q := DivScalar(ReduceSum(Sigmoid(Neg(logit)), 0, 2), float64(k*k))
	tiny := ScalarLike(p, 1e-30)
	pos, neg := PairMasks(in)
	lpair := Add(MaskedMean(Neg(Log(Max(p, tiny))), pos), MaskedMean(Neg(Log(Max(q, tiny))), neg))
	return c.pelWithKL(lpair, mu, logVar)
}

// pelWithKL returns l + β · mean_i KL(N(μ_i, σ_i²) ‖ N(0, I)) (l alone when β = 0).
func (c *PELConfig) pelWithKL(l, mu, logVar *Node) *Node {
	if c.KLWeight == 0 {
		return l
	}
	kl := MulScalar(ReduceSum(Sub(Add(Exp(logVar), Square(mu)), AddScalar(logVar, 1)), 1), 0.5)
	return Add(l, MulScalar(ReduceAllMean(kl), c.KLWeight))
}

// pelScalars returns a and b: scope variables initialised to A and B, or constants.
func (c *PELConfig) pelScalars(in Inputs, dt dtypes.DType) (a, b *Node) {
	g := in.Emb.Graph()
	if c.FixedAB || in.Scope == nil {
		return Scalar(g, dt, c.A), Scalar(g, dt, c.B)
	}
	av, bv := any(c.A), any(c.B)
	if dt == dtypes.Float32 {
		av, bv = float32(c.A), float32(c.B)
	}
	return in.Scope.VariableWithValue("a", av).ValueGraph(g), in.Scope.VariableWithValue("b", bv).ValueGraph(g)
}
