package losses

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

func init() {
	Register(Entry{
		Name:    "softbinap",
		Paper:   "Revaud, Almazán, Rezende & de Souza, Learning with Average Precision: Training Image Retrieval with a Listwise Loss, ICCV 2019, Eq. 5-8 (code: naver/deep-image-retrieval APLoss)",
		Summary: "1 − mean AP from soft histogram bins of the similarities (triangular kernels, saturating end bins)",
		New:     func() Loss { return DefaultSoftbinAP() },
	})
}

// SoftbinAPConfig is the soft-binning AP loss ("Softbin-AP"). Cosine similarities s are assigned
// softly to M bins with centres c_1 = Max > c_2 > … > c_M = Min, spacing Δ = (Max − Min)/(M − 1),
// by triangular kernels δ_m(s) = [1 − |s − c_m|/Δ]₊, except that the first bin stays 1 above Max
// and the last stays 1 below Min (as the authors' quantiser). For query i with positives P_i
// among its retrieval set Ω_i (the other samples, or the references):
//
//	n⁺_m = Σ_{j∈P_i} δ_m(s_ij),  n_m = Σ_{j∈Ω_i} δ_m(s_ij)
//	AP_i = Σ_m (Σ_{k≤m} n⁺_k / Σ_{k≤m} n_k) · n⁺_m / Σ_k n⁺_k       (0/0 terms are 0)
//	L = 1 − mean_i AP_i
//
// over queries with at least one positive (0 if none). Our reading: M = 20 (the paper's choice;
// the code's APLoss default is nq = 25) on [Min, Max] = [−1, 1], the range of cosine similarity
// (the authors use [0, 1] for their non-negative GeM descriptors).
type SoftbinAPConfig struct {
	Bins int     `yaml:"bins" doc:"M: number of bins"`
	Min  float64 `yaml:"min" doc:"centre of the lowest bin"`
	Max  float64 `yaml:"max" doc:"centre of the highest bin"`
}

// DefaultSoftbinAP returns the defaults.
func DefaultSoftbinAP() *SoftbinAPConfig { return &SoftbinAPConfig{Bins: 20, Min: -1, Max: 1} }

// Name implements Loss.
func (c *SoftbinAPConfig) Name() string { return "softbinap" }

// Validate implements Validator.
func (c *SoftbinAPConfig) Validate() error {
	if c.Bins < 2 {
		return fmt.Errorf("bins = %d: want ≥ 2", c.Bins)
	}
	if c.Max <= c.Min {
		return fmt.Errorf("max = %g ≤ min = %g", c.Max, c.Min)
	}
	return nil
}

// Build implements Loss.
func (c *SoftbinAPConfig) Build(in Inputs) *Node {
	refEmb, _, _ := refs(in)
	g := in.Emb.Graph()
	s := CosineSim(in.Emb, refEmb) // [B, R]
	pos, _ := PairMasks(in)
	cand := NotSelf(in)
	m := c.Bins
	delta := (c.Max - c.Min) / float64(m-1)
	centres := make([]float64, m)
	upper := make([][]float64, m) // upper[k][l] = 1 if k ≤ l (cumulative sum by MatMul)
	for l := range centres {
		centres[l] = c.Max - float64(l)*delta
		upper[l] = make([]float64, m)
		for k := l; k < m; k++ {
			upper[l][k] = 1
		}
	}
	x := InsertAxes(s, -1)                                            // [B, R, 1]
	z := Reshape(ConvertDType(Const(g, centres), s.DType()), 1, 1, m) // [1, 1, M]
	kernel := relu(OneMinus(MulScalar(Abs(Sub(x, z)), 1/delta)))      // [B, R, M]
	top := GreaterOrEqual(BroadcastToShape(x, kernel.Shape()), BroadcastToShape(ScalarLike(s, c.Max), kernel.Shape()))
	bottom := LessOrEqual(BroadcastToShape(x, kernel.Shape()), BroadcastToShape(ScalarLike(s, c.Min), kernel.Shape()))
	first := BroadcastToShape(Reshape(Const(g, sbBinIs(m, 0)), 1, 1, m), kernel.Shape())
	last := BroadcastToShape(Reshape(Const(g, sbBinIs(m, m-1)), 1, 1, m), kernel.Shape())
	one := OnesLike(kernel)
	kernel = Where(LogicalAnd(top, first), one, Where(LogicalAnd(bottom, last), one, kernel))
	zero := ZerosLike(kernel)
	nPos := ReduceSum(Where(BroadcastToShape(InsertAxes(pos, -1), kernel.Shape()), kernel, zero), 1) // [B, M]
	nAll := ReduceSum(Where(BroadcastToShape(InsertAxes(cand, -1), kernel.Shape()), kernel, zero), 1)
	u := ConvertDType(Const(g, upper), s.DType())
	cumPos, cumAll := MatMul(nPos, u), MatMul(nAll, u)
	ok := GreaterThan(cumAll, ZerosLike(cumAll))
	prec := Where(ok, Div(cumPos, Where(ok, cumAll, OnesLike(cumAll))), ZerosLike(cumAll))
	totPos := ReduceSum(nPos, -1) // = |P_i|: the kernels of each sample sum to 1
	ap := Div(ReduceSum(Mul(prec, nPos), -1), Max(totPos, ScalarLike(totPos, 1e-12)))
	npos := ReduceSum(ConvertDType(pos, s.DType()), -1)
	return MaskedMean(OneMinus(ap), GreaterThan(npos, ZerosLike(npos)))
}

// sbBinIs returns the boolean vector of length m that is true only at i.
func sbBinIs(m, i int) []bool {
	v := make([]bool, m)
	v[i] = true
	return v
}
