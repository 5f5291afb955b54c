package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/npy"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// nchwToNHWC permutes PyTorch's [N, C, H, W] images to dmlkit's [N, H, W, C].
func nchwToNHWC(xs []float32, shape []int) ([]float32, []int) {
	n, c, h, w := shape[0], shape[1], shape[2], shape[3]
	x := make([]float32, len(xs))
	for i := 0; i < n; i++ {
		for ch := 0; ch < c; ch++ {
			for y := 0; y < h; y++ {
				for xx := 0; xx < w; xx++ {
					x[((i*h+y)*w+xx)*c+ch] = xs[((i*c+ch)*h+y)*w+xx]
				}
			}
		}
	}
	return x, []int{n, h, w, c}
}

// TestTorchViTFromONNX runs testdata/torch_vit.py (PyTorch 1.13, Debian python3-torch): a tiny
// ViT (image 32, patch 8, width 48, 3 heads, 2 blocks, MLP 96) with every parameter perturbed
// away from its initial value, exported to ONNX once with torchvision's names and once with
// timm's. Each file is loaded through Config.Pretrained into a vit_tiny backbone, and dmlkit's
// class-token features of the same input are compared with PyTorch's eval-mode features; then a
// 48×40 input, for which both sides resize the 4×4 position grid to 6×5 (bicubic,
// align_corners=True), and F.interpolate's 1-D bicubic matrices against [BicubicMatrix].
//
// Tolerance 1e-5 relative to the largest |feature| (≈3): both sides compute in float32 through
// two blocks whose LayerNorms renormalise the error at each step, so the differences are a few
// float32 ulps of the O(1) activations (summation order in 48- and 96-long dot products and the
// softmax), i.e. ~1e-6; 1e-5 leaves margin but catches any layout error (a transposed weight or
// a wrong head split changes features by O(0.1–1)). The matrices are float64 on both sides and
// must agree to 1e-12.
func TestTorchViTFromONNX(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import torch, numpy").Run(); err != nil {
		t.Skip("skipped: no /usr/bin/python3 with torch and numpy (Debian python3-torch, python3-numpy)")
	}
	dir := t.TempDir()
	cmd := exec.Command("/usr/bin/python3", filepath.Join("testdata", "torch_vit.py"), dir)
	cmd.Env = append(os.Environ(), "OPENBLAS_CORETYPE=Cooperlake", "OMP_WAIT_POLICY=PASSIVE", "OMP_NUM_THREADS=2")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("torch export: %v\n%s", err, out)
	}
	read := func(name string) ([]float32, []int) {
		d, s, err := npy.ReadFloat32(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return d, s
	}
	for _, tc := range []struct{ file, x, y string }{
		{"tv.onnx", "x.npy", "y.npy"},
		{"timm.onnx", "x.npy", "y.npy"},
		{"tv.onnx", "x2.npy", "y2.npy"},
	} {
		t.Run(tc.file+"/"+tc.x, func(t *testing.T) {
			x, xshape := nchwToNHWC(read(tc.x))
			want, _ := read(tc.y)
			store := model.NewStore()
			cfg := Config{Backbone: "vit_tiny", Head: "identity", Pretrained: filepath.Join(dir, tc.file)}
			if err := cfg.Validate("model"); err != nil {
				t.Fatal(err)
			}
			if err := LoadPretrained(store.RootScope(), cfg); err != nil {
				t.Fatal(err)
			}
			if v := store.GetVariable("/backbone/layer_1/attn/qkv/weights"); v == nil || !v.Trainable {
				t.Fatalf("qkv weights not loaded as a trainable variable: %v", v)
			}
			worst, scale := featuresVsTorch(t, store, func(scope *model.Scope, x *Node) *Node {
				return Build(scope, cfg, x, Mode{Train: true}).Features
			}, x, xshape, want)
			t.Logf("ViT vs PyTorch: max |Δ| = %.3g (max |feature| %.3g)", worst, scale)
			if worst > 1e-5*scale {
				t.Errorf("dmlkit ViT differs from PyTorch's: max |Δ| = %g, scale %g", worst, scale)
			}
		})
	}
	for _, tc := range []struct{ in, out int }{{4, 7}, {14, 24}, {5, 3}, {14, 10}} {
		for _, ac := range []bool{true, false} {
			name := fmt.Sprintf("m_%d_%d_%d.npy", tc.in, tc.out, map[bool]int{false: 0, true: 1}[ac])
			want, shape, err := npy.ReadFloat64(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if shape[0] != tc.out || shape[1] != tc.in {
				t.Fatalf("%s: shape %v", name, shape)
			}
			got := BicubicMatrix(tc.in, tc.out, ac)
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12 {
					t.Errorf("BicubicMatrix(%d, %d, align_corners=%v)[%d, %d] = %.15g, torch %.15g", tc.in, tc.out, ac, i/tc.in, i%tc.in, got[i], want[i])
				}
			}
		}
	}
}

