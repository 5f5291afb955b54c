package train

import (
	"context"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/gomlx/compute"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// multistageVsDirect runs stages 1–3 of cfg on the first batch of its sampler and returns the
// multistage and direct losses and, over all trainable variables, the largest |multistage −
// direct| gradient entry and the largest direct gradient entry.
func multistageVsDirect(t *testing.T, cfg Config) (msLoss, directLoss, worst, scale float64) {
	t.Helper()
	eng, store, pix, labels := firstBatch(t, &cfg, 1)
	n := len(labels)
	y := tensors.FromFlatDataAndDimensions(labels, n)
	out, err := eng.grads.Call(eng.imageTensor(pix, n), y)
	if err != nil {
		t.Fatal(err)
	}
	direct := out[1:]
	msLoss, err = eng.multistageAccumulate(pix, n, y)
	if err != nil {
		t.Fatal(err)
	}
	vars := eng.trainableVars()
	if len(vars) != len(direct) || len(vars) < 6 {
		t.Fatalf("%d trainable variables, %d direct gradients", len(vars), len(direct))
	}
	for i, v := range vars {
		acc := store.GetVariable("/" + accScope + "/" + model.EscapeScopeName(v.Path()))
		if acc == nil {
			t.Fatalf("no accumulator for %s", v.Path())
		}
		a := tensors.MustCopyFlatData[float32](acc.MustValue())
		d := tensors.MustCopyFlatData[float32](direct[i])
		for k := range a {
			worst = math.Max(worst, math.Abs(float64(a[k]-d[k])))
			scale = math.Max(scale, math.Abs(float64(d[k])))
		}
	}
	if cfg.Multistage.LossBlock > 0 && eng.blocks == nil {
		t.Fatal("the blockwise loss stage did not run")
	}
	return msLoss, scalarValue(out[0]), worst, scale
}

// TestMultistageBlockwiseGradient: multistage backprop with the blockwise loss stage (blocks of 5
// anchors over a batch of 16: 5, 5, 5, 1, so the last block holds a single anchor; chunks of 6)
// gives the direct full-batch parameter gradient to 1e-5 (absolute, or relative to the largest
// entry when that exceeds 1) for every blockwise loss. The random sampler draws 16 of 16 classes ×
// 8 images, so the batch has classes of one sample (anchors without positives) and uneven sizes.
// Both sides are float32 and differ only in summation order (per block, per chunk): 4e-8 to
// 2.4e-6 here, the same as with the whole-batch loss stage (2.0e-6 for contrastive, whose error
// comes from the chunked stage 3). A block that dropped its reference-row gradient or normalised
// by its own counts is off by > 1e-3.
func TestMultistageBlockwiseGradient(t *testing.T) {
	cases := []struct {
		name string
		loss LossConfig
	}{
		{"contrastive", LossConfig{Name: "contrastive"}},
		{"tcm", LossConfig{Name: "tcm", Set: map[string]any{"pos_margin": 0.95, "neg_margin": 0.2}}},
		{"smoothap", LossConfig{Name: "smoothap", Set: map[string]any{"tau": 0.1}}},
		{"rsk", LossConfig{Name: "rsk", Set: map[string]any{"tau2": 0.1, "k": "1,2,4"}}},
		{"rsk+tcm terms", LossConfig{Terms: []LossTerm{
			{Name: "rsk", Weight: 1, Set: map[string]any{"tau2": 0.1, "k": "1,2,4"}},
			{Name: "tcm", Weight: 0.5, Set: map[string]any{"pos_margin": 0.95, "neg_margin": 0.2}},
		}}},
		{"combo", LossConfig{Name: "combo", Set: map[string]any{"expr": "smoothap(tau=0.1) + 0.3*contrastive(distance=cosine, neg_margin=0.2)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Loss = tc.loss
			cfg.Model.FrozenBN = true
			cfg.Model.Projector = []int{6}
			cfg.Sampler = SamplerConfig{Name: "random", BatchSize: 16}
			cfg.Multistage = MultistageConfig{Chunk: 6, LossBlock: 5}
			ms, direct, worst, scale := multistageVsDirect(t, cfg)
			if scale == 0 || ms == 0 {
				t.Fatalf("degenerate: loss %g, direct gradient scale %g", ms, scale)
			}
			if d := math.Abs(ms - direct); d > 1e-5*math.Max(1, math.Abs(direct)) {
				t.Errorf("blockwise multistage loss %.8g vs direct %.8g", ms, direct)
			}
			if worst > 1e-5*math.Max(1, scale) {
				t.Errorf("max |blockwise multistage − direct| gradient = %.3g (scale %.3g)", worst, scale)
			}
			t.Logf("loss %.6g, max gradient error %.2g (scale %.2g)", ms, worst, scale)
		})
	}
}

// TestMultistageLossBlockConfig: loss_block is validated against the multistage setting and the
// loss, with errors naming the field and the reason.
func TestMultistageLossBlockConfig(t *testing.T) {
	cases := []struct {
		mod  func(*Config)
		want string // "" = valid
	}{
		{func(c *Config) { c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4} }, ""},
		{func(c *Config) { c.Multistage = MultistageConfig{Chunk: 4, LossBlock: -1} }, "multistage.loss_block: -1"},
		{func(c *Config) { c.Multistage = MultistageConfig{LossBlock: 4} }, "multistage.chunk > 0"},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4} // SiMix decomposes over anchors too
			c.Loss = LossConfig{Name: "rsk", Set: map[string]any{"simix": true}}
		}, ""},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4, LossBlock: 4}
			c.Loss = LossConfig{Terms: []LossTerm{{Name: "rsk", Weight: 1}, {Name: "proxyanchor", Weight: 1}}}
		}, "loss.terms[1]: loss proxyanchor does not decompose"},
		{func(c *Config) {
			c.Multistage = MultistageConfig{Chunk: 4} // whole-batch stage: any loss
			c.Loss = LossConfig{Name: "rsk", Set: map[string]any{"simix": true}}
		}, ""},
	}
	for i, tc := range cases {
		cfg := testConfig()
		cfg.Model.FrozenBN = true
		tc.mod(&cfg)
		err := cfg.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("case %d: unexpected error %v", i, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("case %d: error %v, want one containing %q", i, err, tc.want)
		}
	}
}

