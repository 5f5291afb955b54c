// Package data holds the data types of dmlkit and the one preparation pass that turns a loaded
// dataset into the sets a run trains and is evaluated on. It knows nothing of GoMLX, losses or
// training, and nothing of where a named dataset lives on disk.
//
// Reads: a loaded dataset ([Split] of in-memory [Images], or a [SetSplit] of other [Set] kinds:
// precomputed [Features], files decoded on demand), the options of the preparation, the feature
// cache's part files. Writes: the prepared sets ([PreparedSets]), corruption.json records
// ([SaveCorruptions]) and feature-cache parts ([FeatureCache]).
//
// The preparation is one pass for every dataset kind ([PrepareSets]): the classes are chosen once
// ([SelectClassSplit]: class selection, class limits, validation classes), in-memory training
// images are corrupted ([Prepare]) and the training augmentation is attached ([AugmentedImages],
// drawn per epoch and image, [AugmentedImages.FillEpoch]); with a fixed backbone part,
// [FrozenStage] then replaces the inputs by their cached features ([FeatureCache]; the trainer
// supplies the extractor). The sets ([Set]: [ImageSet], [Features], [ClassSubset], [CutMaps]) are
// what the trainer consumes.
//
// Besides the types it holds the sidecar checksums every reader verifies ([VerifySidecar]),
// the loaders' error type ([FileError]), the test-time degradations of eval.degrade
// ([Degradation]), synthetic generators, and Omniglot ([Omniglot]), the default dataset.
//
// The packages under it: [github.com/dmlkit/dmlkit/dmlkit/data/datasets] reads each named
// dataset from disk and fetches the public ones; [github.com/dmlkit/dmlkit/dmlkit/data/prepare]
// turns a run's data configuration into prepared sets (the dataset registry, the on-demand file
// sets, then [PrepareSets]); pipeline and raster decode and resize images.
package data
