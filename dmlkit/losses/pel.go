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
		Summary: "probabilistic embeddings (μ, log σ²): Monte-Carlo match probability σ(−a·d + b), soft contrastive loss + KL regulariser",
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
// Defaults: K = 8 samples, β = 1e−4 (HIB's VIB weight), a = 1, b = 0 initially.
type PELConfig struct {
	Samples  int       `yaml:"samples" doc:"K: Monte-Carlo samples per embedding"`
	KLWeight float64   `yaml:"kl_weight" doc:"β: weight of the KL(N(μ,σ²) || N(0,I)) regulariser"`
	A        float64   `yaml:"a" doc:"initial (or fixed) scale a > 0 of the distance in the match probability"`
	B        float64   `yaml:"b" doc:"initial (or fixed) offset b of the match probability"`
	FixedAB  bool      `yaml:"fixed_ab" doc:"keep a and b fixed instead of learning them"`
	Noise    []float64 `yaml:"-"` // tests: ε as [K·B·D] row-major (k, i, d) instead of the RNG
}

// DefaultPEL returns HIB's defaults.
func DefaultPEL() *PELConfig { return &PELConfig{Samples: 8, KLWeight: 1e-4, A: 1, B: 0} }

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
	flat := Reshape(z, k*b, d)
	dist := Reshape(Distances(flat, flat), k, b, k, b)
	a, off := c.pelScalars(in, dt)
	logit := Add(Mul(Neg(a), dist), off)                          // −a·d + b
	p := DivScalar(ReduceSum(Sigmoid(logit), 0, 2), float64(k*k)) // [B, B]
	q := DivScalar(ReduceSum(Sigmoid(Neg(logit)), 0, 2), float64(k*k))
	tiny := ScalarLike(p, 1e-30)
	pos, neg := PairMasks(in)
	lpair := Add(MaskedMean(Neg(Log(Max(p, tiny))), pos), MaskedMean(Neg(Log(Max(q, tiny))), neg))
	if c.KLWeight == 0 {
		return lpair
	}
	kl := MulScalar(ReduceSum(Sub(Add(Exp(logVar), Square(mu)), AddScalar(logVar, 1)), 1), 0.5)
	return Add(lpair, MulScalar(ReduceAllMean(kl), c.KLWeight))
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
