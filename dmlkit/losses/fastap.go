package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "fastap",
		Paper:   "Cakir, He, Xia, Kulis & Sclaroff, Deep Metric Learning to Rank (FastAP), CVPR 2019, Eq. 6-9",
		Summary: "1 − mean AP from soft distance histograms (triangular kernels on squared L2 in [0, 4])",
		New:     func() Loss { return DefaultFastAP() },
	})
}

// FastAPConfig is the FastAP loss. Distances are squared Euclidean between L2-normalised
// embeddings, d ∈ [0, 4], quantised softly onto L+1 bin centres z_l = l·Δ, Δ = 4/L, l = 0…L, with
// the triangular kernel δ(d, z_l) = [1 − |d − z_l|/Δ]₊. For query i,
//
//	h⁺_l = Σ_{j∈P_i} δ(d_ij, z_l),  h_l = Σ_{j∈Ω_i} δ(d_ij, z_l),  H⁺_l = Σ_{l'≤l} h⁺_l',  H_l = Σ_{l'≤l} h_l'
//	FastAP_i = 1/|P_i| · Σ_l h⁺_l·H⁺_l / H_l   (terms with H_l = 0 are 0)
//	L = 1 − mean_i FastAP_i
//
// over the queries with at least one positive (a batch without positives gives 0). P_i are the
// other samples of i's class, Ω_i all other samples (or the references). The L+1 centres and the
// kernel follow the authors' PyTorch code and pytorch-metric-learning's FastAPLoss.
//
// Defaults: L = 10 bins (paper and pytorch-metric-learning).
type FastAPConfig struct {
	Bins int `yaml:"bins" doc:"L: number of histogram bins over [0, 4]"`
}

// DefaultFastAP returns the defaults.
func DefaultFastAP() *FastAPConfig { return &FastAPConfig{Bins: 10} }

// Name implements Loss.
func (c *FastAPConfig) Name() string { return "fastap" }

// Validate implements Validator.
func (c *FastAPConfig) Validate() error {
	if c.Bins < 1 {
		return fmt.Errorf("bins = %d: want ≥ 1", c.Bins)
	}
	return nil
}

// Build implements Loss.
func (c *FastAPConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	d := SquaredDistances(normalizeRows(in.Emb), normalizeRows(refEmb)) // [B, R]
	return fastAPFromDistances(in, d, c.Bins)
}

// fastAPFromDistances is FastAP (Cakir et al. 2019) on squared distances d ∈ [0, 4] of
// L2-normalised embeddings, [B, R] (R = B or the reference set): each anchor's distances are
// binned into bins+1 triangular kernels centred at 0, Δ, …, 4 (Δ = 4 / bins), and AP is
// Σ_l h⁺_l H⁺_l / H_l over the bins (H: cumulative histograms, self-pairs excluded), averaged over
// the anchors with a positive; the loss is 1 − AP. Shared by fastap and IDML's FastAP.
func fastAPFromDistances(in Inputs, d *Node, bins int) *Node {
	g := d.Graph()
	pos, _ := PairMasks(in)
	cand := NotSelf(in)
	nl := bins + 1
	delta := 4 / float64(bins)
	centres := make([]float64, nl)
	upper := make([][]float64, nl) // upper[l'][l] = 1 if l' ≤ l: h·upper is the cumulative sum
	for l := range centres {
		centres[l] = float64(l) * delta
		upper[l] = make([]float64, nl)
		for k := l; k < nl; k++ {
			upper[l][k] = 1
		}
	}
	z := ConvertDType(Const(g, centres), d.DType())                                                 // [L+1]
	kernel := relu(OneMinus(MulScalar(Abs(Sub(InsertAxes(d, -1), Reshape(z, 1, 1, nl))), 1/delta))) // [B, R, L+1]
	zero := ZerosLike(kernel)
	hPos := ReduceSum(Where(BroadcastToShape(InsertAxes(pos, -1), kernel.Shape()), kernel, zero), 1) // [B, L+1]
	hAll := ReduceSum(Where(BroadcastToShape(InsertAxes(cand, -1), kernel.Shape()), kernel, zero), 1)
	up := ConvertDType(Const(g, upper), d.DType())
	cumPos, cumAll := MatMul(hPos, up), MatMul(hAll, up)
	ok := GreaterThan(cumAll, ZerosLike(cumAll))
	terms := Where(ok, Div(Mul(hPos, cumPos), Where(ok, cumAll, OnesLike(cumAll))), ZerosLike(cumAll))
	npos := ReduceSum(ConvertDType(pos, d.DType()), -1)
	ap := Div(ReduceSum(terms, -1), Max(npos, OnesLike(npos)))
	return MaskedMean(OneMinus(ap), GreaterThan(npos, ZerosLike(npos)))
}
