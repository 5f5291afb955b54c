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
		Paper:   "Wang et al., Introspective Deep Metric Learning (seed 002), Eq. 3–9, 12–20",
		Summary: "introspective similarity: uncertainty embeddings soften semantic distances (ProxyAnchor, margin, contrastive, semi-hard triplet, ProxyNCA, multi-similarity or FastAP base)",
		New:     func() Loss { return DefaultIDML() },
		Proxies: true,
	})
}

// IDMLConfig is the introspective similarity metric (ISM) of seed 002 wrapped around a base loss.
//
// Embedding layout: Inputs.Emb is [B, D + U] = concat(semantic s, uncertainty u) along the feature
// axis (columns 0..D−1 semantic, D..D+U−1 uncertainty), as produced by IDML's two heads. UncDim
// (yaml unc_dim) is U; 0 (default) means U = D, the width is then 2D and must be even (the
// paper's 512 + 512 and dmlkit's models.Config.DualHead, whose uncertainty head has the semantic
// width). The semantic part is L2-normalised (the authors' --l2-norm 1); u is used raw.
//
// Metric (paper): α = ‖ŝ₁ − ŝ₂‖ (semantic distance), β = ‖u₁ + u₂‖ (similarity uncertainty),
// C = ŝ₁·ŝ₂ (cosine), r_conf = (β + γ)/α (Eq. 5) and e = exp(−r_conf/τ) ∈ (0, 1]. Metric "sim"
// (default, the paper's ISM-Sim) weakens the discrepancy of an uncertain pair toward "same":
//
//	D_IN = α · e                          (Eq. 6, distance form)
//	C_IN = 1 − (1 − C) · e                (Eq. 8 = Eq. 19, cosine form)
//
// Metric "dis" (ISM-Dis, Eq. 20, the paper's Table 7 ablation) pulls an uncertain pair toward
// "unrelated" instead: C_IN = C · e. The paper states Eq. 20 for the cosine only; for the distance
// bases dmlkit converts it with the unit-sphere identity ‖ŝ₁ − ŝ₂‖² = 2 − 2C:
//
//	D_IN = sqrt(2 − 2 · C · e)            (ISM-Dis, distance form; → √2 as e → 0)
//
// With zero uncertainty and γ = 0 (or τ → ∞) e = 1 and both metrics are the plain ones (D_IN = α,
// C_IN = C), so every base reduces to its registry loss on the semantic part.
//
// Bases (Base, yaml base):
//
//   - "proxyanchor" (default; the only introspective loss in the authors' code): ProxyAnchor
//     (Eq. 18; Kim et al. 2020, as in PML: margin δ = 0.1, scale 32; positive term averaged over the
//     proxies with positives in the batch, negative term over all C proxies) with C_IN in place of
//     the cosine. The proxies [NumClasses, D] are the learnable variable "proxies" of Inputs.Scope,
//     initialised like PML's kaiming_normal_(mode="fan_out"): N(0, 2/NumClasses). A proxy has no
//     uncertainty (β = ‖u_i‖) and α = ‖ŝ_i − p̂_j‖ on the normalised proxy (the paper does not say;
//     this is consistent with the cosine C). Paper Eq. 9 states a softmax-over-proxies loss; we
//     follow the code's ProxyAnchor.
//   - "margin": the paper's pair example (Eq. 7), the margin loss of Wu et al. with
//     distance-weighted sampling ([MarginConfig]) on D_IN(x_i, x_j):
//     J_m = Σ_{l_i=l_j} [D_IN − ξ]₊ + Σ_{l_i≠l_j} I(p(D_IN)) [ω − D_IN]₊, ξ = β − α, ω = β + α
//     (Eq. 7 prints "−" before the negative sum; a loss that rewards close negatives cannot be
//     meant, and the margin loss it cites adds the term). Negatives are drawn with probabilities
//     from D_IN (the sampler's sphere density uses the semantic dimension D); PairSampling "all"
//     uses every negative once. Defaults α = 0.2, β = 1.2 (the margin loss's).
//   - "contrastive": the pair contrastive loss (Eq. 15 in the [ContrastiveConfig] form, L2,
//     m₊ = 0, m₋ = 1, active-pair averaging) with D_IN(x_i, x_j) in place of the distance.
//   - "triplet": Triplet-SH (Eq. 12–13), [D_IN(a,p) − D_IN(a,n) + δ]₊ over anchors a, positives
//     p ≠ a and negatives n, averaged over the triplets with a non-zero loss (PML's AvgNonZero
//     reducer, as the registry's [TripletConfig]; Eq. 12 sums), 0 without one. TripletMining
//     (yaml triplet_mining) picks the negatives, from D_IN without gradient: "semihard" (default,
//     Eq. 13) one negative per (a, p), n* = argmin{D_IN(a,n) : D_IN(a,n) > D_IN(a,p)} (FaceNet's
//     semi-hard negative; a pair without one is dropped); "band" every n with
//     D_IN(a,p) < D_IN(a,n) < D_IN(a,p) + δ (PML's semihard miner, the registry triplet's
//     mining: semihard); "all" every negative. δ = TripletMargin, default 0.05 (PML's; the paper
//     gives none).
//   - "proxynca": ProxyNCA (Eq. 14) against the same "proxies" variable as "proxyanchor":
//     J = 1/B Σ_i −log( Σ_{p: l_p ∈ l_i} e^{−d_IN(x_i,p)/T} / Σ_{p: l_p ∉ l_i} e^{−d_IN(x_i,p)/T} ).
//     Eq. 14 prints e^{+D_IN} in both sums, which would reward distant positives: the minus sign
//     of ProxyNCA (Movshovitz-Attias et al., Eq. 7) is the self-consistent form used here. The
//     target proxy is excluded from the denominator (original ProxyNCA); an empty denominator
//     contributes 0. Label sets: the numerator sums over every proxy of the set (a mixed sample's
//     target is both labels, as the mixup treatment of ProxyAnchor), the denominator over the
//     others. d_IN is D_IN (Eq. 14 as printed, default) or D_IN² with NCASquared (yaml
//     nca_squared: the registry [ProxyNCAConfig]'s squared distance, so that zero uncertainty
//     gives exactly that loss); as for ProxyAnchor a proxy has no uncertainty and α, C are
//     measured to the normalised proxy. T = NCATemperature, default 1; the mean over i replaces
//     the paper's sum.
//   - "multisimilarity": Multi-Similarity (Eq. 16–17) on the pairwise C_IN(x_i, x_j) with the MS
//     miner (MSMining, default on, as the paper trains): a negative is kept if
//     C_IN > min_{positives} C_IN − ε and a positive if C_IN < max_{negatives} C_IN + ε, computed
//     without gradient ([MultiSimilarityConfig]'s miner). Eq. 16 prints "− ε" in both cases and
//     sets the other pairs' similarity to 0; we read it as the MS paper's miner (Eq. 12–13 there):
//     "+ ε" for positives and the other pairs left out of the sums. Then
//     J = 1/B Σ_i [1/α_ms log(1 + Σ_{P_i} e^{−α_ms(C_IN − λ)}) + 1/β_ms log(1 + Σ_{N_i} e^{β_ms(C_IN − λ)})].
//     Defaults α_ms = 2, β_ms = 50, λ = 0.5, ε = 0.1 (MS paper).
//   - "fastap": FastAP (Cakir et al. 2019; [FastAPConfig]) on the introspective distance. The
//     paper lists ISM-FastAP (Table 1) without a formula. FastAP bins the squared distance
//     d = ‖ŝ_q − ŝ_j‖² ∈ [0, 4] of each query q to its candidates j with triangular kernels; the
//     paper derives every distance-based ISM loss (Eq. 7, 12, 14, 15) by replacing the distance α
//     with D_IN, so ISM-FastAP bins d_IN = D_IN(x_q, x_j)² (= α²e² for sim, 2 − 2Ce for dis). Both
//     lie in [0, 4], so FastAP's bin centres z_l = l·4/L, l = 0…L, still cover them; then
//     h⁺_l = Σ_{j∈P_q} δ(d_IN, z_l), h_l = Σ_{j≠q} δ(d_IN, z_l), FastAP_q = 1/|P_q| Σ_l h⁺_l H⁺_l / H_l
//     (H cumulative) and J = 1 − mean FastAP_q over queries with a positive. An uncertain pair is
//     moved to a lower bin (sim), so its rank counts less against the query's AP.
//     L = FastAPBins, default 10.
//
// Labels: [B] or [B, S] label sets (the paper's mixup images carry {l₁, l₂}; "l_i = l_j" when the
// sets intersect). α near 0 is handled (α is floored at 1e−12, so D_IN → 0 with a zero gradient).
//
// CodeMetric reproduces the authors' code (papers-vs-code §4): squared norms, r = (‖û‖² + γ)/α²
// with û the L2-normalised uncertainty (so ‖û‖² ≡ 1 for a proxy pair and the uncertainty head gets
// almost no gradient — the bug the notes describe) and α measured to the raw (unnormalised) proxy
// (also for the proxynca base). The code also hard-codes γ = 4 and τ = 5: set gamma: 4 with
// code_metric.
//
// Diagnostics ([IDMLConfig.BuildDiagnosed]): the mean uncertainty norm ‖u‖, also per original and
// mixed rows for label sets.
//
// Defaults: τ = 5, γ = 0 (paper: 0 for CUB and SOP, 3 for Cars), δ = 0.1, scale 32, metric sim.
type IDMLConfig struct {
	Base       string  `yaml:"base" doc:"proxyanchor (authors' code), margin, contrastive, triplet, proxynca, multisimilarity or fastap"`
	Metric     string  `yaml:"metric" doc:"sim (ISM-Sim, Eq. 6/8/19) or dis (ISM-Dis, Eq. 20)"`
	UncDim     int     `yaml:"unc_dim" doc:"width U of the uncertainty part of the embedding [B, D+U]; 0: U = D (halves)"`
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
	// Triplet-base parameters (Eq. 12–13).
	TripletMargin float64 `yaml:"triplet_margin" doc:"triplet base: margin δ of Eq. 12"`
	TripletMining string  `yaml:"triplet_mining" doc:"triplet base: semihard (Eq. 13, one negative per pair), band (PML semihard) or all"`
	// ProxyNCA-base parameters (Eq. 14).
	NCATemperature float64 `yaml:"nca_temperature" doc:"proxynca base: distances are divided by T"`
	NCASquared     bool    `yaml:"nca_squared" doc:"proxynca base: D_IN² (the registry proxynca's squared distance) instead of D_IN (Eq. 14)"`
	// Multi-similarity-base parameters (Eq. 16–17).
	MSAlpha   float64 `yaml:"ms_alpha" doc:"multisimilarity base: positive scale α"`
	MSBeta    float64 `yaml:"ms_beta" doc:"multisimilarity base: negative scale β"`
	MSBase    float64 `yaml:"ms_base" doc:"multisimilarity base: similarity offset λ"`
	MSEpsilon float64 `yaml:"ms_epsilon" doc:"multisimilarity base: miner margin ε"`
	MSMining  bool    `yaml:"ms_mining" doc:"multisimilarity base: apply the MS miner (Eq. 16)"`
	// FastAP-base parameter.
	FastAPBins int `yaml:"fastap_bins" doc:"fastap base: number L of histogram bins over [0, 4]"`
}

