package data

import (
	"fmt"
	"sort"
)

// Subset returns a new Images holding copies of the images idx (in that order), with their
// labels, coarse labels and the same ClassNames.
func (s *Images) Subset(idx []int) *Images {
	sz := s.H * s.W * s.C
	out := &Images{Name: s.Name, N: len(idx), H: s.H, W: s.W, C: s.C, ClassNames: s.ClassNames,
		Pix: make([]uint8, len(idx)*sz), Labels: make([]int32, len(idx))}
	if s.Coarse != nil {
		out.Coarse = make([]int32, len(idx))
	}
	for j, i := range idx {
		copy(out.Pix[j*sz:(j+1)*sz], s.Pix[i*sz:(i+1)*sz])
		out.Labels[j] = s.Labels[i]
		if s.Coarse != nil {
			out.Coarse[j] = s.Coarse[i]
		}
	}
	return out
}

// Clone returns a deep copy of s (ClassNames is shared; it is never modified by this package).
func (s *Images) Clone() *Images {
	idx := make([]int, s.N)
	for i := range idx {
		idx[i] = i
	}
	return s.Subset(idx)
}

// FilterClasses returns the images whose label satisfies keep, in their original order.
func (s *Images) FilterClasses(keep func(label int32) bool) *Images {
	var idx []int
	for i, l := range s.Labels {
		if keep(l) {
			idx = append(idx, i)
		}
	}
	return s.Subset(idx)
}

// Classes returns the distinct labels of s in increasing order.
func (s *Images) Classes() []int32 {
	return Distinct(s.Labels)
}

// Distinct returns the distinct labels in increasing order.
func Distinct(labels []int32) []int32 {
	seen := map[int32]struct{}{}
	var out []int32
	for _, l := range labels {
		if _, ok := seen[l]; !ok {
			seen[l] = struct{}{}
			out = append(out, l)
		}
	}
	sort.Slice(out, func(a, b int) bool { return out[a] < out[b] })
	return out
}

// Concat joins sets of equal image size into one; Coarse is kept only if every part has it.
// ClassNames is taken from the first part that has it.
func Concat(name string, parts ...*Images) (*Images, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("data: Concat %s: no parts", name)
	}
	h, w, c := parts[0].H, parts[0].W, parts[0].C
	out := &Images{Name: name, H: h, W: w, C: c}
	coarse := true
	for _, p := range parts {
		if p.H != h || p.W != w || p.C != c {
			return nil, fmt.Errorf("data: Concat %s: part %s is %dx%dx%d, want %dx%dx%d", name, p.Name, p.H, p.W, p.C, h, w, c)
		}
		coarse = coarse && p.Coarse != nil
		if out.ClassNames == nil {
			out.ClassNames = p.ClassNames
		}
	}
	for _, p := range parts {
		out.N += p.N
		out.Pix = append(out.Pix, p.Pix...)
		out.Labels = append(out.Labels, p.Labels...)
		if coarse {
			out.Coarse = append(out.Coarse, p.Coarse...)
		}
	}
	return out, nil
}

// OpenSet returns the class-disjoint split used for the MNIST-style sets: Train keeps the
// images of s.Train whose label satisfies isTrain, Test keeps the images of s.Test whose label
// does not (e.g. digits 0–4 for training, 5–9 for testing, with [DigitsLow]). Val is filtered
// like Train when present.
func OpenSet(s *Split, isTrain func(label int32) bool) *Split {
	out := &Split{}
	if s.Train != nil {
		out.Train = s.Train.FilterClasses(isTrain)
		out.Train.Name = s.Train.Name + "/openset-train"
	}
	if s.Val != nil {
		out.Val = s.Val.FilterClasses(isTrain)
	}
	if s.Test != nil {
		out.Test = s.Test.FilterClasses(func(l int32) bool { return !isTrain(l) })
		out.Test.Name = s.Test.Name + "/openset-test"
	}
	return out
}

// DigitsLow is the standard open-set rule for 10-class sets: classes 0–4 train, 5–9 test.
func DigitsLow(label int32) bool { return label < 5 }

// Float32 returns the pixels as float32 in [0, 1] (pixel/255), NHWC, the layout GoMLX image
// tensors take.
func (s *Images) Float32() []float32 {
	out := make([]float32, len(s.Pix))
	for i, p := range s.Pix {
		out[i] = float32(p) / 255
	}
	return out
}

// HoldOutClasses splits s class-disjointly for validation: nVal of its classes, drawn uniformly
// at random (deterministic given seed), go to val, the rest to train; image order is kept.
// This is how hyperparameters are tuned on held-out background characters of Omniglot without
// touching the evaluation alphabets.
func HoldOutClasses(s *Images, nVal int, seed uint64) (train, val *Images, err error) {
	classes := s.Classes()
	if nVal < 0 || nVal >= len(classes) {
		return nil, nil, fmt.Errorf("data: HoldOutClasses %s: %d validation classes out of %d (want 0 ≤ n < %d)", s.Name, nVal, len(classes), len(classes))
	}
	pick := pickIndices(len(classes), nVal, seed)
	isVal := map[int32]bool{}
	for _, i := range pick {
		isVal[classes[i]] = true
	}
	train = s.FilterClasses(func(l int32) bool { return !isVal[l] })
	val = s.FilterClasses(func(l int32) bool { return isVal[l] })
	train.Name, val.Name = s.Name+"/train", s.Name+"/val"
	return train, val, nil
}
