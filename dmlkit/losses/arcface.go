package losses

import (
	"fmt"
	"math"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "arcface",
		Paper:   "Deng, Guo, Xue & Zafeiriou, ArcFace: Additive Angular Margin Loss, CVPR 2019, Eq. 3",
		Summary: "softmax over s·cos(θ) with the target angle enlarged by m: s·cos(θ_y + m)",
		New:     func() Loss { return DefaultArcFace() },
		Proxies: true,
	})
	Register(Entry{
		Name:    "cosface",
		Paper:   "Wang et al., CosFace: Large Margin Cosine Loss, CVPR 2018, Eq. 4",
		Summary: "softmax over s·cos(θ) with the target cosine reduced by m: s·(cos θ_y − m)",
		New:     func() Loss { return DefaultCosFace() },
		Proxies: true,
	})
}

// ArcFaceConfig is the additive angular margin loss:
//
//	L = −1/B Σ_i log( e^{s·cos(θ_{y_i} + m)} / (e^{s·cos(θ_{y_i} + m)} + Σ_{j≠y_i} e^{s·cos θ_j}) )
//
// θ_j is the angle between the embedding and the learnable class weight W_j (variable "weights"
// [C, D] in Inputs.Scope; both are L2-normalised). cos(θ + m) is evaluated as c·cos m − √(1−c²)·sin m
// with c clamped to [−1+10⁻⁷, 1−10⁻⁷] (keeps the gradient finite at c = ±1; equals the arccos form
// of pytorch-metric-learning elsewhere). Like the paper and pytorch-metric-learning, no "easy
// margin" correction for θ + m > π. Labels must be plain [B] class indices < NumClasses.
//
// Defaults: m = 0.5 rad (paper; pytorch-metric-learning uses 28.6° = 0.4992 rad), s = 64.
type ArcFaceConfig struct {
	Margin float64 `yaml:"margin" doc:"m: additive angular margin in radians"`
	Scale  float64 `yaml:"scale" doc:"s: logit scale"`
}

// DefaultArcFace returns the paper's defaults.
func DefaultArcFace() *ArcFaceConfig { return &ArcFaceConfig{Margin: 0.5, Scale: 64} }

// Name implements Loss.
func (c *ArcFaceConfig) Name() string { return "arcface" }

// ClassWeights implements Classifier.
func (c *ArcFaceConfig) ClassWeights() string { return "weights" }

// Validate implements Validator.
func (c *ArcFaceConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin = %g: want ≥ 0 (radians)", c.Margin)
	}
	if c.Scale <= 0 {
		return fmt.Errorf("scale = %g: want > 0", c.Scale)
	}
	return nil
}

// Build implements Loss.
func (c *ArcFaceConfig) Build(in Inputs) *Node {
	cos, target := marginSoftmaxCosines(in, "arcface")
	cl := ClipScalar(cos, -1+1e-7, 1-1e-7)
	sin := Sqrt(OneMinus(Square(cl)))
	shifted := Sub(MulScalar(cl, math.Cos(c.Margin)), MulScalar(sin, math.Sin(c.Margin)))
	return marginSoftmaxCE(MulScalar(Where(target, shifted, cos), c.Scale), target)
}

// CosFaceConfig is the large margin cosine loss:
//
//	L = −1/B Σ_i log( e^{s·(cos θ_{y_i} − m)} / (e^{s·(cos θ_{y_i} − m)} + Σ_{j≠y_i} e^{s·cos θ_j}) )
//
// with the same learnable class weights as [ArcFaceConfig]. Defaults: m = 0.35, s = 64 (paper and
// pytorch-metric-learning).
type CosFaceConfig struct {
	Margin float64 `yaml:"margin" doc:"m: additive cosine margin"`
	Scale  float64 `yaml:"scale" doc:"s: logit scale"`
}

// DefaultCosFace returns the paper's defaults.
func DefaultCosFace() *CosFaceConfig { return &CosFaceConfig{Margin: 0.35, Scale: 64} }

// Name implements Loss.
func (c *CosFaceConfig) Name() string { return "cosface" }

// ClassWeights implements Classifier.
func (c *CosFaceConfig) ClassWeights() string { return "weights" }

// Validate implements Validator.
func (c *CosFaceConfig) Validate() error {
	if c.Margin < 0 {
		return fmt.Errorf("margin = %g: want ≥ 0", c.Margin)
	}
	if c.Scale <= 0 {
		return fmt.Errorf("scale = %g: want > 0", c.Scale)
	}
	return nil
}

// Build implements Loss.
func (c *CosFaceConfig) Build(in Inputs) *Node {
	cos, target := marginSoftmaxCosines(in, "cosface")
	return marginSoftmaxCE(MulScalar(Where(target, AddScalar(cos, -c.Margin), cos), c.Scale), target)
}

// marginSoftmaxCosines returns the [B, C] cosines to the learnable class weights and the one-hot
// target mask.
func marginSoftmaxCosines(in Inputs, loss string) (cos, target *Node) {
	blPlainLabels(in, loss)
	w := blProxies(in, loss, "weights", in.NumClasses)
	return CosineSim(in.Emb, w), blClassMask(in, in.NumClasses)
}

// marginSoftmaxCE returns mean_i −log softmax(logits_i)[y_i] for the one-hot target mask.
func marginSoftmaxCE(logits, target *Node) *Node {
	return Neg(ReduceAllMean(MaskedReduceSum(LogSoftmax(logits, -1), target, -1)))
}
