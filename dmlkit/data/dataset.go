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
