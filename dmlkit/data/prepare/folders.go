package prepare

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
)

// cifar10Options are the data.options of the built-in "cifar10" dataset ([datasets.CIFAR10]): the
// class-disjoint split of ../shared/data/cifar10/README.md (airplane … deer train, dog … truck
// test; closed: all ten on both sides), at side size (default 32, native; 96–128 for
// ImageNet-pretrained backbones), plus the augmentation keys of [data.AugmentOptions].
type cifar10Options struct {
	Root     string `yaml:"root"`      // directory with the binary release or the JPEG archive (default: datasets.FindCIFAR10)
	Format   string `yaml:"format"`    // binary, jpeg or "" (binary when present)
	Size     int    `yaml:"size"`      // image side (0: 32)
	PerClass int    `yaml:"per_class"` // first n images per class and split (0: all), for smoke runs
	Closed   bool   `yaml:"closed"`    // all ten classes on both sides
	Workers  int    `yaml:"workers"`   // concurrent decodes (0: GOMAXPROCS)
}

// imageFolderOptions are the data.options of the built-in "imagefolder" dataset
// ([datasets.LoadImageFolder]): a user's <root>/{train,test}/<class>/ or <root>/<class>/ folder,
// split class-disjointly as [datasets.ImageFolderOptions] states, every image resized to size×size
// (default 64), plus the augmentation keys of [data.AugmentOptions].
type imageFolderOptions struct {
	Root         string   `yaml:"root"`
	Size         int      `yaml:"size"`
	TrainClasses []string `yaml:"train_classes"`
	Split        string   `yaml:"split"` // sorted (default) or random
	TestFraction float64  `yaml:"test_fraction"`
	SplitSeed    uint64   `yaml:"split_seed"`
	Closed       bool     `yaml:"closed"`
	PerClass     int      `yaml:"per_class"`
	Workers      int      `yaml:"workers"`
	Check        string   `yaml:"check"` // markers (default), exists, none or decode
}

func init() {
	RegisterAugmentedDataset("cifar10", func(opts map[string]any) (*data.Split, error) {
		var o cifar10Options
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		if o.Size < 0 || o.PerClass < 0 || o.Workers < 0 {
			return nil, fmt.Errorf("data.options: size %d, per_class %d, workers %d: want ≥ 0", o.Size, o.PerClass, o.Workers)
		}
		return datasets.CIFAR10(datasets.CIFAR10Options{Root: o.Root, Format: o.Format, Size: o.Size, PerClass: o.PerClass, Closed: o.Closed, Workers: o.Workers})
	})
	RegisterAugmentedDataset("imagefolder", func(opts map[string]any) (*data.Split, error) {
		var o imageFolderOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		if o.Root == "" {
			return nil, fmt.Errorf("data.options.root: not set: the folder holding train/ and test/ (or one folder per class)")
		}
		if o.Size < 0 || o.PerClass < 0 || o.Workers < 0 {
			return nil, fmt.Errorf("data.options: size %d, per_class %d, workers %d: want ≥ 0", o.Size, o.PerClass, o.Workers)
		}
		io := ImageOptions{Check: o.Check}
		lo, err := io.loadOptions()
		if err != nil {
			return nil, err
		}
		return datasets.LoadImageFolder(o.Root, datasets.ImageFolderOptions{TrainClasses: o.TrainClasses, Split: o.Split,
			TestFraction: o.TestFraction, SplitSeed: o.SplitSeed, Closed: o.Closed, PerClass: o.PerClass,
			Check: lo.Check, Size: o.Size, Workers: o.Workers})
	})
}
