package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Timing holds the wall-clock measurements of one training session, for seed 000 Table 4 ("time of
// the loss computation, the forward and backward passes and the overall epoch"). Times are
// seconds; they measure this machine under whatever else runs on it, so compare them only within
// one session.
type Timing struct {
	// Steps is the number of optimiser steps timed: the session's steps after the first.
	Steps int
	// FirstStep is the first step of the session, which includes compiling the step graph.
	FirstStep float64
	// Step is the mean time of one optimiser step after the first: forward pass, loss, backward
	// pass and parameter update (for multistage steps, all three stages).
	Step float64
	// Data is the mean time per step spent assembling the batch (pixels, labels, mixup).
	Data float64
	// Eval is the total time spent in evaluations.
	Eval float64
	// StepsPerEpoch is the sampler's number of batches per epoch.
	StepsPerEpoch int
	// Loss is, with eval.time_loss, the median time of the loss's forward and backward pass alone
	// (gradients w.r.t. the embeddings and the loss's own variables, e.g. proxies) on a batch of
	// embeddings with the labels of the first training batch; 0 otherwise. LossReps runs were taken.
	Loss     float64
	LossReps int
}

// Backbone is the part of a step that is not the loss: Step − Loss (forward and backward pass of
// the network and the update), or NaN when the loss was not timed.
func (t Timing) Backbone() float64 {
	if t.LossReps == 0 {
		return math.NaN()
	}
	return t.Step - t.Loss
}

// Epoch is the estimated time of one epoch without evaluations: StepsPerEpoch × (Step + Data).
func (t Timing) Epoch() float64 { return float64(t.StepsPerEpoch) * (t.Step + t.Data) }

// lossDim is the width of what the loss sees (models.Output.LossEmb).
func lossDim(c *Config) int {
	switch {
	case len(c.Model.Projector) > 0:
		return c.Model.Projector[len(c.Model.Projector)-1]
	case c.Model.DualHead:
		return c.Model.Dim + c.Model.UncWidth()
	}
	return c.Model.Dim
}

// timeLoss measures the loss alone: forward and backward on random unit-norm embeddings [B, D]
// (B = len(labels), D = lossDim) with the given labels, in the run's store (so proxy losses use
// their trained proxies; nothing is updated). After one untimed run (compilation), it repeats
// until budget has passed or maxReps runs were taken (at least 3) and returns the median.
func (e *engine) timeLoss(labels []int64, budget time.Duration, maxReps int) (median float64, reps int, err error) {
	d := lossDim(e.cfg)
	n := len(labels)
	rng := rand.New(rand.NewPCG(uint64(e.cfg.Seed), 0x7139))
	emb := make([]float32, n*d)
	for i := 0; i < n; i++ {
		var ss float64
		row := emb[i*d : (i+1)*d]
		for j := range row {
			row[j] = float32(rng.NormFloat64())
			ss += float64(row[j]) * float64(row[j])
		}
		for j := range row {
			row[j] = float32(float64(row[j]) / math.Sqrt(ss))
		}
	}
	ex, err := model.NewExec(e.backend, e.store, func(scope *model.Scope, x, y *Node) *Node {
		liveVariables(scope, x.Graph())
		loss := e.buildLoss(scope, x, y)
		nodes := []*Node{x}
		for _, v := range e.trainableInGraph(loss.Graph(), "/"+lossScope) {
			nodes = append(nodes, v.NodeValue(loss.Graph()))
		}
		out := loss
		for _, g := range Gradient(loss, nodes...) {
			out = Add(out, ConvertDType(ReduceAllSum(g), out.DType()))
		}
		return out
	})
	if err != nil {
		return 0, 0, fmt.Errorf("train: timing the loss: %w", err)
	}
	xT := tensors.FromFlatDataAndDimensions(emb, n, d)
	yT := tensors.FromFlatDataAndDimensions(slices.Clone(labels), n)
	run := func() error {
		outs, err := ex.Call(xT, yT)
		if err != nil {
			return fmt.Errorf("train: timing the loss: %w", err)
		}
		scalarValue(outs[0]) // waits for the result
		return nil
	}
	if err := run(); err != nil {
		return 0, 0, err
	}
	var times []float64
	start := time.Now()
	for len(times) < 3 || (len(times) < maxReps && time.Since(start) < budget) {
		t0 := time.Now()
		if err := run(); err != nil {
			return 0, 0, err
		}
		times = append(times, time.Since(t0).Seconds())
	}
	slices.Sort(times)
	return times[len(times)/2], len(times), nil
}
