package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
	"github.com/dmlkit/dmlkit/dmlkit/train"
)

func init() {
	register("train", "train an embedding model from a run config: --config run.yaml [--set key=value ...] --out DIR", runTrain)
}

// setFlags collects repeated --set key=value flags.
type setFlags []string

func (s *setFlags) String() string     { return strings.Join(*s, " ") }
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "run configuration (YAML); empty: the built-in default (small CNN on Omniglot)")
	out := fs.String("out", "", "run directory (created; required)")
	var sets setFlags
	fs.Var(&sets, "set", "override a configuration field, key=value (repeatable), e.g. --set optimizer.lr=1e-4 --set loss.set.neg_margin=0.5")
	resume := fs.Bool("resume", false, "continue from the newest checkpoint in --out")
	printCfg := fs.Bool("print-config", false, "print the resolved configuration and exit")
	quiet := fs.Bool("quiet", false, "no progress bar, no per-evaluation metric lines (the final summary only)")
	extract := fs.String("extract-features", "", "instead of training, run the backbone once over the dataset and write {train,val,test}_{features,labels}.npy into this directory (precomputed-feature mode: train a head on them with data.name=npy-features, data.options.dir=DIR, model.backbone=features)")
	weights := fs.String("weights", "", "with --extract-features: take the backbone weights from the newest checkpoint of this run directory (default: model.pretrained or the seeded initialisation)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: dmlkit train --config run.yaml [--set key=value ...] --out DIR\n\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nregistered datasets: %s\n", strings.Join(prepare.Datasets(), ", "))
	}
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "train: unexpected arguments %q\n", fs.Args())
		return errUsage
	}
	cfg := train.Default()
	if *cfgPath != "" {
		var err error
		if cfg, err = train.LoadConfig(*cfgPath); err != nil {
			return err
		}
	}
	kv, err := config.ParseAssignments(sets)
	if err != nil {
		return err
	}
	if err := cfg.Apply(kv); err != nil {
		return err
	}
	if *printCfg {
		y, err := cfg.YAML()
		if err != nil {
			return err
		}
		_, err = stdout.Write(y)
		return err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("train: config: %w", err)
	}
	if *extract != "" {
		if err := train.ExtractFeatures(cfg, *weights, *extract); err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stdout, "features written to %s\n", *extract)
		}
		return nil
	}
	if *out == "" {
		fmt.Fprintln(stderr, "train: --out DIR is required")
		return errUsage
	}
	if *resume {
		// --resume names a run to continue: a directory that does not exist (a typo) would
		// silently train from scratch.
		st, err := os.Stat(*out)
		if err != nil || !st.IsDir() {
			return fmt.Errorf("train: --resume --out %s: no such run directory (nothing to resume; leave out --resume to start a new run)", *out)
		}
		if ck, err := train.LatestCheckpoint(*out); err == nil && ck == "" {
			fmt.Fprintf(stderr, "train: --resume: %s holds no checkpoint yet; starting from step 0\n", *out)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bar := &progressBar{w: stderr, quiet: *quiet}
	res, err := train.RunWithOptions(ctx, cfg, *out, train.Options{Resume: *resume, Progress: func(p train.Progress) {
		if p.Phase == "features" { // model.freeze_backbone: the backbone's features being computed
			if !*quiet && p.Step == p.TotalSteps {
				bar.clear()
				fmt.Fprintf(stdout, "backbone features of %d images computed and cached\n", p.TotalSteps)
			}
			return
		}
		if p.Phase == "warning" {
			bar.clear()
			fmt.Fprintf(stderr, "train: %s\n", p.Message)
			return
		}
		if p.Phase == "eval" {
			if !*quiet { // --quiet: the final "done" line only
				bar.clear()
				fmt.Fprintf(stdout, "step %d/%d  %s\n", p.Step, p.TotalSteps, formatMetrics(p.Metrics))
			}
			return
		}
		bar.update(p)
	}})
	bar.clear()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("train: interrupted; resume with --resume --out %s (%v)", *out, err)
		}
		return err
	}
	for _, c := range res.ResumeChanges {
		fmt.Fprintf(stderr, "train: resumed with a changed setting (allowed): %s\n", c)
	}
	fmt.Fprintf(stdout, "done: %d steps, final loss %.4f%s; run directory %s\n", res.Steps, res.FinalLoss,
		map[bool]string{true: " (early stop)", false: ""}[res.StoppedEarly], res.OutDir)
	return nil
}

// formatMetrics prints the R@1 / MAP@R style keys, sorted, compactly.
func formatMetrics(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.Contains(k, "n_") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%.4f", k, m[k])
	}
	return strings.Join(parts, " ")
}

// progressBar renders "[=====>    ] step/total loss ETA" on one terminal line, at most 5 times a
// second.
type progressBar struct {
	w     io.Writer
	quiet bool
	last  time.Time
	shown bool
}

func (b *progressBar) update(p train.Progress) {
	if b.quiet || (time.Since(b.last) < 200*time.Millisecond && p.Step < p.TotalSteps) {
		return
	}
	b.last = time.Now()
	frac := float64(p.Step) / float64(max(p.TotalSteps, 1))
	fmt.Fprintf(b.w, "\r[%s] %d/%d ep %d/%d loss %.4f lr %.2g ETA %s   ", barString(frac), p.Step, p.TotalSteps, p.Epoch+1, p.Epochs,
		p.Loss, p.LR, p.ETA.Round(time.Second))
	b.shown = true
}

func (b *progressBar) clear() {
	if b.shown {
		fmt.Fprintf(b.w, "\r%s\r", strings.Repeat(" ", 100))
		b.shown = false
	}
}
