package models

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
)

// This file is a small, bounds-checked reader of the TFLite flatbuffer schema subset that the
// MobileNet files use (tensorflow/lite/schema/schema.fbs, namespace tflite, file identifier
// "TFL3"): Model.{version, operator_codes, subgraphs, buffers}; OperatorCode.{deprecated_builtin_code,
// builtin_code}; SubGraph.{tensors, inputs, outputs, operators}; Tensor.{shape, type, buffer, name,
// quantization}; QuantizationParameters.{scale, zero_point, quantized_dimension}; Operator.{opcode_index,
// inputs, outputs, builtin_options}; and the options of the ops [TFLiteModel] interprets.
//
// Flatbuffer layout: the file starts with a u32 offset to the root table. A table starts with an
// i32 soffset to its vtable (vtable = table − soffset): [vtable bytes u16, table bytes u16, field
// offset u16 …]; field i's offset from the table start is at vtable + 4 + 2i, 0 meaning absent
// (the schema default). Tables, vectors and strings are stored as a u32 offset relative to the
// field's own position; a vector is a u32 length followed by its elements. A union takes two
// field slots: its type byte, then its value.

// fbError is the panic value of the flatbuffer accessors on malformed data; [ReadTFLite] turns
// it into an error naming the file.
type fbError string

// flatbuf reads one flatbuffer; every accessor panics with an fbError when an offset leaves it.
type flatbuf []byte

func (b flatbuf) check(pos, n int) {
	if pos < 0 || n < 0 || pos+n > len(b) || pos+n < pos {
		panic(fbError(fmt.Sprintf("offset %d+%d outside the %d-byte file", pos, n, len(b))))
	}
}

func (b flatbuf) u8(pos int) uint8   { b.check(pos, 1); return b[pos] }
func (b flatbuf) u16(pos int) uint16 { b.check(pos, 2); return binary.LittleEndian.Uint16(b[pos:]) }
func (b flatbuf) u32(pos int) uint32 { b.check(pos, 4); return binary.LittleEndian.Uint32(b[pos:]) }
func (b flatbuf) u64(pos int) uint64 { b.check(pos, 8); return binary.LittleEndian.Uint64(b[pos:]) }

// field returns the absolute position of field slot of the table at pos, or −1 if absent.
func (b flatbuf) field(table, slot int) int {
	if table < 0 {
		return -1
	}
	vt := table - int(int32(b.u32(table)))
	vsize := int(b.u16(vt))
	if 4+2*slot+2 > vsize {
		return -1
	}
	off := int(b.u16(vt + 4 + 2*slot))
	if off == 0 {
		return -1
	}
	return table + off
}

// deref follows the u32 offset stored at pos.
func (b flatbuf) deref(pos int) int { return pos + int(b.u32(pos)) }

// table returns the position of the sub-table in field slot, or −1.
func (b flatbuf) table(table, slot int) int {
	p := b.field(table, slot)
	if p < 0 {
		return -1
	}
	return b.deref(p)
}

// vector returns the position of the first element and the length of a vector field
// ((−1, 0) if absent), checking that n elements of elemSize bytes fit.
func (b flatbuf) vector(table, slot, elemSize int) (int, int) {
	p := b.field(table, slot)
	if p < 0 {
		return -1, 0
	}
	v := b.deref(p)
	n := int(b.u32(v))
	b.check(v+4, n*elemSize)
	return v + 4, n
}

// tables returns the positions of a vector of tables.
func (b flatbuf) tables(table, slot int) []int {
	start, n := b.vector(table, slot, 4)
	out := make([]int, n)
	for i := range out {
		out[i] = b.deref(start + 4*i)
	}
	return out
}

// ints returns a vector of int32.
func (b flatbuf) ints(table, slot int) []int {
	start, n := b.vector(table, slot, 4)
	out := make([]int, n)
	for i := range out {
		out[i] = int(int32(b.u32(start + 4*i)))
	}
	return out
}

