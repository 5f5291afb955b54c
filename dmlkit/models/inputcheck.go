package models

import (
	"fmt"
	"strings"

	"github.com/gomlx/compute"
)

// This file checks, before any graph is built, that a backbone can take the images a run gives
// it: the range of [Config].InputSize and, per backbone, the smallest side that survives its
// downsampling. A size outside them used to run out of memory (model.input_size: 100000) or
// train on features that collapsed to zero and fail at the first evaluation ("zero norm").

// The range of [Config].InputSize besides 0 (images as they come): sides below MinInputSize
// leave no spatial extent to the pretrained backbones' downsampling, sides above MaxInputSize
// (a 1024×1024×3 float32 image is 12 MiB, a batch of 128 of them 1.5 GiB before the first
// convolution) exhaust memory long before they help.
const (
	MinInputSize = 16
	MaxInputSize = 1024
)

// sideRule is what a backbone needs of the image side it is fed: at least min pixels, and a
// multiple of multiple (1: any); why says it in words, pretrained names the pretraining size.
type sideRule struct {
	min, multiple int
	why           string
	pretrained    int
}

// sideRuleFor returns the image-side rule of backbone (false: no rule beyond the range of
// [Config].InputSize, e.g. the small CNN, which pools only even maps, or onnx, whose file
// decides: [ONNXBackbone.CheckInput]).
func sideRuleFor(backbone string) (sideRule, bool) {
	switch backbone {
	case "resnet18", "resnet50":
		return sideRule{min: 32, multiple: 1, why: "downsamples by 32 (a 7×7 map at 224)", pretrained: 224}, true
	case "mobilenet_v2", "mobilenet_v1":
		return sideRule{min: 32, multiple: 1, why: "downsamples by 32 (a 7×7 map at 224)", pretrained: 224}, true
	}
	if spec, ok := ViTSpecFor(backbone); ok {
		return sideRule{min: spec.Patch, multiple: spec.Patch, why: fmt.Sprintf("cuts the image into %d×%d patches", spec.Patch, spec.Patch), pretrained: spec.ImageSize}, true
	}
	return sideRule{}, false
}

// check returns "" when side h×w suits the rule, else what is wrong with it.
func (r sideRule) check(h, w int) string {
	if h < r.min || w < r.min {
		return fmt.Sprintf("needs images of at least %d×%d", r.min, r.min)
	}
	if h%r.multiple != 0 || w%r.multiple != 0 {
		return fmt.Sprintf("needs a side that is a multiple of %d", r.multiple)
	}
	return ""
}

// advice is the model.input_size to suggest: the pretraining size, else the smallest allowed.
func (r sideRule) advice() string {
	least := max(r.min, MinInputSize)
	least = (least + r.multiple - 1) / r.multiple * r.multiple
	if r.pretrained > 0 {
		return fmt.Sprintf("set model.input_size: %d (its pretraining size; %d or more%s will run)", r.pretrained, least, multipleWords(r.multiple))
	}
	return fmt.Sprintf("set model.input_size: %d or more%s", least, multipleWords(r.multiple))
}

func multipleWords(m int) string {
	if m <= 1 {
		return ""
	}
	return fmt.Sprintf(", a multiple of %d", m)
}

// validateInputSize checks InputSize against [MinInputSize] … [MaxInputSize] and the backbone's
// side rule; f names a field.
func (c *Config) validateInputSize(f func(string) string) error {
	s := c.InputSize
	if s == 0 {
		return nil
	}
	if c.Backbone == "features" {
		return fmt.Errorf("%s: %d: only with an image backbone (backbone features takes feature vectors)", f("input_size"), s)
	}
	if s < MinInputSize || s > MaxInputSize {
		return fmt.Errorf("%s: %d: want 0 (the images as they come) or %d … %d", f("input_size"), s, MinInputSize, MaxInputSize)
	}
	if r, ok := sideRuleFor(c.Backbone); ok {
		if why := r.check(s, s); why != "" {
			return fmt.Errorf("%s: %d: backbone %s %s and %s: %s", f("input_size"), s, c.Backbone, r.why, why, r.advice())
		}
	}
	return nil
}

// CheckImages checks, before any graph is built, that the backbone of cfg takes h×w×c images
// (the data's, before cfg.InputSize resizes them). With InputSize 0 the images' own side must
// follow the backbone's rule (a ResNet or MobileNet needs at least 32 px, a ViT a multiple of
// its patch). For backbone onnx it reads cfg.Pretrained and checks the network's input and
// output against the images, then builds the network once on a batch of such images in a graph
// of its own on be — with train (the backbone's weights are trained), also their gradients —
// see [ONNXBackbone.CheckInput] (be nil: no trial build). Backbone features, and the cached
// maps of a trainable tail (cfg.TailInput), are not checked.
//
// Errors name the field to change (model.input_size, model.pretrained and its file,
// model.onnx_layout, model.onnx_output, model.freeze_backbone) and the value to set where one
// is known.
func CheckImages(be compute.Backend, cfg Config, h, w, c int, train bool) error {
	if cfg.Backbone == "features" || cfg.TailInput {
		return nil
	}
	if h <= 0 || w <= 0 || c <= 0 {
		return fmt.Errorf("model.backbone %s: the images are %d×%d×%d: want a positive size", cfg.Backbone, h, w, c)
	}
	sh, sw := h, w
	if cfg.InputSize > 0 {
		sh, sw = cfg.InputSize, cfg.InputSize
	}
	if r, ok := sideRuleFor(cfg.Backbone); ok {
		if why := r.check(sh, sw); why != "" {
			if cfg.InputSize > 0 {
				return fmt.Errorf("model.input_size: %d: backbone %s %s and %s: %s", cfg.InputSize, cfg.Backbone, r.why, why, r.advice())
			}
			return fmt.Errorf("model.input_size: 0 (the images as they come, %d×%d): backbone %s %s and %s: %s", h, w, cfg.Backbone, r.why, why, r.advice())
		}
	}
	if cfg.Backbone != "onnx" {
		return nil
	}
	b, err := OpenONNXBackbone(cfg)
	if err != nil {
		return err
	}
	return b.CheckInput(be, cfg, h, w, c, train)
}

// firstLine is the first line of s (a panic's message without what follows it).
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
