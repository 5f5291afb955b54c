package models

import (
	"fmt"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/pca"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Config describes an embedding network: a backbone that turns an input into a feature vector
// and a head that turns features into the embedding.
type Config struct {
	// Backbone: "cnn" (the small CNN), "resnet18", "resnet50", "vit_b16", "vit_s16", "vit_tiny"
	// ([ViT]; Pool does not apply: the class token is the feature), "mobilenet_v2" /
	// "mobilenet_v1" (a TFLite MobileNet read from Pretrained, [MobileNet]: the global average of
	// its last feature map, [B, 1280] / [B, 1024]; Pool does not apply), "features" (the input
	// already is a [B, F] feature vector: precomputed-feature mode, only the head is trained) or
	// "onnx" (the network of the .onnx file Pretrained, [ONNXBackbone]).
	Backbone string `yaml:"backbone" doc:"cnn, resnet18, resnet50, vit_b16, vit_s16, vit_tiny, mobilenet_v2, mobilenet_v1, features or onnx"`
	// Channels are the small CNN's block widths; default [32, 64, 128].
	Channels []int `yaml:"channels" doc:"small-CNN block widths"`
	// Norm is the backbone normalisation: "bn" (default) or "none".
	Norm string `yaml:"norm" doc:"bn or none"`
	// FrozenBN: BatchNorm uses running statistics in training too (the papers' setting).
	FrozenBN bool `yaml:"frozen_bn" doc:"BatchNorm uses running statistics also in training"`
	// Pool: global pooling of the backbone map: avg (default), max, avgmax, gem.
	Pool string `yaml:"pool" doc:"avg, max, avgmax or gem"`
	// GeMP is GeM's exponent p (default 3).
	GeMP float64 `yaml:"gem_p" doc:"GeM exponent p"`
	// LayerNorm normalises the pooled features before the head (RS@k: GeM → LayerNorm → FC).
	LayerNorm bool `yaml:"layer_norm" doc:"LayerNorm on pooled features before the head"`
	// Head: "linear" (default), "mlp" (Dense → ReLU → Dense), "identity" (the features f [B, F]
	// themselves: the embedding is F-wide, Dim does not apply) or "pca" (a fixed, untrained
	// projection onto the training features' top Dim principal components: emb = (f − μ)·P,
	// μ [F] the training features' mean and P [F, Dim] their leading eigenvectors of the sample
	// covariance, as non-trainable variables head/pca_mean and head/pca_components that the
	// trainer fits on the training split before the first step, [SetPCAHead]; it needs fixed
	// features — model.freeze_backbone or backbone features — and Dim ≤ F). With L2 both the
	// identity and the pca embedding are then normalised to unit length. The last two make the
	// zero-shot floor of a frozen backbone (with epochs: 0, no optimiser step).
	Head string `yaml:"head" doc:"linear, mlp, identity (the features as they come) or pca (fixed projection on the training features' top dim principal components; needs fixed features)"`
	// Hidden is the MLP head's hidden width (default 2·Dim).
	Hidden int `yaml:"hidden" doc:"MLP hidden width"`
	// Dim is the embedding dimension (default 128).
	Dim int `yaml:"dim" doc:"embedding dimension"`
	// L2 normalises the embedding (and the uncertainty embedding) to unit length.
	L2 bool `yaml:"l2_normalize" doc:"L2-normalise the embedding"`
	// Projector lists the widths of an MLP applied after the embedding for the loss only; it is
	// discarded at evaluation (seed 004's 512→2048 projector). Empty: none.
	Projector []int `yaml:"projector" doc:"loss-only projector widths (discarded at eval)"`
	// Pretrained is the backbone's weights file: for resnet and vit an ONNX file with
	// torchvision-named ResNet weights ([LoadTorchResNet]) or torchvision/timm-named ViT weights
	// ([LoadTorchViT]), optional; for mobilenet_v2 / mobilenet_v1 a .tflite file (required: it
	// holds the architecture too), e.g. ../shared/weights/coral/mobilenet_v2_1.0_224_quant.tflite
	// or mobilenet_v1_1.0_224_quant_embedding_extractor.tflite ([TFLiteModel]); for onnx the .onnx
	// file of the network (required: it holds the architecture too, [ONNXBackbone]). The weights
	// stay trainable.
	Pretrained string `yaml:"pretrained" doc:"backbone weights: ONNX file (resnet, vit: torchvision/timm names; onnx: the network, required) or .tflite file (mobilenet_v2, mobilenet_v1; required)"`
	// InitFrom initialises the backbone from a stored dmlkit run: a run directory (its newest
	// checkpoint) or a checkpoint file (checkpoints/ckpt-*.gob). Only the variables under the
	// model's backbone scope are taken (BatchNorm statistics included); the head, the loss's
	// variables (proxies), the optimiser state and the RNG state are initialised as in a fresh run.
	// The weights stay trainable. The backbone configuration must be the stored run's (variables
	// are matched by path). Empty (the default): no initialisation from a run. Exclusive with
	// Pretrained, except for mobilenet backbones, whose .tflite file gives the architecture (its
	// weights are then replaced by the run's); applied only when a run starts, not on resume (the
	// run's checkpoint wins).
	InitFrom string `yaml:"init_from" doc:"run directory or checkpoint file whose backbone variables initialise this model"`
	// InitHead also takes the rest of the model's variables from InitFrom (LayerNorm, head, IDML
	// uncertainty head, projector). Default false: a freshly initialised head.
	InitHead bool `yaml:"init_head" doc:"with init_from, also take the head (and layer_norm, projector) from the stored run"`
	// DualHead adds IDML's uncertainty head: a second head of width Dim on the same features
	// (seed 002). The uncertainty embedding is not normalised (the idml loss normalises where
	// its metric does); the loss sees concat(semantic, uncertainty) [B, 2·Dim], evaluation the
	// semantic embedding only.
	DualHead bool `yaml:"dual_head" doc:"IDML semantic + uncertainty heads"`
	// UncDim is the width of the uncertainty head with DualHead (0: Dim, the paper's 512 + 512);
	// seed 002 Table 6 varies it. The loss then sees [B, Dim + UncDim] and the idml loss must be
	// told the split (loss.set.unc_dim, checked by the trainer's validation).
	UncDim int `yaml:"unc_dim" doc:"IDML uncertainty head width (0 = dim)"`
	// InputSize resizes every input image to InputSize × InputSize inside the graph before the
	// backbone (bilinear, half-pixel centres, no antialiasing; GoMLX's Interpolate). 0 (the
	// default): images are used at the size they come in. It is meant for enlarging small images
	// to a pretrained backbone's scale (Omniglot's 28 px to 96 px for MobileNetV2); to shrink
	// large images, load them at the wanted size instead, since bilinear sampling without
	// antialiasing aliases. Besides 0 it must lie in [MinInputSize, MaxInputSize] (16 … 1024)
	// and suit the backbone: at least 32 for resnet and mobilenet backbones (they downsample by
	// 32), a multiple of the patch for a ViT; with 0 the images' own side must ([CheckImages]).
	InputSize int `yaml:"input_size" doc:"resize input images to N×N inside the model before the backbone (0: as they come; else 16 … 1024, ≥ 32 for resnet/mobilenet, a multiple of the patch for vit)"`
	// FreezeBackbone trains everything but the backbone: its pooled features (Output.Features)
	// are computed once per distinct input image, in inference mode (BatchNorm running
	// statistics), and cached on disk; the head (and layer_norm, projector, IDML head, the
	// loss's variables) trains on them: the "frozen pretrained backbone, trained embedding head"
	// regime. The trainer's feature cache is keyed by each image's pixels and the backbone's
	// configuration and weights, so every seed, class split and label-noise draw reuses it.
	// Inputs are fixed per image: mixup then mixes features, not pixels.
	FreezeBackbone bool `yaml:"freeze_backbone" doc:"train the head on cached features of a fixed backbone"`
	// TrainableTail fine-tunes only the last TrainableTail blocks of a mobilenet_v2 /
	// mobilenet_v1 backbone (0, the default: off; exclusive with FreezeBackbone, which trains
	// none): the backbone is cut at the op where those blocks begin ([TFLiteModel.BlockStarts]
	// says how a block boundary is found in the file; MobileNetV2 has 16 blocks to choose from,
	// V1 13). Everything before the cut runs once per distinct input image, in inference mode,
	// and its output map (e.g. [3, 3, 160] for MobileNetV2 at 96 px with 1–3 blocks) is cached on
	// disk as FreezeBackbone's features are (keyed by image, backbone and cut); the tail — the
	// last blocks, for V2 also the final 1×1 convolution to 1280 channels, and the global
	// average — and the head train on it. The tail's variables keep the full network's names,
	// "<model scope>/backbone/<NNN>_<layer>/{weights,biases}" ([TFLiteModel]; in a run's store
	// "/model/backbone/058_MobilenetV2_expanded_conv_16_expand/weights"), so the optimiser's
	// groups reach them with match "/backbone/" (e.g. lr_mul 0.1) and a run's checkpoint
	// initialises a full network (model.init_from). Inputs are fixed per image, as with
	// FreezeBackbone: augmentation is refused, mixup mixes cached maps.
	TrainableTail int `yaml:"trainable_tail" doc:"mobilenet: fine-tune only the last N blocks (the part before them is cached like freeze_backbone's features); 0 = off"`
	// TailInput is set by [Config.TailOnly], never by a configuration file: the network's inputs
	// are the cached cut maps [B, H', W', C'] of a TrainableTail backbone, not images.
	TailInput bool `yaml:"-"`

	// Backbone "onnx" (bring your own backbone, [ONNXBackbone]): the network of the .onnx file
	// Pretrained, e.g. a torchvision ResNet-50 exported with its classifier removed, converted by
	// onnx-gomlx; its initializers are trainable variables under backbone/ONNX/ (BatchNorm
	// statistics frozen). The three fields below apply to it only.
	//
	// ONNXOutput names the node output taken as the features (default: the graph's one output);
	// a [B, C, H, W] map is pooled with Pool.
	ONNXOutput string `yaml:"onnx_output" doc:"backbone onnx: node output used as the features (default: the graph output)"`
	// ONNXLayout is the network's input layout, nchw (PyTorch) or nhwc; empty: detected from the
	// graph input's fixed channel axis (1 or 3 channels at axis 1 or 3).
	ONNXLayout string `yaml:"onnx_layout" doc:"backbone onnx: input layout nchw or nhwc (default: detected)"`
	// InputNorm normalises the [0, 1] images before backbone onnx: "none" (default: fed as the
	// data gives them; the full-scale image datasets already normalise with ImageNet's
	// statistics, data.options.mean/std) or "imagenet" ((x − mean)/std, torchvision's constants).
	InputNorm string `yaml:"input_norm" doc:"backbone onnx: none or imagenet (per-channel (x − mean)/std in the graph)"`
}

// HeadOnly is the configuration of the network a frozen backbone leaves to train: the
// "features" backbone (inputs are the cached backbone features) with c's head, layer norm,
// projector and IDML head; c must not itself be a features backbone.
func (c Config) HeadOnly() Config {
	h := c
	h.Backbone, h.Channels, h.Pretrained, h.InitFrom, h.InputSize, h.FreezeBackbone = "features", nil, "", "", 0, false
	h.FrozenBN, h.Norm, h.Pool, h.GeMP = false, "", "", 0
	h.ONNXOutput, h.ONNXLayout, h.InputNorm = "", "", ""
	return h
}

// TailOnly is the configuration of the network a model.trainable_tail run trains on the cached
// cut maps: c with TailInput set (Build runs the backbone's last TrainableTail blocks on [B, H',
// W', C'] inputs, [TFLiteModel.TailFeatures]), no resize (the maps were computed from resized
// images) and FreezeBackbone off; Pretrained and InitFrom stay (the tail's weights come from
// them).
func (c Config) TailOnly() Config {
	t := c
	t.TailInput, t.InputSize, t.FreezeBackbone = true, 0, false
	return t
}

// UncWidth is the width of the IDML uncertainty head: UncDim, or Dim when UncDim is 0.
func (c Config) UncWidth() int {
	if c.UncDim > 0 {
		return c.UncDim
	}
	return c.Dim
}

// Default returns the small-CNN configuration used for Omniglot/MNIST: channels 32-64-128, BN,
// average pooling, linear head to 128, L2-normalised.
func Default() Config {
	return Config{Backbone: "cnn", Channels: []int{32, 64, 128}, Norm: "bn", Pool: "avg", Head: "linear", Dim: 128, L2: true, GeMP: 3}
}

// Validate checks the configuration; errors name the field (prefix is the field path so far,
// e.g. "model").
func (c *Config) Validate(prefix string) error {
	f := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	switch c.Backbone {
	case "cnn", "resnet18", "resnet50", "features", "mobilenet_v2", "mobilenet_v1", "onnx":
	default:
		if _, ok := ViTSpecFor(c.Backbone); !ok {
			return fmt.Errorf("%s: %q: want cnn, resnet18, resnet50, vit_b16, vit_s16, vit_tiny, mobilenet_v2, mobilenet_v1, features or onnx", f("backbone"), c.Backbone)
		}
	}
	if err := c.validateONNX(f); err != nil {
		return err
	}
	_, mobilenet := MobileNetFeatureDims[c.Backbone]
	tflite := strings.HasSuffix(strings.ToLower(c.Pretrained), ".tflite")
	if mobilenet && c.Pretrained == "" {
		return fmt.Errorf("%s: backbone %s needs a .tflite file (it holds the architecture and the weights), e.g. ../shared/weights/coral/mobilenet_v2_1.0_224_quant.tflite", f("pretrained"), c.Backbone)
	}
	if mobilenet && !tflite {
		return fmt.Errorf("%s: %q: backbone %s needs a .tflite file", f("pretrained"), c.Pretrained, c.Backbone)
	}
	if !mobilenet && tflite {
		return fmt.Errorf("%s: %q: a .tflite file initialises mobilenet_v2 or mobilenet_v1, not %q (resnet and vit take ONNX)", f("pretrained"), c.Pretrained, c.Backbone)
	}
	if c.Backbone == "cnn" && len(c.Channels) == 0 {
		return fmt.Errorf("%s: the small CNN needs at least one block width", f("channels"))
	}
	for i, ch := range c.Channels {
		if ch <= 0 {
			return fmt.Errorf("%s[%d]: %d: want > 0", f("channels"), i, ch)
		}
	}
	switch c.Norm {
	case "", "bn", "none":
	default:
		return fmt.Errorf("%s: %q: want bn or none", f("norm"), c.Norm)
	}
	switch c.Pool {
	case "", "avg", "max", "avgmax", "gem":
	default:
		return fmt.Errorf("%s: %q: want avg, max, avgmax or gem", f("pool"), c.Pool)
	}
	switch c.Head {
	case "", "linear", "mlp", "identity":
	case "pca":
		if !c.FreezeBackbone && c.Backbone != "features" {
			return fmt.Errorf("%s: pca is fitted on fixed features: it needs %s: true or backbone features (backbone is %q)", f("head"), f("freeze_backbone"), c.Backbone)
		}
		if c.LayerNorm {
			return fmt.Errorf("%s: pca is fitted on the backbone's features, not on layer-normalised ones: set %s: false", f("head"), f("layer_norm"))
		}
	default:
		return fmt.Errorf("%s: %q: want linear, mlp, identity or pca", f("head"), c.Head)
	}
	if c.Head != "identity" && c.Dim <= 0 {
		return fmt.Errorf("%s: %d: want > 0", f("dim"), c.Dim)
	}
	if c.Hidden < 0 {
		return fmt.Errorf("%s: %d: want ≥ 0", f("hidden"), c.Hidden)
	}
	for i, p := range c.Projector {
		if p <= 0 {
			return fmt.Errorf("%s[%d]: %d: want > 0", f("projector"), i, p)
		}
	}
	onnx := c.Backbone == "onnx" // its file, like a mobilenet's, holds the architecture
	if _, vit := ViTSpecFor(c.Backbone); c.Pretrained != "" && c.Backbone != "resnet18" && c.Backbone != "resnet50" && !vit && !mobilenet && !onnx {
		return fmt.Errorf("%s: pretrained weights are supported for resnet, vit, mobilenet and onnx backbones, not %q", f("pretrained"), c.Backbone)
	}
	if c.InitFrom != "" && c.Pretrained != "" && !mobilenet && !onnx {
		return fmt.Errorf("%s: %q and %s: %q are exclusive: the backbone is initialised from one of them", f("init_from"), c.InitFrom, f("pretrained"), c.Pretrained)
	}
	if c.InitFrom != "" && c.Backbone == "features" {
		return fmt.Errorf("%s: backbone features has no backbone variables to initialise", f("init_from"))
	}
	if c.InitHead && c.InitFrom == "" {
		return fmt.Errorf("%s: needs %s (the run to take the head from)", f("init_head"), f("init_from"))
	}
	if c.UncDim < 0 || (c.UncDim > 0 && !c.DualHead) {
		return fmt.Errorf("%s: %d: want ≥ 0, and only with %s", f("unc_dim"), c.UncDim, f("dual_head"))
	}
	if c.DualHead && len(c.Projector) > 0 {
		return fmt.Errorf("%s: the IDML dual head cannot be combined with a projector", f("dual_head"))
	}
	if c.DualHead && (c.Head == "identity" || c.Head == "pca") {
		return fmt.Errorf("%s: the IDML dual head needs a linear or mlp head", f("dual_head"))
	}
	if err := c.validateInputSize(f); err != nil {
		return err
	}
	if c.FreezeBackbone && c.Backbone == "features" {
		return fmt.Errorf("%s: backbone features has no backbone to freeze (it already trains a head on given features)", f("freeze_backbone"))
	}
	if c.TrainableTail < 0 || (c.TrainableTail > 0 && !mobilenet) {
		return fmt.Errorf("%s: %d: want ≥ 0, and only with backbone mobilenet_v2 or mobilenet_v1 (got %q)", f("trainable_tail"), c.TrainableTail, c.Backbone)
	}
	if c.TrainableTail > 0 && c.FreezeBackbone {
		return fmt.Errorf("%s: %d and %s: true are exclusive: freeze_backbone trains no backbone block, trainable_tail the last %d", f("trainable_tail"), c.TrainableTail, f("freeze_backbone"), c.TrainableTail)
	}
	if c.FreezeBackbone && c.InitHead {
		return fmt.Errorf("%s: a frozen backbone's head starts fresh; %s is not supported with it", f("freeze_backbone"), f("init_head"))
	}
	return nil
}

// Output is what the network produces for a batch.
type Output struct {
	// Emb is the embedding used for retrieval [B, D].
	Emb *Node
	// LossEmb is what the loss sees: the projector output when a projector is configured,
	// concat(Emb, Unc) [B, D + UncWidth()] with DualHead (the idml loss layout), otherwise Emb.
	LossEmb *Node
	// Unc is IDML's raw uncertainty embedding [B, UncWidth()] (nil without DualHead).
	Unc *Node
	// Features are the pooled backbone features [B, F] (before any LayerNorm).
	Features *Node
}

// Build applies the network to x ([B, H, W, C] images for image backbones, [B, F] for
// "features") under scope (variables "backbone/…", "head/…", "projector/…", "unc/…").
//
// The network runs in x's dtype: float32, or bfloat16 / float16 for mixed precision (variables
// stay float32 and are converted where used; normalisations and softmax run in float32). The
// embeddings (Emb, Unc, LossEmb) of half-precision inputs are float32 — the head's output is converted before
// the L2 normalisation and the projector — so losses and metrics see float32; Features keep
// x's dtype.
func Build(scope *model.Scope, cfg Config, x *Node, mode Mode) Output {
	var f *Node
	if cfg.InputSize > 0 && cfg.Backbone != "features" && !cfg.TailInput {
		x = ResizeImages(x, cfg.InputSize)
	}
	switch cfg.Backbone {
	case "features":
		if x.Rank() != 2 {
			panic(fmt.Sprintf("models: backbone features needs [B, F] inputs, got %s", x.Shape()))
		}
		f = x
	case "cnn":
		f = SmallCNN(scope.At("backbone"), cfg, x, mode)
	case "resnet18", "resnet50":
		f = ResNet(scope.At("backbone"), strings.TrimPrefix(cfg.Backbone, "resnet"), cfg, x, mode)
	case "mobilenet_v2", "mobilenet_v1":
		if cfg.TailInput {
			f = MobileNetTail(scope.At("backbone"), cfg, x)
		} else {
			f = MobileNet(scope.At("backbone"), cfg, x)
		}
	case "onnx":
		f = ONNXNet(scope.At("backbone"), cfg, x)
	default:
		spec, ok := ViTSpecFor(cfg.Backbone)
		if !ok {
			panic(fmt.Sprintf("models: unknown backbone %q", cfg.Backbone))
		}
		f = ViT(scope.At("backbone"), spec, x)
	}
	out := Output{Features: f}
	h := f
	if cfg.LayerNorm {
		h = LayerNorm(scope.At("layer_norm"), h)
	}
	out.Emb = toFloat32(head(scope.At("head"), cfg, h, cfg.Dim))
	if cfg.DualHead {
		out.Unc = toFloat32(head(scope.At("unc"), cfg, h, cfg.UncWidth()))
	}
	if cfg.L2 {
		out.Emb = NormalizeRows(out.Emb)
	}
	out.LossEmb = out.Emb
	if cfg.DualHead {
		out.LossEmb = Concatenate([]*Node{out.Emb, out.Unc}, -1)
	}
	if len(cfg.Projector) > 0 {
		p := out.Emb
		ps := scope.At("projector")
		for i, w := range cfg.Projector {
			if i > 0 {
				p = Relu(p)
			}
			p = Dense(ps.At("layer_%d", i), p, w, true)
		}
		out.LossEmb = p
	}
	return out
}

// head maps the features f to width outputs (cfg.Dim for the embedding, UncWidth for IDML's
// uncertainty head) with the configured head.
func head(scope *model.Scope, cfg Config, f *Node, width int) *Node {
	switch cfg.Head {
	case "identity":
		return f
	case "pca":
		mean := scope.GetVariable(PCAMeanVar)
		comps := scope.GetVariable(PCAComponentsVar)
		if mean == nil || comps == nil {
			panic(fmt.Sprintf("models: head pca: %s has no fitted projection (%s, %s): the trainer fits it on the training features (SetPCAHead)", scope.Scope(), PCAMeanVar, PCAComponentsVar))
		}
		if fd := f.Shape().Dim(1); mean.Shape().Dim(0) != fd || comps.Shape().Dim(0) != fd || comps.Shape().Dim(1) != width {
			panic(fmt.Sprintf("models: head pca: projection %s / %s for features of width %d and %d outputs", mean.Shape(), comps.Shape(), fd, width))
		}
		g := f.Graph()
		c := Sub(f, InsertAxes(ConvertDType(mean.NodeValue(g), f.DType()), 0))
		return MatMul(c, ConvertDType(comps.NodeValue(g), f.DType()))
	case "", "linear":
		return Dense(scope, f, width, true)
	case "mlp":
		hidden := cfg.Hidden
		if hidden == 0 {
			hidden = 2 * width
		}
		return Dense(scope.At("out"), Relu(Dense(scope.At("hidden"), f, hidden, true)), width, true)
	}
	panic(fmt.Sprintf("models: unknown head %q", cfg.Head))
}

// Names of the pca head's variables under the head's scope ([Config].Head "pca").
const (
	PCAMeanVar       = "pca_mean"       // μ [F]
	PCAComponentsVar = "pca_components" // P [F, Dim], column c the c-th principal direction
)

// SetPCAHead creates the pca head's variables under scope (the model's scope, the one passed to
// [Build]) from a fitted PCA p of the training features: head/pca_mean = p.Mean [F] and
// head/pca_components = p.Componentsᵀ [F, K] (K = p.K must be the model's Dim), both float32 and
// not trainable. Call it on a fresh store before the first graph is built.
func SetPCAHead(scope *model.Scope, p *pca.Model) error {
	hs := scope.At("head")
	mean := make([]float32, p.D)
	for j, v := range p.Mean {
		mean[j] = float32(v)
	}
	comps := make([]float32, p.D*p.K)
	for c := 0; c < p.K; c++ {
		for j := 0; j < p.D; j++ {
			comps[j*p.K+c] = float32(p.Components[c*p.D+j])
		}
	}
	for _, v := range []struct {
		name string
		t    *tensors.Tensor
	}{{PCAMeanVar, tensors.FromFlatDataAndDimensions(mean, p.D)}, {PCAComponentsVar, tensors.FromFlatDataAndDimensions(comps, p.D, p.K)}} {
		nv, err := hs.CreateVariable(v.name, v.t)
		if err != nil {
			return fmt.Errorf("models: head pca: %w", err)
		}
		nv.SetTrainable(false)
	}
	return nil
}

// NormalizeRows divides each row of x [B, D] by max(‖row‖, 1e-12).
func NormalizeRows(x *Node) *Node {
	sq := ReduceAndKeep(Square(x), ReduceSum, -1)
	return Mul(x, Inverse(Sqrt(Max(sq, scalarLike(sq, 1e-24)))))
}

// SmallCNN is the CPU-sized backbone: for each width c in cfg.Channels a block
// Conv3×3(c) → BN → ReLU, followed by 2×2 max pooling on all blocks but the last, then global
// pooling. On 28×28 with [32, 64, 128]: 28 → 14 → 7 → [B, 128]; on 64×64: 64 → 32 → 16.
//
// A pooled block applies ReLU after the pooling: max(relu(a), …) = relu(max(a, …)) exactly, and
// the gradients agree too (up to the sign of zeros) — both send v to the elements equal to the
// window maximum m when m ≥ 0 (ReLU's gradient at 0 is 1, as GoMLX's Max(x, 0) gives) and
// nothing when m < 0. ReLU then touches a quarter of the values.
func SmallCNN(scope *model.Scope, cfg Config, x *Node, mode Mode) *Node {
	if x.Rank() != 4 {
		panic(fmt.Sprintf("models: the small CNN needs [B, H, W, C] images, got %s", x.Shape()))
	}
	mode.FrozenBN = mode.FrozenBN || cfg.FrozenBN
	h := x
	for i, c := range cfg.Channels {
		bs := scope.At("block_%d", i)
		bn := cfg.Norm != "none"
		h = Conv(bs.At("conv"), h, c, 3, 1, !bn)
		if bn {
			h = BatchNorm(bs.At("bn"), h, mode)
		}
		if i < len(cfg.Channels)-1 && h.Shape().Dim(1)%2 == 0 && h.Shape().Dim(2)%2 == 0 {
			h = MaxPool2(h) // then ReLU, on a quarter of the values: see the doc comment
		}
		h = Relu(h)
	}
	return GlobalPool(h, cfg.Pool, cfg.GeMP)
}

// LoadPretrained initialises the backbone variables under scope (the scope passed to [Build])
// from cfg.Pretrained, if set. Call it on a fresh store before the first graph is built. For
// mobilenet_v2 / mobilenet_v1 it reads the .tflite file ([CachedTFLite]), checks its feature
// width (1280 / 1024) and creates the feature extractor's weights as trainable variables
// ([TFLiteModel.LoadVariables]; the ImageNet classifier is left out) — with TailInput
// ([Config.TailOnly]) only the tail's ([TFLiteModel.LoadTailVariables]); errors name
// model.pretrained (or model.trainable_tail) and the file.
func LoadPretrained(scope *model.Scope, cfg Config) error {
	if cfg.Backbone == "onnx" {
		return LoadONNXBackbone(scope, cfg)
	}
	if cfg.Pretrained == "" {
		return nil
	}
	if want, ok := MobileNetFeatureDims[cfg.Backbone]; ok {
		m, err := CachedTFLite(cfg.Pretrained)
		if err != nil {
			return fmt.Errorf("model.pretrained: %w", err)
		}
		if m.FeatureDim != want {
			return fmt.Errorf("model.pretrained: %s: the last feature map has %d channels, backbone %s has %d", cfg.Pretrained, m.FeatureDim, cfg.Backbone, want)
		}
		if cfg.TailInput {
			_, start, err := TailConfig(cfg)
			if err != nil {
				return err
			}
			if err := m.LoadTailVariables(scope.At("backbone"), start); err != nil {
				return fmt.Errorf("model.pretrained: %s: %w", cfg.Pretrained, err)
			}
			return nil
		}
		if err := m.LoadVariables(scope.At("backbone"), false); err != nil {
			return fmt.Errorf("model.pretrained: %s: %w", cfg.Pretrained, err)
		}
		return nil
	}
	w, err := ReadONNXWeights(cfg.Pretrained)
	if err != nil {
		return err
	}
	if spec, ok := ViTSpecFor(cfg.Backbone); ok {
		err = LoadTorchViT(scope.At("backbone"), spec, w)
	} else {
		err = LoadTorchResNet(scope.At("backbone"), strings.TrimPrefix(cfg.Backbone, "resnet"), w)
	}
	if err != nil {
		return fmt.Errorf("model.pretrained: %s: %w", cfg.Pretrained, err)
	}
	return nil
}

// toFloat32 converts half-precision x to float32 (other dtypes are returned unchanged).
func toFloat32(x *Node) *Node {
	if !IsHalf(x.DType()) {
		return x
	}
	return ConvertDType(x, dtypes.Float32)
}
