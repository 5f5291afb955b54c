package models

import (
	"fmt"
	"strings"
	"sync"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// TFLiteModel is a TFLite graph (ReadTFLite's first subgraph) read as a float network: every
// quantized constant is dequantized ([TFLiteTensor.Float32]) and activations are not
// re-quantized between ops, the float graph that quantization-aware training approximates.
// BatchNorm is already folded into the convolution weights and biases of these files.
//
// Interpreted ops: CONV_2D, DEPTHWISE_CONV_2D (depth multiplier from the shapes), ADD,
// AVERAGE_POOL_2D, MEAN, RESHAPE, FULLY_CONNECTED, SOFTMAX and QUANTIZE/DEQUANTIZE (the identity
// in float); fused activations NONE, RELU, RELU_N1_TO_1, RELU6 and TANH; SAME and VALID padding
// with TFLite's rule (SAME: output ⌈in/stride⌉, total padding max((out−1)·stride + k_eff − in, 0),
// of which ⌊total/2⌋ goes before and the odd pixel after; VALID: none), strides and dilations.
//
// Variables (created by [TFLiteModel.LoadVariables] or on first use, trainable, float32): every
// weight and bias of a CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED op k becomes
// "<scope>/<NNN>_<layer>/weights" and ".../biases", NNN the op's index and layer the weight
// tensor's name up to its last "/" with "/" written "_" (e.g.
// "backbone/063_MobilenetV2_Logits_Conv2d_1c_1x1/weights"). Layouts: CONV_2D [O, KH, KW, I] →
// [KH, KW, I, O]; DEPTHWISE_CONV_2D [1, KH, KW, C·M] → [KH, KW, C·M] (output channel k reads input
// channel ⌊k/M⌋); FULLY_CONNECTED [O, I] → [I, O]; biases [O].
type TFLiteModel struct {
	*TFLiteFile
	// InputOffset and InputScale map a pixel p in [0, 255] to the network's input
	// (p − InputOffset)·InputScale, from the input tensor's quantization: (p − zero_point)·scale
	// for a uint8 input, zero_point + 128 for int8 (the pixel is shifted to [−128, 127] first),
	// (p − 127.5)/127.5 for an unquantized float input. The Coral MobileNets take about [−1, 1]:
	// (p − 128)/128 for the uint8 QAT files, (p − 127)·0.00784314 for the TF2 int8 file.
	InputOffset, InputScale float64
	// InputH, InputW are the input tensor's stored height and width (224 for the Coral files).
	InputH, InputW int
	// FeatureOp is the index of the last AVERAGE_POOL_2D or MEAN op: its input is the last
	// feature map, whose global average is [TFLiteModel.Features]. FeatureDim is its channels
	// (MobileNetV2 1280, MobileNetV1 1024).
	FeatureOp, FeatureDim int
	// LogitsTensor is the tensor [TFLiteModel.Logits] returns: the input of the final SOFTMAX
	// (walking back from the graph output through QUANTIZE, DEQUANTIZE and RESHAPE), or the graph
	// output when it has no final SOFTMAX (the embedding extractor). NumOutputs is its width.
	LogitsTensor, NumOutputs int
	// SoftmaxBeta is the final SOFTMAX's β (probabilities = softmax(β·logits)); 0 when the graph
	// ends without one (the embedding extractor).
	SoftmaxBeta float64
	names       map[int]string // op index → variable scope name, for ops with weights
	blocksOnce  sync.Once      // computes blocks ([TFLiteModel.BlockStarts])
	blocks      []int
}

// LoadTFLite reads a .tflite file ([ReadTFLite]) and checks that this importer can run it: one
// float-able input [1, H, W, 3], only the interpreted ops and activations, weights and biases of
// the expected ranks, and a final global pooling. Errors name the file.
func LoadTFLite(path string) (*TFLiteModel, error) {
	f, err := ReadTFLite(path)
	if err != nil {
		return nil, err
	}
	m, err := newTFLiteModel(f)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	return m, nil
}

func newTFLiteModel(f *TFLiteFile) (*TFLiteModel, error) {
	m := &TFLiteModel{TFLiteFile: f, FeatureOp: -1, names: map[int]string{}}
	if len(f.Inputs) != 1 || len(f.Outputs) < 1 {
		return nil, fmt.Errorf("want one graph input and an output, got %d inputs, %d outputs", len(f.Inputs), len(f.Outputs))
	}
	in := f.Tensors[f.Inputs[0]]
	if len(in.Shape) != 4 || in.Shape[3] != 3 {
		return nil, fmt.Errorf("input tensor %s has shape %v, want [1, H, W, 3]", in.Name, in.Shape)
	}
	m.InputH, m.InputW = in.Shape[1], in.Shape[2]
	switch {
	case len(in.Scale) == 0:
		m.InputOffset, m.InputScale = 127.5, 1/127.5
	case len(in.Scale) == 1 && in.Type == tflUInt8:
		m.InputOffset, m.InputScale = float64(zeroPoint(in)), float64(in.Scale[0])
	case len(in.Scale) == 1 && in.Type == tflInt8:
		m.InputOffset, m.InputScale = float64(zeroPoint(in))+128, float64(in.Scale[0])
	default:
		return nil, fmt.Errorf("input tensor %s: TensorType %d with %d scales is not supported", in.Name, in.Type, len(in.Scale))
	}
	for k := range f.Ops {
		op := &f.Ops[k]
		if err := m.checkOp(k, op); err != nil {
			return nil, fmt.Errorf("operator %d (%s): %w", k, op.Name(), err)
		}
		if (op.Code == tflAveragePool2D || op.Code == tflMean) && len(f.Tensors[op.Inputs[0]].Shape) == 4 {
			m.FeatureOp = k
		}
	}
	if m.FeatureOp < 0 {
		return nil, fmt.Errorf("no AVERAGE_POOL_2D or MEAN op: cannot tell the feature map")
	}
	fm := f.Tensors[f.Ops[m.FeatureOp].Inputs[0]].Shape
	m.FeatureDim = fm[3]
	m.LogitsTensor = f.Outputs[0]
	for t := f.Outputs[0]; ; {
		k := m.producer(t)
		if k < 0 {
			break
		}
		op := f.Ops[k]
		if op.Code == tflSoftmax {
			m.LogitsTensor, m.SoftmaxBeta = op.Inputs[0], softmaxBeta(op)
			break
		}
		if op.Code != tflQuantize && op.Code != tflDequantize && op.Code != tflReshape {
			break
		}
		t = op.Inputs[0]
	}
	ls := f.Tensors[m.LogitsTensor].Shape
	if len(ls) == 0 {
		return nil, fmt.Errorf("output tensor %d has no shape", m.LogitsTensor)
	}
	m.NumOutputs = ls[len(ls)-1]
	return m, nil
}

// softmaxBeta is a SOFTMAX op's β: the schema default 0, which no converter writes for a real
// softmax, is read as 1.
func softmaxBeta(op TFLiteOp) float64 {
	if op.Beta == 0 {
		return 1
	}
	return float64(op.Beta)
}

// zeroPoint is a per-tensor quantization's zero point (0 when absent).
func zeroPoint(t TFLiteTensor) int64 {
	if len(t.ZeroPoint) == 0 {
		return 0
	}
	return t.ZeroPoint[0]
}

// producer returns the index of the op writing tensor t, or −1.
func (m *TFLiteModel) producer(t int) int {
	for k, op := range m.Ops {
		for _, o := range op.Outputs {
			if o == t {
				return k
			}
		}
	}
	return -1
}

// checkOp checks one op's code, options and constant inputs, and names its variables.
func (m *TFLiteModel) checkOp(k int, op *TFLiteOp) error {
	if len(op.Outputs) != 1 || len(op.Inputs) == 0 || op.Inputs[0] < 0 {
		return fmt.Errorf("want one output and a first input, got %d inputs, %d outputs", len(op.Inputs), len(op.Outputs))
	}
	switch op.Activation {
	case tflActNone, tflActRelu, tflActReluN1To1, tflActRelu6, tflActTanh:
	default:
		return fmt.Errorf("fused activation %d is not supported", op.Activation)
	}
	konst := func(i, rank int, what string) error {
		if i >= len(op.Inputs) || op.Inputs[i] < 0 {
			return fmt.Errorf("no %s input", what)
		}
		t := m.Tensors[op.Inputs[i]]
		if t.Data == nil {
			return fmt.Errorf("%s %s is not a constant", what, t.Name)
		}
		if rank > 0 && len(t.Shape) != rank {
			return fmt.Errorf("%s %s has shape %v, want rank %d", what, t.Name, t.Shape, rank)
		}
		return nil
	}
	switch op.Code {
	case tflConv2D, tflDepthwiseConv2D, tflFullyConnected:
		rank := 4
		if op.Code == tflFullyConnected {
			rank = 2
			if op.WeightsFormat != 0 {
				return fmt.Errorf("weights_format %d is not supported", op.WeightsFormat)
			}
		} else if op.StrideH < 1 || op.StrideW < 1 || op.DilationH < 1 || op.DilationW < 1 || (op.Padding != tflPaddingSame && op.Padding != tflPaddingValid) {
			return fmt.Errorf("stride %d×%d, dilation %d×%d, padding %d", op.StrideH, op.StrideW, op.DilationH, op.DilationW, op.Padding)
		}
		if err := konst(1, rank, "weight"); err != nil {
			return err
		}
		w := m.Tensors[op.Inputs[1]]
		out := w.Shape[0]
		if op.Code == tflDepthwiseConv2D {
			out = w.Shape[3]
			if w.Shape[0] != 1 {
				return fmt.Errorf("depthwise weight %s has shape %v, want [1, KH, KW, C·M]", w.Name, w.Shape)
			}
		}
		if len(op.Inputs) > 2 && op.Inputs[2] >= 0 {
			if err := konst(2, 1, "bias"); err != nil {
				return err
			}
			if b := m.Tensors[op.Inputs[2]]; b.Shape[0] != out {
				return fmt.Errorf("bias %s has %d values for %d outputs", b.Name, b.Shape[0], out)
			}
		}
		layer := w.Name
		if i := strings.IndexByte(layer, ';'); i >= 0 {
			layer = layer[:i] // converters join fused names with ';'
		}
		if i := strings.LastIndexByte(layer, '/'); i >= 0 {
			layer = layer[:i]
		}
		m.names[k] = fmt.Sprintf("%03d_%s", k, sanitizeName(layer))
	case tflAveragePool2D:
		if op.FilterH < 1 || op.FilterW < 1 || op.StrideH < 1 || op.StrideW < 1 {
			return fmt.Errorf("filter %d×%d, stride %d×%d", op.FilterH, op.FilterW, op.StrideH, op.StrideW)
		}
	case tflMean:
		if err := konst(1, 0, "axes"); err != nil {
			return err
		}
	case tflAdd:
		if len(op.Inputs) != 2 || op.Inputs[1] < 0 {
			return fmt.Errorf("want two inputs")
		}
	case tflReshape, tflSoftmax, tflQuantize, tflDequantize:
	default:
		return fmt.Errorf("op not supported (only CONV_2D, DEPTHWISE_CONV_2D, ADD, AVERAGE_POOL_2D, MEAN, RESHAPE, FULLY_CONNECTED, SOFTMAX, QUANTIZE, DEQUANTIZE)")
	}
	return nil
}

// sanitizeName keeps letters, digits, '_', '-' and '.'; anything else becomes '_'.
func sanitizeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// tfliteVar is one variable of a TFLiteModel: scope name, variable name, dims, and its value.
type tfliteVar struct {
	scope, name string
	dims        []int
	value       func() []float32
}

// variables lists op k's variables (nil for ops without weights), in the layouts of the
// TFLiteModel doc.
func (m *TFLiteModel) variables(k int) []tfliteVar {
	name, ok := m.names[k]
	if !ok {
		return nil
	}
	op := m.Ops[k]
	w := &m.Tensors[op.Inputs[1]]
	s := w.Shape
	var vs []tfliteVar
	switch op.Code {
	case tflConv2D: // [O, KH, KW, I] → [KH, KW, I, O]
		o, kh, kw, in := s[0], s[1], s[2], s[3]
		vs = append(vs, tfliteVar{name, "weights", []int{kh, kw, in, o}, func() []float32 {
			src, dst := w.Float32(), make([]float32, o*kh*kw*in)
			for a := 0; a < o; a++ {
				for r := 0; r < kh*kw*in; r++ {
					dst[r*o+a] = src[a*kh*kw*in+r]
				}
			}
			return dst
		}})
	case tflDepthwiseConv2D: // [1, KH, KW, C·M] → [KH, KW, C·M]
		vs = append(vs, tfliteVar{name, "weights", []int{s[1], s[2], s[3]}, w.Float32})
	case tflFullyConnected: // [O, I] → [I, O]
		o, in := s[0], s[1]
		vs = append(vs, tfliteVar{name, "weights", []int{in, o}, func() []float32 {
			src, dst := w.Float32(), make([]float32, o*in)
			for a := 0; a < o; a++ {
				for i := 0; i < in; i++ {
					dst[i*o+a] = src[a*in+i]
				}
			}
			return dst
		}})
	}
	if len(op.Inputs) > 2 && op.Inputs[2] >= 0 {
		b := &m.Tensors[op.Inputs[2]]
		vs = append(vs, tfliteVar{name, "biases", []int{b.Shape[0]}, b.Float32})
	}
	return vs
}

// LoadVariables creates (or overwrites, with the same shapes) the weights and biases of the
// model under scope as trainable float32 variables, dequantized from the file: those of the
// feature extractor (the ops before FeatureOp, what [TFLiteModel.Features] uses) and, with
// classifier, also those after it (the classifier of [TFLiteModel.Logits]). Call it on a fresh
// store before the first graph is built, or let the graph functions create them on first use
// (the same values).
func (m *TFLiteModel) LoadVariables(scope *model.Scope, classifier bool) error {
	stop := m.FeatureOp
	if classifier {
		stop = len(m.Ops)
	}
	return m.loadOps(scope, 0, stop)
}

// LoadTailVariables is [TFLiteModel.LoadVariables] for the ops of the tail that begins at op
// start ([TFLiteModel.TailFeatures]) only: the variables a model.trainable_tail run trains.
func (m *TFLiteModel) LoadTailVariables(scope *model.Scope, start int) error {
	m.checkStart(start)
	return m.loadOps(scope, start, m.FeatureOp)
}

// loadOps creates the variables of ops [start, stop) under scope.
func (m *TFLiteModel) loadOps(scope *model.Scope, start, stop int) error {
	base := strings.TrimSuffix(scope.Scope(), "/")
	for k := start; k < stop; k++ {
		for _, v := range m.variables(k) {
			if err := setWeight(scope.Store(), base+"/"+v.scope+"/"+v.name, v.value(), v.dims, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// tfliteCache keeps parsed files so that every graph built from a configuration shares one parse.
var tfliteCache fileCache[*TFLiteModel]

// CachedTFLite is [LoadTFLite] with a per-process cache keyed by the file's absolute path, size
// and modification time.
func CachedTFLite(path string) (*TFLiteModel, error) {
	return tfliteCache.get(path, "", func(err error) error { return fmt.Errorf("models: %w", err) },
		func() (*TFLiteModel, error) { return LoadTFLite(path) })
}

// MobileNetFeatureDims are the feature widths of the registered TFLite backbones.
var MobileNetFeatureDims = map[string]int{"mobilenet_v2": 1280, "mobilenet_v1": 1024}

// MobileNet is the "mobilenet_v2" / "mobilenet_v1" backbone: the TFLite graph of cfg.Pretrained
// ([CachedTFLite]) applied to x [B, H, W, C] under scope, returning the global average of its
// last feature map [B, F] ([TFLiteModel.Features]; cfg.Pool does not apply). Any input size works
// (e.g. 96–128 px on a CPU; the ImageNet weights were trained at 224).
//
// Input: pixels in [0, 1] (pixel/255, what dmlkit's Omniglot/MNIST/CIFAR pipelines feed every
// backbone), C = 3 (RGB) or 1 (grey, repeated to RGB). The file's input quantization is applied
// inside: (255·x − InputOffset)·InputScale, about [−1, 1] ((p − 128)/128 for the Coral uint8
// files). The full-scale image datasets of dmlkit/train normalise with the ImageNet mean and std
// by default: give them data.options mean [0, 0, 0] and std [1, 1, 1] for this backbone.
//
// Variables: only the feature extractor's ([TFLiteModel.LoadVariables] without the classifier),
// trainable; there is no BatchNorm (folded into the convolutions), so [Mode] does not apply.
// Panics if the file cannot be read ([LoadPretrained] reports that as an error first).
func MobileNet(scope *model.Scope, cfg Config, x *Node) *Node {
	m, err := CachedTFLite(cfg.Pretrained)
	if err != nil {
		panic(fmt.Sprintf("models: backbone %s: model.pretrained: %v", cfg.Backbone, err))
	}
	return m.Features(scope, x)
}

// InputFromPixels maps pixels x [B, H, W, C] with values in [0, maxValue] (1 for dmlkit's
// [0, 1] images, 255 for raw bytes) to the network's input: p = x·255/maxValue, then
// (p − InputOffset)·InputScale (about [−1, 1]). C = 1 is repeated to 3 channels (grey → RGB).
func (m *TFLiteModel) InputFromPixels(x *Node, maxValue float64) *Node {
	if x.Rank() != 4 || (x.Shape().Dim(3) != 3 && x.Shape().Dim(3) != 1) {
		panic(fmt.Sprintf("models: TFLite MobileNet needs [B, H, W, 3] or [B, H, W, 1] images, got %s", x.Shape()))
	}
	if x.Shape().Dim(3) == 1 {
		x = Concatenate([]*Node{x, x, x}, 3)
	}
	s := 255 / maxValue * m.InputScale
	return AddScalar(MulScalar(x, s), -m.InputOffset*m.InputScale)
}

// Features returns the global average [B, FeatureDim] of the last feature map (the input of the
// FeatureOp pooling; for MobileNetV2 the 1280-channel map, for the V1 embedding extractor the
// 1024-channel one) for pixels x [B, H, W, C] in [0, 1] ([TFLiteModel.InputFromPixels]), at any
// input size. Variables are used from scope (created from the file when absent).
func (m *TFLiteModel) Features(scope *model.Scope, x *Node) *Node {
	in := m.InputFromPixels(x, 1)
	v := m.run(scope, in, 0, m.FeatureOp)
	return ReduceMean(v[m.Ops[m.FeatureOp].Inputs[0]], 1, 2)
}

// Logits runs the whole graph on the network input x [B, H, W, 3] (already mapped, e.g. by
// [TFLiteModel.InputFromPixels]) and returns the logits [B, NumOutputs] (the input of the final
// SOFTMAX; the embedding for a graph without one). An AVERAGE_POOL_2D whose window covers the
// whole stored feature map (7×7 at 224) is a global average at any input size, so other sizes
// run too, but the classifiers were trained at InputH × InputW.
func (m *TFLiteModel) Logits(scope *model.Scope, x *Node) *Node {
	v := m.run(scope, x, 0, len(m.Ops))
	y := v[m.LogitsTensor]
	b := y.Shape().Dim(0)
	return Reshape(y, b, y.Shape().Size()/b)
}
