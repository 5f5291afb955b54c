package models

import (
	"fmt"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Mode says how a graph uses the network.
type Mode struct {
	// Train: BatchNorm normalises with batch statistics and updates its running statistics
	// (unless FrozenBN or NoStatsUpdate). False: inference, running statistics.
	Train bool
	// FrozenBN: BatchNorm always uses its running statistics and never updates them (the papers'
	// "frozen BN"); its affine parameters stay trainable.
	FrozenBN bool
	// NoStatsUpdate: training-mode BatchNorm normalises with batch statistics but leaves the
	// running statistics alone (stage 1 of multistage backprop, which re-runs the chunk later).
	NoStatsUpdate bool
}

// bnEps and bnMomentum are PyTorch's BatchNorm defaults.
const (
	bnEps      = 1e-5
	bnMomentum = 0.1
)

// Dense returns x·W + b for x [B, in]: W [in, out] (He-normal), b [out] (zeros).
func Dense(scope *model.Scope, x *Node, out int, bias bool) *Node {
	if x.Rank() != 2 {
		panic(fmt.Sprintf("models: Dense needs [B, in], got %s", x.Shape()))
	}
	in := x.Shape().Dim(1)
	w := Param(scope, "weights", []int{in, out}, HeNormal).NodeValue(x.Graph())
	y := MatMulW(x, ConvertDType(w, x.DType()))
	if bias {
		b := Param(scope, "biases", []int{out}, Fill(0)).NodeValue(x.Graph())
		y = Add(y, InsertAxes(ConvertDType(b, x.DType()), 0))
	}
	return y
}

// MatMulW returns x·w for activations x [N, K] and a weight w [K, O], with the same value and
// gradients as MatMul but a weight gradient laid out for the Go backend's GEMM kernels.
//
// Autodiff writes ∂L/∂w = xᵀ·v (v = ∂L/∂y [N, O]) as a DotGeneral contracting the leading axis of
// both operands; the Go backend's kernels want the lhs contracted on its trailing axis, so it
// transposes both x and v first (N·K + N·O elements moved) — for an im2col patch matrix (N = B·H·W
// rows) the biggest tensors of the step: those transposes took 22 % of a small-CNN training step.
// On the Go backend, MatMulW transposes only one of them, whichever moves fewer elements:
//   - xᵀ [K, N] as the lhs and v [N, O] as a rhs contracted on its leading axis (a layout the
//     kernels take as is), giving [K, O] directly: N·K elements moved;
//   - or vᵀ [O, N] against x, giving [O, K], transposed back: N·O + K·O elements moved (better for
//     patch matrices, where O < K).
//
// ∂L/∂x is autodiff's v·wᵀ (no transpose needed). On other backends (XLA, ONNX Runtime), which lay
// out their own GEMMs, MatMulW is plain MatMul: there the explicit transposes only cost time (ONNX
// Runtime's small-CNN step: 344 → 422 ms). The custom weight gradient is built with
// [withCustomGradient]; ∂L/∂x passes through y's identity unchanged.
func MatMulW(x, w *Node) *Node {
	if x.Rank() != 2 || w.Rank() != 2 || x.Shape().Dim(1) != w.Shape().Dim(0) {
		panic(fmt.Sprintf("models: MatMulW needs x [N, K] and w [K, O], got %s and %s", x.Shape(), w.Shape()))
	}
	if !MatMulWLayout || x.Graph().Backend().String() != "go" {
		return MatMul(x, w) // XLA and ONNX Runtime choose their own layouts
	}
	n, k, o := x.Shape().Dim(0), x.Shape().Dim(1), w.Shape().Dim(1)
	return withCustomGradient(w, func(wc *Node) *Node { return MatMul(x, wc) }, func(v *Node) *Node {
		if n*k <= n*o+k*o {
			return DotGeneral(Transpose(x, 0, 1), []int{1}, nil, v, []int{0}, nil) // [K, O]
		}
		return Transpose(DotGeneral(Transpose(v, 0, 1), []int{1}, nil, x, []int{0}, nil), 0, 1) // [O, K] → [K, O]
	})
}

// MatMulWLayout turns [MatMulW]'s weight-gradient layout on (default); false makes it a plain
// MatMul, to measure the difference (dmlkit/train's benchmarks with DMLKIT_MATMULW=0).
var MatMulWLayout = true

// ConvImpl selects how [Conv] convolves: "im2col", "native" (the backend's own convolution,
// graph.Convolve) or "auto" (default): native on XLA (cuDNN on a GPU), im2col on the Go backend
// (its native convolution is ~30× slower, toolchain.md §4) and on ONNX Runtime (its native
// convolution made the small-CNN step slower, 350 → 550–670 ms, and the gradient of a strided
// convolution needs input dilation, which ONNX Conv lacks). Even k always takes im2col: GoMLX
// cannot build the gradient of an asymmetrically padded convolution.
var ConvImpl = "auto"

// convNative says whether [Conv] uses the backend's convolution on the named backend.
func convNative(backendName string) bool {
	switch ConvImpl {
	case "native":
		return true
	case "im2col":
		return false
	}
	return backendName == "xla"
}

// Im2colMode selects how [Conv] builds its patch matrix on the Go backend: "rows" (default),
// "gather" or "slice". All give identical values; they differ only in speed. Other backends use
// "gather" unless "slice" is chosen (ONNX Runtime cannot gather multi-element slices).
var Im2colMode = "rows"

// Conv is a k×k convolution with the given stride and "same"-style zero padding (k/2 before,
// k−1−k/2 after: k/2 on each side for odd k) with weights W [k, k, C, out] plus a bias: x is
// [B, H, W, C]; the output is [B, ⌈H/stride⌉, ⌈W/stride⌉, out] (PyTorch's Conv2d(padding=k/2)
// for odd k). W's layout is PyTorch's weight [out, C, kh, kw] permuted to [kh, kw, C, out]. On
// the Go backend and ONNX Runtime it is im2col + one MatMul with W viewed as [k·k·C, out]; on
// XLA the backend's own convolution ([ConvImpl]).
//
// The patch matrix [B·Ho·Wo, k·k·C] is gathered from the zero-padded input in k·C-long pieces
// (one per patch row: k neighbouring pixels × C channels are contiguous in [B, H, W, C]); its
// gradient is one scatter-add. [Im2colMode] selects two slower alternatives: "gather", C-long
// pieces (one per pixel of the patch: k times as many copies, each k times shorter — for the
// first layer of a grey-image CNN, copies of one float), and "slice", k² strided Slices of the
// padded input and a Concatenate, which the Go backend copies element by element. All are ~30×
// faster than the Go backend's native convolution (toolchain.md §4).
func Conv(scope *model.Scope, x *Node, out, k, stride int, bias bool) *Node {
	if x.Rank() != 4 {
		panic(fmt.Sprintf("models: Conv needs [B, H, W, C], got %s", x.Shape()))
	}
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	ho, wo := (h+stride-1)/stride, (w+stride-1)/stride
	wt := ConvertDType(Param(scope, "weights", []int{k, k, c, out}, HeNormal).NodeValue(x.Graph()), x.DType())
	var y *Node
	if k%2 == 1 && convNative(x.Graph().Backend().String()) {
		p := k / 2 // output ⌈H/stride⌉, as the im2col path
		y = Convolve(x, wt).Strides(stride).PaddingPerDim([][2]int{{p, p}, {p, p}}).Done()
	} else {
		y = Reshape(MatMulW(Reshape(im2col(x, k, stride, ho, wo), b*ho*wo, k*k*c), Reshape(wt, k*k*c, out)), b, ho, wo, out)
	}
	if bias {
		bv := Param(scope, "biases", []int{out}, Fill(0)).NodeValue(x.Graph())
		y = Add(y, Reshape(ConvertDType(bv, x.DType()), 1, 1, 1, out))
	}
	return y
}

// im2col returns the patches of x [B, H, W, C] for a k×k convolution with the given stride, in
// the layout [Conv]'s MatMul takes (any shape with B·Ho·Wo·k·k·C values, row-major in
// (b, i, j, dy, dx, c)), built as [Im2colMode] and the backend say.
func im2col(x *Node, k, stride, ho, wo int) *Node {
	switch {
	case k == 1:
		if stride > 1 {
			return Slice(x, AxisRange(), AxisRange().Stride(stride), AxisRange().Stride(stride), AxisRange())
		}
		return x
	case Im2colMode == "slice":
		return im2colSlices(x, k, stride, ho, wo)
	case Im2colMode == "gather" || x.Graph().Backend().String() != "go":
		return im2colGather(x, k, stride, ho, wo) // ONNX Runtime has no Gather of multi-element slices
	}
	return im2colRows(x, k, stride, ho, wo)
}

// im2colSlices returns the [B, Ho, Wo, k·k·C] patches as k² strided slices of the zero-padded
// input, concatenated along channels.
func im2colSlices(x *Node, k, stride, ho, wo int) *Node {
	p := k / 2
	xp := Pad(x, ScalarZero(x.Graph(), x.DType()), PadAxis{}, PadAxis{Start: p, End: p}, PadAxis{Start: p, End: p}, PadAxis{})
	patches := make([]*Node, 0, k*k)
	for dy := 0; dy < k; dy++ {
		for dx := 0; dx < k; dx++ {
			patches = append(patches, Slice(xp, AxisRange(),
				AxisRange(dy, dy+(ho-1)*stride+1).Stride(stride),
				AxisRange(dx, dx+(wo-1)*stride+1).Stride(stride),
				AxisRange()))
		}
	}
	return Concatenate(patches, -1)
}

// im2colRows returns the [B·Ho·Wo·k, k·C] patch rows: x zero-padded by k/2 on each side,
// viewed as [B·Hp, Wp·C], and for output pixel (b, i, j) and window row dy the k·C values
// starting at row b·Hp + i·stride + dy, column j·stride·C. The rows end at column
// ((Wo−1)·stride + k)·C ≤ Wp·C, since (⌈W/s⌉−1)·s ≤ W−1.
func im2colRows(x *Node, k, stride, ho, wo int) *Node {
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	p := k / 2
	hp, wp := h+2*p, w+2*p
	xp := padSpatial(x, p)
	start := make([]int32, 0, 2*b*ho*wo*k)
	for bi := 0; bi < b; bi++ {
		for i := 0; i < ho; i++ {
			for j := 0; j < wo; j++ {
				for dy := 0; dy < k; dy++ {
					start = append(start, int32(bi*hp+i*stride+dy), int32(j*stride*c))
				}
			}
		}
	}
	n := b * ho * wo * k
	rows := GatherSlices(Reshape(xp, b*hp, wp*c), []int{0, 1},
		Const(x.Graph(), tensors.FromFlatDataAndDimensions(start, n, 2)), []int{1, k * c}, false)
	return Reshape(rows, n, k*c)
}

// padSpatial zero-pads H and W of x [B, H, W, C] by p on each side. Its gradient takes the
// interior back out of the padded gradient with one Gather of W·C-long rows (autodiff's Slice
// copies element by element on the Go backend).
func padSpatial(x *Node, p int) *Node {
	if p == 0 {
		return x
	}
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	hp, wp := h+2*p, w+2*p
	return withCustomGradient(x, func(xc *Node) *Node {
		return Pad(xc, ScalarZero(x.Graph(), x.DType()), PadAxis{}, PadAxis{Start: p, End: p}, PadAxis{Start: p, End: p}, PadAxis{})
	}, func(v *Node) *Node {
		start := make([]int32, 0, 2*b*h)
		for bi := 0; bi < b; bi++ {
			for i := 0; i < h; i++ {
				start = append(start, int32(bi*hp+p+i), int32(p*c))
			}
		}
		rows := GatherSlices(Reshape(v, b*hp, wp*c), []int{0, 1},
			Const(x.Graph(), tensors.FromFlatDataAndDimensions(start, b*h, 2)), []int{1, w * c}, true)
		return Reshape(rows, b, h, w, c)
	})
}

// im2colGather returns the [B·Ho·Wo·k·k, C] patch rows gathered from x viewed as [B·H·W, C] with
// a zero row appended (index B·H·W) for positions in the padding.
func im2colGather(x *Node, k, stride, ho, wo int) *Node {
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	p := k / 2
	zero := b * h * w
	idx := make([]int32, b*ho*wo*k*k)
	n := 0
	for bi := 0; bi < b; bi++ {
		for i := 0; i < ho; i++ {
			for j := 0; j < wo; j++ {
				for dy := 0; dy < k; dy++ {
					for dx := 0; dx < k; dx++ {
						yy, xx := i*stride+dy-p, j*stride+dx-p
						if yy < 0 || yy >= h || xx < 0 || xx >= w {
							idx[n] = int32(zero)
						} else {
							idx[n] = int32((bi*h+yy)*w + xx)
						}
						n++
					}
				}
			}
		}
	}
	flat := Concatenate([]*Node{Reshape(x, b*h*w, c), Zeros(x.Graph(), shapes.Make(x.DType(), 1, c))}, 0)
	return Gather(flat, Const(x.Graph(), tensors.FromFlatDataAndDimensions(idx, len(idx), 1)))
}

// MaxPool2 is 2×2 max pooling with stride 2 on [B, H, W, C] (H and W even): [B, H/2, W/2, C].
// Its gradient sends ∂L/∂y of a window to every element equal to the window's maximum (ties
// included), as autodiff of ReduceMax does.
//
// XLA and ONNX Runtime get Reshape to [B, H/2, 2, W/2, 2, C] + ReduceMax over the two window axes.
// On the Go backend that ReduceMax and its gradient (a Sub and a Mul broadcasting over two middle
// axes) run through generic per-element index iterators: a third of a small-CNN training step.
// There MaxPool2 is two pairwise maxima of contiguous halves instead — rows: x viewed as
// [B·H/2, 2, W·C]; then columns: the result viewed as [B·H/2·W/2, 2, C] — each a Gather of the
// two halves and an elementwise Max, with a custom gradient that uses only same-shape
// elementwise ops and a Concatenate: for a pair (a, b) with m = max(a, b) and incoming v,
// ∂/∂a = v·[a ≥ b], ∂/∂b = v·[b ≥ a]. An element gets v·[x = row-pair max]·[row-pair max = m]
// = v·[x = m]: the same values as the ReduceMax path, bit for bit, except that a zero is +0
// where autodiff's v·0 keeps v's sign (see pairMaxGrad).
func MaxPool2(x *Node) *Node {
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	if h%2 != 0 || w%2 != 0 {
		panic(fmt.Sprintf("models: MaxPool2 needs even H, W, got %s", x.Shape()))
	}
	if !MaxPoolPairs || x.Graph().Backend().String() != "go" {
		return ReduceMax(Reshape(x, b, h/2, 2, w/2, 2, c), 2, 4)
	}
	var rows, cols [2]*Node
	y := withCustomGradient(x, func(xc *Node) *Node {
		rows = pairHalves(Reshape(xc, b*h/2, 2, w*c))
		cols = pairHalves(Reshape(Max(rows[0], rows[1]), b*h/2*w/2, 2, c))
		return Max(cols[0], cols[1])
	}, func(v *Node) *Node {
		gm := pairMaxGrad(cols, v)                       // [B·H/2·W/2, 2, C]
		gx := pairMaxGrad(rows, Reshape(gm, b*h/2, w*c)) // [B·H/2, 2, W·C]
		return Reshape(gx, b, h, w, c)
	})
	return Reshape(y, b, h/2, w/2, c)
}

// withCustomGradient returns forward(x) with ∂L/∂x = grad(v), v = ∂L/∂forward(x), in place of
// autodiff's. GoMLX hands v only to the output's gradient function, so an identity on the output
// records it and an identity on the input uses it: reverse autodiff reaches the output first
// (the input feeds it). Autodiff's own gradient through forward is then unused and dropped by
// the backends' dead-code elimination. forward and grad may share state: forward runs first.
func withCustomGradient(x *Node, forward func(x *Node) *Node, grad func(v *Node) *Node) *Node {
	var v *Node // ∂L/∂y of the gradient being built
	xc := IdentityWithCustomGradient(x, func(_, _ *Node) *Node {
		if v == nil {
			panic("models: custom gradient requested before the output's gradient")
		}
		return grad(v)
	})
	return IdentityWithCustomGradient(forward(xc), func(_, g *Node) *Node {
		v = g
		return g
	})
}

// MaxPoolPairs turns [MaxPool2]'s pairwise formulation on the Go backend on (default); false
// uses ReduceMax there too (dmlkit/train's benchmarks with DMLKIT_MAXPOOL=reduce).
var MaxPoolPairs = true

// pairHalves returns x[:, 0, :] and x[:, 1, :] of x [A, 2, D], each [A, D], as Gathers of
// D-long rows (copied as blocks; the Go backend's Slice copies element by element).
func pairHalves(x *Node) [2]*Node {
	a, d := x.Shape().Dim(0), x.Shape().Dim(2)
	flat := Reshape(x, 2*a, d)
	var p [2]*Node
	for k := range p {
		idx := make([]int32, a)
		for i := range idx {
			idx[i] = int32(2*i + k)
		}
		p[k] = Gather(flat, Const(x.Graph(), tensors.FromFlatDataAndDimensions(idx, a, 1)))
	}
	return p
}

// pairMaxGrad returns the gradient of max(p[0], p[1]) (each [A, D]) for incoming v [A, D]:
// [v·[p0 ≥ p1], v·[p1 ≥ p0]] stacked as [A, 2, D]. Zeros are written as +0 where v·0 would
// keep v's sign; no sum of the step can tell them apart unless all its terms are zero.
func pairMaxGrad(p [2]*Node, v *Node) *Node {
	a, d := v.Shape().Dim(0), v.Shape().Dim(1)
	zero := ScalarZero(v.Graph(), v.DType())
	g0 := Where(GreaterOrEqual(p[0], p[1]), v, zero)
	g1 := Where(GreaterOrEqual(p[1], p[0]), v, zero)
	return Concatenate([]*Node{Reshape(g0, a, 1, d), Reshape(g1, a, 1, d)}, 1)
}

// XLAMemoryPaths turns on (default) the XLA graphs of [Relu], [MaxPool3s2], [GeluExact] and the
// ViT's softmax and LayerNorm that keep fewer tensors for the backward pass; false builds
// autodiff's forms on XLA too, to measure the difference (gpucheck memory
// --xla-memory-paths=false).
var XLAMemoryPaths = true

// xlaMemoryPath reports whether x's graph is built for XLA with [XLAMemoryPaths] on: then
// [Relu], [MaxPool3s2], the ViT's softmax, GELU and LayerNorm take the forms whose backward pass
// keeps fewer tensors.
func xlaMemoryPath(x *Node) bool {
	return XLAMemoryPaths && x.Graph().Backend().String() == "xla"
}

// MaxPool3s2 is the ResNet stem pooling: 3×3 window, stride 2, padding 1 (padding never wins:
// the input is post-ReLU, so padding with 0 equals PyTorch's −∞ padding).
//
// On XLA it is one reduce-window of the zero-padded input, whose gradient is XLA's
// select-and-scatter: the backward pass reads the padded input alone. Elsewhere (the Go backend,
// ONNX Runtime) it is the maximum of nine strided slices, faster there, but its backward pass
// reads all nine slices and the eight partial maxima: 17 tensors of the output's size, 0.8 GiB
// of a ResNet-50 step at batch 64, 224² (train.MeasureStepMemory). The two agree in value and,
// but for ties (measure zero on real-valued inputs; zeros after a ReLU get no gradient through
// it), in gradient (TestXLAPathsMatchGoPaths).
func MaxPool3s2(x *Node) *Node {
	h, w := x.Shape().Dim(1), x.Shape().Dim(2)
	ho, wo := (h+1)/2, (w+1)/2
	xp := Pad(x, ScalarZero(x.Graph(), x.DType()), PadAxis{}, PadAxis{Start: 1, End: 1}, PadAxis{Start: 1, End: 1}, PadAxis{})
	if xlaMemoryPath(x) {
		return MaxPool(xp).Window(3).Strides(2).NoPadding().Done()
	}
	var m *Node
	for dy := 0; dy < 3; dy++ {
		for dx := 0; dx < 3; dx++ {
			s := Slice(xp, AxisRange(), AxisRange(dy, dy+(ho-1)*2+1).Stride(2), AxisRange(dx, dx+(wo-1)*2+1).Stride(2), AxisRange())
			if m == nil {
				m = s
			} else {
				m = Max(m, s)
			}
		}
	}
	return m
}

// BatchNorm normalises x over every axis but the last (channels) and applies the affine
// γ (ones), β (zeros): y = (x − μ)/√(σ² + 1e-5)·γ + β. In training mode μ, σ² are the batch
// statistics and the running statistics (variables "mean", "var", float32, not trainable) move by
// momentum 0.1 towards μ and the unbiased σ² (PyTorch's convention); otherwise, or with
// mode.FrozenBN, the running statistics are used. γ and β are float32 variables (master
// weights). Half-precision x (mixed precision, [IsHalf]) is normalised in float32, as PyTorch's
// autocast does, and the result converted back to x's dtype.
//
// Training-mode normalisation runs on the backend's fused BatchNorm op (XLA's batch-norm-training
// and batch-norm-grad; XLA's GPU compiler expands both into reductions and element-wise ops of its
// own, its BatchNormExpander pass, and fuses those — no cuDNN call) when [UseFusedBatchNorm] says
// so, and otherwise as a composite graph of reductions and element-wise ops (the Go backend has
// no BatchNorm op); both give the same outputs, statistics and gradients up to float rounding.
// Inference and frozen BN always use the composite: it is a per-channel affine map, and GoMLX
// defines no gradient for the backend's BatchNormForInference, which frozen BN needs in training.
func BatchNorm(scope *model.Scope, x *Node, mode Mode) *Node {
	if IsHalf(x.DType()) {
		return inFloat32(x, func(x *Node) *Node { return BatchNorm(scope, x, mode) })
	}
	g := x.Graph()
	c := x.Shape().Dim(-1)
	gamma := ConvertDType(Param(scope, "gamma", []int{c}, Fill(1)).NodeValue(g), x.DType())
	beta := ConvertDType(Param(scope, "beta", []int{c}, Fill(0)).NodeValue(g), x.DType())
	rmV := State(scope, "mean", []int{c}, Fill(0))
	rvV := State(scope, "var", []int{c}, Fill(1))
	axes := make([]int, x.Rank()-1)
	for i := range axes {
		axes[i] = i
	}
	bshape := make([]int, x.Rank())
	for i := range bshape {
		bshape[i] = 1
	}
	bshape[x.Rank()-1] = c
	if mode.Train && !mode.FrozenBN {
		var y, mean, variance *Node
		if UseFusedBatchNorm(g.Backend()) {
			// variance is the biased batch variance, as the composite's.
			y, mean, variance = InternalBatchNormForTraining(x, gamma, beta, bnEps, -1)
		} else {
			mean = ReduceMean(x, axes...)
			xc := Sub(x, Reshape(mean, bshape...))
			variance = ReduceMean(Square(xc), axes...)
			y = Mul(xc, Reshape(Inverse(Sqrt(AddScalar(variance, bnEps))), bshape...))
			y = Add(Mul(y, Reshape(gamma, bshape...)), Reshape(beta, bshape...))
		}
		if !mode.NoStatsUpdate {
			n := x.Shape().Size() / c
			rm, rv := rmV.NodeValue(g), rvV.NodeValue(g)
			mean32 := ConvertDType(StopGradient(mean), rm.DType())
			unbiased := MulScalar(ConvertDType(StopGradient(variance), rv.DType()), float64(n)/float64(max(n-1, 1)))
			rmV.SetNodeValue(Add(MulScalar(rm, 1-bnMomentum), MulScalar(mean32, bnMomentum)))
			rvV.SetNodeValue(Add(MulScalar(rv, 1-bnMomentum), MulScalar(unbiased, bnMomentum)))
		}
		return y
	}
	mean := ConvertDType(rmV.NodeValue(g), x.DType())
	variance := ConvertDType(rvV.NodeValue(g), x.DType())
	y := Mul(Sub(x, Reshape(mean, bshape...)), Reshape(Inverse(Sqrt(AddScalar(variance, bnEps))), bshape...))
	return Add(Mul(y, Reshape(gamma, bshape...)), Reshape(beta, bshape...))
}

// BatchNormKernel selects the implementation of training-mode [BatchNorm].
type BatchNormKernel int

const (
	// BatchNormAuto (the default) uses the fused op wherever the backend implements it (XLA) and
	// the composite graph elsewhere (the Go backend, ONNX Runtime).
	BatchNormAuto BatchNormKernel = iota
	// BatchNormComposite always uses the composite graph.
	BatchNormComposite
	// BatchNormFused always uses the fused op; building a graph on a backend without it panics.
	BatchNormFused
)

// BatchNormImpl is the process-wide [BatchNormKernel] (default BatchNormAuto). Tests and
// benchmarks set it to compare the two paths on one backend; set it before graphs are built.
var BatchNormImpl = BatchNormAuto

// HasFusedBatchNorm reports whether backend b implements the fused training BatchNorm op and
// its gradient (compute.OpTypeBatchNormForTraining and OpTypeBatchNormGradient).
func HasFusedBatchNorm(b compute.Backend) bool {
	ops := b.Capabilities().Operations
	return ops[compute.OpTypeBatchNormForTraining] && ops[compute.OpTypeBatchNormGradient]
}

// UseFusedBatchNorm is the one place that decides whether training-mode [BatchNorm] on backend
// b uses the fused op: per [BatchNormImpl], and with BatchNormAuto when [HasFusedBatchNorm].
// BatchNormFused on a backend without the op panics naming the backend.
func UseFusedBatchNorm(b compute.Backend) bool {
	switch BatchNormImpl {
	case BatchNormComposite:
		return false
	case BatchNormFused:
		if !HasFusedBatchNorm(b) {
			panic(fmt.Sprintf("models: BatchNormImpl is BatchNormFused but backend %q has no fused BatchNorm op", b.Name()))
		}
		return true
	}
	return HasFusedBatchNorm(b)
}

// LayerNorm normalises each row of x [B, D]: (x − mean)/√(var + 1e-5)·γ + β.
//
// Half-precision x (mixed precision) is normalised in float32; the result has x's dtype.
func LayerNorm(scope *model.Scope, x *Node) *Node {
	if IsHalf(x.DType()) {
		return inFloat32(x, func(x *Node) *Node { return LayerNorm(scope, x) })
	}
	g := x.Graph()
	d := x.Shape().Dim(-1)
	gamma := ConvertDType(Param(scope, "gamma", []int{d}, Fill(1)).NodeValue(g), x.DType())
	beta := ConvertDType(Param(scope, "beta", []int{d}, Fill(0)).NodeValue(g), x.DType())
	mean := ReduceAndKeep(x, ReduceMean, -1)
	xc := Sub(x, mean)
	v := ReduceAndKeep(Square(xc), ReduceMean, -1)
	y := Mul(xc, Inverse(Sqrt(AddScalar(v, 1e-5))))
	return Add(Mul(y, InsertAxes(gamma, 0)), InsertAxes(beta, 0))
}

// GlobalPool reduces [B, H, W, C] to [B, C]: "avg" (mean), "max", "avgmax" (mean + max, as
// IDML's GAP + GMP) or "gem" (generalised mean (mean(max(x, 1e-6)^p))^(1/p), Radenović et al.).
func GlobalPool(x *Node, kind string, p float64) *Node {
	switch kind {
	case "", "avg":
		return ReduceMean(x, 1, 2)
	case "max":
		return ReduceMax(x, 1, 2)
	case "avgmax":
		return Add(ReduceMean(x, 1, 2), ReduceMax(x, 1, 2))
	case "gem":
		if p <= 0 {
			p = 3
		}
		xc := Max(x, scalarLike(x, 1e-6))
		return Pow(ReduceMean(Pow(xc, scalarLike(x, p)), 1, 2), scalarLike(x, 1/p))
	}
	panic(fmt.Sprintf("models: unknown pooling %q (want avg, max, avgmax or gem)", kind))
}

// Relu is max(x, 0), with gradient v·[x ≥ 0] (GoMLX's gradient of Max(x, 0)). On the Go
// backend the gradient is one comparison and one Where instead of autodiff's five passes
// (Sign(Sign(x − 0) + 1)·v); it writes +0 where autodiff's v·0 keeps v's sign, which no sum can
// tell apart unless all its terms are zero.
//
// On XLA the gradient is v·[y > 0], read from the output y, as PyTorch's ReLU backward: the
// backward pass then keeps only y, which the next layer's gradient reads anyway, and not x — in
// a ResNet x is BatchNorm's output (or a residual sum), a third of the activations the step
// kept (train.MeasureStepMemory, with MaxPool3s2's reduce-window: 1002 → 664 MiB of a ResNet-50
// step at batch 8, 224²). The two differ only at x = 0 exactly. ONNX Runtime keeps plain
// Max(x, 0).
func Relu(x *Node) *Node {
	switch name := x.Graph().Backend().String(); {
	case xlaMemoryPath(x):
		var y *Node // the ReLU's output, which the gradient reads
		return withCustomGradient(x, func(xc *Node) *Node {
			y = Max(xc, ZerosLike(xc))
			return y
		}, func(v *Node) *Node {
			return Where(GreaterThan(y, ZerosLike(y)), v, ZerosLike(v))
		})
	case name != "go":
		return Max(x, ZerosLike(x))
	}
	return withCustomGradient(x, func(xc *Node) *Node { return Max(xc, ZerosLike(xc)) }, func(v *Node) *Node {
		return Where(GreaterOrEqual(x, ZerosLike(x)), v, ZerosLike(v))
	})
}

func scalarLike(x *Node, v float64) *Node { return Scalar(x.Graph(), x.DType(), v) }

// IsHalf reports whether dt is a 16-bit float (bfloat16 or float16): the activation dtype of
// mixed-precision training, in which the layers keep their float32 variables (master weights)
// and convert them to the activation dtype where used.
func IsHalf(dt dtypes.DType) bool { return dt == dtypes.BFloat16 || dt == dtypes.Float16 }

// inFloat32 applies f to x converted to float32 and converts the result back to x's dtype: the
// normalisations and the attention softmax of half-precision activations run in float32 (their
// reductions lose too much in 8 or 11 mantissa bits), as under PyTorch's autocast.
func inFloat32(x *Node, f func(*Node) *Node) *Node {
	return ConvertDType(f(ConvertDType(x, dtypes.Float32)), x.DType())
}
