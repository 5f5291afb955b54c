package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

func init() {
	register("bench", "time training steps of one case (smallcnn, resnet50, vit_b16, rsk_multistage, idml_pa) through train.RunWithOptions", runBench)
	register("torchargs", "print the scripts/gpucheck_torch.py arguments of the same case", runTorchArgs)
	prepare.RegisterSetDataset(synthName, synthDataset)
}

// synthName is the synthetic image dataset this command registers with dmlkit/data/prepare: random
// pixels (a fixed random pool, sliced per image, so filling a batch is a memory copy), classes of
// per_class images, any size. It stands in for the image datasets, which a GPU machine lacks.
const synthName = "gpucheck-synthetic"

type synthSet struct {
	n, size, c int
	labels     []int32
	pool       []float32
}

func (s *synthSet) Len() int              { return s.n }
func (s *synthSet) Dims() (int, int, int) { return s.size, s.size, s.c }
func (s *synthSet) Labels() []int32       { return s.labels }
func (s *synthSet) Coarse() []int32       { return nil }
func (s *synthSet) Fill(idx []int, dst []float32) {
	sz := s.size * s.size * s.c
	span := len(s.pool) - sz
	for k, i := range idx {
		off := (i * 7919) % span
		copy(dst[k*sz:(k+1)*sz], s.pool[off:off+sz])
	}
}

func newSynthSet(classes, perClass, size, c int, seed uint64) *synthSet {
	s := &synthSet{n: classes * perClass, size: size, c: c}
	s.labels = make([]int32, s.n)
	for i := range s.labels {
		s.labels[i] = int32(i / perClass)
	}
	r := rand.New(rand.NewPCG(seed, 256))
	s.pool = make([]float32, size*size*c+(1<<16)+1)
	for i := range s.pool {
		s.pool[i] = float32(r.NormFloat64())
	}
	return s
}

// synthDataset reads the options size, channels, classes, per_class, test_classes (ints).
func synthDataset(opts map[string]any, seed int64) (*train.SetSplit, error) {
	get := func(k string, def int) (int, error) {
		v, ok := opts[k]
		if !ok {
			return def, nil
		}
		switch x := v.(type) {
		case int:
			return x, nil
		case int64:
			return int(x), nil
		case float64:
			return int(x), nil
		}
		return 0, fmt.Errorf("data.options.%s: %v: want an integer", k, v)
	}
	var vals [5]int
	for i, kd := range []struct {
		k string
		d int
	}{{"size", 224}, {"channels", 3}, {"classes", 64}, {"per_class", 4}, {"test_classes", 16}} {
		v, err := get(kd.k, kd.d)
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, fmt.Errorf("data.options.%s: %d: want > 0", kd.k, v)
		}
		vals[i] = v
	}
	size, c, classes, per, testClasses := vals[0], vals[1], vals[2], vals[3], vals[4]
	return &train.SetSplit{
		Train: newSynthSet(classes, per, size, c, uint64(seed)+1),
		Test:  newSynthSet(testClasses, 4, size, c, uint64(seed)+2),
	}, nil
}

// benchCase is one timed training workload; the same parameters go to gpucheck_torch.py.
type benchCase struct {
	Name     string         `json:"name"`
	Backbone string         `json:"backbone"`
	Batch    int            `json:"batch"`
	Size     int            `json:"size"`
	Channels int            `json:"channels"`
	Chunk    int            `json:"multistage_chunk,omitempty"`
	Steps    int            `json:"steps"` // including the first (compiling) step
	Dim      int            `json:"dim"`
	Loss     string         `json:"loss"`
	LossSet  map[string]any `json:"loss_set,omitempty"`
	FrozenBN bool           `json:"frozen_bn"`
	// IDML (seed 002's full scale): average + max pooling, a second (uncertainty) head of width
	// Dim, mixup (each batch of Batch originals gets Batch mixed copies: 2·Batch images a step),
	// AdamW with decoupled weight decay 1e-4 and gradient entries clipped at 10, the loss's
	// variables (proxies) at 100× the rate, lr 6e-4 (the authors' CUB rate).
	IDML bool `json:"idml,omitempty"`
	// Precision is dmlkit's train.precision for the run ("" or "fp32", "bf16", "fp16"); the
	// PyTorch side runs the same precision with torch.autocast (AMP; fp16 with a GradScaler).
	Precision string `json:"precision,omitempty"`
}

