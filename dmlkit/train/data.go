package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
)

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
type FeatureDatasetFunc func(opts map[string]any) (*FeatureSplit, error)

var featureDatasets = map[string]FeatureDatasetFunc{}

// RegisterFeatureDataset makes a feature loader available as data.name.
func RegisterFeatureDataset(name string, fn FeatureDatasetFunc) {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	featureDatasets[name] = fn
}

// sets is the resolved train/val/test partition, with the corruptions applied to train.
type sets struct {
	train, val, test Set
	corruptions      []*data.Corruption
}

// imagePool loads the out-of-distribution images of data.corrupt.image_pool (nil without image
// noise).
func imagePool(cfg *Config) (*data.Images, error) {
	k := cfg.Data.Corrupt
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

// loadData loads the configured dataset (loadSource) and prepares it in one pass
// (data.PrepareSets: class selection, class limits, validation split, corruptions,
// augmentation); the trainer then only checks that the inputs fit the model.
func loadData(cfg *Config) (*sets, error) {
	src, aug, err := loadSource(cfg)
	if err != nil {
		return nil, err
	}
	k := cfg.Data.Corrupt
	corruptSeed := k.Seed
	if corruptSeed == 0 {
		corruptSeed = uint64(cfg.Seed)
	}
	p, err := data.PrepareSets(src, data.SetOptions{
		PrepareOptions: data.PrepareOptions{
			TrainClasses: cfg.Data.TrainClasses, TrainClassList: cfg.Data.TrainClassList,
			MaxTrainClasses: cfg.Data.MaxTrainClasses, MaxTestClasses: cfg.Data.MaxTestClasses,
			TrainClassFraction: cfg.Data.ClassFraction,
			ValClasses:         cfg.Data.ValClasses, ValSeed: uint64(cfg.Seed),
			LabelNoise: k.LabelNoise, LabelNoiseOther: k.LabelNoiseOther, ImageNoise: k.ImageNoise, CorruptSeed: corruptSeed,
			ValAfterCorruption: k.ValAfterCorruption,
		},
		LoadPool:    func() (*data.Images, error) { return imagePool(cfg) },
		Augment:     aug,
		AugmentSeed: cfg.Seed,
		Name:        cfg.Data.Name,
	})
	if err != nil {
		return nil, err
	}
	out := &sets{train: p.Train, val: p.Val, test: p.Test, corruptions: p.Corruptions}
	h1, w1, c1 := out.train.Dims()
	h2, w2, c2 := out.test.Dims()
	if h1 != h2 || w1 != w2 || c1 != c2 {
		return nil, fmt.Errorf("data %s: train inputs are %d×%d×%d but test inputs %d×%d×%d", cfg.Data.Name, h1, w1, c1, h2, w2, c2)
	}
	if (cfg.Model.Backbone == "features") != (h1 == 1 && w1 == 1 && isFeatures(out.train)) {
		return nil, fmt.Errorf("model.backbone: %q does not match dataset %s (feature datasets need backbone features, image datasets an image backbone)", cfg.Model.Backbone, cfg.Data.Name)
	}
	return out, nil
}

// loadSource runs the loader of cfg's dataset (image, file-backed set or feature dataset) and
// returns what it loaded, with the augmentation options of an augmented image dataset.
// Corruption is refused for datasets that are not in-memory images before anything is loaded.
func loadSource(cfg *Config) (data.Loaded, *AugmentOptions, error) {
	if fn, ok := lookupDataset(cfg.Data.Name); ok {
		opts, aug, err := splitAugmentOptions(cfg.Data.Name, cfg.Data.Options)
		if err != nil {
			return data.Loaded{}, nil, fmt.Errorf("data %s: %w", cfg.Data.Name, err)
		}
		s, err := fn(opts)
		if err != nil {
			return data.Loaded{}, nil, fmt.Errorf("data %s: %w", cfg.Data.Name, err)
		}
		return data.Loaded{Images: s}, aug, nil
	}
	if sfn, ok := lookupSetDataset(cfg.Data.Name); ok {
		s, err := loadSetDataset(cfg, sfn)
		return data.Loaded{Sets: s}, nil, err
	}
	if k := cfg.Data.Corrupt; k.LabelNoise > 0 || k.ImageNoise > 0 {
		return data.Loaded{}, nil, fmt.Errorf("data.corrupt: corruption applies to image datasets, not the feature dataset %s", cfg.Data.Name)
	}
	datasetsMu.RLock()
	ffn, ok := featureDatasets[cfg.Data.Name]
	datasetsMu.RUnlock()
	if !ok {
		return data.Loaded{}, nil, fmt.Errorf("data.name: unknown dataset %q; registered: %s", cfg.Data.Name, strings.Join(Datasets(), ", "))
	}
	s, err := ffn(cfg.Data.Options)
	if err != nil {
		return data.Loaded{}, nil, fmt.Errorf("data %s: %w", cfg.Data.Name, err)
	}
	if s == nil {
		return data.Loaded{}, nil, nil
	}
	// A nil *Features is no set (not a non-nil Set holding nil).
	set := func(f *Features) Set {
		if f == nil {
			return nil
		}
		return f
	}
	return data.Loaded{Sets: &SetSplit{Train: set(s.Train), Val: set(s.Val), Test: set(s.Test)}}, nil, nil
}

func isFeatures(s Set) bool {
	_, ok := baseSet(s).(*Features)
	return ok
}

// betaSample draws from Beta(a, a) as X/(X+Y) with X, Y ~ Gamma(a, 1).
func betaSample(r *rand.Rand, a float64) float64 {
	x, y := gammaSample(r, a), gammaSample(r, a)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaSample draws from Gamma(a, 1) (Marsaglia & Tsang 2000; a < 1 via the a+1 boost).
func gammaSample(r *rand.Rand, a float64) float64 {
	if a < 1 {
		u := r.Float64()
		return gammaSample(r, a+1) * math.Pow(u, 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// Mixup mixes a batch with a permutation of itself (IDML, seed 002): the output holds the n
// originals followed by n mixed images x̃_i = λx_i + (1−λ)x_π(i) with one λ ~ Beta(α, α) per
// batch, and label sets [2n, 2]: {y_i, −1} for originals, {y_i, y_π(i)} for mixed samples
// (a mixed sample is a positive of both classes). pix is [n, size] float32.
func Mixup(r *rand.Rand, alpha float64, pix []float32, labels []int64, size int) ([]float32, []int64, float64) {
	n := len(labels)
	lam := betaSample(r, alpha)
	perm := r.Perm(n)
	out := make([]float32, 2*n*size)
	copy(out, pix)
	sets := make([]int64, 4*n)
	for i := 0; i < n; i++ {
		a, b := pix[i*size:(i+1)*size], pix[perm[i]*size:(perm[i]+1)*size]
		d := out[(n+i)*size : (n+i+1)*size]
		for k := range d {
			d[k] = float32(lam)*a[k] + float32(1-lam)*b[k]
		}
		sets[2*i], sets[2*i+1] = labels[i], -1
		sets[2*(n+i)], sets[2*(n+i)+1] = labels[i], labels[perm[i]]
		if labels[perm[i]] == labels[i] {
			sets[2*(n+i)+1] = -1
		}
	}
	return out, sets, lam
}

// CutMix is [Mixup] with Yun et al.'s (2019) box instead of the pixel blend: the n mixed images
// are x_i with one box replaced by the same box of x_π(i). One λ ~ Beta(α, α) per batch; the box
// (the same for the whole batch, as the official code) has sides ⌊H·sqrt(1 − λ)⌋ × ⌊W·sqrt(1 − λ)⌋
// around a centre drawn uniformly over the image, clipped at the borders. It returns the images
// ([2n, h·w·c], pix is [n, h, w, c] row-major), the label sets [2n, 2] as Mixup's, and the
// realised λ' = 1 − box area / (H·W), the weight of y_i (1 − λ' that of y_π(i)).
func CutMix(r *rand.Rand, alpha float64, pix []float32, labels []int64, h, w, c int) ([]float32, []int64, float64) {
	n := len(labels)
	size := h * w * c
	lam := betaSample(r, alpha)
	perm := r.Perm(n)
	cut := math.Sqrt(1 - lam)
	ch, cw := int(float64(h)*cut), int(float64(w)*cut)
	cy, cx := r.IntN(h), r.IntN(w)
	y0, y1 := max(cy-ch/2, 0), min(cy+ch/2, h)
	x0, x1 := max(cx-cw/2, 0), min(cx+cw/2, w)
	out := make([]float32, 2*n*size)
	copy(out, pix)
	sets := make([]int64, 4*n)
	for i := 0; i < n; i++ {
		d := out[(n+i)*size : (n+i+1)*size]
		copy(d, pix[i*size:(i+1)*size])
		b := pix[perm[i]*size : (perm[i]+1)*size]
		for y := y0; y < y1; y++ {
			copy(d[(y*w+x0)*c:(y*w+x1)*c], b[(y*w+x0)*c:(y*w+x1)*c])
		}
		sets[2*i], sets[2*i+1] = labels[i], -1
		sets[2*(n+i)], sets[2*(n+i)+1] = labels[i], labels[perm[i]]
		if labels[perm[i]] == labels[i] {
			sets[2*(n+i)+1] = -1
		}
	}
	return out, sets, 1 - float64((y1-y0)*(x1-x0))/float64(h*w)
}

// MixWeights returns the [2n, 2] slot weights of the label sets Mixup and CutMix return for a
// batch of n originals mixed with weight lam: (1, 0) for an original, (λ, 1 − λ) for a mixed image,
// and (1, 0) for a mix of two images of one class (its set holds the class once).
func MixWeights(sets []int64, lam float64) []float32 {
	wts := make([]float32, len(sets))
	n := len(sets) / 4
	for i := 0; i < 2*n; i++ {
		switch {
		case i < n || sets[2*i+1] < 0:
			wts[2*i] = 1
		default:
			wts[2*i], wts[2*i+1] = float32(lam), float32(1-lam)
		}
	}
	return wts
}