// TestBicubicMatrixHandComputed checks [BicubicMatrix] on cases worked out by hand with Keys'
// kernel, A = −0.75: W(x) = 1.25|x|³ − 2.25|x|² + 1 (|x| ≤ 1), −0.75(|x|³ − 5|x|² + 8|x| − 4)
// (1 < |x| < 2); then [InterpolatePosGrid] on a separable grid g(i, j, c) = uᵢ·vⱼ·(c+1), whose
// resize must be (M·u)ᵢ·(M·v)ⱼ·(c+1).
func TestBicubicMatrixHandComputed(t *testing.T) {
	const s = 1.0 / 54
	for _, tc := range []struct {
		in, out int
		ac      bool
		want    []float64
		why     string
	}{
		// 4 → 3, align_corners: src = 0, 1.5, 3. Middle: t = ½, taps 0…3 get W(1.5), W(.5), W(.5),
		// W(1.5) = −0.09375, 0.59375, 0.59375, −0.09375.
		{4, 3, true, []float64{1, 0, 0, 0, -0.09375, 0.59375, 0.59375, -0.09375, 0, 0, 0, 1}, "t = 1/2"},
		// 3 → 4, align_corners: src = 0, 2/3, 4/3, 2. Row 1: i₀ = 0, t = 2/3, taps −1 (clamped to
		// 0), 0, 1, 2 get W(5/3) = −1/18, W(2/3) = 10/27, W(1/3) = 43/54, W(4/3) = −1/9, so
		// column 0 = (−3 + 20)/54 = 17/54. Row 2 is its mirror image.
		{3, 4, true, []float64{1, 0, 0, 17 * s, 43 * s, -6 * s, -6 * s, 43 * s, 17 * s, 0, 0, 1}, "t = 2/3, left clamp"},
		// 2 → 4, half-pixel centres: src = −0.25, 0.25, 0.75, 1.25. Row 0: i₀ = −1, t = 0.75, taps
		// −2, −1, 0 (all clamped to 0) and 1 get W(1.75) = −0.03515625, W(.75) = 0.26171875,
		// W(.25) = 0.87890625, W(1.25) = −0.10546875 → [1.10546875, −0.10546875]. Row 1: i₀ = 0,
		// t = 0.25, taps −1, 0 → 0 and 1, 2 → 1 get W(1.25), W(.25), W(.75), W(1.75) →
		// [0.7734375, 0.2265625]. Rows 2, 3 mirror rows 1, 0.
		{2, 4, false, []float64{1.10546875, -0.10546875, 0.7734375, 0.2265625, 0.2265625, 0.7734375, -0.10546875, 1.10546875}, "half-pixel, both clamps"},
		// Same size: the identity for both conventions.
		{3, 3, false, []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}, "identity"},
	} {
		got := BicubicMatrix(tc.in, tc.out, tc.ac)
		for i := range tc.want {
			if math.Abs(got[i]-tc.want[i]) > 1e-15 {
				t.Errorf("%s: BicubicMatrix(%d, %d, %v)[%d, %d] = %.17g, want %.17g", tc.why, tc.in, tc.out, tc.ac, i/tc.in, i%tc.in, got[i], tc.want[i])
			}
		}
	}

	// Grid 3×3×2 → 4×4×2 (align_corners) on u = (1, 2, 4), v = (1, −1, 3), with the 3 → 4 matrix
	// above: M·u = (1, (17 + 86 − 24)/54, (−6 + 86 + 68)/54, 4), M·v = (1, (17 − 43 − 18)/54,
	// (−6 − 43 + 51)/54, 3).
	u, v := []float64{1, 2, 4}, []float64{1, -1, 3}
	mu := []float64{1, 79 * s, 148 * s, 4}
	mv := []float64{1, -44 * s, 2 * s, 3}
	grid := make([]float32, 0, 18)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for c := 0; c < 2; c++ {
				grid = append(grid, float32(u[i]*v[j]*float64(c+1)))
			}
		}
	}
	out, _ := run1(t, grid, []int{3, 3, 2}, func(_ *model.Scope, g *Node) *Node { return InterpolatePosGrid(g, 4, 4, true) })
	if d := out.Shape().Dimensions; d[0] != 4 || d[1] != 4 || d[2] != 2 {
		t.Fatalf("shape %v, want [4 4 2]", d)
	}
	got := tensors.MustCopyFlatData[float32](out)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			for c := 0; c < 2; c++ {
				want := mu[i] * mv[j] * float64(c+1)
				// float32 graph: a few ulps of values up to 16.
				if g := float64(got[(i*4+j)*2+c]); math.Abs(g-want) > 1e-6*(1+math.Abs(want)) {
					t.Errorf("grid[%d, %d, %d] = %g, want %g", i, j, c, g, want)
				}
			}
		}
	}
}

