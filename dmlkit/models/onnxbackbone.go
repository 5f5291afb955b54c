package models

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/gomlx/onnx-gomlx/onnx"
	"github.com/gomlx/onnx-gomlx/onnx/parser"
	"google.golang.org/protobuf/proto"
)

// This file is backbone "onnx": a user's ONNX network (e.g. a torchvision ResNet-50 exported
// with its classifier removed), the file [Config].Pretrained, imported with
// github.com/gomlx/onnx-gomlx as the backbone.
//
// The graph is converted op by op into the GoMLX graph on every [Build] ([onnx.Model.CallGraph]);
// its initializers are variables of the store under <scope>/backbone/ONNX/<initializer name>
// (a "/" in an ONNX name becomes "|"), e.g. /model/backbone/ONNX/layer4.0.conv1.weight for a
// torchvision export with do_constant_folding=False. Float initializers are trainable, so the
// optimiser's groups apply (match "/backbone/" for the whole network, "/backbone/ONNX/layer4."
// for the last stage; lr_mul 0 freezes); the running statistics of BatchNormalization nodes
// (inputs 3 and 4) and non-float initializers (shapes, indices) are not trainable.
//
// BatchNorm: an inference export holds BatchNormalization nodes with fixed statistics (or none
// at all: PyTorch's default EVAL export folds each BN into the preceding convolution), and
// onnx-gomlx v0.5.5 only converts inference-mode BatchNormalization. The backbone therefore
// always normalises with the exported running statistics and never updates them — frozen BN, the
// papers' setting — whatever the training mode; the affine parameters (scale, bias) stay
// trainable. model.frozen_bn and model.norm do not apply.

// Input layouts of [Config].ONNXLayout.
const (
	onnxNCHW = "nchw"
	onnxNHWC = "nhwc"
)

// ImageNet normalisation constants (RGB, for pixels in [0, 1]) of [Config].InputNorm "imagenet".
var (
	imageNetMean = [3]float64{0.485, 0.456, 0.406}
	imageNetStd  = [3]float64{0.229, 0.224, 0.225}
)

// ONNXBackbone is a parsed ONNX network prepared as a backbone: the graph input's batch and
// spatial axes are made dynamic, the input layout is known, and the output is chosen.
type ONNXBackbone struct {
	// Path is the file it was read from.
	Path string
	// Input is the name of the graph input the images are fed to.
	Input string
	// Layout is the input layout: "nchw" ([B, C, H, W], PyTorch's) or "nhwc".
	Layout string
	// Channels is the number of input channels the network wants (3 for RGB).
	Channels int
	// Output is the name of the node output taken as the features.
	Output string
	// Params is the number of float values of the initializers Output depends on (BatchNorm
	// running statistics included).
	Params int
	// InputDims is the image input's shape as the file declares it, in Layout, e.g.
	// "[batch, 3, 224, 224]" (a symbolic axis by its name, "?" when unnamed); ExportH and
	// ExportW are its fixed spatial sides (0 when symbolic). The network is fed any size
	// ([ONNXBackbone.CheckInput] tries the run's).
	InputDims        string
	ExportH, ExportW int
	// OutputDims is Output's shape as the file declares it (graph outputs and value_info), e.g.
	// "[batch, 2048]"; outputRank is its rank, outputKnown whether the file declares it.
	OutputDims  string
	outputRank  int
	outputKnown bool
	// inputFixed are the input's fixed dims as the file declares them (0 for a symbolic axis);
	// namedOutput: Output was named by model.onnx_output (not the graph's output).
	inputFixed  [4]int
	namedOutput bool

	model onnx.Model
	// used: initializers Output depends on; frozen: those of them that are not trainable.
	used, frozen map[string]bool
	// probe is one of used (the smallest name; "" when none): its variable's presence tells
	// whether the variables were created.
	probe string
	// mu serialises CallGraph: onnx-gomlx's conversion keeps temporary state in the model.
	mu sync.Mutex
}

