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
)

// DatasetFunc loads a dataset split from its options (data.options of the configuration).
// Errors should name the option at fault.
type DatasetFunc func(opts map[string]any) (*data.Split, error)

var (
	datasetsMu sync.RWMutex
	datasets   = map[string]DatasetFunc{}
)

// RegisterDataset makes a loader available as data.name. Registering a name again replaces it
// (so tests and the CLI can override the built-ins).
func RegisterDataset(name string, fn DatasetFunc) {
	datasetsMu.Lock()
	defer datasetsMu.Unlock()
	datasets[name] = fn
}

// Datasets returns the registered dataset names, sorted.
func Datasets() []string {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	out := make([]string, 0, len(datasets))
	for n := range datasets {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func lookupDataset(name string) (DatasetFunc, bool) {
	datasetsMu.RLock()
	defer datasetsMu.RUnlock()
	fn, ok := datasets[name]
	return fn, ok
}

// omniglotOptions are the options of the built-in "omniglot" dataset.
type omniglotOptions struct {
	Root      string `yaml:"root"`
	Size      int    `yaml:"size"`
	Alphabets bool   `yaml:"alphabets"`
}

type mnistOptions struct {
	Dir string `yaml:"dir"`
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
		s, err := data.MNIST(o.Dir)
		if err != nil {
			return nil, err
		}
		return data.OpenSet(s, data.DigitsLow), nil
	})
	RegisterDataset("fashion-mnist", func(opts map[string]any) (*data.Split, error) {
		var o mnistOptions
		if err := config.SetAll(&o, opts); err != nil {
			return nil, fmt.Errorf("data.options: %w", err)
		}
		s, err := data.FashionMNIST(o.Dir)
		if err != nil {
			return nil, err
		}
		return data.OpenSet(s, data.DigitsLow), nil
	})
}

// loadData resolves the configured dataset and applies class limits and the validation split.
func loadData(cfg *Config) (*data.Split, error) {
	fn, ok := lookupDataset(cfg.Data.Name)
	if !ok {
		return nil, fmt.Errorf("data.name: unknown dataset %q; registered: %s", cfg.Data.Name, strings.Join(Datasets(), ", "))
	}
	s, err := fn(cfg.Data.Options)
	if err != nil {
		return nil, fmt.Errorf("data %s: %w", cfg.Data.Name, err)
	}
	if s == nil || s.Train == nil || s.Test == nil {
		return nil, fmt.Errorf("data %s: loader returned no train or test set", cfg.Data.Name)
	}
	out := &data.Split{Train: s.Train, Val: s.Val, Test: s.Test}
	if n := cfg.Data.MaxTrainClasses; n > 0 {
		out.Train = firstClasses(out.Train, n)
	}
	if n := cfg.Data.MaxTestClasses; n > 0 {
		out.Test = firstClasses(out.Test, n)
	}
	if f := cfg.Data.ValClasses; f > 0 {
		classes := out.Train.Classes()
		r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0x7a1))
		r.Shuffle(len(classes), func(i, j int) { classes[i], classes[j] = classes[j], classes[i] })
		nv := int(math.Ceil(f * float64(len(classes))))
		if nv >= len(classes) {
			return nil, fmt.Errorf("data.val_classes: %g of %d classes leaves none for training", f, len(classes))
		}
		val := map[int32]bool{}
		for _, c := range classes[:nv] {
			val[c] = true
		}
		tr := out.Train
		out.Val = tr.FilterClasses(func(l int32) bool { return val[l] })
		out.Train = tr.FilterClasses(func(l int32) bool { return !val[l] })
	}
	for _, p := range []*data.Images{out.Train, out.Val, out.Test} {
		if p == nil {
			continue
		}
		if err := p.Validate(); err != nil {
			return nil, err
		}
	}
	if out.Train.H != out.Test.H || out.Train.W != out.Test.W || out.Train.C != out.Test.C {
		return nil, fmt.Errorf("data %s: train images are %d×%d×%d but test images %d×%d×%d", cfg.Data.Name,
			out.Train.H, out.Train.W, out.Train.C, out.Test.H, out.Test.W, out.Test.C)
	}
	return out, nil
}

// firstClasses keeps the images of the n smallest labels.
func firstClasses(s *data.Images, n int) *data.Images {
	cl := s.Classes()
	if n >= len(cl) {
		return s
	}
	keep := map[int32]bool{}
	for _, c := range cl[:n] {
		keep[c] = true
	}
	return s.FilterClasses(func(l int32) bool { return keep[l] })
}

// pixels writes images idx of s as float32 in [0, 1] ([len(idx), H, W, C]) into dst.
func pixels(s *data.Images, idx []int, dst []float32) {
	sz := s.H * s.W * s.C
	for i, j := range idx {
		src := s.Pix[j*sz : (j+1)*sz]
		d := dst[i*sz : (i+1)*sz]
		for k, p := range src {
			d[k] = float32(p) * (1.0 / 255)
		}
	}
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