// float32s returns a vector of float32.
func (b flatbuf) float32s(table, slot int) []float32 {
	start, n := b.vector(table, slot, 4)
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(b.u32(start + 4*i))
	}
	return out
}

// int64s returns a vector of int64.
func (b flatbuf) int64s(table, slot int) []int64 {
	start, n := b.vector(table, slot, 8)
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(b.u64(start + 8*i))
	}
	return out
}

// bytes returns a vector of bytes (a view into the file).
func (b flatbuf) bytes(table, slot int) []byte {
	start, n := b.vector(table, slot, 1)
	if start < 0 {
		return nil
	}
	return b[start : start+n]
}

func (b flatbuf) str(table, slot int) string { return string(b.bytes(table, slot)) }

// Scalar fields with their schema default.
func (b flatbuf) i8(table, slot int, def int8) int8 {
	if p := b.field(table, slot); p >= 0 {
		return int8(b.u8(p))
	}
	return def
}

func (b flatbuf) i32(table, slot int, def int32) int32 {
	if p := b.field(table, slot); p >= 0 {
		return int32(b.u32(p))
	}
	return def
}

func (b flatbuf) f32(table, slot int, def float32) float32 {
	if p := b.field(table, slot); p >= 0 {
		return math.Float32frombits(b.u32(p))
	}
	return def
}

// TFLite tensor types (enum TensorType) the importer reads.
const (
	tflFloat32 = 0
	tflInt32   = 2
	tflUInt8   = 3
	tflInt64   = 4
	tflInt8    = 9
)

// TFLite builtin operator codes (enum BuiltinOperator) the importer interprets.
const (
	tflAdd             = 0
	tflAveragePool2D   = 1
	tflConv2D          = 3
	tflDepthwiseConv2D = 4
	tflDequantize      = 6
	tflFullyConnected  = 9
	tflReshape         = 22
	tflSoftmax         = 25
	tflMean            = 40
	tflQuantize        = 114
	tflPaddingSame     = 0 // enum Padding
	tflPaddingValid    = 1
	tflActNone         = 0 // enum ActivationFunctionType
	tflActRelu         = 1
	tflActReluN1To1    = 2
	tflActRelu6        = 3
	tflActTanh         = 4
	tflOptConv2D       = 1 // union BuiltinOptions type values
	tflOptDepthwise    = 2
	tflOptPool2D       = 5
	tflOptFullyConn    = 8
	tflOptSoftmax      = 9
	tflOptAdd          = 11
	tflOptReshape      = 17
	tflOptReducer      = 27
)

var tflOpNames = map[int]string{
	tflAdd: "ADD", tflAveragePool2D: "AVERAGE_POOL_2D", tflConv2D: "CONV_2D", tflDepthwiseConv2D: "DEPTHWISE_CONV_2D",
	tflDequantize: "DEQUANTIZE", tflFullyConnected: "FULLY_CONNECTED", tflReshape: "RESHAPE",
	tflSoftmax: "SOFTMAX", tflMean: "MEAN", tflQuantize: "QUANTIZE",
}

// tflOptionsType is the builtin_options union type each interpreted op carries (when present).
var tflOptionsType = map[int]int{
	tflConv2D: tflOptConv2D, tflDepthwiseConv2D: tflOptDepthwise, tflAveragePool2D: tflOptPool2D,
	tflFullyConnected: tflOptFullyConn, tflSoftmax: tflOptSoftmax, tflAdd: tflOptAdd,
	tflReshape: tflOptReshape, tflMean: tflOptReducer,
}

// TFLiteTensor is one tensor of a TFLite graph.
type TFLiteTensor struct {
	Name  string
	Shape []int // as stored; the batch dimension of activations is the file's (1)
	Type  int   // TFLite TensorType: 0 float32, 2 int32, 3 uint8, 4 int64, 9 int8
	// Data is the constant's raw little-endian bytes, nil for activations.
	Data []byte
	// Scale and ZeroPoint are the quantization: one pair, or one per index of QuantizedDim.
	// Empty Scale: not quantized.
	Scale        []float32
	ZeroPoint    []int64
	QuantizedDim int
}

