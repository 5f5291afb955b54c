package models

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func randImages(seed uint64, dims ...int) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	n := 1
	for _, d := range dims {
		n *= d
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = r.Float32()
	}
	return out
}

// run1 executes fn on x under a fresh store and returns the output and the store.
func run1(t *testing.T, x []float32, dims []int, fn func(scope *model.Scope, x *Node) *Node) (*tensors.Tensor, *model.Store) {
	t.Helper()
	store := model.NewStore()
	SetInitSeed(store, 7)
	e, err := model.NewExec(backend.MustShared(), store, fn)
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.Call(tensors.FromFlatDataAndDimensions(x, dims...))
	if err != nil {
		t.Fatal(err)
	}
	return out[0], store
}

func varData(t *testing.T, store *model.Store, path string) []float32 {
	t.Helper()
	v := store.GetVariable(path)
	if v == nil {
		t.Fatalf("no variable %s", path)
	}
	return tensors.MustCopyFlatData[float32](v.MustValue())
}

// TestConvMatchesDirect compares the im2col convolution with a direct 7-loop convolution in
// float64 (zero padding k/2, stride s); float32 accumulation over k·k·C ≤ 75 terms of size ≤ 1
// keeps the error below 1e-5.
func TestConvMatchesDirect(t *testing.T) {
	defer func(m, c string) { Im2colMode, ConvImpl = m, c }(Im2colMode, ConvImpl)
	for _, mode := range []string{"rows", "gather", "slice", "native"} {
		Im2colMode, ConvImpl = mode, "auto"
		if mode == "native" {
			ConvImpl = "native" // graph.Convolve, the XLA path, here on the Go backend
		}
		testConvMatchesDirect(t)
	}
}

func testConvMatchesDirect(t *testing.T) {
	for _, tc := range []struct{ k, stride, h, w, c, out int }{
		{3, 1, 6, 5, 2, 4}, {3, 2, 7, 6, 3, 2}, {1, 2, 6, 6, 3, 5}, {7, 2, 9, 9, 1, 2}, {1, 1, 4, 4, 2, 3},
		{2, 1, 5, 4, 2, 3}, {4, 2, 7, 6, 1, 2},
	} {
		b := 2
		x := randImages(uint64(tc.k*100+tc.stride), b, tc.h, tc.w, tc.c)
		got, store := run1(t, x, []int{b, tc.h, tc.w, tc.c}, func(scope *model.Scope, x *Node) *Node {
			return Conv(scope.At("conv"), x, tc.out, tc.k, tc.stride, true)
		})
		wt := varData(t, store, "/conv/weights") // [k, k, C, out]
		ho, wo := (tc.h+tc.stride-1)/tc.stride, (tc.w+tc.stride-1)/tc.stride
		if d := got.Shape().Dimensions; d[1] != ho || d[2] != wo || d[3] != tc.out {
			t.Fatalf("k=%d s=%d: shape %v, want [%d %d %d %d]", tc.k, tc.stride, d, b, ho, wo, tc.out)
		}
		g := tensors.MustCopyFlatData[float32](got)
		p := tc.k / 2
		worst := 0.0
		for n := 0; n < b; n++ {
			for i := 0; i < ho; i++ {
				for j := 0; j < wo; j++ {
					for o := 0; o < tc.out; o++ {
						s := 0.0
						for dy := 0; dy < tc.k; dy++ {
							for dx := 0; dx < tc.k; dx++ {
								yy, xx := i*tc.stride+dy-p, j*tc.stride+dx-p
								if yy < 0 || yy >= tc.h || xx < 0 || xx >= tc.w {
									continue
								}
								for c := 0; c < tc.c; c++ {
									s += float64(x[((n*tc.h+yy)*tc.w+xx)*tc.c+c]) * float64(wt[((dy*tc.k+dx)*tc.c+c)*tc.out+o])
								}
							}
						}
						worst = math.Max(worst, math.Abs(s-float64(g[((n*ho+i)*wo+j)*tc.out+o])))
					}
				}
			}
		}
		if worst > 1e-5 {
			t.Errorf("%s: k=%d stride=%d: max |im2col − direct| = %g", Im2colMode, tc.k, tc.stride, worst)
		}
	}
}

