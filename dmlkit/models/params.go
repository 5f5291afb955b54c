// Package models holds dmlkit's embedding networks as GoMLX graph functions: a small im2col CNN
// for 28×28 / 64×64 grey images, ResNet-18/50, the precomputed-feature identity backbone, and the
// embedding heads of the reproduced papers (linear, MLP, GeM pooling, LayerNorm, L2
// normalisation, a projector used only by the loss, the IDML dual head).
//
// Parameters are created deterministically: the initial value of every variable is drawn in Go
// from a PCG stream seeded by (init seed, variable path), so the same seed gives the same
// network on any backend and in any creation order. The seed is the store parameter
// [InitSeedParam] (set it with [SetInitSeed]).
//
// Images enter as [B, H, W, C] float (NHWC, values in [0, 1]); features as [B, F].
//
// # Backbones
//
// [Config].Backbone selects: "cnn" ([SmallCNN]), "resnet18" / "resnet50" ([ResNet],
// torchvision layout, pooled map [B, 512] / [B, 2048]), "vit_b16" (ViT-B/16, [B, 768]),
// "vit_s16" (DeiT-S = ViT-S/16, [B, 384]), "vit_tiny" (a test-sized ViT for 32×32 images,
// [B, 48]) — see [ViT] —, "mobilenet_v2" / "mobilenet_v1" (ImageNet MobileNets imported from
// TFLite files, [B, 1280] / [B, 1024]: see [MobileNet] and [TFLiteModel]), "features"
// (precomputed [B, F] features) and "onnx" (a user's ONNX network, e.g. a torchvision ResNet-50
// without its classifier, imported with onnx-gomlx: [ONNXBackbone]).
//
// Pretrained weights come from ONNX files ([Config].Pretrained, read by [ReadONNXWeights] and
// [LoadTorchResNet] / [LoadTorchViT]); dmlkit never downloads them. On a machine with internet,
// PyTorch and torchvision ≥ 0.13 (timm for DeiT-S), export with the parameter names kept
// (do_constant_folding=False; on PyTorch ≥ 2.5 also pass dynamo=False):
//
//	python3 -c "import torch, torchvision; m = torchvision.models.vit_b_16(weights='IMAGENET1K_V1').eval(); torch.onnx.export(m, torch.zeros(1, 3, 224, 224), 'vit_b16.onnx', do_constant_folding=False)"
//	python3 -c "import torch, timm; m = timm.create_model('deit_small_patch16_224', pretrained=True).eval(); torch.onnx.export(m, torch.zeros(1, 3, 224, 224), 'deit_s16.onnx', do_constant_folding=False)"
//	python3 -c "import torch, torchvision; m = torchvision.models.resnet50(weights='IMAGENET1K_V1').eval(); torch.onnx.export(m, torch.zeros(1, 3, 224, 224), 'resnet50.onnx', do_constant_folding=False)"
//
// The ONNX networks use their input as given: these ImageNet weights expect RGB normalised with
// mean (0.485, 0.456, 0.406) and std (0.229, 0.224, 0.225). The TFLite MobileNets instead take
// [0, 1] pixels, like the small CNN, and apply their file's own input quantization inside
// ([TFLiteModel.InputFromPixels]).
//
// The ImageNet MobileNets in ../shared/weights/coral (Apache-2.0, quantized) are imported from
// their .tflite files ([ReadTFLite], [LoadTFLite]): every weight is dequantized and the graph is
// run in float32 as trainable variables. `dmlkit classify` checks a file on images. For
// model.trainable_tail a MobileNet splits at a block boundary into a fixed prefix, whose output
// map the trainer caches, and a trainable tail ([TFLiteModel.BlockStarts], [BuildPrefix],
// [MobileNetTail], [Config.TailOnly]).
package models

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// InitSeedParam is the store parameter holding the int64 initialisation seed.
const InitSeedParam = "dmlkit_init_seed"

