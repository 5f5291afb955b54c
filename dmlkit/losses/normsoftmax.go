package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "normsoftmax",
		Paper:   "Zhai & Wu, Classification is a Strong Baseline for Deep Metric Learning, BMVC 2019, Eq. 2 (NormSoftmax); ISM: Wang et al. (seed 002) Eq. 8, Table 2",
		Summary: "cosine classifier: softmax cross-entropy over s·cos(x, w_c) with learnable class weights; soft targets for mixup/cutmix label sets; optional introspective similarity (ism)",
		New:     func() Loss { return DefaultNormSoftmax() },
		Proxies: true,
	})
}

// NormSoftmaxConfig is the cosine classifier (NormSoftmax): one learnable weight w_c ∈ R^D per
// training class (variable "weights" [NumClasses, D] of Inputs.Scope, the scope's initialiser) and
//
//	L = −1/B Σ_i Σ_c t_ic · log softmax_c(s · C_ic),   C_ic = cos(x_i, w_c)
//
// with targets t: the one-hot class for [B] labels; for [B, S] label sets (mixup, cutmix) the
// slot weights Inputs.LabelWeights ([B, S]: λ and 1 − λ, Zhang et al.'s and Yun et al.'s mixed
// targets) on the slots' classes, or, without them, equal weights on the set's non-empty slots
// (seed 002's label sets). Empty slots (−1) carry no target.
//
// ISM (seed 002 Table 2: "we directly implemented the proposed introspective similarity metric on
// Mixup and CutMix"): the embedding is [B, D + U] = concat(semantic s, uncertainty u) as for the
// idml loss (UncDim = U, 0: halves), and C_ic is the introspective cosine of Eq. 8 against the
// class weight, which carries no uncertainty:
//
//	C_IN = 1 − (1 − C)·exp(−(‖u_i‖ + γ) / (τ·α)),  α = ‖ŝ_i − ŵ_c‖    (Metric "sim")
//	C_IN = C·exp(−(‖u_i‖ + γ) / (τ·α))                                 (Metric "dis", Eq. 20)
//
// The class weights then have the semantic width D. At test time the classifier scores by the
// plain cosine (as the paper tests retrieval without the uncertainty term; see train's
// eval.classify).
//
// Defaults: s = 20 (Zhai & Wu's temperature 0.05), ISM off; with ISM τ = 1, γ = 0 (seed 002 §4.1
// for classification), metric sim.
type NormSoftmaxConfig struct {
	Scale  float64 `yaml:"scale" doc:"s: logit scale (1/temperature)"`
	ISM    bool    `yaml:"ism" doc:"use the introspective cosine (seed 002 Eq. 8) on [semantic | uncertainty] embeddings"`
	Tau    float64 `yaml:"tau" doc:"ism: τ, the weakening degree"`
	Gamma  float64 `yaml:"gamma" doc:"ism: γ, the introspective bias"`
	Metric string  `yaml:"metric" doc:"ism: sim (Eq. 8/19) or dis (Eq. 20)"`
	UncDim int     `yaml:"unc_dim" doc:"ism: width U of the uncertainty part of [B, D+U]; 0: U = D (halves)"`
}

// DefaultNormSoftmax returns the defaults.
func DefaultNormSoftmax() *NormSoftmaxConfig {
	return &NormSoftmaxConfig{Scale: 20, Tau: 1, Gamma: 0, Metric: "sim"}
}

// Name implements Loss.
func (c *NormSoftmaxConfig) Name() string { return "normsoftmax" }

// ClassWeights implements Classifier.
func (c *NormSoftmaxConfig) ClassWeights() string { return "weights" }

// Validate implements Validator.
func (c *NormSoftmaxConfig) Validate() error {
	if c.Scale <= 0 {
		return fmt.Errorf("scale = %g: want > 0", c.Scale)
	}
	if c.Tau <= 0 {
		return fmt.Errorf("tau = %g: want > 0", c.Tau)
	}
	if c.Gamma < 0 {
		return fmt.Errorf("gamma = %g: want ≥ 0", c.Gamma)
	}
	if c.Metric != "sim" && c.Metric != "dis" {
		return fmt.Errorf("metric %q: want sim or dis", c.Metric)
	}
	if c.UncDim < 0 || (c.UncDim > 0 && !c.ISM) {
		return fmt.Errorf("unc_dim = %d: want ≥ 0, and only with ism", c.UncDim)
	}
	return nil
}

// UncSplit implements UncertaintySplitter: with ISM the loss splits [B, D + UncDim] (0: halves).
func (c *NormSoftmaxConfig) UncSplit() (int, bool) { return c.UncDim, c.ISM }

// Build implements Loss.
func (c *NormSoftmaxConfig) Build(in Inputs) *Node {
	if in.RefEmb != nil {
		panic("losses: normsoftmax: Inputs.RefEmb is not supported")
	}
	if in.Scope == nil || in.NumClasses <= 0 {
		panic(fmt.Sprintf("losses: normsoftmax needs Inputs.Scope and Inputs.NumClasses > 0, got %d", in.NumClasses))
	}
	s := in.Emb
	var u *Node
	ic := &IDMLConfig{UncDim: c.UncDim, Tau: c.Tau, Gamma: c.Gamma, Metric: c.Metric}
	if c.ISM {
		s, u = ic.idmlSplit(in.Emb)
	}
	sn := normalizeRows(s)
	w := in.Scope.VariableWithShape("weights", shapes.Make(sn.DType(), in.NumClasses, sn.Shape().Dim(1))).NodeValue(sn.Graph())
	wn := normalizeRows(w)
	cos := MatMul(sn, Transpose(wn, 0, 1)) // [B, C]
	if c.ISM {
		dec := ic.idmlDecay(Distances(sn, wn), InsertAxes(idmlNorm(u), 1))
		cos = ic.idmlCosIN(cos, dec)
	}
	logp := LogSoftmax(MulScalar(cos, c.Scale), -1)
	return Neg(ReduceAllMean(ReduceSum(Mul(softTargets(in, logp.DType()), logp), -1)))
}

// softTargets returns the [B, C] target distribution of the labels: one-hot for [B] labels; for
// [B, S] label sets Σ_k w_ik · onehot(l_ik) over the non-empty slots, with w = Inputs.LabelWeights or
// equal weights 1/|set| (a class in two slots adds up).
func softTargets(in Inputs, dt dtypes.DType) *Node {
	g := in.Emb.Graph()
	sets := asSets(in.Labels) // [B, S]
	b, ns := sets.Shape().Dim(0), sets.Shape().Dim(1)
	classes := Iota(g, shapes.Make(sets.DType(), 1, 1, in.NumClasses), 2)
	hot := ConvertDType(Equal(InsertAxes(sets, -1), classes), dt) // [B, S, C]; an empty slot (−1) matches no class
	var wts *Node
	switch {
	case in.LabelWeights != nil && in.Labels.Rank() == 2:
		wts = ConvertDType(in.LabelWeights, dt)
		if wts.Rank() != 2 || wts.Shape().Dim(0) != b || wts.Shape().Dim(1) != ns {
			panic(fmt.Sprintf("losses: LabelWeights has shape %s, want [%d, %d] as the label sets", in.LabelWeights.Shape(), b, ns))
		}
	default:
		valid := ConvertDType(GreaterOrEqual(sets, ZerosLike(sets)), dt) // [B, S]
		wts = Div(valid, InsertAxes(Max(ReduceSum(valid, -1), OnesLike(ReduceSum(valid, -1))), -1))
	}
	return ReduceSum(Mul(hot, InsertAxes(wts, -1)), 1)
}
