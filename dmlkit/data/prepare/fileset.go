package prepare

import (
	"container/list"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dmlkit/dmlkit/dmlkit/config"
	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/datasets"
	"github.com/dmlkit/dmlkit/dmlkit/data/pipeline"
	"github.com/dmlkit/dmlkit/dmlkit/data/raster"
)

// This file registers the full-scale image benchmarks (CUB-200-2011, Cars196, Stanford Online
// Products, iNaturalist-2018, In-Shop, Market-1501, VehicleID) as datasets (data.name). They are
// too large to hold decoded in memory (iNaturalist's 325,846 training images at 256×256×3 would
// take ~64 GB), so a [FileSet] keeps only the file paths and decodes each batch on demand with
// worker goroutines, behind a bounded least-recently-used cache of decoded images and a prefetch
// of the next batches.

// SetDatasetFunc loads a [data.SetSplit] from data.options; seed is the run seed (training
// augmentations are drawn from it). Errors name the option at fault.
type SetDatasetFunc func(opts map[string]any, seed int64) (*data.SetSplit, error)

var setDatasets = map[string]SetDatasetFunc{}

// RegisterSetDataset makes a set loader available as data.name (replacing any set loader of that
// name). data.corrupt does not apply to such datasets; data.max_*_classes and data.val_classes do.
func RegisterSetDataset(name string, fn SetDatasetFunc) {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	setDatasets[name] = fn
}

func lookupSetDataset(name string) (SetDatasetFunc, bool) {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	fn, ok := setDatasets[name]
	return fn, ok
}

// loadSetDataset runs a set loader (corruption is refused before loading: the sets are decoded
// from files on demand).
func loadSetDataset(c *Config, seed int64, fn SetDatasetFunc) (*data.SetSplit, error) {
	if k := c.Corrupt; k.LabelNoise > 0 || k.ImageNoise > 0 {
		return nil, fmt.Errorf("data.corrupt: corruption applies to in-memory image datasets, not %s (decoded from files on demand)", c.Name)
	}
	s, err := fn(c.Options, seed)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", c.Name, err)
	}
	return s, nil
}

// ImageOptions are the data.options of the full-scale image datasets (cub, cars, sop, inat,
// inshop, vehicleid). Zero values take the defaults.
//
// Preprocessing follows the torchvision pipeline of the Smooth-AP / RS@k code (seed 000 §5.1
// follows Brown et al. 2020, seed 003 §4.2 the same ImageNet-pretrained ResNet-50 setting):
//   - test (and evaluation of any set): resize the short side to Resize (default 256, Pillow's
//     antialiased bilinear), centre crop Size×Size (default 224; offset ⌊(side−Size)/2⌋);
//   - training, Augment "random_resized_crop" (default): torchvision's RandomResizedCrop(Size,
//     Scale, Ratio) then a horizontal flip with probability ½. The crop box is drawn on the image
//     already resized to short side Resize (the decoded form that is cached), not on the original
//     file, so a small crop is upsampled from fewer pixels than torchvision would use;
//   - Augment "random_crop": a uniformly placed Size×Size crop of the resized image plus the flip;
//     "none": the test-time centre crop.
//
// Every input is normalised per channel as (pixel/255 − Mean[c]) / Std[c] (default ImageNet
// mean 0.485, 0.456, 0.406 and std 0.229, 0.224, 0.225, RGB), the scaling torchvision's
// pretrained weights expect. Inputs are [Size, Size, 3] float32, NHWC.
type ImageOptions struct {
	// Root is the dataset directory. Default: $DMLKIT_DATA/<source>, else the directory
	// `dmlkit data fetch <source>` fills (datasets.DefaultRoot), where <source> is cub, cars196,
	// sop, inat2018, inshop or vehicleid; a root holding the extracted folder (e.g.
	// CUB_200_2011/, datasets.Source.DataDir) is entered.
	Root    string    `yaml:"root"`
	Size    int       `yaml:"size"`    // crop side, default 224
	Resize  int       `yaml:"resize"`  // short side before cropping, default 256; ≥ Size
	Mean    []float64 `yaml:"mean"`    // per-channel mean, default ImageNet
	Std     []float64 `yaml:"std"`     // per-channel std, default ImageNet
	Augment string    `yaml:"augment"` // random_resized_crop (default), random_crop or none
	// Scale and Ratio are RandomResizedCrop's area fraction and aspect-ratio (w/h) ranges,
	// default [0.08, 1] and [3/4, 4/3] (torchvision's defaults, as the Smooth-AP code uses).
	Scale []float64 `yaml:"scale"`
	Ratio []float64 `yaml:"ratio"`
	// Workers is the number of concurrent decodes (default GOMAXPROCS).
	Workers int `yaml:"workers"`
	// CacheMB bounds the decoded images kept in memory, in MiB (default 4096: all of CUB's or
	// Cars' train and test images at short side 256; SOP needs ~30 GB and iNaturalist ~120 GB
	// to be held whole). The least recently used images are dropped first.
	CacheMB int `yaml:"cache_mb"`
	// Prefetch is the number of upcoming training batches decoded in the background while the
	// current step runs (default 2, at most 8; the cache should hold them).
	Prefetch int `yaml:"prefetch"`
	// Check is how the loader checks the image files when it reads the lists: markers
	// (default: exists, JPEG/PNG start and end markers), exists, none or decode (slow).
	Check string `yaml:"check"`
	// Split selects CUB's split: openset (default: classes 1–100 train, 101–200 test) or
	// official (train_test_split.txt, 5,994 / 5,794 images of the same 200 classes). Only cub.
	Split string `yaml:"split"`
	// TestSize is VehicleID's test list: 800 (default), 1600 or 2400. Only vehicleid.
	TestSize int `yaml:"test_size"`
}

