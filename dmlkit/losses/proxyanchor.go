package losses

import (
	"fmt"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "proxyanchor",
		Paper:   "Kim, Kim, Cho & Kwak, Proxy Anchor Loss for Deep Metric Learning, CVPR 2020, Eq. 4",
		Summary: "each class proxy is an anchor: pulls its positives, pushes its negatives (log-sum-exp)",
		New:     func() Loss { return DefaultProxyAnchor() },
		Proxies: true,
	})
}

// ProxyAnchorConfig is the Proxy-Anchor loss. With one learnable proxy p_c ∈ R^D per class
// (variable "proxies" [C, D] in Inputs.Scope, He/Kaiming-normal initialised with fan = C as
// pytorch-metric-learning's kaiming fan_out) and cosine similarities s(x, p):
//
//	L = 1/|P⁺| Σ_{p∈P⁺} log(1 + Σ_{x∈X_p⁺} e^{−α(s(x,p) − δ)}) + 1/|P| Σ_{p∈P} log(1 + Σ_{x∈X_p⁻} e^{α(s(x,p) + δ)})
//
// P are all C proxies, P⁺ those with at least one positive in the batch, X_p⁺ / X_p⁻ the batch
// samples of / not of p's class. Label sets ([B, S]) make a sample positive to every proxy of its
// set. No positives at all gives a positive term of 0. References (RefEmb) are ignored: the
// proxies are the references.
//
// Defaults: δ = 0.1, α = 32 (paper and pytorch-metric-learning).
type ProxyAnchorConfig struct {
	Margin float64 `yaml:"margin" doc:"δ: similarity margin"`
	Alpha  float64 `yaml:"alpha" doc:"α: scale"`
}

// DefaultProxyAnchor returns the paper's defaults.
func DefaultProxyAnchor() *ProxyAnchorConfig { return &ProxyAnchorConfig{Margin: 0.1, Alpha: 32} }

// Name implements Loss.
func (c *ProxyAnchorConfig) Name() string { return "proxyanchor" }

// ClassWeights implements Classifier: the proxies.
func (c *ProxyAnchorConfig) ClassWeights() string { return "proxies" }

// Validate implements Validator.
func (c *ProxyAnchorConfig) Validate() error {
	if c.Alpha <= 0 {
		return fmt.Errorf("alpha = %g: want > 0", c.Alpha)
	}
	if c.Margin < 0 {
		return fmt.Errorf("margin = %g: want ≥ 0", c.Margin)
	}
	return nil
}

// Build implements Loss.
func (c *ProxyAnchorConfig) Build(in Inputs) *Node {
	proxies := blProxies(in, "proxyanchor", "proxies", in.NumClasses)
	s := Transpose(CosineSim(in.Emb, proxies), 0, 1) // [C, B]
	pos := Transpose(blClassMask(in, in.NumClasses), 0, 1)
	neg := LogicalNot(pos)
	posLSE := blLogOnePlusSumExp(MulScalar(AddScalar(s, -c.Margin), -c.Alpha), pos) // [C]
	negLSE := blLogOnePlusSumExp(MulScalar(AddScalar(s, c.Margin), c.Alpha), neg)   // [C]
	withPos := ReduceLogicalOr(pos, -1)
	return Add(MaskedMean(posLSE, withPos), ReduceAllMean(negLSE))
}

// blProxies returns the learnable [rows, D] variable name of in.Scope (created on first use with
// the scope's initializer, in the embeddings' dtype).
func blProxies(in Inputs, loss, name string, rows int) *Node {
	if in.Scope == nil {
		panic(fmt.Sprintf("losses: %s needs Inputs.Scope for its learnable %s", loss, name))
	}
	if rows <= 0 {
		panic(fmt.Sprintf("losses: %s needs Inputs.NumClasses > 0, got %d", loss, in.NumClasses))
	}
	d := in.Emb.Shape().Dim(1)
	v := in.Scope.VariableWithShape(name, shapes.Make(in.Emb.DType(), rows, d))
	return v.NodeValue(in.Emb.Graph())
}

// blClassMask returns the [B, C] boolean "sample b has class c" (any label of a label set).
func blClassMask(in Inputs, numClasses int) *Node {
	classes := Iota(in.Emb.Graph(), shapes.Make(dtypes.Int64, numClasses), 0)
	return SameLabel(in.Labels, classes)
}

// blPlainLabels panics unless labels are plain [B] class indices (softmax-based losses).
func blPlainLabels(in Inputs, loss string) {
	if in.Labels.Rank() != 1 {
		panic(fmt.Sprintf("losses: %s needs plain [B] labels, got shape %s", loss, in.Labels.Shape()))
	}
}
