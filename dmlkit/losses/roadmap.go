package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "roadmap",
		Paper:   "Ramzi, Thome, Rambour, Audebert & Bitot, Robust and Decomposable Average Precision for Image Retrieval (ROADMAP), NeurIPS 2021 (code: elias-ramzi/ROADMAP)",
		Summary: "(1−λ)·SupAP (exact rank among positives, affine upper bound for negatives) + λ·calibration",
		New:     func() Loss { return DefaultRoadmap() },
	})
}

// RoadmapConfig is the ROADMAP loss, L = (1 − λ)·L_SupAP + λ·L_calibr.
//
// L_SupAP = 1 − mean_i AP_i with AP_i as in [SmoothAPConfig] (cosine similarities, query excluded),
// except that the step towards a positive k is the exact Heaviside H(t) (value 1 at t = 0; it
// carries no gradient), and the step towards a negative is the surrogate of the paper's Eq. 5, an
// upper bound of H whose slope never vanishes for t > 0:
//
//	H⁻(t) = σ(t/τ)                  t ≤ 0
//	       = 0.5 + σ(t/τ)            0 < t ≤ δ
//	       = ρ·(t − δ) + offset      t > δ
//
// L_calibr is the contrastive calibration term on cosine similarities,
// mean_{positive pairs} [α − s]₊ + mean_{negative pairs} [s − β]₊ (a term without pairs is 0),
// or each mean over the non-zero terms only with AvgNonZero.
//
// Our reading (document of record, since the paper's text and the released code differ in form):
// the defaults τ = 0.01, ρ = 100, δ = 0.05, offset = 1.44 (the code's constant; σ(δ/τ) + 0.5 =
// 1.4933 would make H⁻ continuous, the code's 1.44 leaves a small jump at δ), α = 0.9, β = 0.6 are
// the released configuration (SupAP and CalibrationLoss kwargs). λ = 0.1 follows the paper's
// weighting (1 − λ)·SupAP + λ·calibr; the released RoadmapLoss wrapper instead sums the two with
// weights given in its config. QueryAsPositive reproduces the code's quick path, whose label matrix
// includes the diagonal (the query counts as its own positive), like [SmoothAPConfig]; with λ = 0
// it matches a transcription of the released SupAP to 1e-12 (TestRoadmapSupAPCodeReference).
type RoadmapConfig struct {
	Lambda          float64 `yaml:"lambda" doc:"weight λ of the calibration loss; SupAP gets 1−λ"`
	Tau             float64 `yaml:"tau" doc:"sigmoid temperature τ of the negative-step surrogate"`
	Rho             float64 `yaml:"rho" doc:"slope ρ of the affine part for t > δ"`
	Delta           float64 `yaml:"delta" doc:"δ where the affine part starts"`
	Offset          float64 `yaml:"offset" doc:"value of the affine part at δ"`
	PosMargin       float64 `yaml:"pos_margin" doc:"α: calibration target for positive similarities"`
	NegMargin       float64 `yaml:"neg_margin" doc:"β: calibration ceiling for negative similarities"`
	AvgNonZero      bool    `yaml:"avg_nonzero" doc:"calibration terms averaged over active pairs only"`
	QueryAsPositive bool    `yaml:"query_as_positive" doc:"count the query as its own positive and retrieved item"`
}

// DefaultRoadmap returns the released configuration with the paper's λ.
func DefaultRoadmap() *RoadmapConfig {
	return &RoadmapConfig{Lambda: 0.1, Tau: 0.01, Rho: 100, Delta: 0.05, Offset: 1.44, PosMargin: 0.9, NegMargin: 0.6}
}

// Name implements Loss.
func (c *RoadmapConfig) Name() string { return "roadmap" }

// Validate implements Validator.
func (c *RoadmapConfig) Validate() error {
	switch {
	case c.Lambda < 0 || c.Lambda > 1:
		return fmt.Errorf("lambda = %g: want in [0, 1]", c.Lambda)
	case c.Tau <= 0:
		return fmt.Errorf("tau = %g: want > 0", c.Tau)
	case c.Delta < 0:
		return fmt.Errorf("delta = %g: want ≥ 0", c.Delta)
	}
	return nil
}

// roadmapNegStep is H⁻(t) of [RoadmapConfig].
func (c *RoadmapConfig) roadmapNegStep(t *Node) *Node {
	sig := Sigmoid(MulScalar(t, 1/c.Tau))
	zero := ZerosLike(t)
	lin := AddScalar(MulScalar(AddScalar(t, -c.Delta), c.Rho), c.Offset)
	mid := AddScalar(sig, 0.5)
	return Where(LessOrEqual(t, zero), sig, Where(LessOrEqual(t, AddScalar(zero, c.Delta)), mid, lin))
}

// Build implements Loss.
func (c *RoadmapConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	s := CosineSim(in.Emb, refEmb)
	cand, pos := rankAPMasks(in, c.QueryAsPositive)
	heaviside := func(t *Node) *Node {
		return StopGradient(Where(GreaterOrEqual(t, ZerosLike(t)), OnesLike(t), ZerosLike(t)))
	}
	ap, valid := rankAPPerQuery(s, cand, pos, heaviside, c.roadmapNegStep)
	supAP := MaskedMean(OneMinus(ap), valid)

	pairPos, pairNeg := PairMasks(in)
	calPos := reducePairs(relu(Sub(ScalarLike(s, c.PosMargin), s)), pairPos, c.AvgNonZero)
	calNeg := reducePairs(relu(AddScalar(s, -c.NegMargin)), pairNeg, c.AvgNonZero)
	return Add(MulScalar(supAP, 1-c.Lambda), MulScalar(Add(calPos, calNeg), c.Lambda))
}
