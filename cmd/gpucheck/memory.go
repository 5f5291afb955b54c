package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/models"
	"github.com/dmlkit/dmlkit/dmlkit/train"
	"github.com/dmlkit/dmlkit/internal/fusedbn"
	"github.com/gomlx/compute"
)

func init() {
	register("memory", "account for one training step's graph (variables, batch, activations the backward pass reads) without running it", runMemory)
}

// memoryReport is the JSON part of `gpucheck memory`.
type memoryReport struct {
	part
	Case      benchCase         `json:"case"`
	BatchNorm string            `json:"batchnorm"` // composite or fused
	Paths     bool              `json:"xla_memory_paths"`
	Account   *train.StepMemory `json:"account"`
}

// runMemory builds a bench case's direct training step as dmlkit builds it for XLA — on the Go
// backend wrapped by fusedbn under XLA's name and op set — with the fused BatchNorm (--bn fused,
// the default) or the composite one, and prints train.MeasureStepMemory's account. It runs
// nothing, so full-scale cases take seconds on a CPU. A multistage case (rsk_multistage) is
// accounted as a direct step on one chunk (its stage 3's batch; the loss's own tensors, small at
// 250 images, are included though stage 3 has no loss).
func runMemory(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addCaseFlags(fs)
	batch := fs.Int("batch", 0, "override the case's batch (images a step before mixup)")
	paths := fs.Bool("xla-memory-paths", true, "models.XLAMemoryPaths: ReLU, softmax, GELU and LayerNorm gradients written from what PyTorch keeps, the stem max-pool as one reduce-window (false: autodiff's forms and nine slices, as before issue 35)")
	bn := fs.String("bn", "fused", "training-mode BatchNorm: fused (XLA's ops, as on a GPU) or composite (the Go backend's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkIntFlags(fs, intBound{"batch", batch, 1, maxBatch}); err != nil {
		return err
	}
	jsonPath, scale, precision := cf.jsonPath, cf.scale, cf.precision
	bc, err := cf.benchCase()
	if err != nil {
		return err
	}
	if *batch > 0 {
		bc.Batch = *batch
	}
	xla, _ := fusedbn.Wrap(backend.MustShared())
	var b compute.Backend = xla.AsXLA()
	defer func(k models.BatchNormKernel, p bool) { models.BatchNormImpl, models.XLAMemoryPaths = k, p }(models.BatchNormImpl, models.XLAMemoryPaths)
	models.XLAMemoryPaths = *paths
	switch *bn {
	case "fused":
		models.BatchNormImpl = models.BatchNormFused
	case "composite":
		models.BatchNormImpl = models.BatchNormComposite
	default:
		return fmt.Errorf("--bn %q: want fused or composite", *bn)
	}
	cfg := bc.config()
	n := bc.Batch
	if bc.Chunk > 0 {
		cfg.Multistage.Chunk = 0
		n = bc.Chunk
		if *batch > 0 {
			n = *batch
		}
	}
	if bc.IDML {
		n *= 2 // originals and their mixed copies
	}
	rep := memoryReport{part: part{Phase: "memory", Scale: *scale, Backend: b.Name()}, Case: bc, BatchNorm: *bn, Paths: *paths}
	acc, err := train.MeasureStepMemory(cfg, b, n, bc.Size, bc.Size, bc.Channels, max(2, n/4))
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	rep.Account, rep.OK = acc, true
	fmt.Fprintf(stdout, "%s (%s, %d images a step, %d², %s, BatchNorm %s, frozen %v): variables %s (trainable %s), inputs %s, activations saved for backward %s, weights-derived %s; largest tensor %s (%s); nodes %d forward, %d backward\n",
		bc.Name, bc.Backbone, n, bc.Size, *precision, *bn, bc.FrozenBN, mib(acc.Variables), mib(acc.Trainable), mib(acc.Inputs), mib(acc.Saved), mib(acc.ParamDerived), mib(acc.Largest.Bytes), acc.Largest.Name, acc.Forward, acc.Backward)
	for _, o := range acc.SavedByOp {
		fmt.Fprintf(stdout, "  %-22s %5d tensors %s\n", o.Name, o.Count, mib(o.Bytes))
	}
	fmt.Fprintf(stdout, "  if cheap producers are fused into their backward readers: %s\n", mib(acc.SavedFused))
	for _, o := range acc.SavedFusedByOp {
		fmt.Fprintf(stdout, "    %-20s %5d tensors %s\n", o.Name, o.Count, mib(o.Bytes))
	}
	for _, o := range acc.SavedByDType {
		fmt.Fprintf(stdout, "  dtype %-16s %5d tensors %s\n", o.Name, o.Count, mib(o.Bytes))
	}
	return writeJSON(*jsonPath, rep)
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