// TFLiteOp is one operator of a TFLite graph with its parsed builtin options.
type TFLiteOp struct {
	Code            int   // TFLite BuiltinOperator
	Inputs, Outputs []int // tensor indices; −1: an absent optional input
	// Options (zero when the op has none of them).
	Padding              int // 0 SAME, 1 VALID
	StrideH, StrideW     int
	DilationH, DilationW int // default 1
	FilterH, FilterW     int // AVERAGE_POOL_2D
	DepthMultiplier      int
	Activation           int // fused ActivationFunctionType
	WeightsFormat        int // FULLY_CONNECTED; only 0 (default) is supported
	Beta                 float32
	KeepDims             bool
}

// Name is the op's TFLite name (e.g. "CONV_2D"), or BUILTIN_<code>.
func (op *TFLiteOp) Name() string {
	if n, ok := tflOpNames[op.Code]; ok {
		return n
	}
	return fmt.Sprintf("BUILTIN_%d", op.Code)
}

// TFLiteFile is the first subgraph of a .tflite file, as stored (nothing interpreted yet).
type TFLiteFile struct {
	Path            string
	Version         uint32
	Tensors         []TFLiteTensor
	Ops             []TFLiteOp
	Inputs, Outputs []int
}

// ReadTFLite parses the .tflite flatbuffer at path: its first subgraph, every tensor with its
// quantization and constant bytes, every operator with its options. Errors name the file and
// what is wrong (not a TFLite file, malformed offsets, unsupported tensor types, an operator
// code without an entry). A file listed in the SHA256SUMS beside it must have the listed digest
// ([checksum.File]); a damaged one is refused naming the file and both digests.
func ReadTFLite(path string) (*TFLiteFile, error) {
	if _, err := checksum.File(path); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	f, err := parseTFLite(data)
	if err != nil {
		return nil, fmt.Errorf("models: %s: %w", path, err)
	}
	f.Path = path
	return f, nil
}