// DefaultIDML returns the paper's defaults with the ProxyAnchor base.
func DefaultIDML() *IDMLConfig {
	return &IDMLConfig{Base: "proxyanchor", Metric: "sim", Tau: 5, Gamma: 0, Margin: 0.1, Scale: 32, PosMargin: 0, NegMargin: 1,
		PairMargin: 0.2, PairBeta: 1.2, PairSampling: "distance",
		TripletMargin: 0.05, TripletMining: "semihard", NCATemperature: 1,
		MSAlpha: 2, MSBeta: 50, MSBase: 0.5, MSEpsilon: 0.1, MSMining: true, FastAPBins: 10}
}

// Name implements Loss.
func (c *IDMLConfig) Name() string { return "idml" }

// UncSplit implements UncertaintySplitter: the loss splits [B, D + UncDim] (0: halves).
func (c *IDMLConfig) UncSplit() (int, bool) { return c.UncDim, true }

// ClassWeights implements Classifier for the proxy bases (proxyanchor, proxynca): their proxies
// are the class weights; "" for the pair bases.
func (c *IDMLConfig) ClassWeights() string {
	if c.Base == "proxyanchor" || c.Base == "proxynca" {
		return "proxies"
	}
	return ""
}

// idmlBases lists the accepted bases, for errors.
const idmlBases = "proxyanchor, margin, contrastive, triplet, proxynca, multisimilarity or fastap"

