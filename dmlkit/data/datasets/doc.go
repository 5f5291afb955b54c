// Package datasets reads each named dataset from disk and fetches the public ones: its one job is
// to turn a dataset's files into dmlkit/data's types, checked, with errors naming the file
// ([data.FileError]). It knows nothing of configurations, training or the preparation of a run
// (class selection, corruptions, augmentation: package data).
//
// Reads: the datasets' own files and lists under a root directory (or the download cache), and
// their .sha256 sidecars. Writes: nothing but what [Fetch] downloads and extracts into the
// cache directory ([DefaultRoot]).
//
//   - Benchmarks kept as file lists ([data.FileSplit] of [data.Files], decoded later on demand):
//     [CUB], [Cars196], [SOP], [INaturalist2018], [InShop], [Market1501], [VehicleID]; [LoadOptions]
//     says how thoroughly the listed image files are checked.
//   - Sets read into memory ([data.Split] of [data.Images]): [MNIST] and [FashionMNIST] (IDX),
//     [CIFAR10] straight from its archive, checksum-verified first (the binary release `dmlkit
//     data fetch cifar10` downloads, or the JPEG copy in ../shared/data/cifar10, [FindCIFAR10]),
//     and users' own image folders ([LoadImageFolder]: <root>/{train,test}/<class>/*.{jpg,jpeg,png}
//     or <root>/<class>/*, class names from the folders, labels in name order and a
//     class-disjoint split by a stated rule, [ImageFolderOptions]; [ListImageFolder] lists it
//     without decoding). Both decode with a bounded number of goroutines through package raster.
//   - Face-verification pairs and records: [LFWPairs], [LoadInsightfaceBin] (Python pickles read
//     without Python), [CASIAWebFace] (MXNet RecordIO).
//   - [Sources], [Fetch] and [Verify]: where each public dataset is downloaded from, with its
//     checksums, and the check of a local copy.
//
// Omniglot, the default dataset, is read by package data itself ([data.Omniglot]).
package datasets
