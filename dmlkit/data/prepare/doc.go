// Package prepare turns a run's data configuration ([Config], the data section of a training
// configuration) into the prepared sets the trainer consumes: [Load] runs the registered loader of
// data.name with data.options, then dmlkit/data's one preparation pass ([data.PrepareSets]: class
// selection, class limits, validation split, corruptions, augmentation). The trainer does not
// reach back into data preparation.
//
// Reads: the data configuration and the run seed; through the registered loaders, the dataset
// files (package datasets). Writes: nothing; it returns [data.PreparedSets].
//
// It holds the dataset registry ([RegisterDataset] for in-memory image datasets,
// [RegisterAugmentedDataset] for those that take the augmentation keys of data.options,
// [RegisterSetDataset] for sets of any kind, [RegisterFeatureDataset] for precomputed features;
// [Datasets] lists them), the built-in registrations (omniglot, mnist, fashion-mnist, cifar10,
// imagefolder, npy-features and the full-scale benchmarks cub, cars, sop, inat, inshop,
// market1501, vehicleid), and the on-demand file sets of the benchmarks ([FileSet], decoded
// through a shared [DecodeCache] with the preprocessing of [ImageOptions]).
package prepare
