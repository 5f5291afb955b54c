package train

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/prepare"
)

// The set types live in dmlkit/data, which prepares them ([data.PrepareSets]); these names keep
// the trainer's API (train.Set, train.Features, …) unchanged.
type (
	Set             = data.Set
	EpochFiller     = data.EpochFiller
	ImageSet        = data.ImageSet
	Features        = data.Features
	FeatureSplit    = data.FeatureSplit
	SetSplit        = data.SetSplit
	AugmentOptions  = data.AugmentOptions
	AugmentedImages = data.AugmentedImages
)

// NewAugmentedImages is [data.NewAugmentedImages].
func NewAugmentedImages(s *data.Images, o AugmentOptions, seed int64) (*AugmentedImages, error) {
	return data.NewAugmentedImages(s, o, seed)
}

func classesOf(s Set) []int32 { return data.ClassesOf(s) }
func baseSet(s Set) Set       { return data.BaseSet(s) }

// sets is the resolved train/val/test partition, with the corruptions applied to train.
type sets struct {
	train, val, test Set
	corruptions      []*data.Corruption
}

// loadData loads and prepares cfg's data in one pass ([prepare.Load]: the loader, class
// selection, class limits, validation split, corruptions, augmentation); the trainer then only
// checks that the inputs fit the model.
func loadData(cfg *Config) (*sets, error) {
	p, err := prepare.Load(cfg.Data, cfg.Seed)
	if err != nil {
		return nil, err
	}
	out := &sets{train: p.Train, val: p.Val, test: p.Test, corruptions: p.Corruptions}
	h1, w1, _ := out.train.Dims()
	if (cfg.Model.Backbone == "features") != (h1 == 1 && w1 == 1 && isFeatures(out.train)) {
		return nil, fmt.Errorf("model.backbone: %q does not match dataset %s (feature datasets need backbone features, image datasets an image backbone)", cfg.Model.Backbone, cfg.Data.Name)
	}
	return out, nil
}

func isFeatures(s Set) bool {
	_, ok := baseSet(s).(*Features)
	return ok
}

// fillTrain fills the training batch idx of epoch, through [EpochFiller] when s has it.
func fillTrain(s Set, epoch int, idx []int, next [][]int, dst []float32) error {
	if f, ok := s.(EpochFiller); ok {
		return f.FillEpoch(epoch, idx, next, dst)
	}
	s.Fill(idx, dst)
	return nil
}
