package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/dmlkit/dmlkit/dmlkit/demo"
)

func init() {
	register("demo", "end-to-end open-set retrieval demo on MNIST (embedded Go module); prints retrieval metrics", runDemo)
}

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("mnist", "", "directory with the MNIST IDX .gz files (default: the GoMNIST Go module)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	quiet := fs.Bool("quiet", false, "no progress output (the result table, the demo's only output, is still printed)")
	seed := fs.Int64("seed", 0, "random seed")
	steps := fs.Int("steps", 300, "training steps of the small CNN (negative: skip training)")
	out := fs.String("out", "", "keep the training run directory here (default: a temporary directory, removed)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	opt := demo.Options{MNISTDir: *dir, Seed: *seed, TrainSteps: *steps, RunDir: *out}
	if !*quiet {
		opt.Progress = newProgressPrinter(stderr).update
	}
	rep, err := demo.Run(context.Background(), opt)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "MNIST open-set retrieval: train on digits %v (%d images), evaluate on unseen digits %v (%d test images, leave-one-out)\n\n",
		rep.TrainClasses, rep.TrainImages, rep.TestClasses, rep.TestImages)
	keys := []string{"R@1", "R@2", "R@4", "R@8", "MAP@R", "R-Precision"}
	fmt.Fprintf(stdout, "%-34s %5s", "method", "dim")
	for _, k := range keys {
		fmt.Fprintf(stdout, " %11s", k)
	}
	fmt.Fprintf(stdout, " %8s\n", "time")
	for _, r := range rep.Rows {
		fmt.Fprintf(stdout, "%-34s %5d", r.Method, r.Dim)
		for _, k := range keys {
			fmt.Fprintf(stdout, " %11.2f", 100*r.Metrics[k])
		}
		fmt.Fprintf(stdout, " %7.1fs\n", r.Seconds)
	}
	fmt.Fprintln(stdout, "\n(metrics in %; R@k = hit rate; MAP@R and R-Precision with R = number of same-class test images − 1.")
	fmt.Fprintln(stdout, " Pixels already saturate R@1 on digits; MAP@R, which scores the whole ranking, shows what training adds.)")
	return nil
}