// onnxCache keeps prepared networks per file, layout and output (see [OpenONNXBackbone]).
var onnxCache fileCache[*ONNXBackbone]

// OpenONNXBackbone reads and prepares the .onnx file cfg.Pretrained. It is cached per file,
// size, modification time, layout and output, since [Build] calls it for every graph: the parsed
// network stays in memory for the life of the process (for a ResNet-50 about twice the file's
// 94 MB). Errors name the field and the file.
func OpenONNXBackbone(cfg Config) (*ONNXBackbone, error) {
	path := cfg.Pretrained
	if path == "" {
		return nil, fmt.Errorf("model.pretrained: empty: backbone onnx needs the .onnx file of the network")
	}
	return onnxCache.get(path, cfg.ONNXLayout+"\x00"+cfg.ONNXOutput, func(err error) error { return fmt.Errorf("model.pretrained: %w", err) },
		func() (*ONNXBackbone, error) { return readONNXBackbone(path, cfg.ONNXLayout, cfg.ONNXOutput) })
}

// readONNXBackbone parses path and prepares it (see [ONNXBackbone]); layout and output are
// [Config].ONNXLayout and ONNXOutput. A file listed in the SHA256SUMS beside it must have the
// listed digest ([checksum.File]).
func readONNXBackbone(path, layout, output string) (*ONNXBackbone, error) {
	if _, err := checksum.File(path); err != nil {
		return nil, fmt.Errorf("model.pretrained: %w", err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model.pretrained: %w", err)
	}
	var m protos.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("model.pretrained: %s: not an ONNX model: %w", path, err)
	}
	g := m.GetGraph()
	if g == nil {
		return nil, fmt.Errorf("model.pretrained: %s: the ONNX model has no graph", path)
	}
	b := &ONNXBackbone{Path: path}

	// The image input: the one graph input that is not an initializer (exports with
	// keep_initializers_as_inputs list the weights as inputs too; they are dropped here, else
	// onnx-gomlx would want them fed).
	inits := map[string]*protos.TensorProto{}
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = t
	}
	var in *protos.ValueInfoProto
	var inputs []*protos.ValueInfoProto
	for _, vi := range g.GetInput() {
		if _, ok := inits[vi.GetName()]; ok {
			continue
		}
		inputs = append(inputs, vi)
	}
	if len(inputs) != 1 {
		names := make([]string, len(inputs))
		for i, vi := range inputs {
			names[i] = vi.GetName()
		}
		return nil, fmt.Errorf("model.pretrained: %s: the graph has %d inputs %q; a backbone has one, the images", path, len(inputs), names)
	}
	in = inputs[0]
	g.Input = inputs
	b.Input = in.GetName()
	tt := in.GetType().GetTensorType()
	if tt == nil || tt.GetElemType() != int32(protos.TensorProto_FLOAT) {
		return nil, fmt.Errorf("model.pretrained: %s: input %q is not a float32 tensor", path, b.Input)
	}
	dims := tt.GetShape().GetDim()
	if len(dims) != 4 {
		return nil, fmt.Errorf("model.pretrained: %s: input %q has rank %d; a backbone takes images [B, C, H, W] or [B, H, W, C]", path, b.Input, len(dims))
	}
	fixed := func(i int) int { return int(dims[i].GetDimValue()) } // 0 for a symbolic axis
	isCh := func(d int) bool { return d == 1 || d == 3 }
	switch layout {
	case "":
		switch {
		case isCh(fixed(1)) && !isCh(fixed(3)):
			layout = onnxNCHW
		case isCh(fixed(3)) && !isCh(fixed(1)):
			layout = onnxNHWC
		default:
			return nil, fmt.Errorf("model.onnx_layout: %s: cannot tell the layout of input %q (dims %s): set nchw or nhwc", path, b.Input, dimString(dims))
		}
	case onnxNCHW, onnxNHWC:
	default:
		return nil, fmt.Errorf("model.onnx_layout: %q: want nchw, nhwc or empty (detect)", layout)
	}
	b.Layout = layout
	chAxis, spatial := 1, [2]int{2, 3}
	if layout == onnxNHWC {
		chAxis, spatial = 3, [2]int{1, 2}
	}
	if b.Channels = fixed(chAxis); b.Channels <= 0 {
		return nil, fmt.Errorf("model.pretrained: %s: input %q (dims %s, %s) has no fixed channel count", path, b.Input, dimString(dims), layout)
	}
	b.InputDims, b.ExportH, b.ExportW = dimString(dims), fixed(spatial[0]), fixed(spatial[1])
	for i := range b.inputFixed {
		b.inputFixed[i] = fixed(i)
	}
	b.namedOutput = output != ""
	// Any batch and any image size: the axes become symbolic (networks that end in a global
	// pooling, as ResNets do, accept any size; a graph that needs its export size is refused by
	// [ONNXBackbone.CheckInput] before a run builds its graphs, naming ExportH × ExportW).
	dims[0].Value = &protos.TensorShapeProto_Dimension_DimParam{DimParam: "dmlkit_batch"}
	dims[spatial[0]].Value = &protos.TensorShapeProto_Dimension_DimParam{DimParam: "dmlkit_height"}
	dims[spatial[1]].Value = &protos.TensorShapeProto_Dimension_DimParam{DimParam: "dmlkit_width"}

	// The output.
	if output == "" {
		if len(g.GetOutput()) != 1 {
			names := make([]string, len(g.GetOutput()))
			for i, o := range g.GetOutput() {
				names[i] = o.GetName()
			}
			return nil, fmt.Errorf("model.onnx_output: %s: the graph has %d outputs %q: name the one that is the features", path, len(names), names)
		}
		output = g.GetOutput()[0].GetName()
	}
	// The output's declared shape, when the file gives it (before Identity nodes are removed:
	// they keep their output's name for the value_info).
	for _, vi := range append(append([]*protos.ValueInfoProto{}, g.GetOutput()...), g.GetValueInfo()...) {
		if vi.GetName() != output {
			continue
		}
		if st := vi.GetType().GetTensorType().GetShape(); st != nil {
			b.OutputDims, b.outputRank, b.outputKnown = dimString(st.GetDim()), len(st.GetDim()), true
		}
		break
	}
	output = removeIdentities(g, inits, output)
	// onnx-gomlx v0.5.5 refuses a BatchNormalization momentum other than 0.9, which only the
	// running-statistics update of a training-mode BN uses; PyTorch exports 1 − momentum
	// (torchvision's MobileNetV3, BatchNorm2d(momentum=0.01), gives 0.99). It is dropped.
	for _, n := range g.GetNode() {
		if n.GetOpType() != "BatchNormalization" {
			continue
		}
		var attrs []*protos.AttributeProto
		for _, a := range n.GetAttribute() {
			if a.GetName() != "momentum" {
				attrs = append(attrs, a)
			}
		}
		n.Attribute = attrs
	}
	producer := map[string]*protos.NodeProto{}
	for _, n := range g.GetNode() {
		for _, o := range n.GetOutput() {
			producer[o] = n
		}
	}
	if _, ok := producer[output]; !ok {
		return nil, fmt.Errorf("model.onnx_output: %s: %q is not the output of any node of the graph", path, output)
	}
	b.Output = output

	// The initializers the output depends on, and those that are not trainable.
	b.used, b.frozen = map[string]bool{}, map[string]bool{}
	seen := map[string]bool{}
	var visit func(name string)
	visitNode := func(n *protos.NodeProto) {
		for i, name := range n.GetInput() {
			if n.GetOpType() == "BatchNormalization" && (i == 3 || i == 4) {
				if _, ok := inits[name]; ok {
					b.frozen[name] = true
				}
			}
			visit(name)
		}
		for _, a := range n.GetAttribute() { // sub-graphs (If, Loop) may use outer names
			for _, sg := range append([]*protos.GraphProto{a.GetG()}, a.GetGraphs()...) {
				for _, sn := range sg.GetNode() {
					for _, name := range sn.GetInput() {
						visit(name)
					}
				}
			}
		}
	}
	visit = func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		if t, ok := inits[name]; ok {
			b.used[name] = true
			if t.GetDataType() != int32(protos.TensorProto_FLOAT) {
				b.frozen[name] = true
			} else {
				n := 1
				for _, d := range t.GetDims() {
					n *= int(d)
				}
				b.Params += n
			}
			return
		}
		if n, ok := producer[name]; ok {
			visitNode(n)
		}
	}
	visit(output)
	for name := range b.used {
		if b.probe == "" || name < b.probe {
			b.probe = name
		}
	}

	edited, err := proto.Marshal(&m)
	if err != nil {
		return nil, fmt.Errorf("model.pretrained: %s: %w", path, err)
	}
	om, err := parser.Parse(edited)
	if err != nil {
		return nil, fmt.Errorf("model.pretrained: %s: %w", path, err)
	}
	b.model = om.WithBaseDir(filepath.Dir(path)) // external data files lie beside the model
	return b, nil
}

