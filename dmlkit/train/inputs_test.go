package train

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/gomlx/compute-onnx/support/protos"
	"google.golang.org/protobuf/proto"
)

func init() {
	// synth-rgb-test: synth-test's images with their grey value in all three channels.
	prepare.RegisterDataset("synth-rgb-test", func(opts map[string]any) (*data.Split, error) {
		rgb := func(g *data.Images) *data.Images {
			c := *g
			c.C = 3
			c.Pix = make([]uint8, 3*len(g.Pix))
			for i, v := range g.Pix {
				c.Pix[3*i], c.Pix[3*i+1], c.Pix[3*i+2] = v, v, v
			}
			return &c
		}
		return &data.Split{Train: rgb(synthImages(1, 16, 8, 12, 0)), Test: rgb(synthImages(2, 10, 6, 12, 100))}, nil
	})
}

// onnxModel writes an ONNX model (opset 14) file into a temporary directory: float input
// "images" [batch, ch, side, side] (NCHW), output "features" [batch, out], the initializers and
// nodes; it returns the path.
func onnxModel(t *testing.T, file string, ch, side, out int64, inits []*protos.TensorProto, nodes ...*protos.NodeProto) string {
	t.Helper()
	dims := func(ds ...int64) *protos.TypeProto {
		s := &protos.TensorShapeProto{Dim: []*protos.TensorShapeProto_Dimension{{Value: &protos.TensorShapeProto_Dimension_DimParam{DimParam: "batch"}}}}
		for _, d := range ds {
			s.Dim = append(s.Dim, &protos.TensorShapeProto_Dimension{Value: &protos.TensorShapeProto_Dimension_DimValue{DimValue: d}})
		}
		return &protos.TypeProto{Value: &protos.TypeProto_TensorType{TensorType: &protos.TypeProto_Tensor{ElemType: int32(protos.TensorProto_FLOAT), Shape: s}}}
	}
	m := &protos.ModelProto{IrVersion: 8, OpsetImport: []*protos.OperatorSetIdProto{{Version: 14}}, Graph: &protos.GraphProto{
		Name:        "inputs",
		Input:       []*protos.ValueInfoProto{{Name: "images", Type: dims(ch, side, side)}},
		Output:      []*protos.ValueInfoProto{{Name: "features", Type: dims(out)}},
		Initializer: inits,
		Node:        nodes,
	}}
	raw, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), file)
	if err := os.WriteFile(p, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func node(op string, in []string, out string, attrs ...*protos.AttributeProto) *protos.NodeProto {
	return &protos.NodeProto{OpType: op, Name: out, Input: in, Output: []string{out}, Attribute: attrs}
}

func intAttr(name string, v int64) *protos.AttributeProto {
	return &protos.AttributeProto{Name: name, Type: protos.AttributeProto_INT, I: v}
}

// TestRunRefusesBadInputs reproduces issue 43 item 4's inputs through [Run] — an ONNX network
// given images of the wrong channel count, a layout read the wrong way round, a network that
// needs its 16-px export size on 12-px images, a network with TopK (a Sort, no gradient) trained,
// a ResNet on 12-px images (model.input_size 0) and model.input_size 7 — and checks that each
// run returns, without panicking, an error naming the field, the file and the values to set,
// before a step is taken. Today the first two end in a Go panic trace, the third in
// "DotGeneral contracting dimensions …" naming neither file nor size, the fourth without the
// advice, the last two train and fail at evaluation ("zero norm").
func TestRunRefusesBadInputs(t *testing.T) {
	gap := []*protos.NodeProto{node("GlobalAveragePool", []string{"images"}, "p"), node("Flatten", []string{"p"}, "features", intAttr("axis", 1))}
	grey1 := onnxModel(t, "grey1.onnx", 1, 12, 1, nil, gap...)
	w := &protos.TensorProto{Name: "w", Dims: []int64{3 * 16 * 16, 4}, DataType: int32(protos.TensorProto_FLOAT), FloatData: make([]float32, 3*16*16*4)}
	for i := range w.FloatData {
		w.FloatData[i] = float32(i%5-2) / 64
	}
	export16 := onnxModel(t, "export16.onnx", 3, 16, 4, []*protos.TensorProto{w},
		node("Flatten", []string{"images"}, "f", intAttr("axis", 1)), node("MatMul", []string{"f", "w"}, "features"))
	s := &protos.TensorProto{Name: "s", Dims: []int64{3}, DataType: int32(protos.TensorProto_FLOAT), FloatData: []float32{1, 2, 3}}
	k := &protos.TensorProto{Name: "k", Dims: []int64{1}, DataType: int32(protos.TensorProto_INT64), Int64Data: []int64{2}}
	topk := onnxModel(t, "topk.onnx", 3, 12, 2, []*protos.TensorProto{s, k},
		gap[0], node("Flatten", []string{"p"}, "f", intAttr("axis", 1)), node("Mul", []string{"f", "s"}, "m"),
		&protos.NodeProto{OpType: "TopK", Name: "topk", Input: []string{"m", "k"}, Output: []string{"features", "idx"}, Attribute: []*protos.AttributeProto{intAttr("axis", 1)}})

	for _, tc := range []struct {
		name string
		mod  func(c *Config)
		want []string
	}{
		{"channels", func(c *Config) { c.Data.Name, c.Model.Pretrained = "synth-rgb-test", grey1 },
			[]string{"model.pretrained", "grey1.onnx", `input "images"`, "[batch, 1, 12, 12]", "12×12×3"}},
		{"layout", func(c *Config) { c.Model.ONNXLayout = "nhwc" },
			[]string{"model.onnx_layout: nhwc", "onnx_backbone.onnx", `input "images"`, "12×12×1", "set model.onnx_layout: nchw"}},
		{"export size", func(c *Config) { c.Model.Pretrained = export16 },
			[]string{"model.pretrained", "export16.onnx", `input "images"`, "[batch, 3, 16, 16]", "12×12×1", "set model.input_size: 16"}},
		{"no gradient", func(c *Config) { c.Model.Pretrained = topk },
			[]string{"model.pretrained", "topk.onnx", "Sort", "model.freeze_backbone: true"}},
		{"resnet on 12 px", func(c *Config) { c.Model.Backbone, c.Model.Pretrained = "resnet18", "" },
			[]string{"model.input_size: 0", "12×12", "resnet18", "set model.input_size: 224"}},
		{"input_size 7", func(c *Config) { c.Model.Backbone, c.Model.Pretrained, c.Model.InputSize = "resnet18", "", 7 },
			[]string{"model.input_size: 7", "16 … 1024"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := onnxRunConfig()
			cfg.Epochs, cfg.Steps = 1, 2
			tc.mod(&cfg)
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						err = fmt.Errorf("panic: %v", r)
						t.Errorf("Run panicked: %v", r)
					}
				}()
				_, err = Run(context.Background(), cfg, t.TempDir(), nil)
			}()
			if err == nil {
				t.Fatal("the run succeeded")
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

// TestPanicError: a panic that escapes a run's graph code becomes an error naming the backbone
// and its file with the panic's first line only (no trace); GoMLX's "no gradient is defined"
// gets the advice model.freeze_backbone: true.
func TestPanicError(t *testing.T) {
	m := onnxRunConfig().Model
	err := panicError("models: something odd\ngoroutine 1 [running]:\nmain.main()", m)
	for _, s := range []string{"model.backbone onnx", "model.pretrained " + onnxFixture, "something odd"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if strings.Contains(err.Error(), "goroutine") {
		t.Errorf("error %q carries the trace", err)
	}
	err = panicError(fmt.Errorf("graph has node Node #17 Sort -> … with type \"NodeType(1001)\", for which no gradient is defined yet"), m)
	if !strings.Contains(err.Error(), "model.freeze_backbone: true") {
		t.Errorf("error %q lacks the advice model.freeze_backbone: true", err)
	}
}

// TestExtractFeaturesRefusesBadInputs: [ExtractFeatures] with an ONNX layout read the wrong way
// round returns an error naming model.onnx_layout and the layout to set (it used to panic while
// building the graph) and writes nothing.
func TestExtractFeaturesRefusesBadInputs(t *testing.T) {
	cfg := onnxRunConfig()
	cfg.Model.ONNXLayout = "nhwc"
	out := filepath.Join(t.TempDir(), "features")
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
				t.Errorf("ExtractFeatures panicked: %v", r)
			}
		}()
		err = ExtractFeatures(cfg, "", out)
	}()
	if err == nil {
		t.Fatal("features extracted")
	}
	for _, s := range []string{"model.onnx_layout: nhwc", "onnx_backbone.onnx", "set model.onnx_layout: nchw"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Errorf("%s was created", out)
	}
}

// TestAdviseZeroNorm: an evaluation error about an all-zero embedding row names
// model.input_size, its value (or the images' size for 0) and the backbone; other errors pass
// unchanged.
func TestAdviseZeroNorm(t *testing.T) {
	m := onnxRunConfig().Model
	m.Backbone = "resnet18"
	zero := fmt.Errorf("train: evaluating test set: metrics: embeddings row 3 has zero norm; cosine similarity is undefined")
	err := adviseZeroNorm(zero, m, 12, 12)
	for _, s := range []string{"row 3 has zero norm", "resnet18", "model.input_size 0: the images' 12×12", "raise model.input_size"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	m.InputSize = 16
	if err := adviseZeroNorm(zero, m, 12, 12); !strings.Contains(err.Error(), "model.input_size 16") {
		t.Errorf("error %q lacks model.input_size 16", err)
	}
	other := fmt.Errorf("train: evaluating test set: no classes")
	if err := adviseZeroNorm(other, m, 12, 12); err != other {
		t.Errorf("another error became %q", err)
	}
}
