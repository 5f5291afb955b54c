package train

import (
	"reflect"
	"testing"
)

// labelsWithSizes returns labels where class c has sizes[c] images, interleaved.
func labelsWithSizes(sizes []int) []int32 {
	var out []int32
	left := append([]int(nil), sizes...)
	for more := true; more; {
		more = false
		for c := range left {
			if left[c] > 0 {
				out = append(out, int32(c))
				left[c]--
				more = true
			}
		}
	}
	return out
}

// TestSamplerMPerClass checks the m-per-class invariants: every batch is B/m distinct classes ×
// m contiguous images, no image is used twice in an epoch, classes with fewer than m images are
// never used, an epoch ends only when fewer than B/m classes have m unused images left, and the
// batches of an epoch depend only on (seed, epoch).
func TestSamplerMPerClass(t *testing.T) {
	sizes := []int{3, 4, 5, 8, 9, 12, 2, 7, 4, 6, 10, 4, 1, 8}
	labels := labelsWithSizes(sizes)
	cfg := SamplerConfig{Name: "m_per_class", BatchSize: 12, M: 4}
	s, err := NewSampler(cfg, 42, labels, nil)
	if err != nil {
		t.Fatal(err)
	}
	perBatch := cfg.BatchSize / cfg.M
	for e := 0; e < 5; e++ {
		batches := s.Epoch(e)
		if len(batches) == 0 {
			t.Fatalf("epoch %d: no batches", e)
		}
		used := map[int]bool{}
		usedPerClass := map[int32]int{}
		for bi, b := range batches {
			if len(b) != cfg.BatchSize {
				t.Fatalf("epoch %d batch %d: %d images", e, bi, len(b))
			}
			seen := map[int32]bool{}
			for k := 0; k < perBatch; k++ {
				c := labels[b[k*cfg.M]]
				if seen[c] {
					t.Fatalf("epoch %d batch %d: class %d repeated", e, bi, c)
				}
				seen[c] = true
				if sizes[c] < cfg.M {
					t.Fatalf("class %d has %d < m images but was sampled", c, sizes[c])
				}
				for j := 0; j < cfg.M; j++ {
					i := b[k*cfg.M+j]
					if labels[i] != c {
						t.Fatalf("epoch %d batch %d: block %d mixes classes", e, bi, k)
					}
					if used[i] {
						t.Fatalf("epoch %d: image %d used twice", e, i)
					}
					used[i] = true
					usedPerClass[c]++
				}
			}
		}
		// Coverage: fewer than perBatch classes may still have m unused images.
		left := 0
		for c, n := range sizes {
			if n >= cfg.M && n-usedPerClass[int32(c)] >= cfg.M {
				left++
			}
		}
		if left >= perBatch {
			t.Errorf("epoch %d ended with %d classes still able to fill a batch of %d", e, left, perBatch)
		}
		if !reflect.DeepEqual(batches, s.Epoch(e)) {
			t.Fatalf("epoch %d is not deterministic", e)
		}
	}
	if reflect.DeepEqual(s.Epoch(0), s.Epoch(1)) {
		t.Error("epochs 0 and 1 are identical")
	}
	s2, _ := NewSampler(cfg, 43, labels, nil)
	if reflect.DeepEqual(s.Epoch(0), s2.Epoch(0)) {
		t.Error("seeds 42 and 43 give the same epoch")
	}
}