// removeIdentities removes g's Identity nodes (inits holds g's initializers by name and is
// updated) and returns the name output now has. PyTorch's exporter stores equal tensors once and
// names the others with Identity nodes (an untrained network's BatchNorms all share one tensor of
// ones for their scales and running variances); each alias becomes an initializer of its own,
// a copy under the alias's name, so that each parameter is a variable of its own, as in PyTorch
// (and GoMLX v0.28.16 defines no gradient for Identity). An Identity of a computed value is
// bypassed: its consumers (top-level nodes and graph outputs) read its input.
func removeIdentities(g *protos.GraphProto, inits map[string]*protos.TensorProto, output string) string {
	for {
		var rest []*protos.NodeProto
		rename := map[string]string{}
		for _, n := range g.GetNode() {
			if n.GetOpType() != "Identity" || len(n.GetInput()) != 1 || len(n.GetOutput()) != 1 {
				rest = append(rest, n)
				continue
			}
			in, out := n.GetInput()[0], n.GetOutput()[0]
			if t, ok := inits[in]; ok {
				c := proto.Clone(t).(*protos.TensorProto)
				c.Name = out
				inits[out] = c
				g.Initializer = append(g.Initializer, c)
				continue
			}
			rename[out] = in
		}
		if len(rest) == len(g.GetNode()) {
			return output
		}
		g.Node = rest
		for len(rename) > 0 { // resolve chains of bypassed Identities
			again := false
			for out, in := range rename {
				if in2, ok := rename[in]; ok {
					rename[out] = in2
					again = true
				}
			}
			if !again {
				break
			}
		}
		for _, n := range g.GetNode() {
			for i, in := range n.GetInput() {
				if r, ok := rename[in]; ok {
					n.Input[i] = r
				}
			}
		}
		for _, o := range g.GetOutput() {
			if r, ok := rename[o.GetName()]; ok {
				o.Name = r
			}
		}
		if r, ok := rename[output]; ok {
			output = r
		}
	}
}