// TestPooling checks MaxPool2, MaxPool3s2 and GeM against direct loops.
func TestPooling(t *testing.T) {
	x := randImages(3, 1, 6, 6, 2)
	got, _ := run1(t, x, []int{1, 6, 6, 2}, func(_ *model.Scope, x *Node) *Node { return MaxPool2(x) })
	g := tensors.MustCopyFlatData[float32](got)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for c := 0; c < 2; c++ {
				m := float32(-1)
				for dy := 0; dy < 2; dy++ {
					for dx := 0; dx < 2; dx++ {
						m = max(m, x[((2*i+dy)*6+2*j+dx)*2+c])
					}
				}
				if g[(i*3+j)*2+c] != m {
					t.Fatalf("MaxPool2[%d,%d,%d] = %g, want %g", i, j, c, g[(i*3+j)*2+c], m)
				}
			}
		}
	}
	got, _ = run1(t, x, []int{1, 6, 6, 2}, func(_ *model.Scope, x *Node) *Node { return MaxPool3s2(x) })
	g = tensors.MustCopyFlatData[float32](got)
	for i := 0; i < 3; i++ {
		for j := 0; j < 3; j++ {
			for c := 0; c < 2; c++ {
				m := float32(-1)
				for dy := -1; dy <= 1; dy++ {
					for dx := -1; dx <= 1; dx++ {
						yy, xx := 2*i+dy, 2*j+dx
						if yy >= 0 && yy < 6 && xx >= 0 && xx < 6 {
							m = max(m, x[(yy*6+xx)*2+c])
						}
					}
				}
				if g[(i*3+j)*2+c] != m {
					t.Fatalf("MaxPool3s2[%d,%d,%d] = %g, want %g", i, j, c, g[(i*3+j)*2+c], m)
				}
			}
		}
	}
	got, _ = run1(t, x, []int{1, 6, 6, 2}, func(_ *model.Scope, x *Node) *Node { return GlobalPool(x, "gem", 3) })
	g = tensors.MustCopyFlatData[float32](got)
	for c := 0; c < 2; c++ {
		s := 0.0
		for k := 0; k < 36; k++ {
			s += math.Pow(math.Max(float64(x[k*2+c]), 1e-6), 3)
		}
		want := math.Cbrt(s / 36)
		if math.Abs(float64(g[c])-want) > 1e-5 {
			t.Errorf("GeM channel %d = %g, want %g", c, g[c], want)
		}
	}
}

// TestBatchNorm: training mode normalises each channel to mean 0, variance 1 (γ=1, β=0) and moves
// the running statistics by 0.1 towards the batch mean and the unbiased variance; inference mode
// with the initial running statistics (0, 1) is the identity.
func TestBatchNorm(t *testing.T) {
	x := randImages(5, 4, 3, 3, 2)
	got, store := run1(t, x, []int{4, 3, 3, 2}, func(scope *model.Scope, x *Node) *Node {
		return BatchNorm(scope.At("bn"), x, Mode{Train: true})
	})
	g := tensors.MustCopyFlatData[float32](got)
	rm, rv := varData(t, store, "/bn/mean"), varData(t, store, "/bn/var")
	for c := 0; c < 2; c++ {
		var s, s2, o, o2 float64
		n := 36.0
		for k := 0; k < 36; k++ {
			s += float64(x[k*2+c])
			o += float64(g[k*2+c])
			o2 += float64(g[k*2+c]) * float64(g[k*2+c])
		}
		mean := s / n
		for k := 0; k < 36; k++ {
			d := float64(x[k*2+c]) - mean
			s2 += d * d
		}
		if math.Abs(o/n) > 1e-5 || math.Abs(o2/n-(s2/n)/(s2/n+1e-5)) > 1e-4 {
			t.Errorf("channel %d: output mean %g, var %g", c, o/n, o2/n)
		}
		if math.Abs(float64(rm[c])-0.1*mean) > 1e-6 || math.Abs(float64(rv[c])-(0.9+0.1*s2/(n-1))) > 1e-6 {
			t.Errorf("channel %d: running stats (%g, %g), want (%g, %g)", c, rm[c], rv[c], 0.1*mean, 0.9+0.1*s2/(n-1))
		}
	}
	got, _ = run1(t, x, []int{4, 3, 3, 2}, func(scope *model.Scope, x *Node) *Node {
		return BatchNorm(scope.At("bn"), x, Mode{Train: true, FrozenBN: true})
	})
	g = tensors.MustCopyFlatData[float32](got)
	for i := range x {
		if want := float64(x[i]) / math.Sqrt(1+1e-5); math.Abs(float64(g[i])-want) > 1e-6 {
			t.Fatalf("frozen BN changed x[%d]: %g → %g", i, x[i], g[i])
		}
	}
}

