package models

import (
	"fmt"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// run applies ops [start, stop) of the graph to the network input x [B, H, W, 3] and returns
// the value of every tensor computed (by tensor index). Weights are the variables under scope
// (created from the file when absent), converted to x's dtype.
func (m *TFLiteModel) run(scope *model.Scope, x *Node, start, stop int) map[int]*Node {
	if x.Rank() != 4 || x.Shape().Dim(3) != 3 {
		panic(fmt.Sprintf("models: %s: the TFLite graph needs [B, H, W, 3] inputs, got %s", m.Path, x.Shape()))
	}
	return m.runFrom(scope, m.Inputs[0], x, start, stop)
}

// runFrom applies ops [start, stop) with tensor in given the value x (the graph input, or a cut
// tensor whose ops lie before start: [TFLiteModel.TailFeatures]); every other non-constant
// tensor an op reads must be computed in the range. x gives the graph, dtype and batch size.
func (m *TFLiteModel) runFrom(scope *model.Scope, in int, x *Node, start, stop int) map[int]*Node {
	vals := map[int]*Node{in: x}
	value := func(t int) *Node {
		if v, ok := vals[t]; ok {
			return v
		}
		tt := &m.Tensors[t]
		if tt.Data == nil {
			panic(fmt.Sprintf("models: %s: tensor %d (%s) is used before it is computed", m.Path, t, tt.Name))
		}
		c := Const(x.Graph(), tensors.FromFlatDataAndDimensions(tt.Float32(), tt.Shape...))
		return ConvertDType(c, x.DType())
	}
	for k := start; k < stop; k++ {
		op := &m.Ops[k]
		params := map[string]*Node{}
		for _, v := range m.variables(k) {
			init := func(_ *rand.Rand, _ []int, out []float32) { copy(out, v.value()) }
			p := Param(scope.At("%s", v.scope), v.name, v.dims, init).NodeValue(x.Graph())
			params[v.name] = ConvertDType(p, x.DType())
		}
		in := value(op.Inputs[0])
		var y *Node
		switch op.Code {
		case tflConv2D:
			y = tfliteConv(in, params["weights"], op)
		case tflDepthwiseConv2D:
			y = tfliteDepthwise(in, params["weights"], op)
		case tflFullyConnected:
			w := params["weights"]
			y = MatMulW(Reshape(in, in.Shape().Size()/w.Shape().Dim(0), w.Shape().Dim(0)), w)
			y = m.reshapeLike(y, op.Outputs[0], x.Shape().Dim(0))
		case tflAdd:
			y = Add(in, value(op.Inputs[1]))
		case tflAveragePool2D:
			y = m.tfliteAvgPool(in, op)
		case tflMean:
			axes := m.Tensors[op.Inputs[1]].Ints()
			for i := range axes {
				axes[i] = (axes[i]%in.Rank() + in.Rank()) % in.Rank()
			}
			if op.KeepDims {
				y = ReduceAndKeep(in, ReduceMean, axes...)
			} else {
				y = ReduceMean(in, axes...)
			}
		case tflReshape:
			y = m.reshapeLike(in, op.Outputs[0], x.Shape().Dim(0))
		case tflSoftmax:
			y = Softmax(MulScalar(in, softmaxBeta(*op)), -1)
		case tflQuantize, tflDequantize:
			y = in // the identity in float
		default:
			panic(fmt.Sprintf("models: %s: operator %d (%s) is not supported", m.Path, k, op.Name()))
		}
		if b, ok := params["biases"]; ok {
			y = Add(y, Reshape(b, append(ones(y.Rank()-1), b.Shape().Dim(0))...))
		}
		vals[op.Outputs[0]] = tfliteActivation(y, op.Activation)
	}
	return vals
}

// ones returns n ones.
func ones(n int) []int {
	o := make([]int, n)
	for i := range o {
		o[i] = 1
	}
	return o
}

// reshapeLike reshapes y to tensor t's stored shape with its leading (batch) dimension, 1 in
// the file, set to the batch size b.
func (m *TFLiteModel) reshapeLike(y *Node, t, b int) *Node {
	s := append([]int(nil), m.Tensors[t].Shape...)
	if len(s) == 0 || s[0] != 1 {
		panic(fmt.Sprintf("models: %s: tensor %d (%s) has shape %v, want a leading batch dimension of 1", m.Path, t, m.Tensors[t].Name, s))
	}
	s[0] = b
	if numElements(s) != y.Shape().Size() {
		panic(fmt.Sprintf("models: %s: %s does not fit tensor %d (%s) of shape %v (does the graph take this input size?)", m.Path, y.Shape(), t, m.Tensors[t].Name, m.Tensors[t].Shape))
	}
	return Reshape(y, s...)
}

// tfliteActivation applies a fused activation.
func tfliteActivation(y *Node, act int) *Node {
	switch act {
	case tflActNone:
		return y
	case tflActRelu:
		return Relu(y)
	case tflActRelu6:
		return ClipScalar(y, 0, 6)
	case tflActReluN1To1:
		return ClipScalar(y, -1, 1)
	case tflActTanh:
		return Tanh(y)
	}
	panic(fmt.Sprintf("models: fused activation %d is not supported", act))
}

// tflitePadding returns (before, after, output size) for one spatial axis by TFLite's rule:
// SAME: out = ⌈size/stride⌉, total = max((out−1)·stride + eff − size, 0), before = ⌊total/2⌋;
// VALID: no padding, out = ⌊(size − eff)/stride⌋ + 1; eff = (k−1)·dilation + 1.
func tflitePadding(size, k, stride, dilation, padding int) (int, int, int) {
	eff := (k-1)*dilation + 1
	if padding == tflPaddingValid {
		return 0, 0, (size-eff)/stride + 1
	}
	out := (size + stride - 1) / stride
	total := max((out-1)*stride+eff-size, 0)
	return total / 2, total - total/2, out
}

// tfliteTaps zero-pads x [B, H, W, C] by TFLite's rule for a kh×kw window and returns, for each
// window position (i, j) in row-major order, the strided [B, Ho, Wo, C] slice it multiplies.
func tfliteTaps(x *Node, kh, kw, sh, sw, dh, dw, padding int) []*Node {
	h, w := x.Shape().Dim(1), x.Shape().Dim(2)
	pt, pb, ho := tflitePadding(h, kh, sh, dh, padding)
	pl, pr, wo := tflitePadding(w, kw, sw, dw, padding)
	if ho < 1 || wo < 1 {
		panic(fmt.Sprintf("models: a %d×%d window does not fit the %d×%d map", kh, kw, h, w))
	}
	if pt+pb+pl+pr > 0 {
		x = Pad(x, ScalarZero(x.Graph(), x.DType()), PadAxis{}, PadAxis{Start: pt, End: pb}, PadAxis{Start: pl, End: pr}, PadAxis{})
	}
	taps := make([]*Node, 0, kh*kw)
	for i := 0; i < kh; i++ {
		for j := 0; j < kw; j++ {
			taps = append(taps, Slice(x, AxisRange(),
				AxisRange(i*dh, i*dh+(ho-1)*sh+1).Stride(sh),
				AxisRange(j*dw, j*dw+(wo-1)*sw+1).Stride(sw),
				AxisRange()))
		}
	}
	return taps
}

// tfliteConv is CONV_2D without bias and activation: x [B, H, W, C], w [KH, KW, C, O] → [B, Ho,
// Wo, O], as im2col (the taps concatenated along channels, (i, j, c) order) times w viewed as
// [KH·KW·C, O]; a 1×1 convolution is a plain MatMul.
func tfliteConv(x, w *Node, op *TFLiteOp) *Node {
	kh, kw, c, o := w.Shape().Dim(0), w.Shape().Dim(1), w.Shape().Dim(2), w.Shape().Dim(3)
	if x.Shape().Dim(3) != c {
		panic(fmt.Sprintf("models: CONV_2D weight %s does not match input %s", w.Shape(), x.Shape()))
	}
	b := x.Shape().Dim(0)
	var cols *Node
	if kh == 1 && kw == 1 && op.StrideH == 1 && op.StrideW == 1 {
		cols = x
	} else {
		taps := tfliteTaps(x, kh, kw, op.StrideH, op.StrideW, op.DilationH, op.DilationW, op.Padding)
		cols = taps[0]
		if len(taps) > 1 {
			cols = Concatenate(taps, 3)
		}
	}
	ho, wo := cols.Shape().Dim(1), cols.Shape().Dim(2)
	y := MatMulW(Reshape(cols, b*ho*wo, kh*kw*c), Reshape(w, kh*kw*c, o))
	return Reshape(y, b, ho, wo, o)
}

// tfliteDepthwise is DEPTHWISE_CONV_2D without bias and activation: x [B, H, W, C], w [KH, KW,
// C·M] → [B, Ho, Wo, C·M], output channel k reading input channel ⌊k/M⌋ (M from the shapes, as
// TFLite does): the sum over window positions of the tap times w[i, j, :].
func tfliteDepthwise(x, w *Node, op *TFLiteOp) *Node {
	kh, kw, cm := w.Shape().Dim(0), w.Shape().Dim(1), w.Shape().Dim(2)
	b, h, wd, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	if cm%c != 0 {
		panic(fmt.Sprintf("models: DEPTHWISE_CONV_2D weight %s does not match input %s", w.Shape(), x.Shape()))
	}
	if mult := cm / c; mult > 1 {
		x = Reshape(BroadcastToDims(Reshape(x, b, h, wd, c, 1), b, h, wd, c, mult), b, h, wd, cm)
	}
	taps := tfliteTaps(x, kh, kw, op.StrideH, op.StrideW, op.DilationH, op.DilationW, op.Padding)
	wf := Reshape(w, kh*kw, cm)
	var y *Node
	for t, tap := range taps {
		wt := Reshape(Slice(wf, AxisRange(t, t+1), AxisRange()), 1, 1, 1, cm)
		if y == nil {
			y = Mul(tap, wt)
		} else {
			y = Add(y, Mul(tap, wt))
		}
	}
	return y
}

// tfliteAvgPool is AVERAGE_POOL_2D: the mean over each window of the in-bounds pixels (padding
// is not counted, as TFLite). A window covering the whole stored input map (7×7 VALID on the 7×7
// map of a 224 input) is a global average at any input size.
func (m *TFLiteModel) tfliteAvgPool(x *Node, op *TFLiteOp) *Node {
	stored := m.Tensors[op.Inputs[0]].Shape
	if op.Padding == tflPaddingValid && len(stored) == 4 && op.FilterH == stored[1] && op.FilterW == stored[2] {
		return ReduceAndKeep(x, ReduceMean, 1, 2)
	}
	taps := tfliteTaps(x, op.FilterH, op.FilterW, op.StrideH, op.StrideW, 1, 1, op.Padding)
	var sum *Node
	for _, t := range taps {
		if sum == nil {
			sum = t
		} else {
			sum = Add(sum, t)
		}
	}
	// The in-bounds count of each output pixel, from the same padding rule.
	h, w := x.Shape().Dim(1), x.Shape().Dim(2)
	pt, _, ho := tflitePadding(h, op.FilterH, op.StrideH, 1, op.Padding)
	pl, _, wo := tflitePadding(w, op.FilterW, op.StrideW, 1, op.Padding)
	count := make([]float64, ho*wo)
	for i := 0; i < ho; i++ {
		for j := 0; j < wo; j++ {
			rows := min(i*op.StrideH-pt+op.FilterH, h) - max(i*op.StrideH-pt, 0)
			cols := min(j*op.StrideW-pl+op.FilterW, w) - max(j*op.StrideW-pl, 0)
			count[i*wo+j] = 1 / float64(rows*cols)
		}
	}
	inv := ConvertDType(Const(x.Graph(), tensors.FromFlatDataAndDimensions(count, 1, ho, wo, 1)), x.DType())
	return Mul(sum, inv)
}