func dimString(dims []*protos.TensorShapeProto_Dimension) string {
	s := make([]string, len(dims))
	for i, d := range dims {
		if p := d.GetDimParam(); p != "" {
			s[i] = p
		} else if v := d.GetDimValue(); v > 0 {
			s[i] = fmt.Sprint(v)
		} else {
			s[i] = "?"
		}
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// onnxVarPath is the store path of initializer name under scope (the backbone scope).
func onnxVarPath(scope *model.Scope, name string) string {
	return strings.TrimSuffix(scope.Scope(), "/") + "/" + onnx.ModelScope + "/" + strings.ReplaceAll(name, model.ScopeSeparator, "|")
}

// LoadVariables creates the network's variables under scope (the backbone scope, e.g.
// /model/backbone) from the initializers the output depends on: float ones trainable, the
// BatchNormalization statistics and non-float ones not. Variables that already exist keep their
// values (a checkpoint or model.init_from wins). Initializers the output does not use (layers
// after model.onnx_output) get no variable.
func (b *ONNXBackbone) LoadVariables(scope *model.Scope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("model.pretrained: %s: %v", b.Path, r)
		}
	}()
	store := scope.Store()
	existed := map[string]bool{}
	for v := range store.IterVariables() {
		existed[v.Path()] = true
	}
	b.mu.Lock()
	err = b.model.VariablesToScope(scope)
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("model.pretrained: %s: %w", b.Path, err)
	}
	// onnx-gomlx creates a variable for every initializer: drop those the output does not use,
	// and set the trainable flags of those it created.
	var names []string
	for v := range store.IterVariables() {
		names = append(names, v.Path())
	}
	prefix := strings.TrimSuffix(scope.Scope(), "/") + "/" + onnx.ModelScope + "/"
	usedPath := map[string]string{}
	for name := range b.used {
		usedPath[onnxVarPath(scope, name)] = name
	}
	sort.Strings(names)
	for _, p := range names {
		if existed[p] || !strings.HasPrefix(p, prefix) {
			continue
		}
		name, ok := usedPath[p]
		if !ok {
			if err := store.DeleteVariable(p); err != nil {
				return fmt.Errorf("model.pretrained: %s: %w", b.Path, err)
			}
			continue
		}
		store.GetVariable(p).SetTrainable(!b.frozen[name])
	}
	return nil
}