// resolve fills the defaults and checks the values; errors name the option.
func (o *ImageOptions) resolve() error {
	const p = "data.options."
	if o.Size == 0 {
		o.Size = 224
	}
	if o.Resize == 0 {
		o.Resize = max(256, o.Size)
	}
	if o.Size < 1 {
		return fmt.Errorf(p+"size: %d: want > 0", o.Size)
	}
	if o.Resize < o.Size {
		return fmt.Errorf(p+"resize: %d is smaller than size %d", o.Resize, o.Size)
	}
	if o.Mean == nil {
		o.Mean = []float64{0.485, 0.456, 0.406}
	}
	if o.Std == nil {
		o.Std = []float64{0.229, 0.224, 0.225}
	}
	if len(o.Mean) != 3 {
		return fmt.Errorf(p+"mean: %v: want 3 values (R, G, B)", o.Mean)
	}
	if len(o.Std) != 3 || o.Std[0] <= 0 || o.Std[1] <= 0 || o.Std[2] <= 0 {
		return fmt.Errorf(p+"std: %v: want 3 positive values (R, G, B)", o.Std)
	}
	switch o.Augment {
	case "":
		o.Augment = "random_resized_crop"
	case "random_resized_crop", "random_crop", "none":
	default:
		return fmt.Errorf(p+"augment: %q: want random_resized_crop, random_crop or none", o.Augment)
	}
	if err := data.ResolveCropBox(p, &o.Scale, &o.Ratio); err != nil {
		return err
	}
	if o.Workers < 0 {
		return fmt.Errorf(p+"workers: %d: want ≥ 0 (0: GOMAXPROCS)", o.Workers)
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.CacheMB < 0 {
		return fmt.Errorf(p+"cache_mb: %d: want ≥ 0 (0: 4096)", o.CacheMB)
	}
	if o.CacheMB == 0 {
		o.CacheMB = 4096
	}
	if o.Prefetch < 0 || o.Prefetch > data.MaxLookahead {
		return fmt.Errorf(p+"prefetch: %d: want 0–%d batches", o.Prefetch, data.MaxLookahead)
	}
	if o.Prefetch == 0 {
		o.Prefetch = 2
	}
	return nil
}

func (o *ImageOptions) loadOptions() (datasets.LoadOptions, error) {
	switch o.Check {
	case "", "markers":
		return datasets.LoadOptions{Check: datasets.CheckMarkers}, nil
	case "exists":
		return datasets.LoadOptions{Check: datasets.CheckExists}, nil
	case "none":
		return datasets.LoadOptions{Check: datasets.CheckNone}, nil
	case "decode":
		return datasets.LoadOptions{Check: datasets.CheckDecode}, nil
	}
	return datasets.LoadOptions{}, fmt.Errorf("data.options.check: %q: want markers, exists, none or decode", o.Check)
}

// imageDataset describes one registered benchmark.
type imageDataset struct {
	name, source string // trainer name; datasets.Sources name (default root)
	// load reads the benchmark's lists; o is resolved.
	load func(root string, o *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error)
	// options lists the dataset-specific options it accepts besides the common ones.
	options []string
}

// imageDatasets are the registered benchmarks and their protocols (seed 000 §5.1 / Table 1,
// seed 003 §4.1 / Table 1):
//
//   - cub: CUB-200-2011 ([datasets.CUB]). split openset (default): classes 1–100 train (5,864
//     images), 101–200 test (5,924), the DML protocol. split official: train_test_split.txt,
//     5,994 / 5,794 images sharing all 200 classes — the setting of seed 000's main tables ("For
//     CUB and Cars, we use shared train-test classes", Table 1).
//   - cars: Cars196 ([datasets.Cars196]): classes 1–98 train (8,054 images), 99–196 test (8,131),
//     "the first half of the classes" (seed 003 §4.1); cars_annos.mat or the CSV pair.
//   - sop: Stanford Online Products ([datasets.SOP]): Ebay_train.txt (11,318 classes, 59,551
//     images) / Ebay_test.txt (11,316, 60,502), class-disjoint; Coarse = the 12 super-classes.
//   - inat: iNaturalist-2018 with the Smooth-AP open-world split ([datasets.INaturalist2018]):
//     Inaturalist_train_set1.txt (5,690 classes, 325,846 images) / Inaturalist_test_set1.txt
//     (2,452 unseen classes, 136,093); Coarse = super-category.
//   - inshop: In-Shop Clothes ([datasets.InShop]): train 3,997 items (25,882 images). The trainer's
//     evaluation is leave-one-out retrieval within one set, so the test set is query (14,218) and
//     gallery (12,612) pooled; its R@k is not the paper protocol's query→gallery R@k.
//   - market1501: Market-1501 ([datasets.Market1501]): bounding_box_train (751 identities, 12,936
//     images); the test set is query (3,368) and gallery pooled without junk and distractors, as
//     inshop, so the trainer's evaluation is leave-one-out retrieval, not the Market-1501
//     query→gallery protocol with same-camera junk (seed 001 Table 1): that protocol needs the
//     query/gallery split and cameras at evaluation, which the trainer does not carry yet.
//   - vehicleid: PKU VehicleID ([datasets.VehicleID]): train_list.txt (13,134 vehicles) / the
//     test_list_<test_size>.txt list (800, 1600 or 2400 vehicles) as one retrieval set.
//
// Labels are renumbered densely: the training classes 0…K−1 in increasing order of the loader's
// label, then the test classes not seen in training. This is the identity for cub (openset),
// cars and sop, and gives proxy losses class indices below K.
var imageDatasets = []imageDataset{
	{name: "cub", source: "cub", options: []string{"split"},
		load: func(root string, o *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
			var sp datasets.CUBSplit
			switch o.Split {
			case "", "openset":
				sp = datasets.CUBOpenSet
			case "official":
				sp = datasets.CUBOfficial
			default:
				return nil, fmt.Errorf("data.options.split: %q: want openset or official", o.Split)
			}
			return datasets.CUB(root, sp, lo)
		}},
	{name: "cars", source: "cars196", load: func(root string, _ *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
		return datasets.Cars196(root, lo)
	}},
	{name: "sop", source: "sop", load: func(root string, _ *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
		return datasets.SOP(root, lo)
	}},
	{name: "inat", source: "inat2018", load: func(root string, _ *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
		return datasets.INaturalist2018(root, lo)
	}},
	{name: "inshop", source: "inshop", load: func(root string, _ *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
		s, err := datasets.InShop(root, lo)
		if err != nil {
			return nil, err
		}
		test := &data.Files{Name: "inshop/query+gallery"}
		for _, f := range []*data.Files{s.Query, s.Gallery} {
			test.Paths = append(test.Paths, f.Paths...)
			test.Labels = append(test.Labels, f.Labels...)
		}
		return &data.FileSplit{Train: s.Train, Test: test}, nil
	}},
	{name: "market1501", source: "market1501", load: func(root string, _ *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
		s, err := datasets.Market1501(root, lo)
		if err != nil {
			return nil, err
		}
		test := &data.Files{Name: "market1501/query+gallery"}
		for _, f := range []*data.Files{s.Query, s.Gallery} {
			for i, l := range f.Labels {
				if l <= 0 { // junk (−1) and distractors (0000): no identity to retrieve
					continue
				}
				test.Paths = append(test.Paths, f.Paths[i])
				test.Labels = append(test.Labels, l)
				test.Cams = append(test.Cams, f.Cams[i])
			}
		}
		return &data.FileSplit{Train: s.Train, Test: test}, nil
	}},
	{name: "vehicleid", source: "vehicleid", options: []string{"test_size"},
		load: func(root string, o *ImageOptions, lo datasets.LoadOptions) (*data.FileSplit, error) {
			ts := o.TestSize
			if ts == 0 {
				ts = 800
			}
			if ts != 800 && ts != 1600 && ts != 2400 {
				return nil, fmt.Errorf("data.options.test_size: %d: want 800, 1600 or 2400", ts)
			}
			return datasets.VehicleID(root, ts, lo)
		}},
}

func init() {
	for _, d := range imageDatasets {
		RegisterSetDataset(d.name, func(opts map[string]any, seed int64) (*data.SetSplit, error) {
			return loadImageDataset(d, opts, seed)
		})
	}
}

// loadImageDataset parses the options, finds the root, reads the lists and builds the sets.
func loadImageDataset(d imageDataset, opts map[string]any, seed int64) (*data.SetSplit, error) {
	var o ImageOptions
	if err := config.SetAll(&o, opts); err != nil {
		return nil, fmt.Errorf("data.options: %w", err)
	}
	for key, set := range map[string]bool{"split": o.Split != "", "test_size": o.TestSize != 0} {
		if set && !contains(d.options, key) {
			return nil, fmt.Errorf("data.options.%s: not an option of %s", key, d.name)
		}
	}
	if err := o.resolve(); err != nil {
		return nil, err
	}
	lo, err := o.loadOptions()
	if err != nil {
		return nil, err
	}
	root, err := datasetRoot(d, o.Root)
	if err != nil {
		return nil, err
	}
	fs, err := d.load(root, &o, lo)
	if err != nil {
		return nil, fmt.Errorf("data.options.root %s: %w", root, err)
	}
	if fs.Train.Len() == 0 || fs.Test.Len() == 0 {
		return nil, fmt.Errorf("data.options.root %s: %s has %d training and %d test images", root, d.name, fs.Train.Len(), fs.Test.Len())
	}
	labels := denseLabels(fs.Train.Labels, fs.Test.Labels)
	cache := NewDecodeCache(o.Resize, int64(o.CacheMB)<<20, o.Workers)
	train, err := NewFileSet(fs.Train, labels[0], o, seed, cache)
	if err != nil {
		return nil, err
	}
	test, err := NewFileSet(fs.Test, labels[1], o, seed, cache)
	if err != nil {
		return nil, err
	}
	return &data.SetSplit{Train: train, Test: test}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// datasetRoot resolves data.options.root (see [ImageOptions.Root]); the error names the
// directories tried and the option.
func datasetRoot(d imageDataset, explicit string) (string, error) {
	var cands []string
	if explicit != "" {
		cands = []string{explicit}
	} else {
		if e := os.Getenv("DMLKIT_DATA"); e != "" {
			cands = append(cands, filepath.Join(e, d.source))
		}
		if r, err := datasets.DefaultRoot(d.source); err == nil {
			cands = append(cands, r)
		}
	}
	for _, c := range cands {
		if !isDirectory(c) {
			continue
		}
		if src, err := datasets.LookupSource(d.source); err == nil && src.DataDir != "" && isDirectory(filepath.Join(c, src.DataDir)) {
			return filepath.Join(c, src.DataDir), nil
		}
		return c, nil
	}
	if explicit != "" {
		return "", fmt.Errorf("data.options.root: %s is not a directory (the %s dataset root)", explicit, d.name)
	}
	return "", fmt.Errorf("data.options.root: not set, and no %s dataset directory at %s; set data.options.root or run `dmlkit data fetch %s`",
		d.name, strings.Join(cands, " or "), d.source)
}

func isDirectory(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// denseLabels renumbers the labels of the parts: the distinct labels of parts[0] in increasing
// order become 0…K−1, then the labels of later parts not yet numbered, part by part.
func denseLabels(parts ...[]int32) [][]int32 {
	id := map[int32]int32{}
	next := int32(0)
	out := make([][]int32, len(parts))
	for p, ls := range parts {
		var fresh []int32
		for _, l := range ls {
			if _, ok := id[l]; !ok {
				id[l] = -1
				fresh = append(fresh, l)
			}
		}
		sort.Slice(fresh, func(i, j int) bool { return fresh[i] < fresh[j] })
		for _, l := range fresh {
			id[l] = next
			next++
		}
		out[p] = make([]int32, len(ls))
		for i, l := range ls {
			out[p][i] = id[l]
		}
	}
	return out
}

// FileSet is a labelled set of image files decoded on demand ([data.Set] and [data.EpochFiller]). Fill
// gives the test-time view (short side resized to Resize, centre crop); FillEpoch gives the
// training view (the configured augmentation, drawn from the seed, the epoch and the image). Both
// decode through a shared [DecodeCache] with up to Workers concurrent decodes; inputs are
// [Size, Size, 3] float32, normalised with Mean/Std (see [ImageOptions]).
type FileSet struct {
	name      string
	paths     []string
	labels    []int32
	coarse    []int32
	o         ImageOptions // resolved
	mean, std [3]float32
	seed      int64
	cache     *DecodeCache

	mu      sync.Mutex
	readEnd int // one past the last index of the previous contiguous Fill (read-ahead)
}

// NewFileSet builds a set over the files f with labels (nil: f.Labels) and f.Coarse. o is
// resolved (defaults filled, values checked: errors name the option); cache nil makes a new cache
// from o, otherwise its short side must be o.Resize.
func NewFileSet(f *data.Files, labels []int32, o ImageOptions, seed int64, cache *DecodeCache) (*FileSet, error) {
	if err := o.resolve(); err != nil {
		return nil, err
	}
	if labels == nil {
		labels = f.Labels
	}
	if len(labels) != f.Len() || (f.Coarse != nil && len(f.Coarse) != f.Len()) {
		return nil, fmt.Errorf("train: %s: %d paths, %d labels, %d coarse labels", f.Name, f.Len(), len(labels), len(f.Coarse))
	}
	if cache == nil {
		cache = NewDecodeCache(o.Resize, int64(o.CacheMB)<<20, o.Workers)
	}
	if cache.short != o.Resize {
		return nil, fmt.Errorf("train: %s: the decode cache resizes to %d, data.options.resize is %d", f.Name, cache.short, o.Resize)
	}
	s := &FileSet{name: f.Name, paths: f.Paths, labels: labels, coarse: f.Coarse, o: o, seed: seed, cache: cache}
	for c := 0; c < 3; c++ {
		s.mean[c], s.std[c] = float32(o.Mean[c]), float32(o.Std[c])
	}
	return s, nil
}

func (s *FileSet) Len() int              { return len(s.paths) }
func (s *FileSet) Dims() (int, int, int) { return s.o.Size, s.o.Size, 3 }
func (s *FileSet) Labels() []int32       { return s.labels }
func (s *FileSet) Coarse() []int32       { return s.coarse }

// Path returns the file of input i.
func (s *FileSet) Path(i int) string { return s.paths[i] }

// Fill writes the test-time view of inputs idx into dst. When idx continues the previous call's
// contiguous range (as evaluation reads a set), the next range of the same length is decoded in
// the background. Fill cannot return an error: a file that fails to decode (the loaders check
// every file's markers when they read the lists, so this means a damaged image) panics with an
// error naming it.
func (s *FileSet) Fill(idx []int, dst []float32) {
	if err := s.fill(idx, dst, 0, false); err != nil {
		panic(err)
	}
	if len(idx) == 0 || idx[len(idx)-1]-idx[0] != len(idx)-1 {
		return
	}
	end := idx[len(idx)-1] + 1
	s.mu.Lock()
	sequential := idx[0] == 0 || idx[0] == s.readEnd
	s.readEnd = end
	s.mu.Unlock()
	if sequential {
		var ahead []string
		for i := end; i < min(end+len(idx), len(s.paths)); i++ {
			ahead = append(ahead, s.paths[i])
		}
		s.cache.Prefetch(ahead)
	}
}

// FillEpoch writes the training view of inputs idx for epoch into dst and starts decoding the
// images of the first Prefetch batches of next.
func (s *FileSet) FillEpoch(epoch int, idx []int, next [][]int, dst []float32) error {
	if err := s.fill(idx, dst, epoch, s.o.Augment != "none"); err != nil {
		return err
	}
	var ahead []string
	for _, b := range next[:min(len(next), s.o.Prefetch)] {
		for _, i := range b {
			ahead = append(ahead, s.paths[i])
		}
	}
	s.cache.Prefetch(ahead)
	return nil
}

// fill decodes idx with up to Workers goroutines and writes each view into its slot of dst.
// The random stream of an image depends on (seed, epoch, image, k) only, k counting earlier
// occurrences of the image in idx, so the result does not depend on scheduling or the cache.
func (s *FileSet) fill(idx []int, dst []float32, epoch int, train bool) error {
	sz := s.o.Size * s.o.Size * 3
	if len(dst) < len(idx)*sz {
		return fmt.Errorf("train: %s: %d floats for %d inputs of %d", s.name, len(dst), len(idx), sz)
	}
	occ := make([]int, len(idx))
	if train {
		seen := map[int]int{}
		for k, i := range idx {
			occ[k] = seen[i]
			seen[i]++
		}
	}
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < min(s.o.Workers, len(idx)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1) - 1)
				if k >= len(idx) {
					return
				}
				i := idx[k]
				if i < 0 || i >= len(s.paths) {
					once.Do(func() {
						firstErr = fmt.Errorf("train: %s: input %d outside the set (%d images)", s.name, i, len(s.paths))
					})
					return
				}
				img, err := s.cache.Get(s.paths[i])
				if err != nil {
					once.Do(func() { firstErr = fmt.Errorf("train: %s: %w", s.name, err) })
					return
				}
				out := dst[k*sz : (k+1)*sz]
				if !train {
					s.centre(out, img)
					continue
				}
				s.augment(out, img, data.ViewRand(s.seed, epoch, occ[k], i))
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// centre writes the centre Size×Size crop of img.
func (s *FileSet) centre(dst []float32, img *pipeline.RGB) {
	n := s.o.Size
	pipeline.CropNormalize(dst, img, (img.W-n)/2, (img.H-n)/2, n, false, s.mean, s.std)
}

// augment writes the training view of img: the configured crop, then a horizontal flip with
// probability ½ (drawn after the crop, as torchvision's RandomResizedCrop → RandomHorizontalFlip).
func (s *FileSet) augment(dst []float32, img *pipeline.RGB, r *rand.Rand) {
	n := s.o.Size
	switch s.o.Augment {
	case "random_crop":
		x0, y0 := r.IntN(img.W-n+1), r.IntN(img.H-n+1)
		pipeline.CropNormalize(dst, img, x0, y0, n, r.Float64() < 0.5, s.mean, s.std)
	case "random_resized_crop":
		view, _ := raster.RandomResizedCrop(r, img, n, [2]float64{s.o.Scale[0], s.o.Scale[1]}, [2]float64{s.o.Ratio[0], s.o.Ratio[1]})
		pipeline.CropNormalize(dst, view, 0, 0, n, false, s.mean, s.std) // view is already flipped when drawn
	default:
		s.centre(dst, img)
	}
}

// rrcBox is [raster.RandomResizedCropBox].
func rrcBox(r *rand.Rand, W, H int, scale, ratio [2]float64) (x0, y0, w, h int) {
	return raster.RandomResizedCropBox(r, W, H, scale, ratio)
}

// DecodeCache holds decoded images, resized to a common short side, up to a byte budget: the
// least recently used are dropped first. Concurrent requests for one file share one decode, and
// at most workers decodes run at once (Get and Prefetch together). Safe for concurrent use.
type DecodeCache struct {
	short   int
	budget  int64
	sem     chan struct{}
	decodes atomic.Int64

	mu      sync.Mutex
	entries map[string]*cacheEntry
	lru     *list.List // decoded entries, most recently used first
	bytes   int64

	pmu     sync.Mutex
	queue   []string // files to prefetch, in order
	running int      // prefetch goroutines
}

type cacheEntry struct {
	path string
	done chan struct{}
	img  *pipeline.RGB
	err  error
	elem *list.Element // nil while decoding or once evicted
}

// NewDecodeCache returns a cache of images resized to short side short, holding at most budget
// bytes of pixels, with workers concurrent decodes (≤ 0: GOMAXPROCS).
func NewDecodeCache(short int, budget int64, workers int) *DecodeCache {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &DecodeCache{short: short, budget: budget, sem: make(chan struct{}, workers),
		entries: map[string]*cacheEntry{}, lru: list.New()}
}

// Get returns the decoded image of path (RGB, short side resized), decoding it unless cached.
// The image is shared: do not modify it. Errors name the file.
func (c *DecodeCache) Get(path string) (*pipeline.RGB, error) {
	c.mu.Lock()
	if e, ok := c.entries[path]; ok {
		if e.elem != nil {
			c.lru.MoveToFront(e.elem)
		}
		c.mu.Unlock()
		<-e.done
		return e.img, e.err
	}
	e := &cacheEntry{path: path, done: make(chan struct{})}
	c.entries[path] = e
	c.mu.Unlock()

	c.sem <- struct{}{}
	img, err := pipeline.DecodeFile(path)
	if err == nil {
		img = pipeline.ResizeShort(img, c.short)
	}
	<-c.sem
	c.decodes.Add(1)

	c.mu.Lock()
	e.img, e.err = img, err
	if err != nil {
		delete(c.entries, path) // a later Get tries again and reports the error itself
	} else {
		e.elem = c.lru.PushFront(e)
		c.bytes += int64(len(img.Pix))
		for c.bytes > c.budget && c.lru.Len() > 0 {
			old := c.lru.Remove(c.lru.Back()).(*cacheEntry)
			old.elem = nil
			delete(c.entries, old.path)
			c.bytes -= int64(len(old.img.Pix))
		}
	}
	c.mu.Unlock()
	close(e.done)
	return img, err
}

// Prefetch replaces the list of files to decode in the background (the previous list is
// dropped: it described batches that have been used) and starts up to workers goroutines that
// decode them into the cache; they exit when the list is empty. Errors are left for Get.
func (c *DecodeCache) Prefetch(paths []string) {
	c.mu.Lock()
	todo := make([]string, 0, len(paths))
	for _, p := range paths {
		if _, ok := c.entries[p]; !ok {
			todo = append(todo, p)
		}
	}
	c.mu.Unlock()
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.queue = todo
	for c.running < cap(c.sem) && c.running < len(c.queue) {
		c.running++
		go c.prefetchLoop()
	}
}

func (c *DecodeCache) prefetchLoop() {
	for {
		c.pmu.Lock()
		if len(c.queue) == 0 {
			c.running--
			c.pmu.Unlock()
			return
		}
		p := c.queue[0]
		c.queue = c.queue[1:]
		c.pmu.Unlock()
		c.Get(p)
	}
}

// Decodes is the number of files decoded so far (cache misses).
func (c *DecodeCache) Decodes() int64 { return c.decodes.Load() }

// Bytes is the pixel memory the cache holds now.
func (c *DecodeCache) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
