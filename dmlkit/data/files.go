package data

import (
	"fmt"
	"strings"
)

// Files is a benchmark split kept as image paths: the full-scale sets are decoded by the image
// pipeline, not held in memory. Paths are complete (root joined), Labels[i] is the class of
// Paths[i]; the optional slices are nil when the benchmark has no such field.
type Files struct {
	Name       string
	Paths      []string
	Labels     []int32
	Coarse     []int32    // SOP super-class, iNaturalist super-category (0-based)
	Cams       []int32    // Market-1501 camera (1-based)
	BBoxes     [][4]int32 // Cars196 bounding box x1, y1, x2, y2 (1-based pixels, inclusive)
	ClassNames map[int32]string
}

// Len is the number of images.
func (f *Files) Len() int { return len(f.Paths) }

// NumClasses is the number of distinct labels.
func (f *Files) NumClasses() int { return len(Distinct(f.Labels)) }

// FileSplit holds the standard split(s) of a benchmark. Retrieval benchmarks fill Train and Test;
// In-Shop and Market-1501 fill Train, Query and Gallery.
type FileSplit struct {
	Train, Test, Query, Gallery *Files
}

// String summarises the split sizes.
func (s *FileSplit) String() string {
	var parts []string
	for _, p := range []struct {
		n string
		f *Files
	}{{"train", s.Train}, {"test", s.Test}, {"query", s.Query}, {"gallery", s.Gallery}} {
		if p.f != nil {
			parts = append(parts, fmt.Sprintf("%s %d images / %d classes", p.n, p.f.Len(), p.f.NumClasses()))
		}
	}
	return strings.Join(parts, "; ")
}
