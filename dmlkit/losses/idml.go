package losses

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model/initializer"
)

func init() {
	Register(Entry{
		Name:    "idml",
		Paper:   "Wang et al., Introspective Deep Metric Learning (seed 002), Eq. 3–9",
		Summary: "introspective similarity: uncertainty embeddings soften semantic distances (ProxyAnchor, margin or contrastive base)",
		New:     func() Loss { return DefaultIDML() },
		Proxies: true,
	})
}

// IDMLConfig is the introspective similarity metric of seed 002 wrapped around a base loss.
//
// Embedding layout: Inputs.Emb is [B, 2D] = concat(semantic s, uncertainty u) along the feature axis
// (columns 0..D−1 semantic, D..2D−1 uncertainty), as produced by IDML's two heads. The semantic
// part is L2-normalised (the authors' --l2-norm 1).
//
// Metric (paper): α = ‖s₁ − s₂‖ (semantic distance), β = ‖u₁ + u₂‖ (similarity uncertainty),
// r_conf = (β + γ)/α (Eq. 5) and
//
//	D_IN = α · exp(−r_conf/τ)                              (Eq. 6, distance form)
//	C_IN = 1 − (1 − C) · exp(−r_conf/τ)                    (Eq. 8, cosine form, C = cos(s, p))
//
// Base "proxyanchor" (default; the only introspective loss in the authors' code): ProxyAnchor
// (Kim et al. 2020, as in PML: margin δ = 0.1, scale 32; positive term averaged over the proxies with
// positives in the batch, negative term over all C proxies) with C_IN in place of the cosine. The
// proxies [NumClasses, D] are the learnable variable "proxies" of Inputs.Scope, initialised like PML's
// kaiming_normal_(mode="fan_out"): N(0, 2/NumClasses). A proxy has no uncertainty (β = ‖u_i‖) and
// α = ‖ŝ_i − p̂_j‖ on the normalised proxy (the paper does not say; this is consistent with the
// cosine C). Paper Eq. 9 states a softmax-over-proxies loss; we follow the code's ProxyAnchor.
//
// Base "margin": the paper's pair example (Eq. 7), the margin loss of Wu et al. with
// distance-weighted sampling ([MarginConfig]) on D_IN(x_i, x_j):
//
//	J_m = Σ_{l_i=l_j} [D_IN − ξ]₊ + Σ_{l_i≠l_j} I(p(D_IN)) [ω − D_IN]₊,   ξ = β − α, ω = β + α
//
// (Eq. 7 prints "−" before the negative sum; a loss that rewards close negatives cannot be meant,
// and the margin loss it cites adds the term). Negatives are drawn with probabilities from D_IN
// (the sampler's sphere density uses the semantic dimension D); PairSampling "all" uses every
// negative once. Defaults α = 0.2, β = 1.2 (the margin loss's).
//
// Base "contrastive": the pair contrastive loss ([ContrastiveConfig] form, L2, m₊ = 0, m₋ = 1,
// active-pair averaging) with D_IN(x_i, x_j) in place of the distance.
//
// Labels: [B] or [B, S] label sets (the paper's mixup images carry {l₁, l₂}; "l_i = l_j" when the
// sets intersect). α near 0 is handled (α is floored at 1e−12, so D_IN → 0 with a zero gradient).
//
// CodeMetric reproduces the authors' code (papers-vs-code §4): squared norms, r = (‖û‖² + γ)/α²
// with û the L2-normalised uncertainty (so ‖û‖² ≡ 1 for a proxy pair and the uncertainty head gets
// almost no gradient — the bug the notes describe) and α measured to the raw (unnormalised) proxy.
// The code also hard-codes γ = 4 and τ = 5: set gamma: 4 with code_metric.
//
// Defaults: τ = 5, γ = 0 (paper: 0 for CUB and SOP, 3 for Cars), δ = 0.1, scale 32.
type IDMLConfig struct {
	Base       string  `yaml:"base" doc:"proxyanchor (authors' code) or contrastive"`
	Tau        float64 `yaml:"tau" doc:"τ: weakening degree of the introspective metric"`
	Gamma      float64 `yaml:"gamma" doc:"γ: introspective bias (paper: 0 CUB/SOP, 3 Cars; code: 4)"`
	CodeMetric bool    `yaml:"code_metric" doc:"authors' code: normalised uncertainty with squared distances, raw proxies"`
	Margin     float64 `yaml:"margin" doc:"ProxyAnchor margin δ"`
	Scale      float64 `yaml:"scale" doc:"ProxyAnchor scale α"`
	PosMargin  float64 `yaml:"pos_margin" doc:"contrastive base: D_IN below which positives cost nothing"`
	NegMargin  float64 `yaml:"neg_margin" doc:"contrastive base: D_IN above which negatives cost nothing"`
	// Margin-base parameters (Eq. 7): ξ = PairBeta − PairMargin, ω = PairBeta + PairMargin.
	PairMargin   float64 `yaml:"pair_margin" doc:"margin base: α of the margin loss"`
	PairBeta     float64 `yaml:"pair_beta" doc:"margin base: boundary β of the margin loss"`
	PairSampling string  `yaml:"pair_sampling" doc:"margin base: distance (distance-weighted negatives) or all"`
}