// Validate implements Validator.
func (c *IDMLConfig) Validate() error {
	switch c.Base {
	case "proxyanchor", "contrastive", "margin", "triplet", "proxynca", "multisimilarity", "fastap":
	default:
		return fmt.Errorf("base %q: want %s", c.Base, idmlBases)
	}
	if c.Metric != "sim" && c.Metric != "dis" {
		return fmt.Errorf("metric %q: want sim or dis", c.Metric)
	}
	if c.UncDim < 0 {
		return fmt.Errorf("unc_dim %d: want ≥ 0 (0: the semantic width)", c.UncDim)
	}
	if c.Base == "margin" && c.PairSampling != "distance" && c.PairSampling != "all" {
		return fmt.Errorf("pair_sampling %q: want distance or all", c.PairSampling)
	}
	if c.Base == "triplet" && c.TripletMining != "semihard" && c.TripletMining != "band" && c.TripletMining != "all" {
		return fmt.Errorf("triplet_mining %q: want semihard, band or all", c.TripletMining)
	}
	if c.Tau <= 0 {
		return fmt.Errorf("tau %g: must be > 0", c.Tau)
	}
	if c.Margin < 0 || c.PairMargin < 0 || c.TripletMargin < 0 {
		return fmt.Errorf("margin %g, pair_margin %g, triplet_margin %g: must be ≥ 0", c.Margin, c.PairMargin, c.TripletMargin)
	}
	if c.Scale <= 0 {
		return fmt.Errorf("scale %g: must be > 0", c.Scale)
	}
	if c.Gamma < 0 {
		return fmt.Errorf("gamma %g: must be ≥ 0", c.Gamma)
	}
	if c.Base == "proxynca" && c.NCATemperature <= 0 {
		return fmt.Errorf("nca_temperature %g: must be > 0", c.NCATemperature)
	}
	if c.Base == "multisimilarity" && (c.MSAlpha <= 0 || c.MSBeta <= 0 || c.MSEpsilon < 0) {
		return fmt.Errorf("ms_alpha %g, ms_beta %g: must be > 0; ms_epsilon %g: must be ≥ 0", c.MSAlpha, c.MSBeta, c.MSEpsilon)
	}
	if c.Base == "fastap" && c.FastAPBins < 1 {
		return fmt.Errorf("fastap_bins %d: want ≥ 1", c.FastAPBins)
	}
	return nil
}

