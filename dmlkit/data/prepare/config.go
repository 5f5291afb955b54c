package prepare

import (
	"fmt"
	"strings"
)

// Config is a run's data configuration (the data section of a training configuration): the
// dataset, its loader's options, and the class selection, limits, validation split and
// corruptions of the one preparation pass ([Load]).
type Config struct {
	Name string `yaml:"name" doc:"registered dataset name (omniglot, mnist, fashion-mnist, ...)"`
	// Options are passed to the dataset's loader (e.g. root, size for omniglot).
	Options map[string]any `yaml:"options" doc:"loader options"`
	// ValClasses is the fraction of training classes split off as a validation set for early
	// stopping (seed 003 §4.2); 0 = none.
	ValClasses float64 `yaml:"val_classes" doc:"fraction of training classes held out for validation"`
	// ValFolds ≥ 2 holds out one of ValFolds class-disjoint folds of the training classes, fold
	// seed mod ValFolds (data.ValSplit): a tuning step whose seeds are 0 … ValFolds−1 selects by
	// the mean over the folds — class-disjoint cross-validation. Not with val_classes.
	ValFolds int `yaml:"val_folds" doc:"hold out fold (seed mod N) of N class-disjoint folds of the training classes (cross-validation; 0 = off)"`
	// MaxTrainClasses / MaxTestClasses keep only the first n classes (0 = all), for quick runs.
	MaxTrainClasses int `yaml:"max_train_classes" doc:"keep only the first n training classes (0 = all)"`
	MaxTestClasses  int `yaml:"max_test_classes" doc:"keep only the first n test classes (0 = all)"`
	// ClassFraction keeps the first ⌈p·K⌉ of the K training classes (smallest labels), before the
	// validation split: seed 004 §4.4's limited training data ("only the first 50, …, 90 classes"
	// of CUB's 100 = 0.5 … 0.9), recorded in corruption.json. 0 = all; not with max_train_classes.
	ClassFraction float64 `yaml:"class_fraction" doc:"keep only the first ⌈p·K⌉ training classes, p in (0, 1] (0 = all; limited data, seed 004 §4.4)"`
	// TrainClasses [lo, hi) or TrainClassList select training classes by their index in label order
	// (0 = the smallest training label), before the class limits and the validation split, so that
	// pre-training and fine-tuning sources are disjoint: Omni-98 trains on the first 98 background
	// characters, train_classes: [0, 98]; pre-training on the others is [98, 964]. Empty: all.
	TrainClasses   []int `yaml:"train_classes" doc:"half-open range [lo, hi) of training class indices in label order (empty = all)"`
	TrainClassList []int `yaml:"train_class_list" doc:"training class indices in label order to keep (empty = all; not with train_classes)"`
	// Corrupt corrupts the training set (seed 004 §4.4); the changed samples are recorded in the
	// run directory's corruption.json.
	Corrupt CorruptConfig `yaml:"corrupt"`
}

// CorruptConfig is the corruption harness of seed 004 §4.4, applied to the training images only
// (after max_train_classes, before the validation split), deterministically from Seed (or the run
// seed when Seed is 0). Limited data is data.class_fraction (or data.max_train_classes). The
// realised corruption (labels actually changed, images replaced) is in corruption.json and
// Result.Corruption.
type CorruptConfig struct {
	// LabelNoise gives round(p·N) randomly chosen training images a label drawn uniformly from all
	// training classes (the paper's "random labels": about 1/K of them keep their true label);
	// LabelNoiseOther draws from the other classes only, so every chosen label is wrong.
	LabelNoise      float64 `yaml:"label_noise" doc:"fraction of training images given a random label (drawn from all classes, as seed 004 §4.4)"`
	LabelNoiseOther bool    `yaml:"label_noise_other" doc:"draw the noisy labels from the other classes only (every chosen label changes)"`
	ImageNoise      float64 `yaml:"image_noise" doc:"fraction of training images replaced by out-of-distribution images"`
	// ImagePool names the registered image dataset whose training images replace them (e.g.
	// mnist for Omniglot); they are resized to the training images' size.
	ImagePool string `yaml:"image_pool" doc:"registered image dataset supplying the out-of-distribution images"`
	Seed      uint64 `yaml:"seed" doc:"seed of the corruption (0: the run seed)"`
	// ValAfterCorruption carves data.val_classes from the corrupted training set; by default the
	// validation classes are carved first and stay clean (data.Prepare).
	ValAfterCorruption bool `yaml:"val_after_corruption" doc:"carve the validation classes after the corruption (default: before, clean)"`
}

// Validate checks the data configuration; errors name the field path (e.g. "data.val_classes").
// The dataset must be registered.
func (c *Config) Validate() error {
	if c.Name == "" {
		return fmt.Errorf("data.name: empty; registered datasets: %s", strings.Join(Datasets(), ", "))
	}
	if !hasDataset(c.Name) {
		return fmt.Errorf("data.name: unknown dataset %q; registered: %s", c.Name, strings.Join(Datasets(), ", "))
	}
	if c.ValClasses < 0 || c.ValClasses >= 1 {
		return fmt.Errorf("data.val_classes: %g: want a fraction in [0, 1)", c.ValClasses)
	}
	if c.ValFolds == 1 || c.ValFolds < 0 {
		return fmt.Errorf("data.val_folds: %d: want 0 (off) or at least 2 folds", c.ValFolds)
	}
	if c.ValFolds >= 2 && c.ValClasses > 0 {
		return fmt.Errorf("data.val_folds: %d together with data.val_classes %g: set one of them", c.ValFolds, c.ValClasses)
	}
	if r := c.TrainClasses; r != nil && (len(r) != 2 || r[0] < 0 || r[0] >= r[1]) {
		return fmt.Errorf("data.train_classes: %v: want [lo, hi) with 0 ≤ lo < hi", r)
	} else if r != nil && c.TrainClassList != nil {
		return fmt.Errorf("data.train_classes %v together with data.train_class_list: set one of them", r)
	}
	if p := c.ClassFraction; p < 0 || p > 1 || p != p {
		return fmt.Errorf("data.class_fraction: %g: want a fraction in (0, 1] (0 = all classes)", p)
	} else if p > 0 && c.MaxTrainClasses > 0 {
		return fmt.Errorf("data.class_fraction: %g together with data.max_train_classes %d: set one of them", p, c.MaxTrainClasses)
	}
	if k := c.Corrupt; k.LabelNoise < 0 || k.LabelNoise > 1 {
		return fmt.Errorf("data.corrupt.label_noise: %g: want a fraction in [0, 1]", k.LabelNoise)
	} else if k.ImageNoise < 0 || k.ImageNoise > 1 {
		return fmt.Errorf("data.corrupt.image_noise: %g: want a fraction in [0, 1]", k.ImageNoise)
	} else if k.ImageNoise > 0 && k.ImagePool == "" {
		return fmt.Errorf("data.corrupt.image_pool: image_noise %g needs a pool dataset (e.g. mnist)", k.ImageNoise)
	} else if k.ImagePool != "" {
		if _, ok := lookupDataset(k.ImagePool); !ok {
			return fmt.Errorf("data.corrupt.image_pool: unknown image dataset %q", k.ImagePool)
		}
	}
	if c.MaxTrainClasses < 0 || c.MaxTestClasses < 0 {
		return fmt.Errorf("data.max_train_classes / data.max_test_classes: want ≥ 0")
	}
	return nil
}

// HasVal reports whether the configuration holds out validation classes (val_classes or
// val_folds).
func (c *Config) HasVal() bool { return c.ValClasses > 0 || c.ValFolds >= 2 }