// vitParamCount is the number of backbone parameters of a ViT, summed from its parts: patch
// embedding (P·P·C·D + D), class token (D), position embedding (S·D, S = 1 + (I/P)²), per block
// two LayerNorms (4D), qkv (3D² + 3D), output projection (D² + D), MLP (2·D·M + M + D), and
// the final LayerNorm (2D).
func vitParamCount(s ViTSpec, c int) int {
	d, m := s.Dim, s.MLP
	seq := 1 + (s.ImageSize/s.Patch)*(s.ImageSize/s.Patch)
	block := 4*d + 3*d*d + 3*d + d*d + d + 2*d*m + m + d
	return s.Patch*s.Patch*c*d + d + d + seq*d + s.Layers*block + 2*d
}

// TestViTShapesAndParams builds (without running) vit_b16 and vit_s16 at 224×224 and checks the
// feature width and the backbone's parameter count: ViT-B/16 85,798,656 (torchvision's
// vit_b_16 reports 86,567,656 with its 768·1000 + 1000 = 769,000-parameter head), DeiT-S
// 21,665,664 (timm's deit_small_patch16_224: 22,050,664 with the 385,000-parameter head). Then
// vit_tiny runs end to end with a linear head, L2 normalisation and a 40×48 input (position grid
// resized 4×4 → 5×6). With DMLKIT_HEAVY=1 the two large backbones also run a forward pass.
func TestViTShapesAndParams(t *testing.T) {
	for _, tc := range []struct {
		backbone   string
		params     int
		withHead   int
		classes    int
		featureDim int
	}{
		{"vit_b16", 85_798_656, 86_567_656, 1000, 768},
		{"vit_s16", 21_665_664, 22_050_664, 1000, 384},
	} {
		spec, _ := ViTSpecFor(tc.backbone)
		if n := vitParamCount(spec, 3); n != tc.params {
			t.Errorf("%s: formula gives %d parameters, want %d", tc.backbone, n, tc.params)
		}
		if n := tc.params + tc.featureDim*tc.classes + tc.classes; n != tc.withHead {
			t.Errorf("%s: %d parameters with the ImageNet head, published %d", tc.backbone, n, tc.withHead)
		}
		store := model.NewStore()
		cfg := Config{Backbone: tc.backbone, Head: "linear", Dim: 128, L2: true}
		if err := cfg.Validate("model"); err != nil {
			t.Fatal(err)
		}
		var feat, emb shapes.Shape
		start := time.Now()
		e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) *Node {
			o := Build(scope, cfg, x, Mode{Train: true})
			feat, emb = o.Features.Shape(), o.Emb.Shape()
			return o.Emb
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Compile(shapes.Make(dtypes.Float32, 2, 224, 224, 3)); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: graph built and compiled in %s", tc.backbone, time.Since(start).Round(time.Millisecond))
		if os.Getenv("DMLKIT_HEAVY") != "" {
			// A forward pass (DMLKIT_HEAVY=1; ViT-B/16: 1.8–3.7 s for two images on 2 shared
			// cores): finite embeddings in [−1, 1].
			start = time.Now()
			out, err := e.Call(tensors.FromFlatDataAndDimensions(randImages(5, 2, 224, 224, 3), 2, 224, 224, 3))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: forward of 2 images at 224×224 in %s", tc.backbone, time.Since(start).Round(time.Millisecond))
			for i, v := range tensors.MustCopyFlatData[float32](out[0]) {
				if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 1 {
					t.Fatalf("%s: embedding[%d] = %g", tc.backbone, i, v)
				}
			}
		}
		if feat.Dim(0) != 2 || feat.Dim(1) != tc.featureDim || emb.Dim(1) != 128 {
			t.Errorf("%s: features %s, embedding %s", tc.backbone, feat, emb)
		}
		n := 0
		for v := range store.IterVariables() {
			if strings.HasPrefix(v.Path(), "/backbone/") {
				if !v.Trainable {
					t.Errorf("%s is not trainable", v.Path())
				}
				n += v.Shape().Size()
			}
		}
		if n != tc.params {
			t.Errorf("%s: %d backbone parameters in the store, want %d", tc.backbone, n, tc.params)
		}
	}

	cfg := Config{Backbone: "vit_tiny", Head: "linear", Dim: 8, L2: true}
	in := []int{3, 40, 48, 3}
	out, _ := run1(t, randImages(4, in...), in, func(scope *model.Scope, x *Node) *Node {
		return Build(scope, cfg, x, Mode{Train: true}).Emb
	})
	emb := tensors.MustCopyFlatData[float32](out)
	if d := out.Shape().Dimensions; d[0] != 3 || d[1] != 8 {
		t.Fatalf("vit_tiny embedding shape %v, want [3 8]", d)
	}
	for i := 0; i < 3; i++ {
		s := 0.0
		for j := 0; j < 8; j++ {
			s += float64(emb[i*8+j]) * float64(emb[i*8+j])
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("row %d: ‖emb‖² = %g, want 1", i, s)
		}
	}
}

