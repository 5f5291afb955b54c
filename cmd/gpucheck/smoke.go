package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

func init() {
	register("smoke", "each paper's full-scale spec (reproductions/*/spec.yaml), deduplicated, a few steps on synthetic images", runSmoke)
}

// smokeRun is one representative of a group of full-scale runs that share what the device sees:
// backbone, input size, batch, multistage chunk and loss block, mixup, heads. The loss expression is
// the group's longest (most terms); the losses themselves are checked by `gpucheck losses`.
type smokeRun struct {
	Paper     string   `json:"paper"`
	Key       string   `json:"group"`
	Label     string   `json:"run"`
	Represent int      `json:"runs_represented"`
	Loss      string   `json:"loss"`
	Backbone  string   `json:"backbone"`
	Batch     int      `json:"batch"`
	Size      int      `json:"size"`
	Chunk     int      `json:"multistage_chunk"`
	Changes   []string `json:"changes"` // what the smoke changed from the spec's run
	OK        bool     `json:"ok"`
	Steps     int      `json:"steps"`
	StepSec   float64  `json:"step_seconds"`
	FirstSec  float64  `json:"first_step_seconds"`
	FinalLoss float64  `json:"final_loss"`
	WallSec   float64  `json:"seconds"`
	Error     string   `json:"error,omitempty"`
}

type smokeReport struct {
	part
	Specs   []string   `json:"specs"`
	Skipped []string   `json:"skipped,omitempty"`
	Runs    []smokeRun `json:"runs"`
	Dataset string     `json:"dataset"`
}

func runSmoke(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("smoke", flag.ContinueOnError)
	fs.SetOutput(stderr)
	jsonPath := fs.String("json", "", "write the JSON part here")
	scale := scaleFlag(fs)
	glob := fs.String("specs", "reproductions/*/spec.yaml", "spec files (a glob)")
	steps := fs.Int("steps", 3, "optimiser steps per run (the first compiles)")
	only := fs.Int("only", -1, "run only the i-th representative (0-based; the script runs each in its own process with a timeout)")
	list := fs.Bool("list", false, "print the number of representatives and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := checkScale(*scale); err != nil {
		return err
	}
	if err := checkIntFlags(fs, intBound{"steps", steps, 1, 100000}, intBound{"only", only, -1, 1 << 20}); err != nil {
		return err
	}
	rep := smokeReport{part: part{Phase: "smoke", Scale: *scale}, Dataset: synthName}
	runs, specs, skipped, err := smokePlan(*glob, *scale)
	rep.Specs, rep.Skipped = specs, skipped
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	if *list {
		for i, r := range runs {
			fmt.Fprintf(os.Stderr, "representative %d: %s %s (%s)\n", i, r.Paper, r.Key, r.Loss)
		}
		fmt.Fprintln(stdout, len(runs))
		return nil
	}
	tb, cfgName, err := testBackend()
	rep.Backend = cfgName
	if err != nil {
		rep.Error = err.Error()
		writeJSON(*jsonPath, rep)
		return err
	}
	rep.OK = true
	for i, sr := range runs {
		if *only >= 0 && i != *only {
			continue
		}
		cfg := sr.cfg
		cfg.Steps = *steps
		cfg.Epochs = *steps
		dir, err := os.MkdirTemp("", "gpucheck-smoke-")
		if err != nil {
			return err
		}
		t0 := time.Now()
		res, err := train.RunWithOptions(context.Background(), cfg, dir, train.Options{Backend: tb})
		os.RemoveAll(dir)
		r := sr.smokeRun
		r.WallSec = time.Since(t0).Seconds()
		if err != nil {
			r.Error = err.Error()
		} else {
			r.Steps, r.StepSec, r.FirstSec, r.FinalLoss = res.Steps, res.Timing.Step, res.Timing.FirstStep, res.FinalLoss
			r.OK = !math.IsNaN(res.FinalLoss) && !math.IsInf(res.FinalLoss, 0)
		}
		rep.OK = rep.OK && r.OK
		status := "ok"
		if !r.OK {
			status = "FAILED " + r.Error
		}
		fmt.Fprintf(stdout, "[%d/%d] %s %s: %s, %d steps, %.2fs/step, first %.1fs, loss %.4g (%.0fs) — %s\n",
			i+1, len(runs), r.Paper, r.Key, r.Loss, r.Steps, r.StepSec, r.FirstSec, r.FinalLoss, r.WallSec, status)
		rep.Runs = append(rep.Runs, r)
	}
	if err := writeJSON(*jsonPath, rep); err != nil {
		return err
	}
	if !rep.OK {
		return fmt.Errorf("%w: a full-scale spec run failed", errMismatch)
	}
	return nil
}

type plannedSmoke struct {
	smokeRun
	cfg train.Config
}