// TestMultistageBlockwiseRun: a short run with the blockwise loss stage (RS@k, the loss of
// seed 003's Algorithm 1) trains and moves the loss.
func TestMultistageBlockwiseRun(t *testing.T) {
	cfg := testConfig()
	cfg.Loss = LossConfig{Name: "rsk", Set: map[string]any{"k": "1,2,4", "max_class_size": 4}}
	cfg.Model.FrozenBN = true
	cfg.Multistage = MultistageConfig{Chunk: 6, LossBlock: 6}
	cfg.Epochs, cfg.Steps = 0, 3
	res, err := Run(context.Background(), cfg, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Steps != 3 || math.IsNaN(res.FinalLoss) || res.FinalLoss <= 0 {
		t.Fatalf("steps %d, loss %v", res.Steps, res.FinalLoss)
	}
}

// transferCountingBackend is the Go backend seen as an accelerator with separate memory: no
// shared buffers, so every host→device transfer goes through BufferFromFlatData and every
// device→host transfer through Buffer.ToFlatData; both count their bytes. Its buffers wrap the Go
// backend's (so tensors see one backend), and its executables unwrap inputs and wrap outputs.
type transferCountingBackend struct {
	compute.Backend
	up, down atomic.Int64
}

func (b *transferCountingBackend) HasSharedBuffers() bool { return false }

func (b *transferCountingBackend) BufferFromFlatData(dev compute.DeviceNum, flat any, shape shapes.Shape) (compute.Buffer, error) {
	b.up.Add(int64(shape.Size() * shape.DType.Size()))
	buf, err := b.Backend.BufferFromFlatData(dev, flat, shape)
	return b.wrap(buf), err
}

func (b *transferCountingBackend) Builder(name string) compute.Builder {
	return countingBuilder{Builder: b.Backend.Builder(name), b: b}
}

func (b *transferCountingBackend) wrap(buf compute.Buffer) compute.Buffer {
	if buf == nil {
		return nil
	}
	return countingBuffer{Buffer: buf, b: b}
}

type countingBuilder struct {
	compute.Builder
	b *transferCountingBackend
}

func (c countingBuilder) Compile() (compute.Executable, error) {
	ex, err := c.Builder.Compile()
	return countingExec{Executable: ex, b: c.b}, err
}

type countingExec struct {
	compute.Executable
	b *transferCountingBackend
}

func (c countingExec) Execute(inputs []compute.Buffer, donate []bool, dev compute.DeviceNum) ([]compute.Buffer, error) {
	in := make([]compute.Buffer, len(inputs))
	for i, buf := range inputs {
		if w, ok := buf.(countingBuffer); ok {
			buf = w.Buffer
		}
		in[i] = buf
	}
	out, err := c.Executable.Execute(in, donate, dev)
	for i := range out {
		out[i] = c.b.wrap(out[i])
	}
	return out, err
}

type countingBuffer struct {
	compute.Buffer
	b *transferCountingBackend
}

func (c countingBuffer) Backend() compute.Backend { return c.b }

func (c countingBuffer) ToFlatData(flat any) error {
	if s, err := c.Buffer.Shape(); err == nil {
		c.b.down.Add(int64(s.Size() * s.DType.Size()))
	}
	return c.Buffer.ToFlatData(flat)
}

func (c countingBuffer) CopyToDevice(dev compute.DeviceNum) (compute.Buffer, error) {
	buf, err := c.Buffer.CopyToDevice(dev)
	return c.b.wrap(buf), err
}

// TestMultistageDeviceResident: a multistage step (whole-batch loss stage, chunks of 6 over a
// batch of 16: 6, 6, 4) on a backend with separate device memory uploads exactly the batch's
// images once and its labels, and downloads only the loss and the finiteness scalar (8 bytes):
// the embeddings of stage 1 and their gradients from stage 2 stay on the device (the former host
// round trip moved 2·B·D·4 bytes each way), and stage 3 reuses stage 1's image buffers (a second
// copy would add B·H·W·C·4 bytes). The second step is counted: the first also uploads the
// variables. The step's gradients match direct backprop on this backend too (max entry error
// 1e-5, as TestMultistageGradient on the Go backend).
func TestMultistageDeviceResident(t *testing.T) {
	cfg := testConfig()
	cfg.Model.FrozenBN = true
	cfg.Multistage.Chunk = 6
	b := &transferCountingBackend{Backend: backend.MustShared()}
	eng, store, pix, labels := firstBatchOn(t, b, &cfg, 1)
	n := len(labels)
	for step := range 2 {
		y := tensors.FromFlatDataAndDimensions(labels, n)
		up, down := b.up.Load(), b.down.Load()
		if _, err := eng.multistageAccumulate(pix, n, y); err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			continue
		}
		wantUp := int64(len(pix)*4 + n*8) // float32 images, int64 labels
		if got := b.up.Load() - up; got != wantUp {
			t.Errorf("a multistage step uploaded %d bytes, want %d (images %d + labels %d; embeddings and their gradients would add %d)",
				got, wantUp, len(pix)*4, n*8, 2*n*cfg.Model.Dim*4)
		}
		if got := b.down.Load() - down; got != 8 {
			t.Errorf("a multistage step downloaded %d bytes, want 8 (the loss and 0·ΣE, float32)", got)
		}
	}
	// Two steps accumulated: compare with twice the direct gradient.
	out, err := eng.grads.Call(eng.imageTensor(pix, n), tensors.FromFlatDataAndDimensions(labels, n))
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range eng.trainableVars() {
		acc := tensors.MustCopyFlatData[float32](store.GetVariable("/" + accScope + "/" + model.EscapeScopeName(v.Path())).MustValue())
		d := tensors.MustCopyFlatData[float32](out[i+1])
		for k := range acc {
			if e := math.Abs(float64(acc[k] - 2*d[k])); e > 1e-5*math.Max(1, math.Abs(float64(2*d[k]))) {
				t.Fatalf("%s[%d]: two multistage steps accumulated %g, direct 2×%g", v.Path(), k, acc[k], d[k])
			}
		}
	}
}