// TestBuildShapes checks output shapes and L2 normalisation of the configurations.
func TestBuildShapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		in      []int
		emb     int
		lossEmb int
		feat    int
	}{
		{"cnn28", Default(), []int{2, 28, 28, 1}, 128, 128, 128},
		{"cnn64-mlp-proj", func() Config {
			c := Default()
			c.Head, c.Dim, c.Projector, c.Channels, c.Pool, c.LayerNorm = "mlp", 16, []int{32, 8}, []int{4, 8, 8}, "gem", true
			return c
		}(), []int{2, 64, 64, 1}, 16, 8, 8},
		{"features-dual", Config{Backbone: "features", Head: "linear", Dim: 6, L2: true, DualHead: true}, []int{3, 10}, 6, 12, 10},
		// seed 002 Table 6: an uncertainty head of its own width, 6 + 3 = 9 columns for the loss.
		{"features-dual-unc3", Config{Backbone: "features", Head: "linear", Dim: 6, L2: true, DualHead: true, UncDim: 3}, []int{3, 10}, 6, 9, 10},
		{"resnet18", Config{Backbone: "resnet18", Head: "linear", Dim: 4, L2: true, Pool: "avgmax"}, []int{2, 32, 32, 3}, 4, 4, 512},
		{"resnet50", Config{Backbone: "resnet50", Head: "linear", Dim: 4, L2: true, FrozenBN: true}, []int{1, 32, 32, 3}, 4, 4, 2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Validate("model"); err != nil {
				t.Fatal(err)
			}
			store := model.NewStore()
			SetInitSeed(store, 1)
			e, err := model.NewExec(backend.MustShared(), store, func(scope *model.Scope, x *Node) []*Node {
				o := Build(scope, tc.cfg, x, Mode{Train: true})
				outs := []*Node{o.Emb, o.LossEmb, o.Features}
				if o.Unc != nil {
					outs = append(outs, o.Unc)
				}
				return outs
			})
			if err != nil {
				t.Fatal(err)
			}
			n := 1
			for _, d := range tc.in {
				n *= d
			}
			out, err := e.Call(tensors.FromFlatDataAndDimensions(randImages(9, tc.in...), tc.in...))
			if err != nil {
				t.Fatal(err)
			}
			if got := out[0].Shape().Dimensions; got[0] != tc.in[0] || got[1] != tc.emb {
				t.Errorf("emb shape %v, want [%d %d]", got, tc.in[0], tc.emb)
			}
			if got := out[1].Shape().Dimensions; got[1] != tc.lossEmb {
				t.Errorf("loss-emb shape %v, want [_ %d]", got, tc.lossEmb)
			}
			if got := out[2].Shape().Dimensions; got[1] != tc.feat {
				t.Errorf("feature shape %v, want [_ %d]", got, tc.feat)
			}
			emb := tensors.MustCopyFlatData[float32](out[0])
			for i := 0; i < tc.in[0]; i++ {
				s := 0.0
				for j := 0; j < tc.emb; j++ {
					s += float64(emb[i*tc.emb+j]) * float64(emb[i*tc.emb+j])
				}
				if math.Abs(s-1) > 1e-5 {
					t.Errorf("row %d: ‖emb‖² = %g, want 1", i, s)
				}
			}
			if tc.cfg.DualHead && len(out) != 4 {
				t.Errorf("dual head: no uncertainty output")
			} else if tc.cfg.DualHead {
				if got := out[3].Shape().Dimensions; got[1] != tc.cfg.UncWidth() {
					t.Errorf("uncertainty shape %v, want [_ %d]", got, tc.cfg.UncWidth())
				}
			}
		})
	}
}

// TestParamDeterministic: the same seed and path give the same initial values; another seed does not.
func TestParamDeterministic(t *testing.T) {
	get := func(seed int64) []float32 {
		store := model.NewStore()
		SetInitSeed(store, seed)
		return tensors.MustCopyFlatData[float32](Param(store.RootScope().At("a"), "w", []int{3, 4}, HeNormal).MustValue())
	}
	a, b, c := get(1), get(1), get(2)
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed gave different values")
		}
	}
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same values")
	}
}

// TestResizeImages checks model.input_size's resampling by hand: a 2×2 image [[0, 4], [8, 12]]
// enlarged to 4×4 with half-pixel centres samples the input at (i + 0.5)/2 − 0.5 = −0.25, 0.25,
// 0.75, 1.25 along each axis, clamped to [0, 1]: weights (1, 0), (¾, ¼), (¼, ¾), (0, 1). Row 0
// is then 0, 1, 3, 4 and column 0 is 0, 2, 6, 8; bilinear is separable, so pixel (y, x) is
// 8·wy + 4·wx with wy, wx ∈ {0, ¼, ¾, 1}.
func TestResizeImages(t *testing.T) {
	b := backend.MustShared()
	out := MustExecOnce(b, func(x *Node) *Node { return ResizeImages(x, 4) },
		tensors.FromFlatDataAndDimensions([]float32{0, 4, 8, 12}, 1, 2, 2, 1))
	got := tensors.MustCopyFlatData[float32](out)
	w := []float32{0, 0.25, 0.75, 1}
	for y := 0; y < 4; y++ {
		for x := 0; x < 4; x++ {
			want := 8*w[y] + 4*w[x]
			if d := got[y*4+x] - want; d > 1e-5 || d < -1e-5 {
				t.Errorf("pixel (%d, %d) = %g, want %g", y, x, got[y*4+x], want)
			}
		}
	}
}
