package losses

import (
	"fmt"
	"math"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "angular",
		Paper:   "Wang, Zhou, Wen, Liu & Lin, Deep Metric Learning with Angular Loss, ICCV 2017, Eq. 8 (N-pair form)",
		Summary: "bounds the angle at the negative: log(1 + Σ_n e^{4tan²α(x_a+x_p)·x_n − 2(1+tan²α)x_a·x_p})",
		New:     func() Loss { return DefaultAngular() },
	})
}

// AngularConfig is the angular loss in its N-pair form, on L2-normalised embeddings:
//
//	f_{a,p,n} = 4 tan²α · (x_a + x_p)ᵀ x_n − 2 (1 + tan²α) · x_aᵀ x_p
//	L = mean_{(a,p)} log(1 + Σ_{n: y_n ≠ y_a} e^{f_{a,p,n}})
//
// over all ordered positive pairs (a, p), a ≠ p (n over the references with another label). A
// batch without positive pairs gives 0; a pair without negatives contributes log 1 = 0.
//
// Defaults: α = 40° (paper's best; pytorch-metric-learning's AngularLoss default).
type AngularConfig struct {
	AlphaDeg float64 `yaml:"alpha" doc:"α: angle bound in degrees"`
}

// DefaultAngular returns the defaults.
func DefaultAngular() *AngularConfig { return &AngularConfig{AlphaDeg: 40} }

// Name implements Loss.
func (c *AngularConfig) Name() string { return "angular" }

// Validate implements Validator.
func (c *AngularConfig) Validate() error {
	if c.AlphaDeg <= 0 || c.AlphaDeg >= 90 {
		return fmt.Errorf("alpha = %g°: want in (0, 90)", c.AlphaDeg)
	}
	return nil
}

// Build implements Loss.
func (c *AngularConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	x, r := normalizeRows(in.Emb), normalizeRows(refEmb)
	t2 := math.Pow(math.Tan(c.AlphaDeg*math.Pi/180), 2)
	sxr := MatMul(x, Transpose(r, 0, 1)) // [B, R]: x_a·r_j
	srr := MatMul(r, Transpose(r, 0, 1)) // [R, R]: r_p·r_n
	pos, neg := PairMasks(in)
	// f[a, p, n] = 4t²(x_a·r_n + r_p·r_n) − 2(1+t²) x_a·r_p
	f := Sub(MulScalar(Add(InsertAxes(sxr, 1), InsertAxes(srr, 0)), 4*t2), MulScalar(InsertAxes(sxr, 2), 2*(1+t2)))
	negMask := BroadcastToShape(InsertAxes(neg, 1), f.Shape())
	per := blLogOnePlusSumExp(f, negMask) // [B, R]
	return MaskedMean(per, pos)
}