// DefaultIDML returns the paper's defaults with the ProxyAnchor base.
func DefaultIDML() *IDMLConfig {
	return &IDMLConfig{Base: "proxyanchor", Tau: 5, Gamma: 0, Margin: 0.1, Scale: 32, PosMargin: 0, NegMargin: 1,
		PairMargin: 0.2, PairBeta: 1.2, PairSampling: "distance"}
}

// Name implements Loss.
func (c *IDMLConfig) Name() string { return "idml" }

// Validate implements Validator.
func (c *IDMLConfig) Validate() error {
	if c.Base != "proxyanchor" && c.Base != "contrastive" && c.Base != "margin" {
		return fmt.Errorf("base %q: want proxyanchor, margin or contrastive", c.Base)
	}
	if c.Base == "margin" && c.PairSampling != "distance" && c.PairSampling != "all" {
		return fmt.Errorf("pair_sampling %q: want distance or all", c.PairSampling)
	}
	if c.Tau <= 0 {
		return fmt.Errorf("tau %g: must be > 0", c.Tau)
	}
	if c.Margin < 0 || c.PairMargin < 0 {
		return fmt.Errorf("margin %g, pair_margin %g: must be ≥ 0", c.Margin, c.PairMargin)
	}
	if c.Scale <= 0 {
		return fmt.Errorf("scale %g: must be > 0", c.Scale)
	}
	if c.Gamma < 0 {
		return fmt.Errorf("gamma %g: must be ≥ 0", c.Gamma)
	}
	return nil
}

// idmlSplit returns the semantic and uncertainty halves of a [B, 2D] embedding.
func idmlSplit(emb *Node) (s, u *Node) {
	d2 := emb.Shape().Dim(1)
	if d2%2 != 0 {
		panic(fmt.Sprintf("losses: idml: embeddings %s: want [B, 2D] = concat(semantic, uncertainty)", emb.Shape()))
	}
	d := d2 / 2
	return Slice(emb, AxisRange(), AxisRange(0, d)), Slice(emb, AxisRange(), AxisRange(d, d2))
}

// idmlDecay returns exp(−r_conf/τ) for semantic distances alpha and uncertainty norms beta
// (paper: r = (β + γ)/α; code: r = (β² + γ)/α²).
func (c *IDMLConfig) idmlDecay(alpha, beta *Node) *Node {
	safe := Max(alpha, ScalarLike(alpha, 1e-12))
	var r *Node
	if c.CodeMetric {
		r = Div(AddScalar(Square(beta), c.Gamma), Square(safe))
	} else {
		r = Div(AddScalar(beta, c.Gamma), safe)
	}
	return Exp(DivScalar(Neg(r), c.Tau))
}

// idmlNorm is the Euclidean norm along the last axis, with a zero gradient at 0 (not NaN).
func idmlNorm(x *Node) *Node {
	sq := ReduceSum(Square(x), -1)
	ok := GreaterThan(sq, ScalarLike(sq, 1e-24))
	return Where(ok, Sqrt(Where(ok, sq, OnesLike(sq))), ZerosLike(sq))
}

