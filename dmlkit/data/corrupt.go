package data

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
)

// Corruption records one deterministic corruption of a training set (seed 004 §4.4: label noise,
// image noise, limited training data), so that a run directory says exactly which samples were
// changed. Indices refer to the training set as passed in (before the corruption).
type Corruption struct {
	Kind     string  `json:"kind"` // "label-noise", "image-noise" or "limited-classes"
	Fraction float64 `json:"fraction,omitempty"`
	Seed     uint64  `json:"seed"`
	// Indices are the corrupted training indices in increasing order (label and image noise).
	Indices []int `json:"indices,omitempty"`
	// OldLabels/NewLabels (label noise) are the labels before and after, aligned with Indices.
	OldLabels []int32 `json:"old_labels,omitempty"`
	NewLabels []int32 `json:"new_labels,omitempty"`
	// Pool names the out-of-distribution set and Sources the pool image that replaced each index
	// (image noise).
	Pool    string `json:"pool,omitempty"`
	Sources []int  `json:"sources,omitempty"`
	// KeptClasses (limited classes) are the labels kept, and Kept the number of images kept.
	KeptClasses []int32 `json:"kept_classes,omitempty"`
	Kept        int     `json:"kept,omitempty"`
	// Other (label noise) says the new labels were drawn from the other classes only
	// ([LabelNoiseOther]); by default they are drawn from all classes ([LabelNoise]).
	Other bool `json:"other,omitempty"`
	// N is the size of the set the corruption was drawn over; Changed the realised corruption:
	// the labels that actually changed (label noise: a label drawn from all classes may hit the
	// true one) or the images replaced (image noise), and ChangedFraction = Changed/N.
	N               int     `json:"n,omitempty"`
	Changed         int     `json:"changed"`
	ChangedFraction float64 `json:"changed_fraction"`
}

// Realised is the realised corruption of a training set, summed over its records: the labels
// that actually changed and the images replaced, as counts and as fractions of the training
// set they were drawn over.
type Realised struct {
	LabelChanged       int     `json:"label_changed"`
	LabelChangedFrac   float64 `json:"label_changed_frac"`
	ImagesReplaced     int     `json:"images_replaced"`
	ImagesReplacedFrac float64 `json:"images_replaced_frac"`
}

// RealisedOf sums the label-noise and image-noise records of cs (other kinds are ignored).
func RealisedOf(cs []*Corruption) Realised {
	var r Realised
	for _, c := range cs {
		switch c.Kind {
		case "label-noise":
			r.LabelChanged += c.Changed
			r.LabelChangedFrac += c.ChangedFraction
		case "image-noise":
			r.ImagesReplaced += c.Changed
			r.ImagesReplacedFrac += c.ChangedFraction
		}
	}
	return r
}

// setChanged records the realised count and its fraction of n.
func (c *Corruption) setChanged(changed, n int) {
	c.N, c.Changed = n, changed
	if n > 0 {
		c.ChangedFraction = float64(changed) / float64(n)
	}
}

// CorruptionFile is the file name [SaveCorruptions] writes in a run directory.
const CorruptionFile = "corruption.json"

// SaveCorruptions writes the records as a JSON array to dir/corruption.json.
func SaveCorruptions(dir string, cs ...*Corruption) error {
	b, err := json.MarshalIndent(cs, "", " ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, CorruptionFile), append(b, '\n'), 0o644)
}

// LoadCorruptions reads a file written by [SaveCorruptions].
func LoadCorruptions(path string) ([]*Corruption, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cs []*Corruption
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("data: %s: %w", path, err)
	}
	return cs, nil
}

// corruptCount is round(frac·n), with frac checked to lie in [0, 1].
func corruptCount(kind string, frac float64, n int) (int, error) {
	if !(frac >= 0 && frac <= 1) {
		return 0, fmt.Errorf("data: %s: fraction %g outside [0, 1]", kind, frac)
	}
	return int(math.Round(frac * float64(n))), nil
}

// pickIndices returns k distinct indices of [0, n), sorted, drawn by a seeded partial
// Fisher–Yates shuffle.
func pickIndices(n, k int, seed uint64) []int {
	r := newRand(seed)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for i := 0; i < k; i++ {
		j := i + r.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	out := slices.Clone(perm[:k])
	slices.Sort(out)
	return out
}

// LabelNoise returns a copy of labels in which round(frac·N) samples, chosen uniformly at random
// without replacement, get a label drawn uniformly from ALL the classes present in labels — seed
// 004 §4.4 "assigning random labels to 5, 10, and 20 % of randomly selected training samples", so
// about 1/K of the chosen samples keep their true label by chance. The record's Changed counts the
// labels that actually changed. Deterministic given seed.
func LabelNoise(labels []int32, frac float64, seed uint64) ([]int32, *Corruption, error) {
	return labelNoise(labels, frac, seed, false)
}

// LabelNoiseOther is [LabelNoise] drawing each new label uniformly from the OTHER classes, so
// every chosen sample is actually wrong (data.corrupt.label_noise_other).
func LabelNoiseOther(labels []int32, frac float64, seed uint64) ([]int32, *Corruption, error) {
	return labelNoise(labels, frac, seed, true)
}

func labelNoise(labels []int32, frac float64, seed uint64, other bool) ([]int32, *Corruption, error) {
	k, err := corruptCount("label noise", frac, len(labels))
	if err != nil {
		return nil, nil, err
	}
	classes := Distinct(labels)
	if k > 0 && len(classes) < 2 {
		return nil, nil, fmt.Errorf("data: label noise: needs at least 2 classes, have %d", len(classes))
	}
	idx := pickIndices(len(labels), k, seed)
	r := newRand(seed ^ 0x5bd1e995)
	out := slices.Clone(labels)
	c := &Corruption{Kind: "label-noise", Fraction: frac, Seed: seed, Indices: idx, Other: other,
		OldLabels: make([]int32, k), NewLabels: make([]int32, k)}
	changed := 0
	for j, i := range idx {
		old := labels[i]
		var nl int32
		if other {
			pos, _ := slices.BinarySearch(classes, old)
			v := r.IntN(len(classes) - 1)
			if v >= pos { // skip the old label's position
				v++
			}
			nl = classes[v]
		} else {
			nl = classes[r.IntN(len(classes))]
		}
		if nl != old {
			changed++
		}
		out[i] = nl
		c.OldLabels[j], c.NewLabels[j] = old, nl
	}
	c.setChanged(changed, len(labels))
	return out, c, nil
}

// LabelNoiseImages applies [LabelNoise] (or, with other, [LabelNoiseOther]) to a copy of s.
func LabelNoiseImages(s *Images, frac float64, seed uint64, other bool) (*Images, *Corruption, error) {
	labels, c, err := labelNoise(s.Labels, frac, seed, other)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (set %s)", err, s.Name)
	}
	out := s.Clone()
	out.Labels = labels
	return out, c, nil
}