// rowKey is the case's key in the report: its name, with "+<precision>" unless fp32 (so the fp32
// rows keep the names of earlier reports).
func (bc benchCase) rowKey() string {
	if bc.Precision == "" || bc.Precision == string(train.PrecisionFP32) {
		return bc.Name
	}
	return bc.Name + "+" + bc.Precision
}

// setPrecision validates p (fp32, bf16 or fp16) and sets it on the case.
func (bc *benchCase) setPrecision(p string) error {
	if err := train.Precision(p).Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	bc.Precision = p
	return nil
}

// benchCases are issue 22's workloads: the small CNN at batch 256 (28×28 grey), ResNet-50 at
// 224² batch 64, ViT-B/16 at 224² batch 64 (contrastive loss, Adam), and RS@k multistage at batch
// 4,000 in chunks of 250 on ResNet-50 (frozen BN, as the TCM full-scale spec; max_class_size = 4,
// the sampler's m, so RS@k's rank tensor is [B, 3, B]). Chunks of 500 ran out of memory under XLA on
// an 80 GB H100 (a 39 GiB temporary buffer; PyTorch's peak was 52 GB), 2026-11-25. "small" shrinks
// them for the CPU dry run. idml_pa is issue 21's full-scale step: IDML-ProxyAnchor on ResNet-50
// (frozen BN, avg + max pooling, 512 + 512 heads) at batch 120 with mixup (240 images a step), AdamW.
func benchCases(scale string) []benchCase {
	rsk := map[string]any{"max_class_size": 4}
	idml := map[string]any{"base": "proxyanchor"}
	if scale == "small" {
		return []benchCase{
			{Name: "smallcnn", Backbone: "cnn", Batch: 64, Size: 28, Channels: 1, Steps: 4, Dim: 128, Loss: "contrastive"},
			{Name: "resnet50", Backbone: "resnet50", Batch: 4, Size: 64, Channels: 3, Steps: 3, Dim: 512, Loss: "contrastive"},
			{Name: "vit_b16", Backbone: "vit_b16", Batch: 4, Size: 64, Channels: 3, Steps: 3, Dim: 512, Loss: "contrastive"},
			{Name: "rsk_multistage", Backbone: "resnet50", Batch: 32, Size: 64, Channels: 3, Chunk: 8, Steps: 2, Dim: 512, Loss: "rsk", LossSet: rsk, FrozenBN: true},
			{Name: "idml_pa", Backbone: "resnet50", Batch: 8, Size: 64, Channels: 3, Steps: 3, Dim: 512, Loss: "idml", LossSet: idml, FrozenBN: true, IDML: true},
		}
	}
	return []benchCase{
		{Name: "smallcnn", Backbone: "cnn", Batch: 256, Size: 28, Channels: 1, Steps: 20, Dim: 128, Loss: "contrastive"},
		{Name: "resnet50", Backbone: "resnet50", Batch: 64, Size: 224, Channels: 3, Steps: 12, Dim: 512, Loss: "contrastive"},
		{Name: "vit_b16", Backbone: "vit_b16", Batch: 64, Size: 224, Channels: 3, Steps: 12, Dim: 512, Loss: "contrastive"},
		{Name: "rsk_multistage", Backbone: "resnet50", Batch: 4000, Size: 224, Channels: 3, Chunk: 250, Steps: 4, Dim: 512, Loss: "rsk", LossSet: rsk, FrozenBN: true},
		{Name: "idml_pa", Backbone: "resnet50", Batch: 120, Size: 224, Channels: 3, Steps: 12, Dim: 512, Loss: "idml", LossSet: idml, FrozenBN: true, IDML: true},
	}
}

