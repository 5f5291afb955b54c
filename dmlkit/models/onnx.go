package models

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
	"github.com/gomlx/compute-onnx/support/protos"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"google.golang.org/protobuf/proto"
)

// WeightTensor is a float32 tensor read from a model file, in the file's layout.
type WeightTensor struct {
	Dims []int
	Data []float32
}

// ReadONNXWeights returns the float32 initializers of an ONNX model by name. Names that the
// exporter aliased with Identity nodes (PyTorch de-duplicates equal tensors, e.g. a fresh BN's
// running_var and weight) are resolved to their source. Only float32 initializers with
// float_data or raw_data are read; the graph itself is not interpreted. A file listed in the
// SHA256SUMS beside it must have the listed digest ([checksum.File]).
func ReadONNXWeights(path string) (map[string]WeightTensor, error) {
	if _, err := checksum.File(path); err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	var m protos.ModelProto
	if err := proto.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("models: %s: not an ONNX model: %w", path, err)
	}
	g := m.GetGraph()
	if g == nil {
		return nil, fmt.Errorf("models: %s: ONNX model has no graph", path)
	}
	out := map[string]WeightTensor{}
	for _, in := range g.GetInitializer() {
		if in.GetDataType() != int32(protos.TensorProto_FLOAT) {
			continue
		}
		if in.GetDataLocation() == protos.TensorProto_EXTERNAL {
			return nil, fmt.Errorf("models: %s: initializer %s uses external data, which is not supported", path, in.GetName())
		}
		dims := make([]int, len(in.GetDims()))
		n := 1
		for i, d := range in.GetDims() {
			dims[i] = int(d)
			n *= int(d)
		}
		var data []float32
		if raw := in.GetRawData(); len(raw) > 0 {
			if len(raw) != 4*n {
				return nil, fmt.Errorf("models: %s: initializer %s has %d raw bytes for %d floats", path, in.GetName(), len(raw), n)
			}
			data = make([]float32, n)
			for i := range data {
				data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			}
		} else {
			data = append([]float32(nil), in.GetFloatData()...)
			if len(data) != n {
				return nil, fmt.Errorf("models: %s: initializer %s has %d floats, dims %v", path, in.GetName(), len(data), dims)
			}
		}
		out[in.GetName()] = WeightTensor{Dims: dims, Data: data}
	}
	for _, node := range g.GetNode() {
		if node.GetOpType() == "Identity" && len(node.GetInput()) == 1 && len(node.GetOutput()) == 1 {
			if src, ok := out[node.GetInput()[0]]; ok {
				if _, exists := out[node.GetOutput()[0]]; !exists {
					out[node.GetOutput()[0]] = src
				}
			}
		}
	}
	return out, nil
}

// torchConvToHWIO permutes a PyTorch convolution weight [out, in, kh, kw] to dmlkit's
// [kh, kw, in, out].
func torchConvToHWIO(w WeightTensor) ([]float32, []int) {
	o, in, kh, kw := w.Dims[0], w.Dims[1], w.Dims[2], w.Dims[3]
	out := make([]float32, len(w.Data))
	for a := 0; a < o; a++ {
		for b := 0; b < in; b++ {
			for y := 0; y < kh; y++ {
				for x := 0; x < kw; x++ {
					out[((y*kw+x)*in+b)*o+a] = w.Data[((a*in+b)*kh+y)*kw+x]
				}
			}
		}
	}
	return out, []int{kh, kw, in, o}
}

// setWeight creates the variable path in store with the given value, or overwrites an existing
// variable of the same shape.
func setWeight(store *model.Store, path string, data []float32, dims []int, trainable bool) error {
	t := tensors.FromFlatDataAndDimensions(data, dims...)
	if v := store.GetVariable(path); v != nil {
		if !v.Shape().Equal(t.Shape()) {
			return fmt.Errorf("models: %s: shape %s, weights have %v", path, v.Shape(), dims)
		}
		return v.SetValue(t)
	}
	v, err := store.CreateVariable(path, t)
	if err != nil {
		return err
	}
	v.SetTrainable(trainable)
	return nil
}