// smokePlan resolves the "full" scale of every spec the glob finds, groups the runs by what the
// device sees, and returns one run per group with synthetic images in place of the dataset (same
// input size), no pretrained weights (the ONNX exports are absent on a GPU machine), no validation
// split and evaluation only at the end. "small" also shrinks batch (8), chunk (4) and images (64²),
// so that the dry run finishes on 2 cores; the group list is the same.
func smokePlan(glob, scale string) ([]plannedSmoke, []string, []string, error) {
	files, err := filepath.Glob(glob)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, nil, fmt.Errorf("no spec matches %s (run from the repository root)", glob)
	}
	sort.Strings(files)
	var out []plannedSmoke
	var skipped []string
	for _, f := range files {
		spec, err := sweep.Load(f)
		if err != nil {
			return nil, files, skipped, err
		}
		if !contains(spec.ScaleNames(), "full") {
			skipped = append(skipped, f+": no full scale")
			continue
		}
		plan, err := spec.Resolve("full")
		if err != nil {
			return nil, files, skipped, fmt.Errorf("%s: %w", f, err)
		}
		groups := map[string]*plannedSmoke{}
		var order []string
		for _, run := range plan.Runs {
			cfg, err := reproduce.TrainConfig(run.Config)
			if err != nil {
				return nil, files, skipped, fmt.Errorf("%s run %d: %w", f, run.Index, err)
			}
			size := 224
			if v, ok := cfg.Data.Options["size"]; ok {
				fmt.Sscan(fmt.Sprint(v), &size)
			}
			key := fmt.Sprintf("%s %d² batch %d chunk %d", cfg.Model.Backbone, size, cfg.Sampler.BatchSize, cfg.Multistage.Chunk)
			if cfg.Multistage.LossBlock > 0 {
				key += fmt.Sprintf(" loss_block %d", cfg.Multistage.LossBlock)
			}
			if cfg.Mixup.Enabled {
				key += " mixup"
			}
			if cfg.Model.DualHead {
				key += " dual_head"
			}
			if len(cfg.Model.Projector) > 0 {
				key += fmt.Sprintf(" projector %v", cfg.Model.Projector)
			}
			loss := lossLabel(cfg)
			g, ok := groups[key]
			if !ok {
				g = &plannedSmoke{smokeRun: smokeRun{Paper: spec.Paper, Key: key, Backbone: cfg.Model.Backbone, Batch: cfg.Sampler.BatchSize, Size: size, Chunk: cfg.Multistage.Chunk}}
				groups[key] = g
				order = append(order, key)
			}
			g.Represent++
			if g.Loss == "" || strings.Count(loss, "+") > strings.Count(g.Loss, "+") {
				g.Loss, g.Label, g.cfg = loss, run.Label(), cfg
			}
		}
		for _, k := range order {
			g := groups[k]
			g.cfg, g.Changes = smokeConfig(g.cfg, g.Size, scale)
			out = append(out, *g)
		}
	}
	return out, files, skipped, nil
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func lossLabel(cfg train.Config) string {
	if cfg.Loss.Name == "combo" {
		if e, ok := cfg.Loss.Set["expr"]; ok {
			return fmt.Sprint(e)
		}
	}
	if len(cfg.Loss.Terms) > 0 {
		var t []string
		for _, x := range cfg.Loss.Terms {
			t = append(t, x.Name)
		}
		return strings.Join(t, "+")
	}
	return cfg.Loss.Name
}

// smokeConfig replaces what a GPU machine lacks and shortens the run; it lists every change.
func smokeConfig(cfg train.Config, size int, scale string) (train.Config, []string) {
	var ch []string
	m := cfg.Sampler.M
	if m <= 0 {
		m = 4
	}
	batch, chunk := cfg.Sampler.BatchSize, cfg.Multistage.Chunk
	if scale == "small" {
		batch, size = min(batch, 8), 64
		if chunk > 0 {
			chunk = min(chunk, 4)
		}
		ch = append(ch, fmt.Sprintf("small scale: batch %d → %d, chunk %d → %d, images %d²", cfg.Sampler.BatchSize, batch, cfg.Multistage.Chunk, chunk, size))
		cfg.Sampler.BatchSize, cfg.Multistage.Chunk = batch, chunk
		if cfg.Multistage.LossBlock > chunk && chunk > 0 {
			cfg.Multistage.LossBlock = chunk
		}
	}
	ch = append(ch, fmt.Sprintf("data %s → %s (%d² RGB, random pixels)", cfg.Data.Name, synthName, size))
	if cfg.Data.ValClasses > 0 || cfg.Data.MaxTrainClasses > 0 || cfg.Data.MaxTestClasses > 0 {
		ch = append(ch, "data.val_classes / max_*_classes dropped")
	}
	cfg.Data = train.DataConfig{Name: synthName, Options: map[string]any{
		"size": size, "channels": 3, "classes": max(2*batch/m, 2), "per_class": m, "test_classes": 16}}
	if cfg.Model.Pretrained != "" {
		ch = append(ch, "model.pretrained "+cfg.Model.Pretrained+" → none (random init)")
		cfg.Model.Pretrained = ""
	}
	if cfg.Sampler.Name == "hierarchical" {
		ch = append(ch, "sampler hierarchical → m_per_class (no coarse labels)")
		cfg.Sampler.Name = "m_per_class"
	}
	cfg.Eval.Every, cfg.Eval.EverySteps, cfg.Eval.Initial, cfg.Eval.Train = 0, 0, false, false
	cfg.Eval.Patience, cfg.Eval.OPIS, cfg.Eval.TimeLoss = 0, false, false
	cfg.Eval.BatchSize = 64
	cfg.Checkpoint = train.CheckpointConfig{Keep: 1}
	ch = append(ch, "evaluation only at the end (64 images, no OPIS), no validation split")
	return cfg, ch
}
