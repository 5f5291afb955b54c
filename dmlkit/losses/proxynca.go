package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "proxynca",
		Paper:   "Movshovitz-Attias et al., No Fuss Distance Metric Learning using Proxies, ICCV 2017, Eq. 7; ProxyNCA++: Teh, DeVries & Taylor, ECCV 2020, Eq. 5",
		Summary: "NCA against one learnable proxy per class on squared L2 distances of normalised vectors",
		New:     func() Loss { return DefaultProxyNCA() },
		Proxies: true,
	})
}

// ProxyNCAConfig is the ProxyNCA loss. With x̂, p̂ the L2-normalised embedding and proxies
// (variable "proxies" [C, D] in Inputs.Scope) and d(x, p) = ‖x̂ − p̂‖²:
//
//	L = 1/B Σ_i −log( e^{−d(x_i, p_{y_i})/T} / Σ_{z∈Z_i} e^{−d(x_i, p_z)/T} )
//
// Z_i is every proxy except the target's (the original ProxyNCA, Eq. 7), or every proxy with
// IncludePositive (ProxyNCA++ and pytorch-metric-learning's ProxyNCALoss, a softmax cross-entropy
// over proxies). T is the temperature: 1 for ProxyNCA (pytorch-metric-learning's softmax_scale 1),
// 1/9 in ProxyNCA++. Labels must be plain [B] class indices < NumClasses. With a single class and
// IncludePositive false, Z_i is empty and the sample contributes d/T only (log-sum over nothing
// taken as 0). The original form can be negative.
//
// Defaults: T = 1, target excluded (original paper).
type ProxyNCAConfig struct {
	Temperature     float64 `yaml:"temperature" doc:"T: distances are divided by T (ProxyNCA++: 1/9)"`
	IncludePositive bool    `yaml:"include_positive" doc:"include the target proxy in the denominator (ProxyNCA++, pytorch-metric-learning)"`
}

// DefaultProxyNCA returns the original paper's defaults.
func DefaultProxyNCA() *ProxyNCAConfig { return &ProxyNCAConfig{Temperature: 1} }

// Name implements Loss.
func (c *ProxyNCAConfig) Name() string { return "proxynca" }

// Validate implements Validator.
func (c *ProxyNCAConfig) Validate() error {
	if c.Temperature <= 0 {
		return fmt.Errorf("temperature = %g: want > 0", c.Temperature)
	}
	return nil
}

// Build implements Loss.
func (c *ProxyNCAConfig) Build(in Inputs) *Node {
	blPlainLabels(in, "proxynca")
	p := blProxies(in, "proxynca", "proxies", in.NumClasses)
	logits := MulScalar(SquaredDistances(normalizeRows(in.Emb), normalizeRows(p)), -1/c.Temperature) // [B, C]
	target := blClassMask(in, in.NumClasses)
	posLogit := MaskedReduceSum(logits, target, -1)
	denom := BroadcastToShape(Const(in.Emb.Graph(), true), target.Shape())
	if !c.IncludePositive {
		denom = LogicalNot(target)
	}
	return ReduceAllMean(Sub(blMaskedLogSumExp(logits, denom), posLogit))
}

// blMaskedLogSumExp returns log Σ_{k: mask} e^{x_k} along the last axis, stably; 0 where the mask
// is empty.
func blMaskedLogSumExp(x, mask *Node) *Node {
	xm := Where(mask, x, BroadcastToShape(ScalarLike(x, -1e30), x.Shape()))
	m := StopGradient(ReduceMax(xm, -1))
	any := ReduceLogicalOr(mask, -1)
	m = Where(any, m, ZerosLike(m))
	sum := ReduceSum(Exp(Sub(xm, InsertAxes(m, -1))), -1)
	return Where(any, Add(Log(Where(any, sum, OnesLike(sum))), m), ZerosLike(m))
}