// idmlSplit returns the semantic [B, D] and uncertainty [B, U] parts of a [B, D+U] embedding
// (U = UncDim, or D = U = width/2 when UncDim is 0).
func (c *IDMLConfig) idmlSplit(emb *Node) (s, u *Node) {
	w := emb.Shape().Dim(1)
	var d int
	switch {
	case c.UncDim == 0 && w%2 == 0:
		d = w / 2
	case c.UncDim == 0:
		panic(fmt.Sprintf("losses: idml: embeddings %s: want [B, 2D] = concat(semantic, uncertainty) (or set unc_dim)", emb.Shape()))
	case c.UncDim >= w:
		panic(fmt.Sprintf("losses: idml: embeddings %s: want [B, D+%d] = concat(semantic, uncertainty) with D ≥ 1 (unc_dim %d)", emb.Shape(), c.UncDim, c.UncDim))
	default:
		d = w - c.UncDim
	}
	return Slice(emb, AxisRange(), AxisRange(0, d)), Slice(emb, AxisRange(), AxisRange(d, w))
}

// idmlDecay returns e = exp(−r_conf/τ) for semantic distances alpha and uncertainty norms beta
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

// idmlCosIN returns the introspective cosine from the cosine C and the decay e: 1 − (1 − C)·e for
// ISM-Sim (Eq. 8/19), C·e for ISM-Dis (Eq. 20).
func (c *IDMLConfig) idmlCosIN(cos, dec *Node) *Node {
	if c.Metric == "dis" {
		return Mul(cos, dec)
	}
	return OneMinus(Mul(OneMinus(cos), dec))
}

// idmlDistIN returns the introspective distance D_IN from α, C and e (ISM-Sim: α·e, Eq. 6;
// ISM-Dis: sqrt(2 − 2C·e)), or D_IN² when squared. The square root is 0 with a zero gradient
// below 1e−12 (as [Distances]).
func (c *IDMLConfig) idmlDistIN(alpha, cos, dec *Node, squared bool) *Node {
	if c.Metric == "dis" {
		d2 := MulScalar(OneMinus(Mul(cos, dec)), 2)
		d2 = Max(d2, ZerosLike(d2))
		if squared {
			return d2
		}
		ok := GreaterThan(d2, ScalarLike(d2, 1e-12))
		return Where(ok, Sqrt(Where(ok, d2, OnesLike(d2))), ZerosLike(d2))
	}
	d := Mul(alpha, dec)
	if squared {
		return Square(d)
	}
	return d
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
	s, u := c.idmlSplit(in.Emb)
	sn := normalizeRows(s)
	if c.CodeMetric {
		u = normalizeRows(u)
	}
	switch c.Base {
	case "margin":
		dIN := c.idmlPairDistances(sn, u, false)
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
		dIN := c.idmlPairDistances(sn, u, false)
		pos, neg := PairMasks(in)
		posTerm := relu(AddScalar(dIN, -c.PosMargin))
		negTerm := relu(Sub(ScalarLike(dIN, c.NegMargin), dIN))
		return Add(reducePairs(posTerm, pos, true), reducePairs(negTerm, neg, true))
	case "proxyanchor":
		return c.idmlProxyAnchor(in, sn, u)
	case "triplet":
		return c.idmlTriplet(in, c.idmlPairDistances(sn, u, false))
	case "proxynca":
		return c.idmlProxyNCA(in, sn, u)
	case "multisimilarity":
		return c.idmlMultiSimilarity(in, sn, u)
	case "fastap":
		return c.idmlFastAP(in, c.idmlPairDistances(sn, u, true))
	}
	panic(fmt.Sprintf("losses: idml: base %q: want %s", c.Base, idmlBases))
}

