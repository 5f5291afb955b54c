package models

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/compute-onnx/support/protos"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"
)

// writeONNXModel writes an ONNX model (opset 14) named file into a temporary directory with
// float input "images" of dims in (−1: the symbolic axis "batch"), output "features" of dims
// out (nil: no shape declared), the given initializers and nodes; it returns the path.
func writeONNXModel(t *testing.T, file string, in, out []int64, inits []*protos.TensorProto, nodes ...*protos.NodeProto) string {
	t.Helper()
	tensorType := func(dims []int64) *protos.TypeProto {
		tt := &protos.TypeProto_Tensor{ElemType: int32(protos.TensorProto_FLOAT)}
		if dims != nil {
			tt.Shape = &protos.TensorShapeProto{}
			for _, d := range dims {
				if d < 0 {
					tt.Shape.Dim = append(tt.Shape.Dim, &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}})
				} else {
					tt.Shape.Dim = append(tt.Shape.Dim, &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimValue{DimValue: d}})
				}
			}
		}
		return &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: tt}}
	}
	m := &protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Domain: "", Version: 14}}, Graph: &protos.GraphProto{
		Name:        "check",
		Input:       []*protos.ValueInfoProto{{Name: "images", Type: tensorType(in)}},
		Output:      []*protos.ValueInfoProto{{Name: "features", Type: tensorType(out)}},
		Initializer: inits,
		Node:        nodes,
	}}
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// int64Init is an int64 initializer [len(v)] (shapes, K of TopK).
func int64Init(name string, v ...int64) *protos.TensorProto {
	return &protos.TensorProto{Name: name, Dims: []int64{int64(len(v))}, DataType: int32(protos.TensorProto_INT64), Int64Data: v}
}

// matrixInit is a float32 initializer [r, c] of small distinct values.
func matrixInit(name string, r, c int) *protos.TensorProto {
	v := make([]float32, r*c)
	for i := range v {
		v[i] = float32(i%7-3) / 8
	}
	return &protos.TensorProto{Name: name, Dims: []int64{int64(r), int64(c)}, DataType: int32(protos.TensorProto_FLOAT), FloatData: v}
}

// noPanic calls fn and fails the test when it panics (the panic's value is reported).
func noPanic(t *testing.T, what string, fn func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return fn()
}

// flatten is Flatten(axis 1) of in, named out.
func flatten(in, out string) *protos.NodeProto {
	return onnxNode("Flatten", []string{in}, out, &protos.AttributeProto{Name: "axis", Type: protos.AttributeProto_INT, I: 1})
}