func findCase(scale, name string) (benchCase, error) {
	var names []string
	for _, c := range benchCases(scale) {
		if c.Name == name {
			return c, nil
		}
		names = append(names, c.Name)
	}
	return benchCase{}, fmt.Errorf("--case %q: want one of %s", name, strings.Join(names, ", "))
}

// config is the training configuration of the case: synthetic images, Adam (lr 1e-4), m-per-class
// batches of 4 images per class (two batches per epoch), evaluation only at the end on 64 images.
func (bc benchCase) config() train.Config {
	cfg := train.Default()
	cfg.Name = "gpucheck-" + bc.Name
	cfg.Data = train.DataConfig{Name: synthName, Options: map[string]any{
		"size": bc.Size, "channels": bc.Channels, "classes": 2 * bc.Batch / 4, "per_class": 4, "test_classes": 16}}
	if bc.Backbone == "cnn" {
		cfg.Model = models.Default()
	} else {
		cfg.Model = models.Config{Backbone: bc.Backbone, Norm: "bn", Pool: "avg", Head: "linear", Dim: bc.Dim, L2: true, GeMP: 3, FrozenBN: bc.FrozenBN}
	}
	cfg.Loss = train.LossConfig{Name: bc.Loss, Set: bc.LossSet}
	cfg.Optimizer.LR = 1e-4
	cfg.Sampler = train.SamplerConfig{Name: "m_per_class", BatchSize: bc.Batch, M: 4}
	cfg.Epochs = bc.Steps
	cfg.Steps = bc.Steps
	cfg.Eval = train.EvalConfig{Ks: []int{1, 2, 4, 8}, BatchSize: 64, Metric: "R@1"}
	cfg.Checkpoint = train.CheckpointConfig{Keep: 1}
	cfg.Multistage = train.MultistageConfig{Chunk: bc.Chunk}
	cfg.Precision = train.Precision(bc.Precision)
	if bc.IDML {
		cfg.Model.Pool, cfg.Model.DualHead = "avgmax", true
		cfg.Optimizer = train.OptimizerConfig{Name: "adamw", LR: 6e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-4, ClipValue: 10,
			Groups: []train.GroupConfig{{Match: "/loss/", LRMul: 100}}}
		cfg.Mixup = train.MixupConfig{Enabled: true, Alpha: 1}
	}
	return cfg
}

type benchReport struct {
	part
	Side      string    `json:"side"` // "dmlkit"
	Case      benchCase `json:"case"`
	StepMS    float64   `json:"step_ms"`      // mean over the steps after the first (host→device copy of the batch included)
	FirstSec  float64   `json:"first_step_s"` // compile + first step
	Timed     int       `json:"timed_steps"`  // steps averaged
	FinalLoss float64   `json:"final_loss"`   // sanity: finite
	RSSMiB    float64   `json:"peak_rss_mib"` // host
	WallSec   float64   `json:"run_seconds"`  // whole RunWithOptions (data, compile, steps, final evaluation, checkpoint)
	DataMS    float64   `json:"data_ms"`      // mean batch assembly per step (not in step_ms)
	EvalSec   float64   `json:"eval_seconds"` // final evaluation
	// XLAMemory is XLA's memory report of every executable the run compiled (empty on the Go
	// backend) and XLAStep the largest of them, the training step's (see xlaExecMemory).
	XLAMemory []xlaExecMemory `json:"xla_memory,omitempty"`
	XLAStep   *xlaExecMemory  `json:"xla_step_memory,omitempty"`
}

// caseFlags are the flags of the commands that take one bench case: --json, --scale, --case,
// --precision.
type caseFlags struct{ jsonPath, scale, name, precision *string }

func addCaseFlags(fs *flag.FlagSet) caseFlags {
	return caseFlags{
		jsonPath:  fs.String("json", "", "write the JSON part here"),
		scale:     scaleFlag(fs),
		name:      fs.String("case", "", "workload: smallcnn, resnet50, vit_b16, rsk_multistage or idml_pa"),
		precision: fs.String("precision", "fp32", "train.precision of the run: fp32, bf16 or fp16"),
	}
}