// TestSamplerHierarchical: each batch takes its classes from exactly coarse_per_batch
// super-classes, B/(m·coarse_per_batch) classes from each, m images per class.
func TestSamplerHierarchical(t *testing.T) {
	sizes := make([]int, 24)
	for i := range sizes {
		sizes[i] = 4 + i%5
	}
	labels := labelsWithSizes(sizes)
	coarse := make([]int32, len(labels))
	for i, l := range labels {
		coarse[i] = l % 4
	}
	cfg := SamplerConfig{Name: "hierarchical", BatchSize: 16, M: 2, CoarsePerBatch: 2}
	s, err := NewSampler(cfg, 1, labels, coarse)
	if err != nil {
		t.Fatal(err)
	}
	batches := s.Epoch(0)
	if len(batches) < 3 {
		t.Fatalf("only %d batches", len(batches))
	}
	used := map[int]bool{}
	for bi, b := range batches {
		perCoarse := map[int32]map[int32]int{}
		for _, i := range b {
			if used[i] {
				t.Fatalf("image %d used twice", i)
			}
			used[i] = true
			if perCoarse[coarse[i]] == nil {
				perCoarse[coarse[i]] = map[int32]int{}
			}
			perCoarse[coarse[i]][labels[i]]++
		}
		if len(perCoarse) != 2 {
			t.Fatalf("batch %d spans %d super-classes, want 2", bi, len(perCoarse))
		}
		for sc, cl := range perCoarse {
			if len(cl) != 4 {
				t.Fatalf("batch %d: super-class %d has %d classes, want 4", bi, sc, len(cl))
			}
			for c, n := range cl {
				if n != 2 {
					t.Fatalf("batch %d: class %d has %d images, want 2", bi, c, n)
				}
			}
		}
	}
	if _, err := NewSampler(cfg, 1, labels, nil); err == nil {
		t.Error("hierarchical without coarse labels accepted")
	}
}

// TestSamplerRandom: batches are disjoint slices of one permutation, only the incomplete tail is
// dropped.
func TestSamplerRandom(t *testing.T) {
	labels := make([]int32, 50)
	s, err := NewSampler(SamplerConfig{Name: "random", BatchSize: 8}, 3, labels, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := s.Epoch(2)
	if len(b) != 6 {
		t.Fatalf("%d batches, want ⌊50/8⌋ = 6", len(b))
	}
	seen := map[int]bool{}
	for _, x := range b {
		for _, i := range x {
			if seen[i] || i < 0 || i >= 50 {
				t.Fatalf("bad or repeated index %d", i)
			}
			seen[i] = true
		}
	}
}

// TestScheduleFactor checks each schedule at hand-computed points (10 steps per epoch).
func TestScheduleFactor(t *testing.T) {
	for _, tc := range []struct {
		s     ScheduleConfig
		step  int
		total float64
		want  float64
	}{
		{ScheduleConfig{Name: "constant"}, 57, 10, 1},
		{ScheduleConfig{Name: "step", StepSize: 2, Gamma: 0.5}, 19, 10, 1},    // epoch 1.9
		{ScheduleConfig{Name: "step", StepSize: 2, Gamma: 0.5}, 20, 10, 0.5},  // epoch 2
		{ScheduleConfig{Name: "step", StepSize: 2, Gamma: 0.5}, 45, 10, 0.25}, // epoch 4.5
		{ScheduleConfig{Name: "multistep", Milestones: []int{3, 5}, Gamma: 0.3}, 29, 10, 1},
		{ScheduleConfig{Name: "multistep", Milestones: []int{3, 5}, Gamma: 0.3}, 30, 10, 0.3},
		{ScheduleConfig{Name: "multistep", Milestones: []int{3, 5}, Gamma: 0.3}, 55, 10, 0.09},
		{ScheduleConfig{Name: "cosine"}, 0, 10, 1},
		{ScheduleConfig{Name: "cosine"}, 50, 10, 0.5}, // ½(1+cos(π/2))
		{ScheduleConfig{Name: "cosine", MinFactor: 0.1}, 100, 10, 0.1},
		{ScheduleConfig{Name: "cosine", MinFactor: 0.2}, 25, 10, 0.2 + 0.8*0.5*(1+0.7071067811865476)},
		{ScheduleConfig{Name: "constant", Warmup: 2}, 0, 10, 1.0 / 20},
		{ScheduleConfig{Name: "constant", Warmup: 2}, 9, 10, 0.5},
		{ScheduleConfig{Name: "constant", Warmup: 2}, 30, 10, 1},
	} {
		if got := tc.s.Factor(tc.step, 10, tc.total); abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v step %d: factor %g, want %g", tc.s, tc.step, got, tc.want)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
