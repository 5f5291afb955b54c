package models

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// inputError is an error about the images a backbone is given, already naming the field and
// the file; [ONNXBackbone.Apply] panics with it (an error value, so that GoMLX's executors
// return it as an error) and [ONNXBackbone.CheckInput] returns it as it is.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func inputErrorf(format string, args ...any) error {
	return &inputError{msg: fmt.Sprintf(format, args...)}
}

// checkChannels returns an error when h×w×c images (NHWC, after any resize) do not suit the
// network's input channels, or cfg.InputNorm imagenet the network's channel count.
func (b *ONNXBackbone) checkChannels(cfg Config, h, w, c int) error {
	if c != b.Channels && !(c == 1 && b.Channels == 3) {
		// The layout read the wrong way round: the other layout's channel axis fits.
		other, axis := onnxNHWC, 3
		if b.Layout == onnxNHWC {
			other, axis = onnxNCHW, 1
		}
		if k := b.inputFixed[axis]; k == c || (c == 1 && k == 3) {
			field := "model.pretrained"
			if cfg.ONNXLayout != "" {
				field = "model.onnx_layout: " + cfg.ONNXLayout
			}
			return inputErrorf("%s: %s: input %q %s read as %s has %s, the images are %d×%d×%d; read as %s it has %s: set model.onnx_layout: %s",
				field, b.Path, b.Input, b.InputDims, b.Layout, channelWords(b.Channels), h, w, c, other, channelWords(k), other)
		}
		return inputErrorf("model.pretrained: %s: input %q wants %s (%s: %s), the images are %d×%d×%d: give it %d-channel images (grey ones are repeated to 3 channels) or export the network for %s",
			b.Path, b.Input, b.InputDims, b.Layout, channelWords(b.Channels), h, w, c, b.Channels, channelWords(c))
	}
	if cfg.InputNorm == "imagenet" && b.Channels != 3 {
		return inputErrorf("model.input_norm: imagenet normalises 3 channels; %s input %q takes %d (%s): set model.input_norm: none", b.Path, b.Input, b.Channels, b.InputDims)
	}
	return nil
}

// outputRankError is the error of an output of shape dims (its rank neither 2 nor 4).
func (b *ONNXBackbone) outputRankError(dims string) error {
	field := "model.pretrained"
	if b.namedOutput {
		field = "model.onnx_output"
	}
	return inputErrorf("%s: %s: output %q is %s; a backbone's output is [B, F] features or a [B, C, H, W] map: name such a node output in model.onnx_output", field, b.Path, b.Output, dims)
}

// CheckInput checks, before the run's graphs are built, that the network takes h×w×c images
// (NHWC, the data's, before cfg.InputSize resizes them): their channels (grey images are
// repeated to 3; a layout read the wrong way round is named), the output's declared rank
// (2 or 4), and then by building the network — alone, in a graph of its own on be, on a batch
// of 2 such images, with variables in a store of its own (a copy of the weights, dropped after) —
// that its ops accept that image size and, with train, have gradients.
//
// Errors name the field to change and the file: model.pretrained (with the network's input name
// and declared shape, the images' size and, when the network fails at another size than its
// export size, the model.input_size to set), model.onnx_layout, model.onnx_output, or, for an op
// without a gradient (TopK becomes a Sort), model.freeze_backbone: true. With be nil only the
// checks without a graph are made.
func (b *ONNXBackbone) CheckInput(be compute.Backend, cfg Config, h, w, c int, train bool) (err error) {
	sh, sw := h, w
	if cfg.InputSize > 0 {
		sh, sw = cfg.InputSize, cfg.InputSize
	}
	if err := b.checkChannels(cfg, sh, sw, c); err != nil {
		return err
	}
	if b.outputKnown && b.outputRank != 2 && b.outputRank != 4 {
		return b.outputRankError(b.OutputDims + " in the file")
	}
	if be == nil {
		return nil
	}
	g := NewGraph(be, "dmlkit_onnx_check")
	defer g.Finalize()
	store := model.NewStore()
	phase := "forward"
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err = b.trialError(r, phase, cfg, h, w, c, sh, sw)
	}()
	x := Parameter(g, "images", shapes.Make(dtypes.Float32, 2, h, w, c))
	if cfg.InputSize > 0 {
		x = ResizeImages(x, cfg.InputSize)
	}
	scope := store.RootScope().At("backbone")
	f := b.Apply(scope, cfg, x)
	if !train {
		return nil
	}
	phase = "gradient"
	var vars []*Node
	for v := range store.IterVariables() {
		if v.Trainable && v.InUseByGraph(g) {
			vars = append(vars, v.NodeValue(g))
		}
	}
	if len(vars) > 0 {
		Gradient(ReduceAllSum(f), vars...)
	}
	return nil
}

// gradientOp finds the op in GoMLX's "graph has node Node #17 Sort -> … for which no gradient
// is defined" panic.
var gradientOp = regexp.MustCompile(`Node #\d+ (\w+) .*no gradient is defined`)

// channelWords is "1 channel", "3 channels".
func channelWords(n int) string {
	if n == 1 {
		return "1 channel"
	}
	return fmt.Sprintf("%d channels", n)
}

// trialError turns a panic r of [ONNXBackbone.CheckInput]'s trial build into an error naming
// the field to change. Its own input errors pass as they are.
func (b *ONNXBackbone) trialError(r any, phase string, cfg Config, h, w, c, sh, sw int) error {
	var ie *inputError
	if e, ok := r.(error); ok && errors.As(e, &ie) {
		return ie
	}
	cause := firstLine(fmt.Sprint(r))
	images := fmt.Sprintf("%d×%d×%d", h, w, c)
	if cfg.InputSize > 0 {
		images += fmt.Sprintf(" resized to %d×%d (model.input_size)", sh, sw)
	}
	if phase == "gradient" {
		what := cause
		if m := gradientOp.FindStringSubmatch(cause); m != nil {
			what = fmt.Sprintf("op %s has no gradient in GoMLX (ONNX TopK becomes a Sort)", m[1])
		}
		return fmt.Errorf("model.pretrained: %s: the network's weights cannot be trained: %s; set model.freeze_backbone: true to train a head on its fixed features", b.Path, what)
	}
	if b.ExportH > 0 && b.ExportW > 0 && (b.ExportH != sh || b.ExportW != sw) {
		set := fmt.Sprintf("set model.input_size: %d", b.ExportH)
		if b.ExportH != b.ExportW || b.ExportH < MinInputSize || b.ExportH > MaxInputSize {
			set = fmt.Sprintf("resize the images to %d×%d (data.options.size)", b.ExportH, b.ExportW)
		}
		return fmt.Errorf("model.pretrained: %s: input %q wants %s (%s), the images are %s, and the network does not run at another size than its export size (%s): %s",
			b.Path, b.Input, b.InputDims, b.Layout, images, cause, set)
	}
	return fmt.Errorf("model.pretrained: %s: the network (input %q, %s, %s) cannot be built on the images, %s: %s", b.Path, b.Input, b.InputDims, b.Layout, images, cause)
}