// benchCase checks the parsed flags and returns the case at that scale and precision.
func (c caseFlags) benchCase() (benchCase, error) {
	if err := checkScale(*c.scale); err != nil {
		return benchCase{}, err
	}
	bc, err := findCase(*c.scale, *c.name)
	if err != nil {
		return benchCase{}, err
	}
	return bc, bc.setPrecision(*c.precision)
}

func runBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addCaseFlags(fs)
	steps := fs.Int("steps", 0, "override the case's number of steps (≥ 2; the first compiles and is not averaged)")
	frozen := fs.Bool("frozen-bn", false, "override the case's frozen BatchNorm (running statistics, no update) when given")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkIntFlags(fs, intBound{"steps", steps, 2, 100000}); err != nil {
		return err
	}
	jsonPath, scale, precision := cf.jsonPath, cf.scale, cf.precision
	bc, err := cf.benchCase()
	if err != nil {
		return err
	}
	if *steps > 0 {
		bc.Steps = *steps
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "frozen-bn" {
			bc.FrozenBN = *frozen
		}
	})
	rep := benchReport{part: part{Phase: "bench", Scale: *scale}, Side: "dmlkit", Case: bc}
	b, cfgName, err := testBackend()
	rep.Backend = cfgName
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	dir, err := os.MkdirTemp("", "gpucheck-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stopCapture := startXLAMemCapture()
	res, err := train.RunWithOptions(context.Background(), bc.config(), dir, train.Options{Backend: b})
	rep.XLAMemory = stopCapture()
	rep.XLAStep = largestXLAExec(rep.XLAMemory)
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	t := res.Timing
	rep.StepMS, rep.FirstSec, rep.Timed, rep.FinalLoss = t.Step*1e3, t.FirstStep, t.Steps, res.FinalLoss
	rep.DataMS, rep.EvalSec, rep.RSSMiB = t.Data*1e3, t.Eval, peakRSSMiB()
	rep.OK = t.Steps > 0
	fmt.Fprintf(stdout, "%s (%s, batch %d, %d², chunk %d, frozen BN %v, %s) on %s: %.1f ms/step over %d steps; first step %.1fs; loss %.4g; peak RSS %.0f MiB\n",
		bc.Name, bc.Backbone, bc.Batch, bc.Size, bc.Chunk, bc.FrozenBN, *precision, cfgName, rep.StepMS, rep.Timed, rep.FirstSec, rep.FinalLoss, rep.RSSMiB)
	if m := rep.XLAStep; m != nil {
		fmt.Fprintf(stdout, "XLA's memory report of the largest executable (%d compiled): inputs %s, outputs %s, aliases %s, temporary %s, total %s\n",
			len(rep.XLAMemory), mib(m.Inputs), mib(m.Outputs), mib(m.Aliases), mib(m.Temporary), mib(m.Total()))
	}
	return writeJSON(*jsonPath, rep)
}

func runTorchArgs(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("torchargs", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scale := scaleFlag(fs)
	name := fs.String("case", "", "workload")
	precision := fs.String("precision", "fp32", "fp32, bf16 (PyTorch AMP with bfloat16) or fp16 (AMP with float16 and a GradScaler)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	bc, err := findCase(*scale, *name)
	if err != nil {
		return err
	}
	if err := bc.setPrecision(*precision); err != nil {
		return err
	}
	frozen := 0
	if bc.FrozenBN {
		frozen = 1
	}
	mcs := 0
	if v, ok := bc.LossSet["max_class_size"].(int); ok {
		mcs = v
	}
	loss := bc.Loss
	if bc.IDML {
		loss = "idml_pa"
	}
	fmt.Fprintf(stdout, "--case %s --backbone %s --batch %d --size %d --channels %d --chunk %d --steps %d --dim %d --loss %s --frozen-bn %d --max-class-size %d --precision %s\n",
		bc.Name, bc.Backbone, bc.Batch, bc.Size, bc.Channels, bc.Chunk, bc.Steps, bc.Dim, loss, frozen, mcs, *precision)
	return nil
}
