package data

import "fmt"

// Loaded is a loaded dataset before preparation: in-memory images (Images) or sets of any other
// kind (Sets: precomputed feature vectors, files decoded on demand). At most one is set; neither
// means the loader returned nothing.
type Loaded struct {
	Images *Split
	Sets   *SetSplit
}

// SetOptions says how [PrepareSets] turns a [Loaded] into the sets of a run: the class
// selection, limits, validation split and corruptions of [PrepareOptions] (the corruptions and
// the image pool apply to in-memory images only), and the training augmentation.
type SetOptions struct {
	PrepareOptions
	// LoadPool, when ImagePool is nil, is called (after the loaded images are validated) to load
	// the image pool of ImageNoise.
	LoadPool func() (*Images, error)
	// Augment (in-memory images only; nil or augment "none": the stored images) wraps the
	// prepared training images in [AugmentedImages] with AugmentSeed.
	Augment     *AugmentOptions
	AugmentSeed int64
	// Name names the dataset in errors.
	Name string
}

// PreparedSets are the sets a run trains and is evaluated on.
type PreparedSets struct {
	Train, Val, Test Set           // Val may be nil
	Corruptions      []*Corruption // in the order applied
	ValClasses       []int32       // the held-out classes, ascending (nil without ValClasses)
}

// PrepareSets is the one data-preparation pass of a run, for every dataset kind: it checks what
// the loader returned, selects the classes ([SelectClassSplit]: class selection, class limits,
// validation split), applies the corruptions to in-memory training images ([Prepare]) and
// attaches the training augmentation. The sets of src are not modified. Errors name the option.
func PrepareSets(src Loaded, o SetOptions) (*PreparedSets, error) {
	noSets := fmt.Errorf("data %s: loader returned no train or test set", o.Name)
	if s := src.Images; s != nil {
		if s.Train == nil || s.Test == nil {
			return nil, noSets
		}
		for _, p := range []*Images{s.Train, s.Val, s.Test} {
			if p != nil {
				if err := p.Validate(); err != nil {
					return nil, err
				}
			}
		}
		po := o.PrepareOptions
		if po.ImageNoise > 0 && po.ImagePool == nil && o.LoadPool != nil {
			pool, err := o.LoadPool()
			if err != nil {
				return nil, err
			}
			po.ImagePool = pool
		}
		// One pass (Prepare): class limits, the validation split, then the corruptions
		// (ValAfterCorruption puts the split after them).
		p, err := Prepare(s, po)
		if err != nil {
			return nil, err
		}
		out := &PreparedSets{Train: ImageSet{p.Train}, Test: ImageSet{p.Test}, Corruptions: p.Corruptions, ValClasses: p.ValClasses}
		if a := o.Augment; a != nil && a.Augment != "none" {
			if out.Train, err = NewAugmentedImages(p.Train, *a, o.AugmentSeed); err != nil {
				return nil, fmt.Errorf("data %s: %w", o.Name, err)
			}
		}
		if p.Val != nil {
			out.Val = ImageSet{p.Val}
		}
		return out, nil
	}
	s := src.Sets
	if s == nil || s.Train == nil || s.Test == nil {
		return nil, noSets
	}
	if o.LabelNoise > 0 || o.ImageNoise > 0 {
		return nil, fmt.Errorf("data.corrupt: corruption applies to in-memory image datasets, not %s", o.Name)
	}
	if a := o.Augment; a != nil && a.Augment != "none" {
		return nil, fmt.Errorf("data.options.augment: %s: applies to in-memory image datasets, not %s", a.Augment, o.Name)
	}
	for _, x := range []Set{s.Train, s.Val, s.Test} {
		if f, ok := x.(*Features); ok && f != nil && (len(f.X) != f.N*f.F || len(f.Label) != f.N || (f.Super != nil && len(f.Super) != f.N)) {
			return nil, fmt.Errorf("data %s: inconsistent features: N=%d F=%d, %d values, %d labels", o.Name, f.N, f.F, len(f.X), len(f.Label))
		}
	}
	// Feature and file-backed sets take the same class selection, limits and validation split
	// as in-memory images, as class views of their sets.
	cs, err := SelectClassSplit(s.Train.Labels(), s.Test.Labels(), ClassOptions{
		TrainClasses: o.TrainClasses, TrainClassList: o.TrainClassList,
		TrainClassFraction: o.TrainClassFraction, MaxTrainClasses: o.MaxTrainClasses, MaxTestClasses: o.MaxTestClasses,
		ValClasses: o.ValClasses, ValSeed: o.ValSeed, ValFolds: o.ValFolds,
	})
	if err != nil {
		return nil, err
	}
	out := &PreparedSets{Train: s.Train, Val: s.Val, Test: s.Test, ValClasses: cs.Val}
	if cs.TrainLimited || cs.Val != nil {
		out.Train = NewClassSubset(s.Train, In(cs.Train))
	}
	if cs.TestLimited {
		out.Test = NewClassSubset(s.Test, In(cs.Test))
	}
	if cs.Val != nil {
		out.Val = NewClassSubset(s.Train, In(cs.Val))
	}
	return out, nil
}
