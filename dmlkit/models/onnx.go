package models

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strings"

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
// float_data or raw_data are read; the graph itself is not interpreted.
func ReadONNXWeights(path string) (map[string]WeightTensor, error) {
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