// Apply runs the network on x [B, H, W, C] (dmlkit's NHWC images, float32 or half precision)
// with its variables under scope (the backbone scope; created on first use if missing, see
// [ONNXBackbone.LoadVariables]) and returns the features [B, F] in x's dtype.
//
// The input is prepared as the network wants it: a grey image (C = 1) is repeated to the
// network's 3 channels; with cfg.InputNorm "imagenet" each channel is normalised as
// (x − mean)/std with torchvision's ImageNet constants (for inputs in [0, 1]); NHWC is
// transposed to NCHW for an NCHW network. The network runs in float32 (its initializers are).
// A rank-2 output is the features; a rank-4 output (a feature map, e.g. an intermediate node
// named by cfg.ONNXOutput) is pooled with cfg.Pool ([GlobalPool]). It panics on a graph that
// onnx-gomlx cannot convert, naming the op, and with an error value naming the field and the
// file on images the network cannot take (channels, output rank; [ONNXBackbone.CheckInput]
// finds these before a graph is built).
func (b *ONNXBackbone) Apply(scope *model.Scope, cfg Config, x *Node) *Node {
	if x.Rank() != 4 {
		panic(inputErrorf("model.pretrained: %s: backbone onnx needs [B, H, W, C] images, got %s", b.Path, x.Shape()))
	}
	if b.probe != "" && scope.Store().GetVariable(onnxVarPath(scope, b.probe)) == nil {
		if err := b.LoadVariables(scope); err != nil {
			panic(err)
		}
	}
	dt := x.DType()
	h := x
	if dt != dtypes.Float32 {
		h = ConvertDType(h, dtypes.Float32)
	}
	c := h.Shape().Dim(3)
	if err := b.checkChannels(cfg, h.Shape().Dim(1), h.Shape().Dim(2), c); err != nil {
		panic(err)
	}
	if c == 1 && b.Channels == 3 {
		h = Concatenate([]*Node{h, h, h}, 3)
	}
	switch cfg.InputNorm {
	case "", "none":
	case "imagenet":
		g := h.Graph()
		mean := Reshape(Const(g, []float32{float32(imageNetMean[0]), float32(imageNetMean[1]), float32(imageNetMean[2])}), 1, 1, 1, 3)
		inv := Reshape(Const(g, []float32{float32(1 / imageNetStd[0]), float32(1 / imageNetStd[1]), float32(1 / imageNetStd[2])}), 1, 1, 1, 3)
		h = Mul(Sub(h, mean), inv)
	default:
		panic(inputErrorf("model.input_norm: %q: want none or imagenet", cfg.InputNorm))
	}
	if b.Layout == onnxNCHW {
		h = TransposeAllDims(h, 0, 3, 1, 2)
	}
	b.mu.Lock()
	out := func() *Node {
		defer b.mu.Unlock()
		return b.model.CallGraph(scope, h.Graph(), map[string]*Node{b.Input: h}, b.Output)[0]
	}()
	switch out.Rank() {
	case 2:
	case 4:
		if b.Layout == onnxNCHW {
			out = TransposeAllDims(out, 0, 2, 3, 1)
		}
		out = GlobalPool(out, cfg.Pool, cfg.GeMP)
	default:
		panic(b.outputRankError(strings.ReplaceAll(fmt.Sprint(out.Shape().Dimensions), " ", ", ")))
	}
	if out.DType() != dt {
		out = ConvertDType(out, dt)
	}
	return out
}

