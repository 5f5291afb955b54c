package prepare

import (
	"embed"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
)

// Source is the source of this package's part of the path from a stored input to the floats a
// model sees (the registered loaders and the file sets' decoding), for the fingerprint of the
// trainer's feature cache.
//
//go:embed registry.go fileset.go
var Source embed.FS

// DatasetFunc loads a dataset split from its options (data.options of the configuration).
// Errors should name the option at fault.
type DatasetFunc func(opts map[string]any) (*data.Split, error)

var (
	datasetsMu   sync.RWMutex
	imageLoaders = map[string]DatasetFunc{}
)

// RegisterDataset makes a loader available as data.name. Registering a name again replaces it
// (so tests and the CLI can override the built-ins).
func RegisterDataset(name string, fn DatasetFunc) {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	imageLoaders[name] = fn
}

// Datasets returns the registered dataset names (image and feature datasets), sorted.
func Datasets() []string {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	out := make([]string, 0, len(imageLoaders))
	for n := range imageLoaders {
		out = append(out, n)
	}
	for n := range featureDatasets {
		out = append(out, n)
	}
	for n := range setDatasets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func hasDataset(name string) bool {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	_, a := imageLoaders[name]
	_, b := featureDatasets[name]
	_, c := setDatasets[name]
	return a || b || c
}

func lookupDataset(name string) (DatasetFunc, bool) {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	fn, ok := imageLoaders[name]
	return fn, ok
}

// omniglotOptions are the options of the built-in "omniglot" dataset.
type omniglotOptions struct {
	Root      string `yaml:"root"`
	Size      int    `yaml:"size"`
	Alphabets bool   `yaml:"alphabets"`
}

// mnistOptions are the options of the built-in "mnist" and "fashion-mnist" datasets. By default
// the split is open-set (classes 0–4 train, the unseen classes 5–9 test, [data.DigitsLow]);
// Closed keeps the standard split with all ten classes on both sides (seed 000 Fig. 5).
type mnistOptions struct {
	Dir    string `yaml:"dir"`
	Closed bool   `yaml:"closed"`
}

// split applies the open-set rule unless o.Closed.
func (o mnistOptions) split(s *data.Split) *data.Split {
	if o.Closed {
		return s
	}
	return data.OpenSet(s, data.DigitsLow)
}

func init() {
	RegisterDataset("omniglot", func(opts map[string]any) (*data.Split, error) {
		var o omniglotOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		return data.Omniglot(data.OmniglotOptions{Root: o.Root, Size: o.Size, Alphabets: o.Alphabets})
	})
	RegisterDataset("mnist", func(opts map[string]any) (*data.Split, error) {
		var o mnistOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		s, err := datasets.MNIST(o.Dir)
		if err != nil {
			return nil, err
		}
		return o.split(s), nil
	})
	RegisterDataset("fashion-mnist", func(opts map[string]any) (*data.Split, error) {
		var o mnistOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		s, err := datasets.FashionMNIST(o.Dir)
		if err != nil {
			return nil, err
		}
		return o.split(s), nil
	})
}

// FeatureDatasetFunc loads a precomputed-feature split from its options.
type FeatureDatasetFunc func(opts map[string]any) (*data.FeatureSplit, error)

var featureDatasets = map[string]FeatureDatasetFunc{}

// RegisterFeatureDataset makes a feature loader available as data.name.
func RegisterFeatureDataset(name string, fn FeatureDatasetFunc) {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	featureDatasets[name] = fn
}

// imagePool loads the out-of-distribution images of data.corrupt.image_pool (nil without image
// noise).
func imagePool(c *Config) (*data.Images, error) {
	k := c.Corrupt
	if !(k.ImageNoise > 0) {
		return nil, nil
	}
	fn, ok := lookupDataset(k.ImagePool)
	if !ok {
		return nil, fmt.Errorf("data.corrupt.image_pool: unknown image dataset %q", k.ImagePool)
	}
	ps, err := fn(nil)
	if err != nil {
		return nil, fmt.Errorf("data.corrupt.image_pool %s: %w", k.ImagePool, err)
	}
	return ps.Train, nil
}

// Load loads the dataset c names (image, file-backed set or feature dataset) and prepares it in
// one pass ([data.PrepareSets]: class selection, class limits, validation split, corruptions,
// augmentation) with the run seed; the train and test inputs must have one shape. Errors name
// the option.
func Load(c Config, seed int64) (*data.PreparedSets, error) {
	src, aug, err := loadSource(&c, seed)
	if err != nil {
		return nil, err
	}
	k := c.Corrupt
	corruptSeed := k.Seed
	if corruptSeed == 0 {
		corruptSeed = uint64(seed)
	}
	p, err := data.PrepareSets(src, data.SetOptions{
		PrepareOptions: data.PrepareOptions{
			TrainClasses: c.TrainClasses, TrainClassList: c.TrainClassList,
			MaxTrainClasses: c.MaxTrainClasses, MaxTestClasses: c.MaxTestClasses,
			TrainClassFraction: c.ClassFraction,
			ValClasses:         c.ValClasses, ValSeed: uint64(seed), ValFolds: c.ValFolds,
			LabelNoise: k.LabelNoise, LabelNoiseOther: k.LabelNoiseOther, ImageNoise: k.ImageNoise, CorruptSeed: corruptSeed,
			ValAfterCorruption: k.ValAfterCorruption,
		},
		LoadPool:    func() (*data.Images, error) { return imagePool(&c) },
		Augment:     aug,
		AugmentSeed: seed,
		Name:        c.Name,
	})
	if err != nil {
		return nil, err
	}
	h1, w1, c1 := p.Train.Dims()
	h2, w2, c2 := p.Test.Dims()
	if h1 != h2 || w1 != w2 || c1 != c2 {
		return nil, fmt.Errorf("data %s: train inputs are %d×%d×%d but test inputs %d×%d×%d", c.Name, h1, w1, c1, h2, w2, c2)
	}
	return p, nil
}

// loadSource runs the loader of cfg's dataset (image, file-backed set or feature dataset) and
// returns what it loaded, with the augmentation options of an augmented image dataset.
// Corruption is refused for datasets that are not in-memory images before anything is loaded.
func loadSource(c *Config, seed int64) (data.Loaded, *data.AugmentOptions, error) {
	if fn, ok := lookupDataset(c.Name); ok {
		opts, aug, err := splitAugmentOptions(c.Name, c.Options)
		if err != nil {
			return data.Loaded{}, nil, fmt.Errorf("data %s: %w", c.Name, err)
		}
		s, err := fn(opts)
		if err != nil {
			return data.Loaded{}, nil, fmt.Errorf("data %s: %w", c.Name, err)
		}
		return data.Loaded{Images: s}, aug, nil
	}
	if sfn, ok := lookupSetDataset(c.Name); ok {
		s, err := loadSetDataset(c, seed, sfn)
		return data.Loaded{Sets: s}, nil, err
	}
	if k := c.Corrupt; k.LabelNoise > 0 || k.ImageNoise > 0 {
		return data.Loaded{}, nil, fmt.Errorf("data.corrupt: corruption applies to image datasets, not the feature dataset %s", c.Name)
	}
	datasetsMu.RLock()
	ffn, ok := featureDatasets[c.Name]
	datasetsMu.RUnlock()
	if !ok {
		return data.Loaded{}, nil, fmt.Errorf("data.name: unknown dataset %q; registered: %s", c.Name, strings.Join(Datasets(), ", "))
	}
	s, err := ffn(c.Options)
	if err != nil {
		return data.Loaded{}, nil, fmt.Errorf("data %s: %w", c.Name, err)
	}
	if s == nil {
		return data.Loaded{}, nil, nil
	}
	// A nil *Features is no set (not a non-nil Set holding nil).
	set := func(f *data.Features) data.Set {
		if f == nil {
			return nil
		}
		return f
	}
	return data.Loaded{Sets: &data.SetSplit{Train: set(s.Train), Val: set(s.Val), Test: set(s.Test)}}, nil, nil
}
