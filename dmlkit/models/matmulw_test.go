package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// TestMatMulWGradient checks MatMulW's value and gradients against closed forms worked out in Go
// (float64): for L1 = Σ r ⊙ (x·w)² and L2 = Σ (x·w) (two gradients built in one graph, so the
// recorded ∂L/∂y of one cannot leak into the other), ∂L1/∂y = 2 r ⊙ y, ∂L2/∂y = 1, ∂L/∂w = xᵀ·∂L/∂y,
// ∂L/∂x = ∂L/∂y·wᵀ. Cases cover both weight-gradient layouts (N·K ≤ N·O + K·O transposes x,
// otherwise v).
// Tolerance 1e-12: float64 sums of ≤ 20 products of magnitude ≤ 10.
func TestMatMulWGradient(t *testing.T) {
	for _, tc := range []struct{ n, k, o int }{{20, 7, 3}, {4, 6, 5}, {9, 2, 9}, {30, 12, 2}} {
		r := rand.New(rand.NewPCG(uint64(tc.n), 3))
		x := make([]float64, tc.n*tc.k)
		w := make([]float64, tc.k*tc.o)
		rr := make([]float64, tc.n*tc.o)
		for _, s := range [][]float64{x, w, rr} {
			for i := range s {
				s[i] = r.Float64()*2 - 1
			}
		}
		e, err := NewExec(backend.MustShared(), func(xn, wn, rn *Node) []*Node {
			y := MatMulW(xn, wn)
			l1 := ReduceAllSum(Mul(rn, Square(y)))
			l2 := ReduceAllSum(y)
			g1 := Gradient(l1, xn, wn)
			g2 := Gradient(l2, xn, wn)
			return []*Node{y, g1[0], g1[1], g2[0], g2[1]}
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Exec(tensors.FromFlatDataAndDimensions(x, tc.n, tc.k), tensors.FromFlatDataAndDimensions(w, tc.k, tc.o),
			tensors.FromFlatDataAndDimensions(rr, tc.n, tc.o))
		if err != nil {
			t.Fatal(err)
		}
		y := make([]float64, tc.n*tc.o)
		for i := 0; i < tc.n; i++ {
			for j := 0; j < tc.o; j++ {
				for l := 0; l < tc.k; l++ {
					y[i*tc.o+j] += x[i*tc.k+l] * w[l*tc.o+j]
				}
			}
		}
		for li, vfn := range []func(i int) float64{func(i int) float64 { return 2 * rr[i] * y[i] }, func(int) float64 { return 1 }} {
			dx := make([]float64, tc.n*tc.k)
			dw := make([]float64, tc.k*tc.o)
			for i := 0; i < tc.n; i++ {
				for j := 0; j < tc.o; j++ {
					v := vfn(i*tc.o + j)
					for l := 0; l < tc.k; l++ {
						dx[i*tc.k+l] += v * w[l*tc.o+j]
						dw[l*tc.o+j] += x[i*tc.k+l] * v
					}
				}
			}
			for name, c := range map[string]struct {
				got  *tensors.Tensor
				want []float64
			}{"y": {out[0], y}, "dL/dx": {out[1+2*li], dx}, "dL/dw": {out[2+2*li], dw}} {
				got := tensors.MustCopyFlatData[float64](c.got)
				worst := 0.0
				for i := range got {
					worst = math.Max(worst, math.Abs(got[i]-c.want[i]))
				}
				if worst > 1e-12 {
					t.Errorf("N=%d K=%d O=%d, L%d: %s max error %g", tc.n, tc.k, tc.o, li+1, name, worst)
				}
			}
		}
	}
}
