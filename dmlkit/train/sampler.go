package train

import (
	"fmt"
	"math/rand/v2"
	"sort"
)

// SamplerConfig configures how epochs are cut into batches.
//
//   - m_per_class: batches of BatchSize/M classes × M images each (seed 003 §4.2 and the RS@k
//     code): each image of a class is used at most once per epoch; a batch is filled from the
//     classes that still have at least M unused images (classes with fewer than M images are
//     never used); the epoch ends when fewer than BatchSize/M such classes remain; the batches of
//     the epoch are then shuffled.
//   - hierarchical: like m_per_class, but each batch draws its classes from CoarsePerBatch
//     super-classes (coarse labels, e.g. SOP super-class or Omniglot alphabet), BatchSize /
//     (M·CoarsePerBatch) classes from each (the hierarchical sampler of seed 004's SOP setting).
//   - random: a random permutation of all images cut into batches of BatchSize (the last,
//     incomplete batch is dropped).
//
// Batches of epoch e depend only on (seed, e): resuming mid-epoch replays the same batches.
type SamplerConfig struct {
	Name           string `yaml:"name" doc:"m_per_class, hierarchical or random"`
	BatchSize      int    `yaml:"batch_size" doc:"images per batch"`
	M              int    `yaml:"m" doc:"images per class in a batch"`
	CoarsePerBatch int    `yaml:"coarse_per_batch" doc:"hierarchical: super-classes per batch"`
}

// Validate checks the sampler configuration.
func (s *SamplerConfig) Validate(prefix string) error {
	if s.BatchSize <= 1 {
		return fmt.Errorf("%s.batch_size: %d: want ≥ 2", prefix, s.BatchSize)
	}
	switch s.Name {
	case "random":
	case "m_per_class", "hierarchical":
		if s.M <= 0 || s.BatchSize%s.M != 0 {
			return fmt.Errorf("%s.m: %d: want > 0 and dividing batch_size %d", prefix, s.M, s.BatchSize)
		}
		if s.Name == "hierarchical" {
			if s.CoarsePerBatch <= 0 || (s.BatchSize/s.M)%s.CoarsePerBatch != 0 {
				return fmt.Errorf("%s.coarse_per_batch: %d: want > 0 and dividing batch_size/m = %d", prefix, s.CoarsePerBatch, s.BatchSize/s.M)
			}
		}
	default:
		return fmt.Errorf("%s.name: %q: want m_per_class, hierarchical or random", prefix, s.Name)
	}
	return nil
}

// Sampler produces the batches (image indices) of each epoch.
type Sampler struct {
	cfg    SamplerConfig
	seed   int64
	labels []int32
	coarse []int32
}

// NewSampler returns a sampler over images with the given labels (and coarse labels for
// "hierarchical").
func NewSampler(cfg SamplerConfig, seed int64, labels, coarse []int32) (*Sampler, error) {
	if err := cfg.Validate("sampler"); err != nil {
		return nil, err
	}
	if cfg.Name == "hierarchical" && len(coarse) != len(labels) {
		return nil, fmt.Errorf("sampler.name: hierarchical needs coarse labels for every image (dataset has %d for %d images)", len(coarse), len(labels))
	}
	return &Sampler{cfg: cfg, seed: seed, labels: labels, coarse: coarse}, nil
}

func (s *Sampler) rng(epoch int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(s.seed), 0x5a3b1e0000000000^uint64(epoch)))
}

// Epoch returns the batches of epoch e (0-based).
func (s *Sampler) Epoch(e int) [][]int {
	r := s.rng(e)
	switch s.cfg.Name {
	case "random":
		perm := r.Perm(len(s.labels))
		var out [][]int
		for i := 0; i+s.cfg.BatchSize <= len(perm); i += s.cfg.BatchSize {
			out = append(out, perm[i:i+s.cfg.BatchSize])
		}
		return out
	case "m_per_class":
		pools, classes := s.pools(r)
		out := s.fill(r, pools, [][]int32{classes}, s.cfg.BatchSize/s.cfg.M)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	case "hierarchical":
		pools, classes := s.pools(r)
		byCoarse := map[int32][]int32{}
		coarseOf := map[int32]int32{}
		for i, l := range s.labels {
			coarseOf[l] = s.coarse[i]
		}
		for _, c := range classes {
			byCoarse[coarseOf[c]] = append(byCoarse[coarseOf[c]], c)
		}
		keys := make([]int32, 0, len(byCoarse))
		for k := range byCoarse {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
		groups := make([][]int32, len(keys))
		for i, k := range keys {
			groups[i] = byCoarse[k]
		}
		out := s.fill(r, pools, groups, s.cfg.BatchSize/s.cfg.M)
		r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		return out
	}
	panic("train: unknown sampler " + s.cfg.Name)
}

// pools returns, per class with at least M images, its images in a random order, and the
// sorted list of those classes.
func (s *Sampler) pools(r *rand.Rand) (map[int32][]int, []int32) {
	pools := map[int32][]int{}
	for i, l := range s.labels {
		pools[l] = append(pools[l], i)
	}
	var classes []int32
	for c, p := range pools {
		if len(p) >= s.cfg.M {
			classes = append(classes, c)
		} else {
			delete(pools, c)
		}
	}
	sort.Slice(classes, func(i, j int) bool { return classes[i] < classes[j] })
	for _, c := range classes {
		p := pools[c]
		r.Shuffle(len(p), func(i, j int) { p[i], p[j] = p[j], p[i] })
	}
	return pools, classes
}

// fill builds batches of nClasses classes × M images. With one group it is m-per-class; with
// several (hierarchical) each batch takes nClasses/CoarsePerBatch classes from each of
// CoarsePerBatch groups chosen at random among those with enough eligible classes.
func (s *Sampler) fill(r *rand.Rand, pools map[int32][]int, groups [][]int32, nClasses int) [][]int {
	m := s.cfg.M
	perGroup, nGroups := nClasses, 1
	if len(groups) > 1 || s.cfg.Name == "hierarchical" {
		nGroups = s.cfg.CoarsePerBatch
		perGroup = nClasses / nGroups
	}
	eligible := func(g []int32) []int32 {
		var e []int32
		for _, c := range g {
			if len(pools[c]) >= m {
				e = append(e, c)
			}
		}
		return e
	}
	var out [][]int
	for {
		var okGroups [][]int32
		for _, g := range groups {
			if e := eligible(g); len(e) >= perGroup {
				okGroups = append(okGroups, e)
			}
		}
		if len(okGroups) < nGroups {
			return out
		}
		r.Shuffle(len(okGroups), func(i, j int) { okGroups[i], okGroups[j] = okGroups[j], okGroups[i] })
		batch := make([]int, 0, nClasses*m)
		for _, e := range okGroups[:nGroups] {
			r.Shuffle(len(e), func(i, j int) { e[i], e[j] = e[j], e[i] })
			for _, c := range e[:perGroup] {
				p := pools[c]
				batch = append(batch, p[len(p)-m:]...)
				pools[c] = p[:len(p)-m]
			}
		}
		out = append(out, batch)
	}
}