// parseTFLite parses the bytes of a .tflite file.
func parseTFLite(data []byte) (f *TFLiteFile, err error) {
	if len(data) < 8 || string(data[4:8]) != "TFL3" {
		id := ""
		if len(data) >= 8 {
			id = fmt.Sprintf(" (identifier %q)", data[4:8])
		}
		return nil, fmt.Errorf("not a TFLite flatbuffer: no TFL3 file identifier%s", id)
	}
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(fbError)
			if !ok {
				panic(r)
			}
			f, err = nil, fmt.Errorf("malformed flatbuffer: %s", string(e))
		}
	}()
	b := flatbuf(data)
	root := b.deref(0)
	f = &TFLiteFile{Version: uint32(b.i32(root, 0, 0))}
	var codes []int
	for _, oc := range b.tables(root, 1) {
		// Newer files keep the code in builtin_code (int32) and clamp the deprecated byte at 127.
		codes = append(codes, max(int(b.i8(oc, 0, 0)), int(b.i32(oc, 3, 0))))
	}
	subgraphs := b.tables(root, 2)
	if len(subgraphs) == 0 {
		return nil, fmt.Errorf("no subgraph")
	}
	buffers := b.tables(root, 4)
	sg := subgraphs[0]
	for i, t := range b.tables(sg, 0) {
		tt := TFLiteTensor{Shape: b.ints(t, 0), Type: int(b.i8(t, 1, 0)), Name: b.str(t, 3)}
		if q := b.table(t, 4); q >= 0 {
			tt.Scale, tt.ZeroPoint = b.float32s(q, 2), b.int64s(q, 3)
			tt.QuantizedDim = int(b.i32(q, 6, 0))
		}
		if buf := int(uint32(b.i32(t, 2, 0))); buf > 0 && buf < len(buffers) {
			tt.Data = b.bytes(buffers[buf], 0)
			if off := b.field(buffers[buf], 1); off >= 0 && b.u64(off) > 1 {
				return nil, fmt.Errorf("tensor %d (%s): data outside the flatbuffer (Buffer.offset) is not supported", i, tt.Name)
			}
			if len(tt.Data) == 0 {
				tt.Data = nil
			}
		}
		if tt.Data != nil {
			size, ok := tfliteTypeSize(tt.Type)
			if !ok {
				return nil, fmt.Errorf("tensor %d (%s): constant of TensorType %d is not supported", i, tt.Name, tt.Type)
			}
			if n := numElements(tt.Shape); len(tt.Data) != n*size {
				return nil, fmt.Errorf("tensor %d (%s): %d bytes for shape %v", i, tt.Name, len(tt.Data), tt.Shape)
			}
		}
		if len(tt.Scale) > 1 {
			if tt.QuantizedDim < 0 || tt.QuantizedDim >= len(tt.Shape) || tt.Shape[tt.QuantizedDim] != len(tt.Scale) {
				return nil, fmt.Errorf("tensor %d (%s): %d scales along quantized_dimension %d of shape %v", i, tt.Name, len(tt.Scale), tt.QuantizedDim, tt.Shape)
			}
		}
		if len(tt.ZeroPoint) > 1 && len(tt.ZeroPoint) != len(tt.Scale) {
			return nil, fmt.Errorf("tensor %d (%s): %d zero points for %d scales", i, tt.Name, len(tt.ZeroPoint), len(tt.Scale))
		}
		f.Tensors = append(f.Tensors, tt)
	}
	f.Inputs, f.Outputs = b.ints(sg, 1), b.ints(sg, 2)
	for k, o := range b.tables(sg, 3) {
		idx := int(uint32(b.i32(o, 0, 0)))
		if idx >= len(codes) {
			return nil, fmt.Errorf("operator %d: opcode_index %d, the file has %d operator codes", k, idx, len(codes))
		}
		op := TFLiteOp{Code: codes[idx], Inputs: b.ints(o, 1), Outputs: b.ints(o, 2)}
		for _, t := range append(append([]int(nil), op.Inputs...), op.Outputs...) {
			if t < -1 || t >= len(f.Tensors) {
				return nil, fmt.Errorf("operator %d (%s): tensor index %d out of range", k, op.Name(), t)
			}
		}
		if err := readTFLiteOptions(b, o, &op); err != nil {
			return nil, fmt.Errorf("operator %d (%s): %w", k, op.Name(), err)
		}
		f.Ops = append(f.Ops, op)
	}
	for _, t := range append(append([]int(nil), f.Inputs...), f.Outputs...) {
		if t < 0 || t >= len(f.Tensors) {
			return nil, fmt.Errorf("subgraph input/output tensor %d out of range", t)
		}
	}
	return f, nil
}

