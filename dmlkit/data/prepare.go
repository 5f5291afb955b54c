package data

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// PrepareOptions says how [Prepare] turns a loaded [Split] into the sets a run trains and is
// evaluated on. Zero values switch a step off.
type PrepareOptions struct {
	// TrainClasses [lo, hi) or TrainClassList (not both; nil = all) select training classes by
	// their index in label order (index i is the i-th smallest training label), before every other
	// step: the class limits then apply within the selection. They define a training source (e.g.
	// Omniglot's first 98 background characters, [0, 98), for Omni-98 fine-tuning and
	// [98, 964) for pre-training on the rest), so they are not recorded as a corruption. See
	// [SelectClasses].
	TrainClasses   []int
	TrainClassList []int
	// MaxTrainClasses keeps the first n training classes (the n smallest labels; limited data,
	// seed 004 §4.4), recorded as a "limited-classes" corruption. MaxTestClasses keeps the first n
	// test classes.
	MaxTrainClasses, MaxTestClasses int
	// TrainClassFraction, in (0, 1], keeps the first ⌈p·K⌉ of the K training classes (the smallest
	// labels; seed 004 §4.4 "only the first 50, 60, … classes", i.e. 50–90 % of CUB's 100), recorded
	// as a "limited-classes" corruption with Fraction p. It cannot be combined with MaxTrainClasses.
	TrainClassFraction float64
	// ValClasses holds out ⌈ValClasses·K⌉ of the K training classes as the validation set, chosen
	// by [ValClassSplit] with ValSeed (hyper-parameters are tuned on them, never on test classes).
	ValClasses float64
	ValSeed    uint64
	// ValFolds, when ≥ 2, holds out instead one of ValFolds class-disjoint folds, fold ValSeed mod
	// ValFolds ([ValSplit]): the runs of seeds 0 … ValFolds−1 cross-validate over every training
	// class.
	ValFolds int
	// LabelNoise and ImageNoise corrupt that fraction of the training images ([LabelNoiseImages],
	// [ImageNoise] with ImagePool, resized to the training size when both are square), with
	// CorruptSeed.
	LabelNoise, ImageNoise float64
	ImagePool              *Images
	// LabelNoiseOther draws the noisy labels from the other classes only ([LabelNoiseOther]); by
	// default they are drawn from all training classes as the paper does ([LabelNoise]).
	LabelNoiseOther bool
	CorruptSeed     uint64
	// ValAfterCorruption carves the validation classes from the corrupted training set (the
	// validation set then holds corrupted images too). By default the validation classes are
	// carved first, so that tuning sees clean data and the noise rates apply to the training
	// images proper.
	ValAfterCorruption bool
}

// Prepared is the outcome of [Prepare].
type Prepared struct {
	Train, Val, Test *Images
	Corruptions      []*Corruption // in the order applied
	ValClasses       []int32       // the held-out classes, ascending (nil without ValClasses)
}

