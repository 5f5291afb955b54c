package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "ntxent",
		Paper:   "NT-Xent (Chen et al., SimCLR, ICML 2020) in its supervised pair form of pytorch-metric-learning's NTXentLoss, the NtXent baseline of seed 004 (Tables 4, 6, 7, 8)",
		Summary: "per positive pair (a,p): −log(e^{s_ap/τ} / (e^{s_ap/τ} + Σ_{n∈N(a)} e^{s_an/τ})), mean over positive pairs",
		New:     func() Loss { return DefaultNTXent() },
	})
}

// NTXentConfig is the NT-Xent loss as seed 004 runs its NtXent baseline: "we re-run all other
// baselines using the implementation by (Musgrave et al., 2020b)" (Table 4 caption), i.e.
// pytorch-metric-learning's NTXentLoss, created as losses.NTXentLoss() in the authors' main.py,
// ablations.py and main_reg_sim.py. With s the cosine similarities of the batch against its
// references and τ the temperature, every positive pair (a, p) — ordered, a ≠ p — is one term:
//
//	ℓ_ap = −log( e^{s_ap/τ} / (e^{s_ap/τ} + Σ_{n∈N(a)} e^{s_an/τ}) )
//	L    = mean of ℓ_ap over all positive pairs
//
// where N(a) are the negatives of anchor a. This is not SupCon (Khosla et al., 2020): the other
// positives of a are in neither the numerator nor the denominator. An anchor without negatives
// gives ℓ = 0 for its pairs (still counted in the mean); a batch without positive pairs gives 0.
// PML adds its dtype's smallest normal number inside the log; dmlkit does not (it is ≥ 30 orders
// of magnitude below the ratio at τ ≥ 0.01). Labels are [B] or [B, S] label sets ([PairMasks]);
// references (Inputs.RefEmb) are supported.
//
// Default: τ = 0.07, pytorch-metric-learning 2.8.1's default, which the authors' code keeps (seed
// 004 does not state a value).
type NTXentConfig struct {
	Temperature float64 `yaml:"temperature" doc:"τ: temperature dividing the cosine similarities (> 0)"`
}

// DefaultNTXent returns the default τ = 0.07.
func DefaultNTXent() *NTXentConfig { return &NTXentConfig{Temperature: 0.07} }

// Name implements Loss.
func (c *NTXentConfig) Name() string { return "ntxent" }

// Validate implements Validator.
func (c *NTXentConfig) Validate() error {
	if !(c.Temperature > 0) {
		return fmt.Errorf("temperature %g: must be > 0", c.Temperature)
	}
	return nil
}

// Build implements Loss.
func (c *NTXentConfig) Build(in Inputs) *Node {
	if !(c.Temperature > 0) {
		panic(fmt.Sprintf("losses: ntxent: temperature = %g, want > 0", c.Temperature))
	}
	refEmb, _, _ := refs(in)
	z := DivScalar(CosineSim(in.Emb, refEmb), c.Temperature) // [B, R] logits s/τ
	pos, neg := PairMasks(in)
	// Per anchor: L_a = log Σ_{n∈N(a)} e^{z_an} = m_a + log S_a, with m_a the detached max over the
	// negatives (any value gives the same L_a) and S_a = Σ_n e^{z_an − m_a} ≥ 1 when N(a) ≠ ∅.
	hasNeg := ReduceLogicalOr(neg, 1)
	m := StopGradient(Where(hasNeg, MaskedReduceMax(z, neg, 1), ScalarLike(z, 0)))
	// Non-negatives are set to exp(0) before the masked sum: e^{z−m} of a positive may overflow
	// at small τ, and an infinite masked value would turn its zero gradient into NaN.
	shifted := Where(neg, Sub(z, InsertAxes(m, 1)), ZerosLike(z))
	sumNeg := MaskedReduceSum(Exp(shifted), neg, 1)
	logNeg := Add(m, Log(Where(hasNeg, sumNeg, OnesLike(sumNeg)))) // log 1 = 0 where N(a) = ∅
	// ℓ_ap = log(e^{z_ap} + e^{L_a}) − z_ap, shifted by the detached c = max(z_ap, L_a).
	ln := BroadcastToDims(InsertAxes(logNeg, 1), z.Shape().Dimensions...)
	shift := StopGradient(Max(z, ln))
	lse := Add(shift, Log(Add(Exp(Sub(z, shift)), Exp(Sub(ln, shift)))))
	loss := Sub(lse, z)
	loss = Where(BroadcastToDims(InsertAxes(hasNeg, 1), z.Shape().Dimensions...), loss, ZerosLike(loss))
	return MaskedMean(loss, pos)
}