// ImageNoise returns a copy of train in which round(frac·N) images, chosen uniformly at random,
// are replaced by images of pool (an out-of-distribution set, e.g. MNIST digits into Omniglot),
// keeping the replaced sample's label (seed 004 §4.4 "image noise"). Pool images are drawn
// without replacement when the pool is large enough, else with replacement. Pool and train must
// have the same H, W, C (use [ResizeImages] first).
func ImageNoise(train, pool *Images, frac float64, seed uint64) (*Images, *Corruption, error) {
	k, err := corruptCount("image noise", frac, train.N)
	if err != nil {
		return nil, nil, err
	}
	if pool.H != train.H || pool.W != train.W || pool.C != train.C {
		return nil, nil, fmt.Errorf("data: image noise: pool %s is %dx%dx%d but %s is %dx%dx%d; resize the pool first",
			pool.Name, pool.H, pool.W, pool.C, train.Name, train.H, train.W, train.C)
	}
	if k > 0 && pool.N == 0 {
		return nil, nil, fmt.Errorf("data: image noise: pool %s is empty", pool.Name)
	}
	idx := pickIndices(train.N, k, seed)
	var src []int
	if k <= pool.N {
		src = pickIndices(pool.N, k, seed^0x2545f491)
		// Unsort: pair sorted targets with a shuffled order of sources.
		r := newRand(seed ^ 0x68e31da4)
		r.Shuffle(len(src), func(a, b int) { src[a], src[b] = src[b], src[a] })
	} else {
		r := newRand(seed ^ 0x2545f491)
		src = make([]int, k)
		for j := range src {
			src[j] = r.IntN(pool.N)
		}
	}
	out := train.Clone()
	for j, i := range idx {
		copy(out.Image(i), pool.Image(src[j]))
	}
	c := &Corruption{Kind: "image-noise", Fraction: frac, Seed: seed, Indices: idx, Pool: pool.Name, Sources: src}
	c.setChanged(k, train.N) // every chosen image is replaced (its label is kept)
	return out, c, nil
}

// LimitClasses keeps only the images of the first n classes (the n smallest labels; seed 004
// §4.4 "using only the first 50, 60, … classes"). It is deterministic and needs no seed.
func LimitClasses(train *Images, n int) (*Images, *Corruption, error) {
	classes := train.Classes()
	if n < 1 || n > len(classes) {
		return nil, nil, fmt.Errorf("data: limited classes: n = %d, want 1..%d (the classes of %s)", n, len(classes), train.Name)
	}
	keep := classes[:n]
	last := keep[n-1]
	out := train.FilterClasses(func(l int32) bool { return l <= last })
	return out, &Corruption{Kind: "limited-classes", KeptClasses: slices.Clone(keep), Kept: out.N}, nil
}

// ClassFractionCount is the number of classes a class fraction p of K classes keeps: ⌈p·K⌉
// (at least 1), computed with a 1e-9 tolerance so that e.g. 0.07·100 = 7.000000000000001 keeps 7.
func ClassFractionCount(p float64, k int) (int, error) {
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("data: class fraction %g: want a fraction in (0, 1]", p)
	}
	return max(1, int(math.Ceil(p*float64(k)-1e-9))), nil
}

// ResizeImages returns s resized to size×size by exact area averaging (downsampling only; the
// same box filter as the Omniglot loader). Images must be square.
func ResizeImages(s *Images, size int) (*Images, error) {
	if s.H != s.W || size < 1 || size > s.H {
		return nil, fmt.Errorf("data: resize %s: %dx%d to %d: only square downsampling is supported", s.Name, s.H, s.W, size)
	}
	out := &Images{Name: s.Name, N: s.N, H: size, W: size, C: s.C, Labels: slices.Clone(s.Labels),
		Coarse: slices.Clone(s.Coarse), ClassNames: s.ClassNames, Pix: make([]uint8, s.N*size*size*s.C)}
	rs := newAreaResizer(s.H, size)
	plane := make([]uint8, s.H*s.W)
	oplane := make([]uint8, size*size)
	for i := 0; i < s.N; i++ {
		src, dst := s.Image(i), out.Image(i)
		for ch := 0; ch < s.C; ch++ {
			for p := range plane {
				plane[p] = src[p*s.C+ch]
			}
			rs.resize(plane, oplane)
			for p := range oplane {
				dst[p*s.C+ch] = oplane[p]
			}
		}
	}
	return out, nil
}