// readTFLiteOptions fills op's options from its builtin_options table (slots per schema.fbs).
func readTFLiteOptions(b flatbuf, o int, op *TFLiteOp) error {
	opt := b.table(o, 4)
	op.DilationH, op.DilationW, op.DepthMultiplier = 1, 1, 1
	if want, ok := tflOptionsType[op.Code]; ok && opt >= 0 {
		if got := int(b.i8(o, 3, 0)); got != want {
			return fmt.Errorf("builtin_options type %d, want %d", got, want)
		}
	}
	if opt < 0 {
		return nil
	}
	i := func(slot int, def int32) int { return int(b.i32(opt, slot, def)) }
	switch op.Code {
	case tflConv2D: // padding, stride_w, stride_h, fused_activation_function, dilation_w, dilation_h
		op.Padding, op.StrideW, op.StrideH = int(b.i8(opt, 0, 0)), i(1, 0), i(2, 0)
		op.Activation = int(b.i8(opt, 3, 0))
		op.DilationW, op.DilationH = i(4, 1), i(5, 1)
	case tflDepthwiseConv2D: // padding, stride_w, stride_h, depth_multiplier, activation, dilation_w, dilation_h
		op.Padding, op.StrideW, op.StrideH = int(b.i8(opt, 0, 0)), i(1, 0), i(2, 0)
		op.DepthMultiplier = i(3, 0)
		op.Activation = int(b.i8(opt, 4, 0))
		op.DilationW, op.DilationH = i(5, 1), i(6, 1)
	case tflAveragePool2D: // padding, stride_w, stride_h, filter_width, filter_height, activation
		op.Padding, op.StrideW, op.StrideH = int(b.i8(opt, 0, 0)), i(1, 0), i(2, 0)
		op.FilterW, op.FilterH = i(3, 0), i(4, 0)
		op.Activation = int(b.i8(opt, 5, 0))
	case tflFullyConnected: // fused_activation_function, weights_format
		op.Activation, op.WeightsFormat = int(b.i8(opt, 0, 0)), int(b.i8(opt, 1, 0))
	case tflAdd: // fused_activation_function
		op.Activation = int(b.i8(opt, 0, 0))
	case tflSoftmax: // beta
		op.Beta = b.f32(opt, 0, 0)
	case tflMean: // keep_dims
		op.KeepDims = b.i8(opt, 0, 0) != 0
	}
	return nil
}

// tfliteTypeSize is the byte size of a TensorType's element.
func tfliteTypeSize(t int) (int, bool) {
	switch t {
	case tflFloat32, tflInt32:
		return 4, true
	case tflUInt8, tflInt8:
		return 1, true
	case tflInt64:
		return 8, true
	}
	return 0, false
}

func numElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Float32 returns the constant's values dequantized as (q − zero_point)·scale, computed in
// float64 and rounded once to float32: per tensor with one scale, per channel along
// QuantizedDim with several (int32 biases carry their own scale). An unquantized float32
// constant is returned as is; nil for activations.
func (t *TFLiteTensor) Float32() []float32 {
	if t.Data == nil {
		return nil
	}
	n := numElements(t.Shape)
	out := make([]float32, n)
	// inner: the number of elements per step of QuantizedDim (row-major).
	inner, channels := 1, 1
	if len(t.Scale) > 1 {
		for _, d := range t.Shape[t.QuantizedDim+1:] {
			inner *= d
		}
		channels = len(t.Scale)
	}
	for i := range out {
		q := t.raw(i)
		if len(t.Scale) == 0 {
			out[i] = float32(q)
			continue
		}
		c := 0
		if channels > 1 {
			c = (i / inner) % channels
		}
		zp := int64(0)
		switch {
		case len(t.ZeroPoint) > 1:
			zp = t.ZeroPoint[c]
		case len(t.ZeroPoint) == 1:
			zp = t.ZeroPoint[0]
		}
		out[i] = float32((q - float64(zp)) * float64(t.Scale[c]))
	}
	return out
}

// raw returns element i of the constant as stored (float64 holds every int32 and uint8 exactly).
func (t *TFLiteTensor) raw(i int) float64 {
	switch t.Type {
	case tflFloat32:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:])))
	case tflInt32:
		return float64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
	case tflUInt8:
		return float64(t.Data[i])
	case tflInt8:
		return float64(int8(t.Data[i]))
	case tflInt64:
		return float64(int64(binary.LittleEndian.Uint64(t.Data[8*i:])))
	}
	panic(fmt.Sprintf("models: TFLite tensor %s: TensorType %d", t.Name, t.Type))
}

// Ints returns an integer constant (RESHAPE's shape, MEAN's axes) without dequantizing.
func (t *TFLiteTensor) Ints() []int {
	out := make([]int, numElements(t.Shape))
	for i := range out {
		out[i] = int(t.raw(i))
	}
	return out
}
