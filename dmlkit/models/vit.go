package models

import (
	"fmt"
	"math"
	"math/rand/v2"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// ViTSpec is the architecture of a Vision Transformer backbone.
type ViTSpec struct {
	// Patch is the patch side P: the image is cut into non-overlapping P×P patches.
	Patch int
	// Dim is the token width D (the feature size of the backbone).
	Dim int
	// Heads is the number of attention heads; Dim must be a multiple of it.
	Heads int
	// Layers is the number of encoder blocks.
	Layers int
	// MLP is the hidden width of each block's MLP (4·Dim for the standard models).
	MLP int
	// ImageSize is the (square) pretraining resolution: the position embedding holds
	// (ImageSize/Patch)² + 1 rows unless a loaded weight file says otherwise.
	ImageSize int
}

// vitSpecs are the ViT backbones selectable by name in [Config].Backbone.
var vitSpecs = map[string]ViTSpec{
	// ViT-B/16: torchvision vit_b_16, timm vit_base_patch16_224 (seed 000, seed 003).
	"vit_b16": {Patch: 16, Dim: 768, Heads: 12, Layers: 12, MLP: 3072, ImageSize: 224},
	// ViT-S/16 as DeiT-S: timm deit_small_patch16_224 (seed 003).
	"vit_s16": {Patch: 16, Dim: 384, Heads: 6, Layers: 12, MLP: 1536, ImageSize: 224},
	// A test-sized ViT for 32×32 images: 4×4 patches of 8×8 pixels.
	"vit_tiny": {Patch: 8, Dim: 48, Heads: 3, Layers: 2, MLP: 96, ImageSize: 32},
}

// ViTSpecFor returns the architecture of the named ViT backbone (vit_b16, vit_s16, vit_tiny).
func ViTSpecFor(backbone string) (ViTSpec, bool) {
	s, ok := vitSpecs[backbone]
	return s, ok
}

// vitLNEps is the LayerNorm ε of torchvision's and timm's ViTs.
const vitLNEps = 1e-6

// vitPosAlignCorners: the position-embedding grid is resized like torchvision's
// interpolate_embeddings (bicubic, align_corners=True), the convention of the weights
// [LoadTorchViT] imports first.
const vitPosAlignCorners = true

// ViT is a pre-norm Vision Transformer (Dosovitskiy et al. 2021) applied to x [B, H, W, C]
// (H and W multiples of spec.Patch), in the layout of torchvision's VisionTransformer and timm's
// vit_*/deit_* models:
//
//	z₀ = [cls; patches(x)·E + e] + pos                   patches: [B, N, P·P·C], N = (H/P)(W/P)
//	z′ = z + MSA(LN₁(z)) · W_o + b_o                      per block, 12-head (B/16) or 6-head (S/16)
//	z  = z′ + GELU(LN₂(z′)·W₁ + b₁)·W₂ + b₂
//	out = LN(z_L)[:, 0]                                    [B, D]: the class token's features
//
// The patch embedding is a reshape/transpose into P·P·C-long patch rows and one MatMul (the
// patch layout [kh, kw, C] matches PyTorch's Conv2d weight [D, C, kh, kw] permuted to
// [kh, kw, C, D]); the Go backend's convolution is not used. Attention is softmax(q·kᵀ/√d_h)·v
// with a fused qkv projection [D, 3D] (columns: q, k, v, each split into heads of d_h = D/Heads
// consecutive units, as PyTorch's in_proj_weight rows). LayerNorm ε = 1e-6, GELU is the exact
// erf form. Dropout and stochastic depth are not implemented (the reproduced papers fine-tune
// without them; the forward pass equals PyTorch's eval mode).
//
// The position embedding "pos_embedding" [1 + G₀², D] covers a G₀×G₀ grid (G₀ = ImageSize/P,
// or the grid of loaded weights). When the input's grid (H/P)×(W/P) differs, the G₀×G₀ part is
// resized bicubically ([BicubicMatrix], A = −0.75, align_corners=True: torchvision's
// interpolate_embeddings) inside the graph, so it stays trainable; the class token's row is
// kept. timm resizes with align_corners=False and antialias (a different kernel), so features of
// timm weights at a non-pretraining size differ slightly from timm's own.
//
// Variables under scope: patch_embed/{weights [P, P, C, D], biases}, class_token [D],
// pos_embedding, layer_i/{ln_1, attn/qkv, attn/out, ln_2, mlp/fc1, mlp/fc2}, ln. Initialisation
// (for training from scratch) follows torchvision: patch weights N(0, 1/(P·P·C)), position
// embedding N(0, 0.02²), class token 0, linear layers Xavier-uniform with zero biases,
// LayerNorm γ = 1, β = 0.
func ViT(scope *model.Scope, spec ViTSpec, x *Node) *Node {
	if x.Rank() != 4 {
		panic(fmt.Sprintf("models: ViT needs [B, H, W, C] images, got %s", x.Shape()))
	}
	if spec.Patch <= 0 || spec.Heads <= 0 || spec.Dim%spec.Heads != 0 {
		panic(fmt.Sprintf("models: invalid ViT spec %+v", spec))
	}
	b, h, w, c := x.Shape().Dim(0), x.Shape().Dim(1), x.Shape().Dim(2), x.Shape().Dim(3)
	p, d := spec.Patch, spec.Dim
	if h%p != 0 || w%p != 0 {
		panic(fmt.Sprintf("models: ViT with %d×%d patches needs H and W divisible by %d, got %s", p, p, p, x.Shape()))
	}
	gh, gw := h/p, w/p
	n := gh * gw
	g := x.Graph()

	// Patch embedding: [B, gh, P, gw, P, C] → [B, gh, gw, P, P, C] → [B·N, P·P·C] · [P·P·C, D].
	patches := Reshape(TransposeAllAxes(Reshape(x, b, gh, p, gw, p, c), 0, 1, 3, 2, 4, 5), b*n, p*p*c)
	ps := scope.At("patch_embed")
	pw := vitParam(ps, "weights", []int{p, p, c, d}, normalInit(math.Sqrt(1/float64(p*p*c))))
	pb := vitParam(ps, "biases", []int{d}, Fill(0))
	tok := Add(MatMulW(patches, Reshape(ConvertDType(pw.NodeValue(g), x.DType()), p*p*c, d)),
		InsertAxes(ConvertDType(pb.NodeValue(g), x.DType()), 0))
	tok = Reshape(tok, b, n, d)

	cls := vitParam(scope, "class_token", []int{d}, Fill(0))
	clsTok := BroadcastToDims(Reshape(ConvertDType(cls.NodeValue(g), x.DType()), 1, 1, d), b, 1, d)
	z := Concatenate([]*Node{clsTok, tok}, 1) // [B, 1+N, D]
	z = Add(z, InsertAxes(vitPosEmbedding(scope, spec, gh, gw, x), 0))

	for i := 0; i < spec.Layers; i++ {
		z = vitBlock(scope.At("layer_%d", i), spec, z)
	}
	// LayerNorm acts per token, so normalising only the class token gives LN(z)[:, 0].
	clsOut := Reshape(Slice(z, AxisRange(), AxisRange(0, 1), AxisRange()), b, d)
	return vitLayerNorm(scope.At("ln"), clsOut)
}

// vitPosEmbedding returns the position embedding [1 + gh·gw, D] for a gh×gw patch grid,
// resizing the stored grid bicubically when it differs.
func vitPosEmbedding(scope *model.Scope, spec ViTSpec, gh, gw int, x *Node) *Node {
	d := spec.Dim
	v := scope.GetVariable("pos_embedding")
	if v == nil {
		g0 := spec.ImageSize / spec.Patch
		v = Param(scope, "pos_embedding", []int{1 + g0*g0, d}, normalInit(0.02))
	}
	dims := v.Shape().Dimensions
	if len(dims) != 2 || dims[1] != d {
		panic(fmt.Sprintf("models: %s/pos_embedding has shape %s, want [1 + G², %d]", scope.Scope(), v.Shape(), d))
	}
	g0 := int(math.Round(math.Sqrt(float64(dims[0] - 1))))
	if g0*g0 != dims[0]-1 {
		panic(fmt.Sprintf("models: %s/pos_embedding has %d patch rows, not a square grid", scope.Scope(), dims[0]-1))
	}
	pos := ConvertDType(v.NodeValue(x.Graph()), x.DType())
	if gh == g0 && gw == g0 {
		return pos
	}
	clsPos := Slice(pos, AxisRange(0, 1), AxisRange())
	grid := Reshape(Slice(pos, AxisRange(1, 1+g0*g0), AxisRange()), g0, g0, d)
	grid = InterpolatePosGrid(grid, gh, gw, vitPosAlignCorners)
	return Concatenate([]*Node{clsPos, Reshape(grid, gh*gw, d)}, 0)
}

// InterpolatePosGrid resizes a grid [H₀, W₀, D] to [h, w, D] with PyTorch's bicubic
// interpolation (F.interpolate(mode="bicubic"), A = −0.75, border taps clamped), as the
// separable product Mₕ · grid · M_wᵀ of two [BicubicMatrix] constants, so it is differentiable
// in the grid.
func InterpolatePosGrid(grid *Node, h, w int, alignCorners bool) *Node {
	if grid.Rank() != 3 {
		panic(fmt.Sprintf("models: InterpolatePosGrid needs [H, W, D], got %s", grid.Shape()))
	}
	h0, w0 := grid.Shape().Dim(0), grid.Shape().Dim(1)
	g := grid.Graph()
	mat := func(in, out int) *Node {
		m := BicubicMatrix(in, out, alignCorners)
		return ConvertDType(Const(g, tensors.FromFlatDataAndDimensions(m, out, in)), grid.DType())
	}
	out := grid
	if h != h0 {
		out = Einsum("hi,ijd->hjd", mat(h0, h), out)
	}
	if w != w0 {
		out = Einsum("wj,hjd->hwd", mat(w0, w), out)
	}
	return out
}

// BicubicMatrix returns the [out, in] row-major matrix M with y = M·x equal to PyTorch's 1-D
// bicubic resize of x (length in) to length out (upsample_bicubic2d on CPU):
//
//	align_corners: s = (in−1)/(out−1) (0 when out = 1), src(i) = s·i
//	otherwise:     s = in/out,                         src(i) = s·(i + ½) − ½ (not clamped)
//
// With i₀ = ⌊src⌋ and t = src − i₀ the taps i₀−1 … i₀+2 (clamped to [0, in−1]) get the cubic
// convolution weights W(1+t), W(t), W(1−t), W(2−t) of Keys' kernel with A = −0.75:
// W(x) = (A+2)|x|³ − (A+3)|x|² + 1 for |x| ≤ 1, A|x|³ − 5A|x|² + 8A|x| − 4A for 1 < |x| < 2.
func BicubicMatrix(in, out int, alignCorners bool) []float64 {
	const a = -0.75
	w1 := func(x float64) float64 { return ((a+2)*x-(a+3))*x*x + 1 }
	w2 := func(x float64) float64 { return ((a*x-5*a)*x+8*a)*x - 4*a }
	m := make([]float64, out*in)
	for i := 0; i < out; i++ {
		var src float64
		if alignCorners {
			if out > 1 {
				src = float64(in-1) / float64(out-1) * float64(i)
			}
		} else {
			src = float64(in)/float64(out)*(float64(i)+0.5) - 0.5
		}
		i0 := int(math.Floor(src))
		t := src - float64(i0)
		for k, wt := range [4]float64{w2(1 + t), w1(t), w1(1 - t), w2(2 - t)} {
			j := min(max(i0-1+k, 0), in-1)
			m[i*in+j] += wt
		}
	}
	return m
}

// vitBlock is one pre-norm encoder block on z [B, S, D].
func vitBlock(scope *model.Scope, spec ViTSpec, z *Node) *Node {
	b, s, d := z.Shape().Dim(0), z.Shape().Dim(1), z.Shape().Dim(2)
	nh, dh := spec.Heads, spec.Dim/spec.Heads
	flat := Reshape(z, b*s, d)

	h := vitLayerNorm(scope.At("ln_1"), flat)
	qkv := Reshape(vitLinear(scope.At("attn").At("qkv"), h, 3*d), b, s, 3, nh, dh)
	part := func(k int) *Node {
		return Reshape(Slice(qkv, AxisRange(), AxisRange(), AxisRange(k, k+1)), b, s, nh, dh)
	}
	q, k, v := part(0), part(1), part(2)
	scores := MulScalar(Einsum("bqhd,bkhd->bhqk", q, k), 1/math.Sqrt(float64(dh)))
	att := Einsum("bhqk,bkhd->bqhd", softmaxLast(scores), v)
	flat = Add(flat, vitLinear(scope.At("attn").At("out"), Reshape(att, b*s, d), d))

	h = vitLayerNorm(scope.At("ln_2"), flat)
	h = vitLinear(scope.At("mlp").At("fc2"), GeluExact(vitLinear(scope.At("mlp").At("fc1"), h, spec.MLP)), d)
	return Reshape(Add(flat, h), b, s, d)
}

// softmaxLast is the softmax over the last axis, computed in float32 for half-precision scores.
//
// On XLA ([xlaMemoryPath]) its gradient is written from the output y, ∂L/∂x = y⊙(v − Σ v⊙y), as
// PyTorch's softmax backward: autodiff of the decomposed softmax (GoMLX's fused softmax is a Go
// backend op) reads the exponentials as well as y, a second [B, heads, S, S] tensor per block
// kept for the backward pass (170 MiB of a ViT-B/16 step at batch 8; train.MeasureStepMemory).
func softmaxLast(x *Node) *Node {
	if IsHalf(x.DType()) {
		return inFloat32(x, softmaxLast)
	}
	if !xlaMemoryPath(x) {
		return Softmax(x, -1)
	}
	var y *Node
	return withCustomGradient(x, func(xc *Node) *Node {
		y = Softmax(xc, -1)
		return y
	}, func(v *Node) *Node {
		return Mul(y, Sub(v, ReduceAndKeep(Mul(v, y), ReduceSum, -1)))
	})
}

// GeluExact is GELU(x) = x·Φ(x) = ½·x·(1 + erf(x/√2)) (PyTorch's nn.GELU() default).
//
// On XLA ([xlaMemoryPath]) its gradient is written out, ∂L/∂x = v·(Φ(x) + x·φ(x)), reading x
// alone, as PyTorch's GELU backward; autodiff's reads the intermediate products too.
func GeluExact(x *Node) *Node {
	gelu := func(x *Node) *Node { return Mul(MulScalar(x, 0.5), AddScalar(Erf(MulScalar(x, 1/math.Sqrt2)), 1)) }
	if !xlaMemoryPath(x) {
		return gelu(x)
	}
	return withCustomGradient(x, gelu, func(v *Node) *Node {
		cdf := MulScalar(AddScalar(Erf(MulScalar(x, 1/math.Sqrt2)), 1), 0.5)
		pdf := MulScalar(Exp(MulScalar(Square(x), -0.5)), 1/math.Sqrt(2*math.Pi))
		return Mul(v, Add(cdf, Mul(x, pdf)))
	})
}

// vitLinear is x·W + b for x [M, in]: W [in, out] Xavier-uniform, b zeros.
func vitLinear(scope *model.Scope, x *Node, out int) *Node {
	in := x.Shape().Dim(1)
	g := x.Graph()
	w := vitParam(scope, "weights", []int{in, out}, XavierUniform)
	bias := vitParam(scope, "biases", []int{out}, Fill(0))
	return Add(MatMulW(x, ConvertDType(w.NodeValue(g), x.DType())), InsertAxes(ConvertDType(bias.NodeValue(g), x.DType()), 0))
}

// vitLayerNorm normalises the rows of x [M, D] with ε = 1e-6: (x − μ)/√(σ² + ε)·γ + β.
// Half-precision x is normalised in float32 ([inFloat32]).
func vitLayerNorm(scope *model.Scope, x *Node) *Node {
	if IsHalf(x.DType()) {
		return inFloat32(x, func(x *Node) *Node { return vitLayerNorm(scope, x) })
	}
	g := x.Graph()
	d := x.Shape().Dim(-1)
	gamma := ConvertDType(vitParam(scope, "gamma", []int{d}, Fill(1)).NodeValue(g), x.DType())
	beta := ConvertDType(vitParam(scope, "beta", []int{d}, Fill(0)).NodeValue(g), x.DType())
	normalise := func(x *Node) (y, r *Node) {
		xc := Sub(x, ReduceAndKeep(x, ReduceMean, -1))
		v := ReduceAndKeep(Square(xc), ReduceMean, -1)
		r = Inverse(Sqrt(AddScalar(v, vitLNEps))) // GoMLX has no Rsqrt gradient
		return Mul(xc, r), r
	}
	var y *Node
	if !xlaMemoryPath(x) {
		y, _ = normalise(x)
	} else {
		// On XLA the normalisation's gradient is written out from x̂ and r = 1/√(σ² + ε):
		// ∂L/∂x = r·(v − mean(v) − x̂·mean(v⊙x̂)), so the backward pass keeps x̂ and r, as
		// PyTorch's LayerNorm keeps x, μ and r; autodiff's keeps x − μ and x̂ and more.
		var xhat, r *Node
		y = withCustomGradient(x, func(xc *Node) *Node {
			xhat, r = normalise(xc)
			return xhat
		}, func(v *Node) *Node {
			inner := Sub(Sub(v, ReduceAndKeep(v, ReduceMean, -1)), Mul(xhat, ReduceAndKeep(Mul(v, xhat), ReduceMean, -1)))
			return Mul(r, inner)
		})
	}
	return Add(Mul(y, InsertAxes(gamma, 0)), InsertAxes(beta, 0))
}

// vitParam is [Param] that also checks the shape of a variable that already exists (e.g. one
// loaded by [LoadTorchViT] for another architecture or channel count).
func vitParam(scope *model.Scope, name string, dims []int, init Init) *model.Variable {
	v := Param(scope, name, dims, init)
	got := v.Shape().Dimensions
	ok := len(got) == len(dims)
	for i := 0; ok && i < len(dims); i++ {
		ok = got[i] == dims[i]
	}
	if !ok {
		panic(fmt.Sprintf("models: %s/%s has shape %s, the ViT needs %v", scope.Scope(), name, v.Shape(), dims))
	}
	return v
}

// normalInit draws N(0, std²).
func normalInit(std float64) Init {
	return func(r *rand.Rand, _ []int, out []float32) {
		for i := range out {
			out[i] = float32(r.NormFloat64() * std)
		}
	}
}