// idmlPairs returns, for all in-batch pairs [B, B], the semantic distance α, the cosine C of the
// normalised semantic embeddings sn and the decay e from the uncertainty embeddings u.
func (c *IDMLConfig) idmlPairs(sn, u *Node) (alpha, cos, dec *Node) {
	alpha = Distances(sn, sn)
	cos = MatMul(sn, Transpose(sn, 0, 1))
	beta := idmlNorm(Add(InsertAxes(u, 1), InsertAxes(u, 0))) // ‖u_i + u_j‖, [B, B]
	return alpha, cos, c.idmlDecay(alpha, beta)
}

// idmlPairDistances returns D_IN(x_i, x_j) (Eq. 6, or ISM-Dis) for all in-batch pairs, [B, B], or
// its square.
func (c *IDMLConfig) idmlPairDistances(sn, u *Node, squared bool) *Node {
	alpha, cos, dec := c.idmlPairs(sn, u)
	return c.idmlDistIN(alpha, cos, dec, squared)
}

// idmlProxies returns the learnable proxies [NumClasses, D] (variable "proxies" of in.Scope) and
// their L2-normalised rows.
func (c *IDMLConfig) idmlProxies(in Inputs, sn *Node) (proxies, pn *Node) {
	if in.Scope == nil || in.NumClasses <= 0 {
		panic(fmt.Sprintf("losses: idml with the %s base needs Inputs.Scope and Inputs.NumClasses", c.Base))
	}
	nc, d := in.NumClasses, sn.Shape().Dim(1)
	scope := in.Scope.WithInitializer(initializer.RandomNormalFn(in.Scope, math.Sqrt(2/float64(nc))))
	proxies = scope.VariableWithShape("proxies", shapes.Make(sn.DType(), nc, d)).ValueGraph(sn.Graph())
	return proxies, normalizeRows(proxies)
}

// idmlProxyTerms returns α, C and e [B, C] between the samples and the proxies (a proxy carries
// no uncertainty: β = ‖u_i‖), and the class membership [B, C] from labels or label sets.
func (c *IDMLConfig) idmlProxyTerms(in Inputs, sn, u *Node) (alpha, cos, dec, member *Node) {
	proxies, pn := c.idmlProxies(in, sn)
	cos = MatMul(sn, Transpose(pn, 0, 1)) // C(x_i, p_j), [B, C]
	if c.CodeMetric {
		alpha = Distances(sn, proxies)
	} else {
		alpha = Distances(sn, pn)
	}
	dec = c.idmlDecay(alpha, InsertAxes(idmlNorm(u), 1)) // ‖u_i + 0‖
	// Class membership [B, C] (−1 = empty slot never matches).
	sets := asSets(in.Labels)
	classes := Iota(sn.Graph(), shapes.Make(sets.DType(), 1, 1, in.NumClasses), 2)
	member = ReduceLogicalOr(Equal(InsertAxes(sets, -1), classes), 1)
	return alpha, cos, dec, member
}

// idmlProxyAnchor is ProxyAnchor on the introspective cosine C_IN (Eq. 8/18, or Eq. 20).
func (c *IDMLConfig) idmlProxyAnchor(in Inputs, sn, u *Node) *Node {
	_, cos, dec, member := c.idmlProxyTerms(in, sn, u)
	cin := c.idmlCosIN(cos, dec)
	posLog := idmlLogOnePlusSumExp(MulScalar(AddScalar(cin, -c.Margin), -c.Scale), member)
	negLog := idmlLogOnePlusSumExp(MulScalar(AddScalar(cin, c.Margin), c.Scale), LogicalNot(member))
	hasPos := ReduceLogicalOr(member, 0)
	posTerm := MaskedMean(posLog, hasPos)
	negTerm := DivScalar(ReduceAllSum(negLog), float64(in.NumClasses))
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