// SetInitSeed sets the seed from which all model parameters of store are initialised.
func SetInitSeed(store *model.Store, seed int64) { store.SetParam("/"+InitSeedParam, seed) }

// Init fills a parameter of the given dims; fanIn is the product of all dims but the last.
type Init func(r *rand.Rand, dims []int, out []float32)

// HeNormal is Kaiming-normal initialisation for ReLU networks: N(0, 2/fan_in), fan_in = product
// of all dimensions but the last (the output dimension).
func HeNormal(r *rand.Rand, dims []int, out []float32) {
	fanIn := 1
	for _, d := range dims[:len(dims)-1] {
		fanIn *= d
	}
	std := math.Sqrt(2 / float64(max(fanIn, 1)))
	for i := range out {
		out[i] = float32(r.NormFloat64() * std)
	}
}

// XavierUniform is Glorot-uniform: U(−a, a), a = √(6/(fan_in+fan_out)) (PyTorch's nn.Linear
// default is close to this for square layers).
func XavierUniform(r *rand.Rand, dims []int, out []float32) {
	fanIn := 1
	for _, d := range dims[:len(dims)-1] {
		fanIn *= d
	}
	a := math.Sqrt(6 / float64(fanIn+dims[len(dims)-1]))
	for i := range out {
		out[i] = float32((2*r.Float64() - 1) * a)
	}
}

// Fill returns an initialiser filling every entry with c.
func Fill(c float32) Init {
	return func(_ *rand.Rand, _ []int, out []float32) {
		for i := range out {
			out[i] = c
		}
	}
}

// SourceParam is the store parameter (a string) saying where the variables that exist before the
// model is built were taken from, e.g. "model.init_from runs/a"; a [ShapeError] names it.
const SourceParam = "dmlkit_variables_from"

// ShapeError is the panic value of [Param] when the variable already exists (taken from a stored
// run or pretrained weights before the graph was built) with another shape than the model needs.
type ShapeError struct {
	Path       string
	Have, Want []int
	Source     string // where the variable came from (the store's SourceParam), "" when unknown
}

func (e *ShapeError) Error() string {
	from := ""
	if e.Source != "" {
		from = " from " + e.Source
	}
	return fmt.Sprintf("variable %s%s has shape %v, the model needs %v", e.Path, from, e.Have, e.Want)
}

// Param returns the float32 variable name in scope, creating it with init if it does not exist.
// Its initial value depends only on the store's init seed and the variable's full path. A
// variable that exists with other dimensions panics with a *[ShapeError].
func Param(scope *model.Scope, name string, dims []int, init Init) *model.Variable {
	if v := scope.GetVariable(name); v != nil {
		if have := v.Shape().Dimensions; !slices.Equal(have, dims) {
			src, _ := scope.GetParam(SourceParam)
			s, _ := src.(string)
			panic(&ShapeError{Path: scope.Scope() + "/" + name, Have: slices.Clone(have), Want: slices.Clone(dims), Source: s})
		}
		return v
	}
	seed, _ := scope.GetParam(InitSeedParam)
	s64, _ := seed.(int64)
	path := scope.Scope() + "/" + name
	h := fnv.New64a()
	fmt.Fprint(h, path)
	r := rand.New(rand.NewPCG(uint64(s64), h.Sum64()))
	n := 1
	for _, d := range dims {
		n *= d
	}
	vals := make([]float32, n)
	init(r, dims, vals)
	t := tensors.FromFlatDataAndDimensions(vals, dims...)
	v, err := scope.CreateVariable(name, t)
	if err != nil {
		panic(err)
	}
	if v.DType() != dtypes.Float32 {
		panic(fmt.Sprintf("models: variable %s has dtype %s, want float32", path, v.DType()))
	}
	return v
}

// State returns a non-trainable float32 variable (running statistics), created with init.
func State(scope *model.Scope, name string, dims []int, init Init) *model.Variable {
	v := Param(scope, name, dims, init)
	v.SetTrainable(false)
	return v
}
