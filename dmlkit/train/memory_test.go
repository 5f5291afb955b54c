package train

import (
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/internal/fusedbn"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
)

// TestAccountGraph checks the graph account on a hand-built graph whose saved tensors are known
// by construction: x [4, 3] is the batch, w [4, 3] a variable (12 float32 = 48 bytes each).
// Forward: a = x⊙w, e = exp(a), r = reshape(e) (a view of e), q = w⊙w (from the variable alone),
// z = broadcast constant (from constants alone), s = sin(a) (read only by a dead backward node).
// Backward: r⊙reshape(q), x + x, cos(s) (dead: no root reads it), and, in the "opaque" case, a
// matmul reading e. So Saved = e alone (48 bytes, counted once through its view r), ParamDerived
// = q (48), Inputs = x (48), Variables = w (48); a, s and z are not saved. SavedFused: e is an
// elementwise producer; read only by elementwise ops it is recomputed from x and w (0 bytes
// kept); read by a matmul it stays (48).
func TestAccountGraph(t *testing.T) {
	for _, tc := range []struct {
		name      string
		opaque    bool
		wantFused int64
		wantLarge int64
	}{
		{"fusible readers", false, 0, 48},
		{"opaque reader", true, 48, 64}, // the matmul's [4, 4] output is the largest tensor
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewGraph(backend.MustShared(), "account")
			f32 := shapes.Make(dtypes.Float32, 4, 3)
			x := Parameter(g, "x", f32)
			w := Parameter(g, "w", f32)
			a := Mul(x, w)
			e := Exp(a)
			r := Reshape(e, 12)
			q := Mul(w, w)
			z := BroadcastToDims(Const(g, float32(2)), 4, 3)
			s := Sin(a)
			start := g.LastNode().Id() + 1
			roots := []*Node{ReduceAllSum(Mul(r, Reshape(q, 12))), ReduceAllSum(Add(x, x)), ReduceAllSum(z)}
			_ = Cos(s)
			if tc.opaque {
				roots = append(roots, MatMul(e, Transpose(w, 0, 1)))
			}
			acc := accountGraph(g, []*Node{x}, roots, start)
			for _, c := range []struct {
				what      string
				got, want int64
			}{
				{"Inputs", acc.Inputs, 48},
				{"Variables", acc.Variables, 48},
				{"Saved", acc.Saved, 48},
				{"ParamDerived", acc.ParamDerived, 48},
				{"SavedFused", acc.SavedFused, tc.wantFused},
				{"Largest", acc.Largest.Bytes, tc.wantLarge},
			} {
				if c.got != c.want {
					t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
				}
			}
			if len(acc.SavedByOp) != 1 || acc.SavedByOp[0] != (OpBytes{Name: "Exp", Count: 1, Bytes: 48}) {
				t.Errorf("SavedByOp = %+v, want [{Exp 1 48}]", acc.SavedByOp)
			}
		})
	}
}

// TestMeasureStepMemorySmallCNN accounts for a two-block small CNN (widths 4, 8) on 4 grey 8×8
// images as XLA builds it (fusedbn's wrapper under the name "xla": native convolutions, fused
// BatchNorm, the output-based ReLU gradient). Worked out by hand: block 0 is conv → BN → 2×2
// max-pool → ReLU, block 1 conv → BN → ReLU. The backward pass reads each convolution's output
// (batch-norm-grad's operand): 4·8·8·4 + 4·4·4·8 float32 = 6144 bytes in 2 tensors; and one
// BatchNorm output, block 0's, which the max-pool's gradient compares with its maximum:
// 4·8·8·4·4 = 4096 bytes. Block 1's BatchNorm output is not read (ReLU's gradient reads ReLU's
// output): with autodiff's ReLU it would be. The composite BatchNorm keeps more.
func TestMeasureStepMemorySmallCNN(t *testing.T) {
	defer func(k models.BatchNormKernel) { models.BatchNormImpl = k }(models.BatchNormImpl)
	cfg := Default()
	cfg.Model.Channels = []int{4, 8}
	cfg.Model.Dim = 16
	cfg.Sampler = SamplerConfig{Name: "m_per_class", BatchSize: 4, M: 2}
	wrapped, _ := fusedbn.Wrap(backend.MustShared())
	xla := wrapped.AsXLA()
	account := func(k models.BatchNormKernel) *StepMemory {
		models.BatchNormImpl = k
		acc, err := MeasureStepMemory(cfg, xla, 4, 8, 8, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		return acc
	}
	fused := account(models.BatchNormFused)
	byOp := map[string]OpBytes{}
	for _, o := range fused.SavedByOp {
		byOp[o.Name] = o
	}
	if got, want := byOp["ConvGeneral"], (OpBytes{"ConvGeneral", 2, 6144}); got != want {
		t.Errorf("fused: saved convolution outputs %+v, want %+v", got, want)
	}
	if got, want := byOp["SplitNode"], (OpBytes{"SplitNode", 1, 4096}); got != want {
		t.Errorf("fused: saved BatchNorm outputs %+v, want %+v", got, want)
	}
	// Trainable: conv weights 3·3·1·4 + 3·3·4·8, BN γ and β 2·4 + 2·8, head 8·16 + 16 floats.
	trainable := int64(4 * (36 + 288 + 8 + 16 + 128 + 16))
	if fused.Trainable != trainable {
		t.Errorf("trainable bytes %d, want %d", fused.Trainable, trainable)
	}
	if fused.Inputs != 4*8*8*4+4*8 {
		t.Errorf("inputs %d bytes, want %d (images and int64 labels)", fused.Inputs, 4*8*8*4+4*8)
	}
	composite := account(models.BatchNormComposite)
	if composite.Saved <= fused.Saved {
		t.Errorf("composite BatchNorm keeps %d bytes, fused %d: want more", composite.Saved, fused.Saved)
	}
	if _, err := MeasureStepMemory(Config{}, xla, 4, 8, 8, 1, 2); err == nil {
		t.Error("an invalid configuration was accounted for")
	}
	ms := cfg
	ms.Multistage.Chunk = 2
	if _, err := MeasureStepMemory(ms, xla, 4, 8, 8, 1, 2); err == nil {
		t.Error("a multistage configuration was accounted for")
	}
}
