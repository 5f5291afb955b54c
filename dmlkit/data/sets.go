package data

import (
	"embed"
	"sort"
)

// The sets a run trains and is evaluated on, whatever the dataset kind: in-memory images
// ([ImageSet], [AugmentedImages]), precomputed feature vectors ([Features]) and sets decoded on
// demand (implemented outside this package), with the class views [PrepareSets] cuts from them.

// SetSource is the source of this package's part of the path from a stored input to the floats a
// model sees and to its cached features (the pixels' conversion, the class views, the batching of
// [FrozenStage], the degraded test sets of [Degraded]), for the trainer's feature-cache code
// fingerprint.
//
//go:embed sets.go frozen.go degrade.go
var SetSource embed.FS

// Set is a labelled set of equally shaped float inputs: images (from [Images], pixels
// scaled to [0, 1]) or precomputed feature vectors ([Features]).
type Set interface {
	Len() int
	// Dims is the shape of one input: (H, W, C) for images, (1, 1, F) for features.
	Dims() (h, w, c int)
	Labels() []int32
	// Coarse returns super-class labels, or nil.
	Coarse() []int32
	// Fill writes inputs idx, row after row, into dst (len(idx)·H·W·C floats).
	Fill(idx []int, dst []float32)
}

// ImageSet adapts data.Images to [Set].
type ImageSet struct{ *Images }

func (s ImageSet) Len() int                    { return s.N }
func (s ImageSet) Dims() (int, int, int)       { return s.H, s.W, s.C }
func (s ImageSet) Labels() []int32             { return s.Images.Labels }
func (s ImageSet) Coarse() []int32             { return s.Images.Coarse }
func (s ImageSet) Fill(idx []int, d []float32) { pixels(s.Images, idx, d) }

// Features is a set of precomputed feature vectors X [N, F] (row-major) with labels: the input of
// precomputed-feature mode (backbone run once and cached, only the head trained; seed 004
// Fig. 8–9). Use it with model.backbone: features.
type Features struct {
	N, F         int
	X            []float32
	Label, Super []int32 // Super (coarse labels) may be nil
}

func (f *Features) Len() int              { return f.N }
func (f *Features) Dims() (int, int, int) { return 1, 1, f.F }
func (f *Features) Labels() []int32       { return f.Label }
func (f *Features) Coarse() []int32       { return f.Super }
func (f *Features) Fill(idx []int, d []float32) {
	for i, j := range idx {
		copy(d[i*f.F:(i+1)*f.F], f.X[j*f.F:(j+1)*f.F])
	}
}

// FeatureSplit is the [Features] counterpart of [Split].
type FeatureSplit struct{ Train, Val, Test *Features }

// SetSplit is the train/val/test partition of a dataset whose sets are arbitrary [Set]s (e.g.
// prepare.FileSet, decoded on demand). Val may be nil.
type SetSplit struct{ Train, Val, Test Set }

// EpochFiller is implemented by training sets whose inputs change from epoch to epoch (random
// crops and flips). The training loop calls FillEpoch instead of [Set.Fill] for every batch.
type EpochFiller interface {
	// FillEpoch writes the training inputs idx of epoch into dst (as Fill: len(idx)·H·W·C
	// floats). The augmentation of each image is a function of the run seed, the epoch and the
	// image only. next lists the batches that follow in the epoch (a hint: the set may start
	// decoding them). Errors name the file at fault.
	FillEpoch(epoch int, idx []int, next [][]int, dst []float32) error
}

// ClassSubset is a view of the inputs idx of a base set: the inputs of some of its classes
// ([NewClassSubset]).
type ClassSubset struct {
	base Set
	idx  []int
	lab  []int32
	co   []int32
}

// NewClassSubset is the view of the inputs of base whose label keep accepts, in base's order.
func NewClassSubset(base Set, keep func(label int32) bool) Set {
	s := &ClassSubset{base: base}
	bl, bc := base.Labels(), base.Coarse()
	for i, l := range bl {
		if keep(l) {
			s.idx = append(s.idx, i)
			s.lab = append(s.lab, l)
			if bc != nil {
				s.co = append(s.co, bc[i])
			}
		}
	}
	return s
}

// Base is the set s views, and Index(i) the index in Base of input i of s.
func (s *ClassSubset) Base() Set       { return s.base }
func (s *ClassSubset) Index(i int) int { return s.idx[i] }

func (s *ClassSubset) Len() int              { return len(s.idx) }
func (s *ClassSubset) Dims() (int, int, int) { return s.base.Dims() }
func (s *ClassSubset) Labels() []int32       { return s.lab }
func (s *ClassSubset) Coarse() []int32       { return s.co }
func (s *ClassSubset) Fill(idx []int, d []float32) {
	m := make([]int, len(idx))
	for i, j := range idx {
		m[i] = s.idx[j]
	}
	s.base.Fill(m, d)
}

// MaxLookahead bounds the number of upcoming batches a set is told about (and prefetches).
const MaxLookahead = 8

// FillEpoch forwards to the base set, mapping the indices (at most MaxLookahead upcoming
// batches are mapped).
func (s *ClassSubset) FillEpoch(epoch int, idx []int, next [][]int, dst []float32) error {
	m := func(b []int) []int {
		out := make([]int, len(b))
		for i, j := range b {
			out[i] = s.idx[j]
		}
		return out
	}
	f, ok := s.base.(EpochFiller)
	if !ok {
		s.base.Fill(m(idx), dst)
		return nil
	}
	next = next[:min(len(next), MaxLookahead)]
	nm := make([][]int, len(next))
	for i, b := range next {
		nm[i] = m(b)
	}
	return f.FillEpoch(epoch, m(idx), nm, dst)
}

// ClassesOf returns the distinct labels of s, ascending.
func ClassesOf(s Set) []int32 {
	seen := map[int32]bool{}
	var out []int32
	for _, l := range s.Labels() {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// BaseSet is the set a chain of class subsets (class limits, validation splits) views.
func BaseSet(s Set) Set {
	for {
		v, ok := s.(*ClassSubset)
		if !ok {
			return s
		}
		s = v.base
	}
}

// pixels writes images idx of s as float32 in [0, 1] ([len(idx), H, W, C]) into dst.
func pixels(s *Images, idx []int, dst []float32) {
	sz := s.H * s.W * s.C
	for i, j := range idx {
		src := s.Pix[j*sz : (j+1)*sz]
		d := dst[i*sz : (i+1)*sz]
		for k, p := range src {
			d[k] = float32(p) * (1.0 / 255)
		}
	}
}