// ONNXNet is [Build]'s backbone "onnx": cfg.Pretrained applied to x under scope (see
// [ONNXBackbone.Apply]); it panics when the file cannot be read.
func ONNXNet(scope *model.Scope, cfg Config, x *Node) *Node {
	b, err := OpenONNXBackbone(cfg)
	if err != nil {
		panic(err)
	}
	return b.Apply(scope, cfg, x)
}

// LoadONNXBackbone creates the variables of backbone "onnx" under scope.At("backbone") (scope as
// passed to [Build]) from cfg.Pretrained; see [ONNXBackbone.LoadVariables]. Errors name
// model.pretrained (or model.onnx_output, model.onnx_layout) and the file.
func LoadONNXBackbone(scope *model.Scope, cfg Config) error {
	b, err := OpenONNXBackbone(cfg)
	if err != nil {
		return err
	}
	return b.LoadVariables(scope.At("backbone"))
}

// validateONNX checks the fields of backbone onnx (without reading the file: [OpenONNXBackbone]
// does, when the run starts) and that its own fields are not set for another backbone; f names a
// field.
func (c *Config) validateONNX(f func(string) string) error {
	if c.Backbone != "onnx" {
		for _, kv := range [][2]string{{"onnx_output", c.ONNXOutput}, {"onnx_layout", c.ONNXLayout}, {"input_norm", c.InputNorm}} {
			if kv[1] != "" {
				return fmt.Errorf("%s: %q: only backbone onnx takes it, not %q", f(kv[0]), kv[1], c.Backbone)
			}
		}
		return nil
	}
	if c.Pretrained == "" {
		return fmt.Errorf("%s: empty: backbone onnx needs the .onnx file of the network", f("pretrained"))
	}
	if strings.HasSuffix(strings.ToLower(c.Pretrained), ".tflite") {
		return fmt.Errorf("%s: %q: backbone onnx needs an .onnx file (a .tflite file is a mobilenet's)", f("pretrained"), c.Pretrained)
	}
	switch c.ONNXLayout {
	case "", onnxNCHW, onnxNHWC:
	default:
		return fmt.Errorf("%s: %q: want nchw, nhwc or empty (detect from the graph input)", f("onnx_layout"), c.ONNXLayout)
	}
	switch c.InputNorm {
	case "", "none", "imagenet":
	default:
		return fmt.Errorf("%s: %q: want none or imagenet", f("input_norm"), c.InputNorm)
	}
	return nil
}