// torchvisionTinyWeights returns random weights for vit_tiny with torchvision's names and
// PyTorch layouts (Linear [out, in], Conv2d [out, in, kh, kw]).
func torchvisionTinyWeights(layers int) map[string]WeightTensor {
	r := rand.New(rand.NewPCG(3, 4))
	w := map[string]WeightTensor{}
	add := func(name string, dims ...int) {
		n := 1
		for _, d := range dims {
			n *= d
		}
		data := make([]float32, n)
		for i := range data {
			data[i] = float32(r.NormFloat64())
		}
		w[name] = WeightTensor{Dims: dims, Data: data}
	}
	d, m := 48, 96
	add("conv_proj.weight", d, 3, 8, 8)
	add("conv_proj.bias", d)
	add("class_token", 1, 1, d)
	add("encoder.pos_embedding", 1, 17, d)
	for i := 0; i < layers; i++ {
		p := fmt.Sprintf("encoder.layers.encoder_layer_%d.", i)
		for _, ln := range []string{"ln_1", "ln_2"} {
			add(p+ln+".weight", d)
			add(p+ln+".bias", d)
		}
		add(p+"self_attention.in_proj_weight", 3*d, d)
		add(p+"self_attention.in_proj_bias", 3*d)
		add(p+"self_attention.out_proj.weight", d, d)
		add(p+"self_attention.out_proj.bias", d)
		add(p+"mlp.0.weight", m, d)
		add(p+"mlp.0.bias", m)
		add(p+"mlp.3.weight", d, m)
		add(p+"mlp.3.bias", d)
	}
	add("encoder.ln.weight", d)
	add("encoder.ln.bias", d)
	add("heads.head.weight", 10, d)
	add("heads.head.bias", 10)
	return w
}

