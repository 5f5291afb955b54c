package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// tiedImages returns values drawn from {−2, −1, 0, 1, 2} (with −0 among the zeros), so 2×2
// windows have ties at positive values, at zero and at negative values.
func tiedImages(seed uint64, n int) []float32 {
	r := rand.New(rand.NewPCG(seed, 5))
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.IntN(5) - 2)
		if out[i] == 0 && r.IntN(2) == 0 {
			out[i] = -out[i] // −0
		}
	}
	return out
}

// TestMaxPool2Gradient checks MaxPool2's value and gradient, on both of its Go-backend paths
// (pairwise maxima, ReduceMax), against a direct loop: for L = Σ r ⊙ y, ∂L/∂x at an element is r
// of its window when the element equals the window maximum (every tied element gets it), else
// 0. It also checks what SmallCNN relies on: ReLU after pooling has the same value and gradient
// as ReLU before it — an element gets r iff it equals the window maximum m and m ≥ 0. Two
// gradients (L and Σ y²) are built in one graph. Values are small integers and r has few bits,
// so every expected number is exact and the comparison is ==.
func TestMaxPool2Gradient(t *testing.T) {
	defer func(p bool) { MaxPoolPairs = p }(MaxPoolPairs)
	const b, h, w, c = 2, 4, 6, 3
	x := tiedImages(11, b*h*w*c)
	rr := make([]float32, b*h/2*w/2*c)
	for i := range rr {
		rr[i] = float32(i%7+1) / 8
	}
	// Expected values by direct loops.
	wantY := make([]float32, len(rr))
	wantGx := make([]float32, len(x))    // ∂(Σ r⊙pool(x))/∂x
	wantGsq := make([]float32, len(x))   // ∂(Σ pool(x)²)/∂x
	wantGrelu := make([]float32, len(x)) // ∂(Σ r⊙relu(pool(x)))/∂x
	at := func(n, i, j, ch int) int { return ((n*h+i)*w+j)*c + ch }
	for n := 0; n < b; n++ {
		for i := 0; i < h/2; i++ {
			for j := 0; j < w/2; j++ {
				for ch := 0; ch < c; ch++ {
					o := ((n*h/2+i)*w/2+j)*c + ch
					m := float32(-10)
					for d := 0; d < 4; d++ {
						m = max(m, x[at(n, 2*i+d/2, 2*j+d%2, ch)])
					}
					wantY[o] = m
					for d := 0; d < 4; d++ {
						k := at(n, 2*i+d/2, 2*j+d%2, ch)
						if x[k] == m {
							wantGx[k] = rr[o]
							wantGsq[k] = 2 * m
							if m >= 0 {
								wantGrelu[k] = rr[o]
							}
						}
					}
				}
			}
		}
	}
	for _, pairs := range []bool{true, false} {
		MaxPoolPairs = pairs
		e, err := NewExec(backend.MustShared(), func(xn, rn *Node) []*Node {
			y := MaxPool2(xn)
			l1 := ReduceAllSum(Mul(rn, y))
			l2 := ReduceAllSum(Square(y))
			after := ReduceAllSum(Mul(rn, Relu(MaxPool2(xn))))
			before := ReduceAllSum(Mul(rn, MaxPool2(Relu(xn))))
			return []*Node{y, Gradient(l1, xn)[0], Gradient(l2, xn)[0], Gradient(after, xn)[0], Gradient(before, xn)[0]}
		})
		if err != nil {
			t.Fatal(err)
		}
		out, err := e.Exec(tensors.FromFlatDataAndDimensions(x, b, h, w, c), tensors.FromFlatDataAndDimensions(rr, b, h/2, w/2, c))
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range [][]float32{wantY, wantGx, wantGsq, wantGrelu, wantGrelu} {
			name := []string{"y", "∂L/∂x", "∂Σy²/∂x", "∂/∂x relu after pool", "∂/∂x relu before pool"}[k]
			got := tensors.MustCopyFlatData[float32](out[k])
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("pairs=%v: %s[%d] = %g, want %g", pairs, name, i, got[i], want[i])
				}
			}
		}
	}
}

// convCase is a convolution test case: kernel k, stride, input [2, h, w, c], out channels.
type convCase struct{ k, stride, h, w, c, out int }

