package data

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/dmlkit/dmlkit/dmlkit/data/raster"
)

// Training augmentations of in-memory image datasets (cifar10, imagefolder). They take the keys
// and meanings of the file-backed benchmarks (prepare.ImageOptions) — data.options.augment, scale
// and ratio — and the same per-image random stream ([ViewRand]), so there is one augmentation
// mechanism: the [EpochFiller] the training loop already calls. Evaluation (validation and test
// sets, and Fill of the training set) always sees the stored images.

// AugmentOptions are the augmentation keys of data.options for in-memory image datasets.
//
//   - augment "none" (default): the stored images, as every in-memory set gives them (so
//     cached-feature runs see the same input every epoch);
//   - "flip": a horizontal flip with probability ½;
//   - "random_resized_crop": torchvision's RandomResizedCrop(S, scale, ratio) of the stored S×S
//     image (the box of [raster.RandomResizedCropBox]), resized back to S×S with the pipeline's
//     antialiased bilinear filter, then the flip (torchvision's RandomResizedCrop →
//     RandomHorizontalFlip). Unlike torchvision on the original files, the box is drawn on the
//     image already resized to S (data.options.size), so a small box of an upsampled 32-px
//     CIFAR-10 image is upsampled twice.
//
// Scale and Ratio default to torchvision's [0.08, 1] and [3/4, 4/3]. Inputs stay in [0, 1]
// (pixel/255), NHWC, as every in-memory image set.
type AugmentOptions struct {
	Augment string    `yaml:"augment"`
	Scale   []float64 `yaml:"scale"`
	Ratio   []float64 `yaml:"ratio"`
}

// AugmentKeys are the data.options keys that AugmentOptions takes.
var AugmentKeys = []string{"augment", "scale", "ratio"}

// Resolve fills the defaults and checks the values; errors name the option.
func (o *AugmentOptions) Resolve() error {
	const p = "data.options."
	switch o.Augment {
	case "":
		o.Augment = "none"
	case "none", "flip", "random_resized_crop":
	case "random_crop":
		return fmt.Errorf(p + "augment: random_crop: in-memory images are stored at the training size, so a crop of that size is the whole image; want none, flip or random_resized_crop")
	default:
		return fmt.Errorf(p+"augment: %q: want none, flip or random_resized_crop", o.Augment)
	}
	if o.Augment != "random_resized_crop" {
		if o.Scale != nil || o.Ratio != nil {
			return fmt.Errorf(p+"scale, ratio: only with augment random_resized_crop (augment is %s)", o.Augment)
		}
		return nil
	}
	return ResolveCropBox(p, &o.Scale, &o.Ratio)
}

// ResolveCropBox fills the random resized crop's defaults (torchvision's: scale (0.08, 1), ratio
// (3/4, 4/3)) and checks both ranges; p prefixes the option names in errors.
func ResolveCropBox(p string, scale, ratio *[]float64) error {
	if *scale == nil {
		*scale = []float64{0.08, 1}
	}
	if *ratio == nil {
		*ratio = []float64{3.0 / 4, 4.0 / 3}
	}
	if s := *scale; len(s) != 2 || !(s[0] > 0 && s[0] <= s[1] && s[1] <= 1) {
		return fmt.Errorf(p+"scale: %v: want [lo, hi] with 0 < lo ≤ hi ≤ 1", s)
	}
	if r := *ratio; len(r) != 2 || !(r[0] > 0 && r[0] <= r[1]) {
		return fmt.Errorf(p+"ratio: %v: want [lo, hi] with 0 < lo ≤ hi", r)
	}
	return nil
}

// AugmentedImages is an in-memory image set whose training view is augmented ([Set] and
// [EpochFiller]): Fill gives the stored images (pixel/255), FillEpoch the augmentation of
// [AugmentOptions], drawn from (seed, epoch, image, occurrence in the batch) only, so the
// result does not depend on batching or scheduling.
type AugmentedImages struct {
	ImageSet
	o    AugmentOptions // resolved
	seed int64
}

// Options are the resolved augmentation options of s.
func (s *AugmentedImages) Options() AugmentOptions { return s.o }

// NewAugmentedImages wraps s; o is resolved (errors name the option).
func NewAugmentedImages(s *Images, o AugmentOptions, seed int64) (*AugmentedImages, error) {
	if err := o.Resolve(); err != nil {
		return nil, err
	}
	if s.C != 3 && o.Augment == "random_resized_crop" {
		return nil, fmt.Errorf("data.options.augment: random_resized_crop needs RGB images, %s has %d channels", s.Name, s.C)
	}
	return &AugmentedImages{ImageSet: ImageSet{s}, o: o, seed: seed}, nil
}

// FillEpoch writes the augmented views of inputs idx for epoch into dst (len(idx)·H·W·C floats);
// next is ignored (the images are in memory). Views are computed by up to two goroutines.
func (s *AugmentedImages) FillEpoch(epoch int, idx []int, _ [][]int, dst []float32) error {
	im := s.Images
	sz := im.H * im.W * im.C
	if len(dst) < len(idx)*sz {
		return fmt.Errorf("train: %s: %d floats for %d inputs of %d", im.Name, len(dst), len(idx), sz)
	}
	occ := make([]int, len(idx))
	seen := map[int]int{}
	for k, i := range idx {
		if i < 0 || i >= im.N {
			return fmt.Errorf("train: %s: input %d outside the set (%d images)", im.Name, i, im.N)
		}
		occ[k] = seen[i]
		seen[i]++
	}
	const workers = 2
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; k < len(idx); k += workers {
				s.view(dst[k*sz:(k+1)*sz], idx[k], ViewRand(s.seed, epoch, occ[k], idx[k]))
			}
		}()
	}
	wg.Wait()
	return nil
}

// view writes the augmented view of image i, scaled to [0, 1].
func (s *AugmentedImages) view(dst []float32, i int, r *rand.Rand) {
	im := s.Images
	src := im.Image(i)
	switch s.o.Augment {
	case "random_resized_crop":
		img := &raster.RGB{W: im.W, H: im.H, Pix: src}
		v, _ := raster.RandomResizedCrop(r, img, im.W, [2]float64{s.o.Scale[0], s.o.Scale[1]}, [2]float64{s.o.Ratio[0], s.o.Ratio[1]})
		if im.H != im.W {
			v = raster.Resize(v, im.W, im.H)
		}
		src = v.Pix
	case "flip":
		if r.Float64() < 0.5 {
			row := im.W * im.C
			for y := 0; y < im.H; y++ {
				for x := 0; x < im.W; x++ {
					for c := 0; c < im.C; c++ {
						dst[y*row+x*im.C+c] = float32(src[y*row+(im.W-1-x)*im.C+c]) * (1.0 / 255)
					}
				}
			}
			return
		}
	}
	for k, p := range src {
		dst[k] = float32(p) * (1.0 / 255)
	}
}

// ViewRand is the random stream of one training view: a function of the run seed, the epoch,
// the image and how many times the image appeared earlier in the batch (shared by the file sets
// of package prepare and [AugmentedImages]).
func ViewRand(seed int64, epoch, occ, i int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed)^0x6a09e667f3bcc909, uint64(epoch)<<40|uint64(occ&0xff)<<32|uint64(i)))
}