// TestLoadTorchViTLayout checks the weight conversion without PyTorch: a Linear weight [out, in]
// is stored transposed, the patch convolution [D, C, P, P] as [P, P, C, D], the class token and
// position embedding without their leading 1; and the loader rejects weights with the wrong
// number of blocks, the wrong width, a missing tensor, a distilled DeiT, or no ViT at all.
func TestLoadTorchViTLayout(t *testing.T) {
	spec, _ := ViTSpecFor("vit_tiny")
	w := torchvisionTinyWeights(2)
	store := model.NewStore()
	if err := LoadTorchViT(store.RootScope().At("backbone"), spec, w); err != nil {
		t.Fatal(err)
	}
	qkv := varData(t, store, "/backbone/layer_1/attn/qkv/weights") // [48, 144]
	src := w["encoder.layers.encoder_layer_1.self_attention.in_proj_weight"].Data
	for _, oi := range [][2]int{{0, 0}, {100, 7}, {143, 47}} {
		if got, want := qkv[oi[1]*144+oi[0]], src[oi[0]*48+oi[1]]; got != want {
			t.Errorf("qkv weights[%d, %d] = %g, torch in_proj_weight[%d, %d] = %g", oi[1], oi[0], got, oi[0], oi[1], want)
		}
	}
	// conv_proj.weight[o=5, c=2, y=3, x=6] → patch_embed/weights[3, 6, 2, 5].
	pw := varData(t, store, "/backbone/patch_embed/weights")
	if got, want := pw[((3*8+6)*3+2)*48+5], w["conv_proj.weight"].Data[((5*3+2)*8+3)*8+6]; got != want {
		t.Errorf("patch weight = %g, want %g", got, want)
	}
	if v := store.GetVariable("/backbone/pos_embedding"); v == nil || v.Shape().Rank() != 2 || v.Shape().Dim(0) != 17 {
		t.Errorf("pos_embedding: %v", v)
	}
	if got := varData(t, store, "/backbone/ln/gamma")[4]; got != w["encoder.ln.weight"].Data[4] {
		t.Errorf("final LayerNorm γ not copied")
	}
	if n := store.NumVariables(); n != 4+2*12+2 {
		t.Errorf("%d variables, want 30 (patch 2, class token, position, 12 per block, final LN 2)", n)
	}

	bad := func(name string, w map[string]WeightTensor, spec ViTSpec, want string) {
		t.Helper()
		err := LoadTorchViT(model.NewStore().RootScope().At("backbone"), spec, w)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, want)
		}
	}
	bad("3 blocks for a 2-block spec", torchvisionTinyWeights(3), spec, "more than the 2 blocks")
	bad("1 block for a 2-block spec", torchvisionTinyWeights(1), spec, "encoder_layer_1.ln_1.weight")
	wide := spec
	wide.Dim, wide.Heads = 64, 4
	bad("width", torchvisionTinyWeights(2), wide, "has dims [48 3 8 8]")
	missing := torchvisionTinyWeights(2)
	delete(missing, "encoder.layers.encoder_layer_0.mlp.3.bias")
	bad("missing", missing, spec, "mlp.3.bias")
	dist := torchvisionTinyWeights(2)
	dist["dist_token"] = WeightTensor{Dims: []int{1, 1, 48}, Data: make([]float32, 48)}
	bad("distilled", dist, spec, "dist_token")
	bad("not a ViT", map[string]WeightTensor{"conv1.weight": {}}, spec, "no ViT weights")
}