// convGradients returns ∂L/∂x, ∂L/∂w (and ∂L/∂b with bias) of L = Σ r ⊙ Conv(x)² under the
// current ConvImpl and Im2colMode, with seeded x, r and weights (the same for every setting).
func convGradients(t *testing.T, tc convCase, bias bool) [][]float32 {
	t.Helper()
	const b = 2
	x := randImages(uint64(tc.k*10+tc.h), b, tc.h, tc.w, tc.c)
	ho, wo := (tc.h+tc.stride-1)/tc.stride, (tc.w+tc.stride-1)/tc.stride
	rr := randImages(9, b*ho*wo*tc.out)
	store := model.NewStore()
	SetInitSeed(store, 7)
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, xn *Node) []*Node {
		scope.SetTraining(xn.Graph(), true) // weights as variables, not constants
		y := Conv(scope.At("conv"), xn, tc.out, tc.k, tc.stride, bias)
		r := Const(xn.Graph(), tensors.FromFlatDataAndDimensions(rr, b, ho, wo, tc.out))
		wrt := []*Node{xn, store.GetVariable("/conv/weights").NodeValue(xn.Graph())}
		if bias {
			wrt = append(wrt, store.GetVariable("/conv/biases").NodeValue(xn.Graph()))
		}
		return Gradient(ReduceAllSum(Mul(r, Square(y))), wrt...)
	})
	var out []*tensors.Tensor
	if err == nil {
		out, err = e.Call(tensors.FromFlatDataAndDimensions(x, b, tc.h, tc.w, tc.c))
	}
	if err != nil {
		t.Fatalf("%+v (ConvImpl %s, Im2colMode %s): %v", tc, ConvImpl, Im2colMode, err)
	}
	g := make([][]float32, len(out))
	for i, o := range out {
		g[i] = tensors.MustCopyFlatData[float32](o)
	}
	return g
}

// TestConvIm2colGradientsAgree checks that Conv's gradients (w.r.t. the input and the weights)
// are the same bit for bit whichever [Im2colMode] builds the patch matrix, "rows" or "gather":
// both scatter-add the patch gradient in the same order (output pixel, window row, window
// column), so the float32 sums round identically. The "slice" mode sums in another order and is
// checked by [TestConvMatchesDirect] only.
func TestConvIm2colGradientsAgree(t *testing.T) {
	defer func(m string) { Im2colMode = m }(Im2colMode)
	for _, tc := range []convCase{{3, 1, 6, 5, 2, 4}, {3, 2, 7, 6, 3, 2}, {7, 2, 9, 9, 1, 2}, {3, 1, 5, 5, 1, 3}} {
		Im2colMode = "rows"
		rows := convGradients(t, tc, false)
		Im2colMode = "gather"
		gather := convGradients(t, tc, false)
		for gi, name := range []string{"∂L/∂x", "∂L/∂w"} {
			for i := range rows[gi] {
				if rows[gi][i] != gather[gi][i] {
					t.Fatalf("%+v: %s[%d]: rows %g, gather %g", tc, name, i, rows[gi][i], gather[gi][i])
				}
			}
		}
	}
}

// TestReluGradient checks Relu's value and gradient against the closed forms max(x, 0) and
// v·[x ≥ 0] (1 at x = 0 and x = −0, as GoMLX's gradient of Max(x, 0)), for L = Σ r ⊙ relu(x).
func TestReluGradient(t *testing.T) {
	x := tiedImages(4, 40)
	x = append(x, 0.5, -0.25, 3e-39, -3e-39) // subnormals: nonzero, so their sign decides
	rr := make([]float32, len(x))
	for i := range rr {
		rr[i] = float32(i%5) - 1.5
	}
	e, err := NewExec(backend.MustShared(), func(xn, rn *Node) []*Node {
		y := Relu(xn)
		return []*Node{y, Gradient(ReduceAllSum(Mul(rn, y)), xn)[0]}
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Exec(x, rr)
	if err != nil {
		t.Fatal(err)
	}
	y, g := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
	for i, v := range x {
		wantG := float32(0)
		if v >= 0 {
			wantG = rr[i]
		}
		if y[i] != max(v, 0) || g[i] != wantG {
			t.Errorf("x=%g: relu %g (want %g), gradient %g (want %g)", v, y[i], max(v, 0), g[i], wantG)
		}
	}
}

// TestConvNativeGradients checks Conv's im2col gradients (Go backend, "rows") against GoMLX's
// own convolution and its autodiff (ConvImpl "native", the XLA path, run here on the Go
// backend): ∂L/∂x, ∂L/∂w and ∂L/∂b for L = Σ r ⊙ conv(x)², strides 1 and 2, odd k (even k
// always takes im2col). Both sum the same float32 products in different orders: relative
// tolerance 1e-5.
func TestConvNativeGradients(t *testing.T) {
	defer func(c string) { ConvImpl = c }(ConvImpl)
	for _, tc := range []convCase{{3, 1, 6, 5, 2, 4}, {3, 2, 7, 6, 3, 2}, {7, 2, 9, 9, 1, 2}, {1, 2, 6, 6, 3, 5}, {5, 1, 6, 7, 2, 3}} {
		ConvImpl = "im2col"
		a := convGradients(t, tc, true)
		ConvImpl = "native"
		n := convGradients(t, tc, true)
		for gi, name := range []string{"∂L/∂x", "∂L/∂w", "∂L/∂b"} {
			scale := 0.0
			for _, v := range n[gi] {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i := range a[gi] {
				if d := math.Abs(float64(a[gi][i] - n[gi][i])); d > 1e-5*scale {
					t.Fatalf("%+v: %s[%d]: im2col %g, native %g", tc, name, i, a[gi][i], n[gi][i])
				}
			}
		}
	}
}
