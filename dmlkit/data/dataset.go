// Package data loads the datasets dmlkit trains and evaluates on: the benchmark loaders
// (CUB-200-2011, Cars196, SOP, In-Shop, iNaturalist-2018, VehicleID, Market-1501, verification
// pairs) for users who bring the data, the small-scale sets this project ships or can reach
// (Omniglot, MNIST, Fashion-MNIST, CIFAR-10), users' own image folders, synthetic generators, the
// image pipeline and the corruption harness. It knows nothing of GoMLX, losses or training.
//
// It also turns a loaded dataset into the sets a run trains and is evaluated on, in one pass
// for every dataset kind ([PrepareSets]): the classes are chosen once ([SelectClassSplit]: class
// selection, class limits, validation classes), in-memory training images are corrupted
// ([Prepare]) and the training augmentation is attached ([AugmentedImages]); with a fixed
// backbone part, [FrozenStage] then replaces the inputs by their cached features
// ([FeatureCache]; the trainer supplies the extractor). The sets ([Set]: [ImageSet], [Features],
// [ClassSubset], [CutMaps]) are what the trainer consumes.
//
// Natural images held in memory ([Images], [N, H, W, 3] uint8) come from two loaders that share
// one decoder and one resize (package raster: the pipeline's antialiased bilinear filter applied
// to each whole image, 3·S² bytes per image at side S):
//   - [LoadImageFolder] reads <root>/{train,test}/<class>/*.{jpg,jpeg,png} or <root>/<class>/*,
//     with class names from the folders, labels in name order and a class-disjoint split by a
//     stated rule ([ImageFolderOptions]); [ListImageFolder] lists it without decoding;
//   - [CIFAR10] reads CIFAR-10 straight from its archive, checksum-verified first: the binary
//     release `dmlkit data fetch cifar10` downloads, or the JPEG copy in ../shared/data/cifar10
//     ([FindCIFAR10]), with that copy's class-disjoint split (classes 0–4 train, 5–9 test).
//
// Both decode with a bounded number of goroutines; their class-disjoint validation classes come
// from [ValClassSplit], as [Prepare]'s do. Training augmentations (random resized crop, flip) are
// drawn per epoch and image ([AugmentedImages.FillEpoch], called by the training loop).
package data

import (
	"fmt"
	"strings"
)

// Images is an in-memory set of equally sized uint8 images with integer class labels.
//
// Pixels are stored row-major as [N, H, W, C] (NHWC) in Pix, one byte per channel, 0 = black.
// Labels[i] is the class of image i. Coarse, when non-nil, holds a coarser label per image
// (e.g. SOP super-class, Omniglot alphabet). ClassNames, when non-nil, is indexed by label.
type Images struct {
	Name       string
	N, H, W, C int
	Pix        []uint8
	Labels     []int32
	Coarse     []int32
	ClassNames []string
}

// Image returns the pixels of image i as a sub-slice of Pix ([H, W, C]).
func (s *Images) Image(i int) []uint8 {
	sz := s.H * s.W * s.C
	return s.Pix[i*sz : (i+1)*sz]
}

// Validate checks the internal consistency of s and returns an error naming the problem.
func (s *Images) Validate() error {
	if s.N < 0 || s.H <= 0 || s.W <= 0 || s.C <= 0 {
		return fmt.Errorf("data: %s: bad dimensions N=%d H=%d W=%d C=%d", s.Name, s.N, s.H, s.W, s.C)
	}
	if len(s.Pix) != s.N*s.H*s.W*s.C {
		return fmt.Errorf("data: %s: %d pixel bytes, want N·H·W·C = %d", s.Name, len(s.Pix), s.N*s.H*s.W*s.C)
	}
	if len(s.Labels) != s.N {
		return fmt.Errorf("data: %s: %d labels for %d images", s.Name, len(s.Labels), s.N)
	}
	if s.Coarse != nil && len(s.Coarse) != s.N {
		return fmt.Errorf("data: %s: %d coarse labels for %d images", s.Name, len(s.Coarse), s.N)
	}
	return nil
}

// NumClasses returns the number of distinct labels in s.
func (s *Images) NumClasses() int {
	seen := map[int32]struct{}{}
	for _, l := range s.Labels {
		seen[l] = struct{}{}
	}
	return len(seen)
}

// Split is a train/test (and optional validation) partition of one dataset. For open-set
// (class-disjoint) splits the classes of Train and Test do not overlap.
type Split struct {
	Train, Val, Test *Images
}

// String describes the split sizes, e.g. for `dmlkit data info`.
func (s *Split) String() string {
	var parts []string
	for _, p := range []struct {
		n string
		s *Images
	}{{"train", s.Train}, {"val", s.Val}, {"test", s.Test}} {
		if p.s != nil {
			parts = append(parts, fmt.Sprintf("%s %d images / %d classes (%dx%dx%d)", p.n, p.s.N, p.s.NumClasses(), p.s.H, p.s.W, p.s.C))
		}
	}
	return strings.Join(parts, "; ")
}