// TestViTGradientFiniteDifferences: the gradient of L = Σ features·r (r fixed) of vit_tiny on a
// 40×48 input (position grid resized 4×4 → 5×6 inside the graph) with respect to the stored
// position embedding, the class token and a qkv weight equals central differences. The graph
// runs in float64 (the input's dtype; float32 variables are converted), the step h ≈ 1e-4 is
// the difference of the two float32-rounded variable values. The gradient reaches the float32
// variable rounded to float32 (relative 6e-8) and the central difference has an O(h²) = 1e-8
// truncation error times the third derivative (h = 1e-3 already gave 1.6e-5 for the class
// token, which enters a LayerNorm at the origin); measured 1.7e-7, tolerance 1e-5 relative to
// the largest gradient entry.
func TestViTGradientFiniteDifferences(t *testing.T) {
	cfg := Config{Backbone: "vit_tiny", Head: "identity"}
	store := model.NewStore()
	SetInitSeed(store, 3)
	r := randImages(8, 48)
	vars := []string{"/backbone/pos_embedding", "/backbone/class_token", "/backbone/layer_0/attn/qkv/weights"}
	e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) []*Node {
		// Training mode: otherwise the Go backend bakes variables into the graph as constants
		// (PreferConstantsForVariables) and the perturbations below would not be seen.
		scope.SetTraining(x.Graph(), true)
		f := Build(scope, cfg, x, Mode{Train: true}).Features
		w := ConvertDType(Const(x.Graph(), tensors.FromFlatDataAndDimensions(r, 1, 48)), dtypes.Float64)
		loss := ReduceAllSum(Mul(f, w))
		nodes := make([]*Node, len(vars))
		for i, p := range vars {
			nodes[i] = store.GetVariable(p).NodeValue(x.Graph())
		}
		return append([]*Node{loss}, Gradient(loss, nodes...)...)
	})
	if err != nil {
		t.Fatal(err)
	}
	x32 := randImages(6, 1, 40, 48, 3)
	x := make([]float64, len(x32))
	for i, v := range x32 {
		x[i] = float64(v)
	}
	xt := tensors.FromFlatDataAndDimensions(x, 1, 40, 48, 3)
	out, err := e.Call(xt)
	worst := 0.0
	defer func() { t.Logf("max |gradient − finite difference| / max |gradient| = %.2g", worst) }()
	if err != nil {
		t.Fatal(err)
	}
	for vi, p := range vars {
		var grad []float64 // float32: the gradient reaches the variable through ConvertDType
		for _, g := range tensors.MustCopyFlatData[float32](out[1+vi]) {
			grad = append(grad, float64(g))
		}
		v := store.GetVariable(p)
		val := tensors.MustCopyFlatData[float32](v.MustValue())
		if len(grad) != len(val) {
			t.Fatalf("%s: gradient has %d entries, variable %d", p, len(grad), len(val))
		}
		scale := 0.0
		for _, g := range grad {
			scale = math.Max(scale, math.Abs(g))
		}
		// Entries: the class row and a patch row of the position embedding (the latter only
		// reaches the output through the bicubic resize), the class token, a qkv weight.
		for _, k := range []int{3, (48*7 + 11) % len(val), len(val) - 1} {
			loss := func(delta float32) (float64, float32) {
				mod := append([]float32(nil), val...)
				mod[k] += delta
				if err := v.SetValue(tensors.FromFlatDataAndDimensions(mod, v.Shape().Dimensions...)); err != nil {
					t.Fatal(err)
				}
				o, err := e.Call(xt)
				if err != nil {
					t.Fatal(err)
				}
				return tensors.MustCopyFlatData[float64](o[0])[0], mod[k]
			}
			lp, vp := loss(1e-4)
			lm, vm := loss(-1e-4)
			fd := (lp - lm) / float64(vp-vm)
			worst = math.Max(worst, math.Abs(fd-grad[k])/scale)
			if math.Abs(fd-grad[k]) > 1e-5*scale {
				t.Errorf("%s[%d]: gradient %.8g, finite difference %.8g (max |gradient| %.3g)", p, k, grad[k], fd, scale)
			}
		}
		if err := v.SetValue(tensors.FromFlatDataAndDimensions(val, v.Shape().Dimensions...)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestViTConfigValidate: the ViT backbone names are accepted (with pretrained weights too), an
// unknown ViT name is rejected naming the field.
func TestViTConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string // "" = valid
	}{
		{Config{Backbone: "vit_b16", Head: "linear", Dim: 512, Pretrained: "vit_b16.onnx"}, ""},
		{Config{Backbone: "vit_s16", Head: "mlp", Dim: 128}, ""},
		{Config{Backbone: "vit_tiny", Head: "identity"}, ""},
		{Config{Backbone: "vit_l16", Head: "linear", Dim: 128}, "model.backbone"},
		{Config{Backbone: "cnn", Channels: []int{8}, Head: "linear", Dim: 8, Pretrained: "x.onnx"}, "model.pretrained"},
	} {
		err := tc.cfg.Validate("model")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.cfg.Backbone, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one naming %s", tc.cfg.Backbone, err, tc.want)
		}
	}
}
