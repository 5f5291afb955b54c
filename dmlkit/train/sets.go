package train

import "github.com/dmlkit/dmlkit/dmlkit/data"

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

// maxLookahead bounds the number of upcoming batches a set is told about (and prefetches).
const maxLookahead = data.MaxLookahead

func classesOf(s Set) []int32 { return data.ClassesOf(s) }
func baseSet(s Set) Set       { return data.BaseSet(s) }
