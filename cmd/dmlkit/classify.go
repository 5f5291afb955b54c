package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/classify"
)

func init() {
	register("classify", "classify images with a TFLite ImageNet model (e.g. ../shared/weights/coral): top-K labels", runClassify)
}

func runClassify(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("classify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: dmlkit classify --weights MODEL.tflite [--top K] [--resize bilinear|nearest] IMAGE...")
		fmt.Fprintln(stderr, "\nEach image (BMP, JPEG or PNG) is resized whole to the model's input size and classified;")
		fmt.Fprintln(stderr, "labels come from imagenet_labels.txt or inat_bird_labels.txt beside the model, whichever has")
		fmt.Fprintln(stderr, "one line per output. A model without a final softmax (an embedding extractor) prints the")
		fmt.Fprintln(stderr, "embedding's size and L2 norm.")
		fs.PrintDefaults()
	}
	weights := fs.String("weights", "", "the .tflite model (required)")
	top := fs.Int("top", 5, "how many labels to print per image")
	resize := fs.String("resize", "bilinear", "bilinear (half-pixel centres, no antialiasing) or nearest")
	// Flags may follow the images too.
	var images []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return errUsage
		}
		if fs.NArg() == 0 {
			break
		}
		images = append(images, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if *weights == "" || len(images) == 0 {
		fmt.Fprintln(stderr, "dmlkit classify: --weights and at least one image are required")
		fs.Usage()
		return errUsage
	}
	if *top < 1 {
		return fmt.Errorf("--top %d: want ≥ 1", *top)
	}
	if *resize != "bilinear" && *resize != "nearest" {
		return fmt.Errorf("--resize %q: want bilinear or nearest", *resize)
	}
	b, err := backend.Shared()
	if err != nil {
		return err
	}
	c, err := classify.Load(b, *weights)
	if err != nil {
		return fmt.Errorf("--weights: %w", err)
	}
	res, err := c.Files(images, *resize)
	if err != nil {
		return err
	}
	m := c.Model
	for i, r := range res {
		fmt.Fprintf(stdout, "%s  [%s, %d×%d, %s resize]\n", images[i], filepath.Base(*weights), m.InputH, m.InputW, *resize)
		if r.Probs == nil {
			fmt.Fprintf(stdout, "  embedding: %d-d, L2 norm %.4f\n", len(r.Logits), r.Norm())
			continue
		}
		for _, k := range r.Top(*top) {
			label := ""
			if c.Labels != nil {
				label = c.Labels[k]
			}
			fmt.Fprintf(stdout, "  %.4f  %4d  %s\n", r.Probs[k], k, strings.TrimSpace(label))
		}
	}
	return nil
}