// Build implements Loss.
func (c *IDMLConfig) Build(in Inputs) *Node {
	if in.RefEmb != nil {
		panic("losses: idml: Inputs.RefEmb is not supported")
	}
	s, u := idmlSplit(in.Emb)
	sn := normalizeRows(s)
	if c.CodeMetric {
		u = normalizeRows(u)
	}
	switch c.Base {
	case "margin":
		dIN := c.idmlPairDistances(sn, u)
		m := &MarginConfig{Margin: c.PairMargin, Beta: c.PairBeta, Sampling: c.PairSampling, Cutoff: 0.5, NonzeroLossCutoff: 1.4}
		var counts *Node
		if c.PairSampling == "all" {
			_, neg := PairMasks(in)
			counts = ConvertDType(neg, dIN.DType())
		} else {
			counts = m.sampleFromDistances(in, dIN, sn.Shape().Dim(1))
		}
		return m.marginFromDistances(in, dIN, counts)
	case "contrastive":
		dIN := c.idmlPairDistances(sn, u)
		pos, neg := PairMasks(in)
		posTerm := relu(AddScalar(dIN, -c.PosMargin))
		negTerm := relu(Sub(ScalarLike(dIN, c.NegMargin), dIN))
		return Add(reducePairs(posTerm, pos, true), reducePairs(negTerm, neg, true))
	case "proxyanchor":
		return c.idmlProxyAnchor(in, sn, u)
	}
	panic(fmt.Sprintf("losses: idml: base %q: want proxyanchor, margin or contrastive", c.Base))
}

// idmlPairDistances returns D_IN(x_i, x_j) (Eq. 6) for all in-batch pairs, [B, B], from the
// normalised semantic embeddings sn and the uncertainty embeddings u.
func (c *IDMLConfig) idmlPairDistances(sn, u *Node) *Node {
	alpha := Distances(sn, sn)
	beta := idmlNorm(Add(InsertAxes(u, 1), InsertAxes(u, 0))) // ‖u_i + u_j‖, [B, B]
	return Mul(alpha, c.idmlDecay(alpha, beta))
}

// idmlProxyAnchor is ProxyAnchor on the introspective cosine C_IN (Eq. 8).
func (c *IDMLConfig) idmlProxyAnchor(in Inputs, sn, u *Node) *Node {
	if in.Scope == nil || in.NumClasses <= 0 {
		panic("losses: idml with the proxyanchor base needs Inputs.Scope and Inputs.NumClasses")
	}
	g := sn.Graph()
	dt := sn.DType()
	nc, d := in.NumClasses, sn.Shape().Dim(1)
	scope := in.Scope.WithInitializer(initializer.RandomNormalFn(in.Scope, math.Sqrt(2/float64(nc))))
	proxies := scope.VariableWithShape("proxies", shapes.Make(dt, nc, d)).ValueGraph(g)
	pn := normalizeRows(proxies)
	cos := MatMul(sn, Transpose(pn, 0, 1)) // C(x_i, p_j), [B, C]
	var alpha *Node
	if c.CodeMetric {
		alpha = Distances(sn, proxies)
	} else {
		alpha = Distances(sn, pn)
	}
	beta := InsertAxes(idmlNorm(u), 1) // proxies carry no uncertainty: ‖u_i + 0‖
	cin := OneMinus(Mul(OneMinus(cos), c.idmlDecay(alpha, beta)))
	// Class membership [B, C] from labels or label sets (−1 = empty slot never matches).
	sets := asSets(in.Labels)
	classes := Iota(g, shapes.Make(sets.DType(), 1, 1, nc), 2)
	member := ReduceLogicalOr(Equal(InsertAxes(sets, -1), classes), 1)
	posLog := idmlLogOnePlusSumExp(MulScalar(AddScalar(cin, -c.Margin), -c.Scale), member)
	negLog := idmlLogOnePlusSumExp(MulScalar(AddScalar(cin, c.Margin), c.Scale), LogicalNot(member))
	hasPos := ReduceLogicalOr(member, 0)
	posTerm := MaskedMean(posLog, hasPos)
	negTerm := DivScalar(ReduceAllSum(negLog), float64(nc))
	return Add(posTerm, negTerm)
}

// idmlLogOnePlusSumExp returns, per column c, log(1 + Σ_{i: mask[i,c]} exp(t[i,c])) computed stably.
func idmlLogOnePlusSumExp(t, mask *Node) *Node {
	negInf := ScalarLike(t, math.Inf(-1))
	masked := Where(mask, t, negInf)
	mx := ReduceMax(masked, 0)
	m := StopGradient(Max(mx, ZerosLike(mx))) // ≥ 0 and finite, also for an empty column
	// exp(−∞) = 0 with a zero gradient, so masked-out entries never produce inf·0 in the backward pass.
	sum := ReduceSum(Exp(Sub(masked, InsertAxes(m, 0))), 0)
	return Add(Log(Add(Exp(Neg(m)), sum)), m)
}