// LoadTorchResNet creates the variables of [ResNet] ("18" or "50") under scope (the scope that
// is passed to ResNet, e.g. "/model/backbone") from weights named as torchvision's ResNet
// state_dict (conv1.weight, bn1.{weight,bias,running_mean,running_var},
// layerL.B.{conv,bn}K.*, layerL.B.downsample.{0,1}.*; fc.* is ignored), as an ONNX export with
// do_constant_folding=False keeps them. Convolution weights are permuted from [out, in, kh, kw]
// to [kh, kw, in, out]. The weights become trainable variables (running statistics are not
// trainable); call it before the first graph is built. Every expected weight must be present.
func LoadTorchResNet(scope *model.Scope, depth string, w map[string]WeightTensor) error {
	var blocks []int
	convs := 2
	switch depth {
	case "18":
		blocks = []int{2, 2, 2, 2}
	case "50":
		blocks, convs = []int{3, 4, 6, 3}, 3
	default:
		return fmt.Errorf("models: ResNet depth %q: want 18 or 50", depth)
	}
	base := strings.TrimSuffix(scope.Scope(), "/")
	store := scope.Store()
	set := func(path string, data []float32, dims []int, trainable bool) error {
		return setWeight(store, path, data, dims, trainable)
	}
	get := func(name string, rank int) (WeightTensor, error) {
		t, ok := w[name]
		if !ok {
			return t, fmt.Errorf("models: ResNet-%s weights lack %q", depth, name)
		}
		if len(t.Dims) != rank {
			return t, fmt.Errorf("models: ResNet-%s weight %q has dims %v, want rank %d", depth, name, t.Dims, rank)
		}
		return t, nil
	}
	conv := func(torch, ours string) error {
		t, err := get(torch+".weight", 4)
		if err != nil {
			return err
		}
		d, dims := torchConvToHWIO(t)
		return set(base+"/"+ours+"/weights", d, dims, true)
	}
	bn := func(torch, ours string) error {
		for _, p := range []struct {
			t, o      string
			trainable bool
		}{{"weight", "gamma", true}, {"bias", "beta", true}, {"running_mean", "mean", false}, {"running_var", "var", false}} {
			t, err := get(torch+"."+p.t, 1)
			if err != nil {
				return err
			}
			if err := set(base+"/"+ours+"/"+p.o, append([]float32(nil), t.Data...), t.Dims, p.trainable); err != nil {
				return err
			}
		}
		return nil
	}
	if err := conv("conv1", "conv1"); err != nil {
		return err
	}
	if err := bn("bn1", "bn1"); err != nil {
		return err
	}
	for s, n := range blocks {
		for b := 0; b < n; b++ {
			tp := fmt.Sprintf("layer%d.%d", s+1, b)
			op := fmt.Sprintf("layer%d/%d", s+1, b)
			for k := 1; k <= convs; k++ {
				if err := conv(fmt.Sprintf("%s.conv%d", tp, k), fmt.Sprintf("%s/conv%d", op, k)); err != nil {
					return err
				}
				if err := bn(fmt.Sprintf("%s.bn%d", tp, k), fmt.Sprintf("%s/bn%d", op, k)); err != nil {
					return err
				}
			}
			if _, ok := w[tp+".downsample.0.weight"]; ok {
				if err := conv(tp+".downsample.0", op+"/downsample"); err != nil {
					return err
				}
				if err := bn(tp+".downsample.1", op+"/downsample_bn"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// vitLayout names a ViT's weights in one PyTorch implementation.
type vitLayout struct {
	name                          string
	patch, cls, pos, layer, final string
	ln1, qkvW, qkvB, out, ln2     string
	fc1, fc2                      []string // alternatives, first match wins
}

var vitLayouts = []vitLayout{
	{name: "torchvision", patch: "conv_proj", cls: "class_token", pos: "encoder.pos_embedding",
		layer: "encoder.layers.encoder_layer_%d.", final: "encoder.ln",
		ln1: "ln_1", qkvW: "self_attention.in_proj_weight", qkvB: "self_attention.in_proj_bias",
		out: "self_attention.out_proj", ln2: "ln_2",
		fc1: []string{"mlp.0", "mlp.linear_1"}, fc2: []string{"mlp.3", "mlp.linear_2"}},
	{name: "timm", patch: "patch_embed.proj", cls: "cls_token", pos: "pos_embed",
		layer: "blocks.%d.", final: "norm",
		ln1: "norm1", qkvW: "attn.qkv.weight", qkvB: "attn.qkv.bias", out: "attn.proj", ln2: "norm2",
		fc1: []string{"mlp.fc1"}, fc2: []string{"mlp.fc2"}},
}

// LoadTorchViT creates the variables of [ViT] with architecture spec under scope (the scope
// passed to ViT, e.g. "/model/backbone") from PyTorch weights named either as torchvision's
// VisionTransformer state_dict (conv_proj.*, class_token, encoder.pos_embedding,
// encoder.layers.encoder_layer_i.{ln_1, self_attention.in_proj_*, self_attention.out_proj,
// ln_2, mlp.0, mlp.3 (older: mlp.linear_1/2)}, encoder.ln) or as timm's VisionTransformer
// (patch_embed.proj.*, cls_token, pos_embed, blocks.i.{norm1, attn.qkv, attn.proj, norm2,
// mlp.fc1, mlp.fc2}, norm); heads/head.* are ignored. An ONNX export with
// do_constant_folding=False keeps these names.
//
// Linear weights [out, in] are transposed to [in, out]; the patch convolution [D, C, P, P]
// becomes [P, P, C, D]; class token [1, 1, D] → [D]; position embedding [1, 1 + G², D] →
// [1 + G², D], whose grid G×G may differ from spec.ImageSize/P (ViT then resizes it for its
// input). Every expected weight must be present with the spec's dimensions, and the file must
// have exactly spec.Layers blocks; distilled DeiT (dist_token) and LayerScale (ls1/ls2) models are
// rejected. All weights become trainable variables; call it before the first graph is built.
func LoadTorchViT(scope *model.Scope, spec ViTSpec, w map[string]WeightTensor) error {
	var lay *vitLayout
	for i := range vitLayouts {
		if _, ok := w[vitLayouts[i].patch+".weight"]; ok {
			lay = &vitLayouts[i]
			break
		}
	}
	if lay == nil {
		return fmt.Errorf("models: no ViT weights found (neither conv_proj.weight (torchvision) nor patch_embed.proj.weight (timm)); export with do_constant_folding=False")
	}
	if _, ok := w["dist_token"]; ok {
		return fmt.Errorf("models: distilled DeiT weights (dist_token) are not supported")
	}
	if _, ok := w["blocks.0.ls1.gamma"]; ok {
		return fmt.Errorf("models: ViT weights with LayerScale (blocks.*.ls1) are not supported")
	}
	base := strings.TrimSuffix(scope.Scope(), "/")
	store := scope.Store()
	d, p := spec.Dim, spec.Patch
	get := func(name string, dims ...int) (WeightTensor, error) {
		t, ok := w[name]
		if !ok {
			return t, fmt.Errorf("models: %s ViT weights lack %q", lay.name, name)
		}
		match := len(t.Dims) == len(dims)
		for i := 0; match && i < len(dims); i++ {
			match = dims[i] < 0 || t.Dims[i] == dims[i]
		}
		if !match {
			return t, fmt.Errorf("models: %s ViT weight %q has dims %v, want %v (−1: any)", lay.name, name, t.Dims, dims)
		}
		return t, nil
	}
	// linear loads torch Linear name.{weight [out, in], bias [out]} as ours/{weights [in, out], biases}.
	linear := func(name, ours string, in, out int, wName, bName string) error {
		if wName == "" {
			wName, bName = name+".weight", name+".bias"
		}
		wt, err := get(wName, out, in)
		if err != nil {
			return err
		}
		bt, err := get(bName, out)
		if err != nil {
			return err
		}
		tr := make([]float32, in*out)
		for o := 0; o < out; o++ {
			for i := 0; i < in; i++ {
				tr[i*out+o] = wt.Data[o*in+i]
			}
		}
		if err := setWeight(store, base+"/"+ours+"/weights", tr, []int{in, out}, true); err != nil {
			return err
		}
		return setWeight(store, base+"/"+ours+"/biases", append([]float32(nil), bt.Data...), []int{out}, true)
	}
	norm := func(name, ours string) error {
		for _, q := range [][2]string{{"weight", "gamma"}, {"bias", "beta"}} {
			t, err := get(name+"."+q[0], d)
			if err != nil {
				return err
			}
			if err := setWeight(store, base+"/"+ours+"/"+q[1], append([]float32(nil), t.Data...), []int{d}, true); err != nil {
				return err
			}
		}
		return nil
	}
	first := func(prefix string, names []string) string {
		for _, n := range names {
			if _, ok := w[prefix+n+".weight"]; ok {
				return prefix + n
			}
		}
		return prefix + names[0]
	}

	pw, err := get(lay.patch+".weight", d, -1, p, p)
	if err != nil {
		return err
	}
	hwio, dims := torchConvToHWIO(pw)
	if err := setWeight(store, base+"/patch_embed/weights", hwio, dims, true); err != nil {
		return err
	}
	pb, err := get(lay.patch+".bias", d)
	if err != nil {
		return err
	}
	if err := setWeight(store, base+"/patch_embed/biases", append([]float32(nil), pb.Data...), []int{d}, true); err != nil {
		return err
	}
	ct, err := get(lay.cls, 1, 1, d)
	if err != nil {
		return err
	}
	if err := setWeight(store, base+"/class_token", append([]float32(nil), ct.Data...), []int{d}, true); err != nil {
		return err
	}
	pe, err := get(lay.pos, 1, -1, d)
	if err != nil {
		return err
	}
	if g := int(math.Round(math.Sqrt(float64(pe.Dims[1] - 1)))); g*g != pe.Dims[1]-1 {
		return fmt.Errorf("models: %s ViT weight %q has %d patch positions, not a square grid", lay.name, lay.pos, pe.Dims[1]-1)
	}
	if err := setWeight(store, base+"/pos_embedding", append([]float32(nil), pe.Data...), pe.Dims[1:], true); err != nil {
		return err
	}
	for i := 0; i < spec.Layers; i++ {
		pre := fmt.Sprintf(lay.layer, i)
		ours := fmt.Sprintf("layer_%d/", i)
		if err := norm(pre+lay.ln1, ours+"ln_1"); err != nil {
			return err
		}
		if err := linear("", ours+"attn/qkv", d, 3*d, pre+lay.qkvW, pre+lay.qkvB); err != nil {
			return err
		}
		if err := linear(pre+lay.out, ours+"attn/out", d, d, "", ""); err != nil {
			return err
		}
		if err := norm(pre+lay.ln2, ours+"ln_2"); err != nil {
			return err
		}
		if err := linear(first(pre, lay.fc1), ours+"mlp/fc1", d, spec.MLP, "", ""); err != nil {
			return err
		}
		if err := linear(first(pre, lay.fc2), ours+"mlp/fc2", spec.MLP, d, "", ""); err != nil {
			return err
		}
	}
	if _, ok := w[fmt.Sprintf(lay.layer, spec.Layers)+lay.ln1+".weight"]; ok {
		return fmt.Errorf("models: %s ViT weights have more than the %d blocks of the configured backbone", lay.name, spec.Layers)
	}
	return norm(lay.final, "ln")
}