// Prepare applies, in one place and in this order: the class selection (TrainClasses or
// TrainClassList), the class limits (TrainClassFraction or
// MaxTrainClasses, recorded;
// MaxTestClasses), the validation split (ValClasses), label noise, image noise — or the two
// corruptions before the validation split with ValAfterCorruption. The loader's own validation
// set (s.Val) is kept unless ValClasses replaces it. s is not modified. Errors name the option.
func Prepare(s *Split, o PrepareOptions) (*Prepared, error) {
	if s == nil || s.Train == nil || s.Test == nil {
		return nil, fmt.Errorf("data: prepare: no train or test set")
	}
	out := &Prepared{Train: s.Train, Val: s.Val, Test: s.Test}
	co := ClassOptions{TrainClasses: o.TrainClasses, TrainClassList: o.TrainClassList,
		TrainClassFraction: o.TrainClassFraction, MaxTrainClasses: o.MaxTrainClasses, MaxTestClasses: o.MaxTestClasses}
	if !o.ValAfterCorruption {
		co.ValClasses, co.ValSeed, co.ValFolds = o.ValClasses, o.ValSeed, o.ValFolds
	}
	cs, err := SelectClassSplit(s.Train.Labels, s.Test.Labels, co)
	if err != nil {
		return nil, err
	}
	out.Corruptions = cs.Limits
	if cs.TrainLimited || cs.Val != nil {
		out.Train = s.Train.FilterClasses(In(cs.Train))
	}
	if cs.TestLimited {
		out.Test = s.Test.FilterClasses(In(cs.Test))
	}
	if cs.Val != nil {
		out.Val = s.Train.FilterClasses(In(cs.Val))
		out.ValClasses = cs.Val
	}
	// With ValAfterCorruption the validation classes are split from the corrupted training set.
	split := func() error {
		if !(o.ValClasses > 0) && o.ValFolds < 2 {
			return nil
		}
		val, err := ValSplit(out.Train.Classes(), o.ValClasses, o.ValFolds, o.ValSeed)
		if err != nil {
			return err
		}
		tr := out.Train
		out.Val = tr.FilterClasses(func(l int32) bool { return val[l] })
		out.Train = tr.FilterClasses(func(l int32) bool { return !val[l] })
		out.ValClasses = nil
		for l := range val {
			out.ValClasses = append(out.ValClasses, l)
		}
		slices.Sort(out.ValClasses)
		return nil
	}
	if o.LabelNoise > 0 {
		noisy, c, err := LabelNoiseImages(out.Train, o.LabelNoise, o.CorruptSeed, o.LabelNoiseOther)
		if err != nil {
			return nil, fmt.Errorf("data.corrupt.label_noise: %w", err)
		}
		out.Train = noisy
		out.Corruptions = append(out.Corruptions, c)
	}
	if o.ImageNoise > 0 {
		pool := o.ImagePool
		if pool == nil {
			return nil, fmt.Errorf("data.corrupt.image_pool: image noise needs a pool of images")
		}
		tr := out.Train
		if pool.H != tr.H || pool.W != tr.W {
			if pool.H != pool.W || tr.H != tr.W {
				return nil, fmt.Errorf("data.corrupt.image_pool: %s images are %dx%d, training images %dx%d; only square images are resized", pool.Name, pool.H, pool.W, tr.H, tr.W)
			}
			var err error
			if pool, err = ResizeImages(pool, tr.H); err != nil {
				return nil, fmt.Errorf("data.corrupt.image_pool: %w", err)
			}
		}
		if pool.C != tr.C {
			return nil, fmt.Errorf("data.corrupt.image_pool: %s has %d channels, training images %d", pool.Name, pool.C, tr.C)
		}
		noisy, c, err := ImageNoise(tr, pool, o.ImageNoise, o.CorruptSeed)
		if err != nil {
			return nil, fmt.Errorf("data.corrupt.image_noise: %w", err)
		}
		out.Train = noisy
		out.Corruptions = append(out.Corruptions, c)
	}
	if o.ValAfterCorruption {
		if err := split(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ValSplit chooses the validation classes among classes (ascending, distinct): with folds ≥ 2 one
// of folds class-disjoint folds — the classes shuffled once by a PCG generator seeded (0, 0x7a1),
// the same partition for every run, cut into folds contiguous parts whose sizes differ by at most
// one, fold seed mod folds held out — else [ValClassSplit] (frac, seed). The folds of seeds 0 …
// folds−1 cover every class exactly once: K-fold cross-validation over the training classes.
func ValSplit(classes []int32, frac float64, folds int, seed uint64) (map[int32]bool, error) {
	if folds < 2 {
		return ValClassSplit(classes, frac, seed)
	}
	if folds > len(classes) {
		return nil, fmt.Errorf("data.val_folds: %d folds of %d classes", folds, len(classes))
	}
	cl := slices.Clone(classes)
	r := rand.New(rand.NewPCG(0, 0x7a1))
	r.Shuffle(len(cl), func(i, j int) { cl[i], cl[j] = cl[j], cl[i] })
	f := int(seed % uint64(folds))
	lo, hi := f*len(cl)/folds, (f+1)*len(cl)/folds
	val := make(map[int32]bool, hi-lo)
	for _, c := range cl[lo:hi] {
		val[c] = true
	}
	return val, nil
}

// ValClassSplit chooses the validation classes among classes (ascending, distinct): it shuffles
// them with a PCG generator seeded (seed, 0x7a1) and takes the first ⌈frac·K⌉. It is an error when
// that leaves no training class.
func ValClassSplit(classes []int32, frac float64, seed uint64) (map[int32]bool, error) {
	if !(frac > 0) || frac >= 1 || math.IsNaN(frac) {
		return nil, fmt.Errorf("data.val_classes: %g: want a fraction in (0, 1)", frac)
	}
	cl := slices.Clone(classes)
	r := rand.New(rand.NewPCG(seed, 0x7a1))
	r.Shuffle(len(cl), func(i, j int) { cl[i], cl[j] = cl[j], cl[i] })
	nv := int(math.Ceil(frac * float64(len(cl))))
	if nv >= len(cl) {
		return nil, fmt.Errorf("data.val_classes: %g of %d classes leaves none for training", frac, len(cl))
	}
	val := make(map[int32]bool, nv)
	for _, c := range cl[:nv] {
		val[c] = true
	}
	return val, nil
}

// SelectClasses returns the labels chosen among classes (the training labels, ascending and
// distinct) by their index in that order: the half-open range rng = [lo, hi) (data.train_classes)
// or the indices of list (data.train_class_list); exactly one of them may be non-nil (both nil:
// all classes). Errors name the option: a range that is not two numbers 0 ≤ lo < hi ≤ K, an index
// outside [0, K), a repeated index, an empty list, or both options set.
func SelectClasses(classes []int32, rng, list []int) (map[int32]bool, error) {
	k := len(classes)
	sel := make(map[int32]bool)
	switch {
	case rng != nil && list != nil:
		return nil, fmt.Errorf("data.train_classes %v together with data.train_class_list: set one of them", rng)
	case rng != nil:
		if len(rng) != 2 || rng[0] < 0 || rng[0] >= rng[1] || rng[1] > k {
			return nil, fmt.Errorf("data.train_classes: %v: want [lo, hi) with 0 ≤ lo < hi ≤ %d (the number of training classes)", rng, k)
		}
		for _, c := range classes[rng[0]:rng[1]] {
			sel[c] = true
		}
	case list != nil:
		if len(list) == 0 {
			return nil, fmt.Errorf("data.train_class_list: empty: want class indices in [0, %d)", k)
		}
		for _, i := range list {
			if i < 0 || i >= k {
				return nil, fmt.Errorf("data.train_class_list: index %d: want class indices in [0, %d) (the number of training classes)", i, k)
			}
			if sel[classes[i]] {
				return nil, fmt.Errorf("data.train_class_list: index %d repeated", i)
			}
			sel[classes[i]] = true
		}
	default:
		for _, c := range classes {
			sel[c] = true
		}
	}
	return sel, nil
}