// TestCheckImagesONNX reproduces issue 43's ONNX inputs a network cannot take — channels, a
// layout read the wrong way round, an output of rank 3 (declared in the file, and undeclared at
// a node named by model.onnx_output), a network that needs its export size, an op without a
// gradient when the backbone trains, input_norm imagenet on a 1-channel network — and checks
// that [CheckImages] returns, without panicking, an error naming the field, the file and the
// values (the network's input and declared shape, the images' size, the value to set); and
// that the advised setting passes (input_size at the export size, freeze_backbone).
func TestCheckImagesONNX(t *testing.T) {
	gapFlat := []*protos.NodeProto{onnxNode("GlobalAveragePool", []string{"images"}, "p"), flatten("p", "features")}
	grey1 := writeONNXModel(t, "grey1.onnx", []int64{-1, 1, 16, 16}, []int64{-1, 1}, nil, gapFlat...)
	// An MLP on the flattened 16×16 RGB image: its weight [768, 2] fixes the image size.
	export16 := writeONNXModel(t, "export16.onnx", []int64{-1, 3, 16, 16}, []int64{-1, 2}, []*protos.TensorProto{matrixInit("w", 3*16*16, 2)},
		flatten("images", "f"), onnxNode("MatMul", []string{"f", "w"}, "features"))
	// GAP → [B, 3, 1, 1] → Reshape to [B, 3, 1] (rank 3), declared in the output's type or not.
	rank3 := writeONNXModel(t, "rank3.onnx", []int64{-1, 3, 16, 16}, []int64{-1, 3, 1}, []*protos.TensorProto{int64Init("shape", 0, 3, 1)},
		onnxNode("GlobalAveragePool", []string{"images"}, "p"), onnxNode("Reshape", []string{"p", "shape"}, "features"))
	rank3Node := writeONNXModel(t, "rank3node.onnx", []int64{-1, 3, 16, 16}, []int64{-1, 3}, []*protos.TensorProto{int64Init("shape", 0, 3, 1)},
		onnxNode("GlobalAveragePool", []string{"images"}, "p"), onnxNode("Reshape", []string{"p", "shape"}, "r"), flatten("p", "features"))
	// Channel means scaled by a trainable s, then the 2 largest: TopK (a Sort) on the weights' path.
	topk := writeONNXModel(t, "topk.onnx", []int64{-1, 3, 16, 16}, []int64{-1, 2}, []*protos.TensorProto{floatInit("s", 1, 2, 3), int64Init("k", 2)},
		append(append([]*protos.NodeProto{}, gapFlat[0], flatten("p", "f"), onnxNode("Mul", []string{"f", "s"}, "m")),
			&protos.NodeProto{OpType: "TopK", Name: "topk", Input: []string{"m", "k"}, Output: []string{"features", "idx"},
				Attribute: []*protos.AttributeProto{{Name: "axis", Type: protos.AttributeProto_INT, I: 1}}})...)

	be := backend.MustShared()
	for _, tc := range []struct {
		name    string
		cfg     Config
		h, w, c int
		train   bool
		want    []string // nil: accepted
	}{
		{name: "channels", cfg: Config{Backbone: "onnx", Pretrained: grey1}, h: 16, w: 16, c: 3,
			want: []string{"model.pretrained", "grey1.onnx", `input "images"`, "[batch, 1, 16, 16]", "nchw", "16×16×3"}},
		{name: "layout", cfg: Config{Backbone: "onnx", Pretrained: onnxFixture, ONNXLayout: "nhwc"}, h: 12, w: 12, c: 1,
			want: []string{"model.onnx_layout: nhwc", "onnx_backbone.onnx", `input "images"`, "[batch, 3, 10, 10]", "10 channels", "12×12×1", "set model.onnx_layout: nchw"}},
		{name: "input_norm", cfg: Config{Backbone: "onnx", Pretrained: grey1, InputNorm: "imagenet"}, h: 16, w: 16, c: 1,
			want: []string{"model.input_norm", "grey1.onnx", "takes 1"}},
		{name: "output rank declared", cfg: Config{Backbone: "onnx", Pretrained: rank3}, h: 16, w: 16, c: 3,
			want: []string{"model.pretrained", "rank3.onnx", `output "features"`, "[batch, 3, 1]", "model.onnx_output"}},
		{name: "output rank at a named node", cfg: Config{Backbone: "onnx", Pretrained: rank3Node, ONNXOutput: "r"}, h: 16, w: 16, c: 3,
			want: []string{"model.onnx_output", "rank3node.onnx", `output "r"`, "[2, 3, 1]"}},
		{name: "export size", cfg: Config{Backbone: "onnx", Pretrained: export16}, h: 28, w: 28, c: 1,
			want: []string{"model.pretrained", "export16.onnx", `input "images"`, "[batch, 3, 16, 16]", "28×28×1", "set model.input_size: 16"}},
		{name: "export size resized", cfg: Config{Backbone: "onnx", Pretrained: export16, InputSize: 32}, h: 28, w: 28, c: 1,
			want: []string{"model.pretrained", "export16.onnx", "28×28×1 resized to 32×32 (model.input_size)", "set model.input_size: 16"}},
		{name: "export size set", cfg: Config{Backbone: "onnx", Pretrained: export16, InputSize: 16}, h: 28, w: 28, c: 1, train: true},
		{name: "no gradient", cfg: Config{Backbone: "onnx", Pretrained: topk}, h: 16, w: 16, c: 3, train: true,
			want: []string{"model.pretrained", "topk.onnx", "Sort has no gradient", "model.freeze_backbone: true"}},
		{name: "no gradient frozen", cfg: Config{Backbone: "onnx", Pretrained: topk, FreezeBackbone: true}, h: 16, w: 16, c: 3},
		{name: "fixture", cfg: Config{Backbone: "onnx", Pretrained: onnxFixture}, h: 12, w: 12, c: 1, train: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := noPanic(t, "CheckImages", func() error { return CheckImages(be, tc.cfg, tc.h, tc.w, tc.c, tc.train) })
			if tc.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

// TestONNXApplyErrorNotPanic: a graph built on images the network cannot take (3 channels for
// the 1-channel network) makes the executor return an error naming the file and the input —
// GoMLX's executors turn panics with error values into errors, while a string panic used to
// escape as a Go panic trace.
func TestONNXApplyErrorNotPanic(t *testing.T) {
	grey1 := writeONNXModel(t, "grey1.onnx", []int64{-1, 1, 16, 16}, []int64{-1, 1}, nil,
		onnxNode("GlobalAveragePool", []string{"images"}, "p"), flatten("p", "features"))
	cfg := Config{Backbone: "onnx", Pretrained: grey1, Head: "identity"}
	err := noPanic(t, "Exec.Call", func() error {
		e, err := model.NewExec(backend.MustShared(), model.NewStore(), func(scope *model.Scope, x *Node) *Node {
			return Build(scope, cfg, x, Mode{}).Features
		})
		if err != nil {
			return err
		}
		_, err = e.Call(tensors.FromFlatDataAndDimensions(make([]float32, 16*16*3), 1, 16, 16, 3))
		return err
	})
	if err == nil {
		t.Fatal("3-channel images on a 1-channel network: no error")
	}
	for _, s := range []string{"model.pretrained", "grey1.onnx", `input "images"`, "16×16×3"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

// TestInputSizeBounds: model.input_size outside 0 or 16 … 1024 (issue 43: 100000 ran out of
// memory, 7 trained on collapsed features), and sizes a backbone cannot take — with the
// images' own size when input_size is 0 ([CheckImages]) — are errors naming model.input_size,
// the value and the size to set.
func TestInputSizeBounds(t *testing.T) {
	mobile := Config{Backbone: "mobilenet_v2", Pretrained: "m.tflite", Head: "linear", Dim: 8}
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // nil: accepted
	}{
		{"huge", Config{Backbone: "cnn", Channels: []int{4}, Dim: 8, InputSize: 100000}, []string{"model.input_size: 100000", "16 … 1024"}},
		{"tiny", Config{Backbone: "resnet18", Dim: 8, InputSize: 7}, []string{"model.input_size: 7", "16 … 1024"}},
		{"negative", Config{Backbone: "cnn", Channels: []int{4}, Dim: 8, InputSize: -1}, []string{"model.input_size: -1"}},
		{"resnet below 32", Config{Backbone: "resnet50", Dim: 8, InputSize: 24}, []string{"model.input_size: 24", "resnet50", "at least 32×32", "set model.input_size: 224"}},
		{"mobilenet below 32", func() Config { c := mobile; c.InputSize = 16; return c }(), []string{"model.input_size: 16", "mobilenet_v2", "at least 32×32"}},
		{"vit not a multiple", Config{Backbone: "vit_b16", Dim: 8, InputSize: 100}, []string{"model.input_size: 100", "vit_b16", "multiple of 16", "set model.input_size: 224"}},
		{"features", Config{Backbone: "features", Dim: 8, InputSize: 96}, []string{"model.input_size: 96", "image backbone"}},
		{"cnn 16", Config{Backbone: "cnn", Channels: []int{4}, Dim: 8, InputSize: 16}, nil},
		{"mobilenet 96", func() Config { c := mobile; c.InputSize = 96; return c }(), nil},
		{"vit 224", Config{Backbone: "vit_b16", Dim: 8, InputSize: 224}, nil},
		{"max", Config{Backbone: "resnet18", Dim: 8, InputSize: 1024}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate("model")
			if tc.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
	for _, tc := range []struct {
		name    string
		cfg     Config
		h, w, c int
		want    []string
	}{
		{"resnet on 28 px", Config{Backbone: "resnet18"}, 28, 28, 1, []string{"model.input_size: 0", "28×28", "resnet18", "at least 32×32", "set model.input_size: 224"}},
		{"mobilenet on 12 px", mobile, 12, 12, 1, []string{"model.input_size: 0", "12×12", "mobilenet_v2"}},
		{"vit on 28 px", Config{Backbone: "vit_tiny"}, 28, 28, 3, []string{"model.input_size: 0", "28×28", "vit_tiny", "multiple of 8", "set model.input_size: 32"}},
		{"resnet resized", Config{Backbone: "resnet18", InputSize: 96}, 28, 28, 1, nil},
		{"resnet at 32", Config{Backbone: "resnet18"}, 32, 32, 3, nil},
		{"cnn on 12 px", Config{Backbone: "cnn", Channels: []int{4}}, 12, 12, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := noPanic(t, "CheckImages", func() error { return CheckImages(nil, tc.cfg, tc.h, tc.w, tc.c, true) })
			if tc.want == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			t.Log(err)
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}
