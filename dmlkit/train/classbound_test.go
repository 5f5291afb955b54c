package train

import "testing"

// TestClassBound: the sampler's bound on samples per label that losses (rsk) receive. The
// m-per-class samplers put exactly M images of each chosen class in a batch (TestSampler* check
// the batches themselves), so M bounds single labels; label sets (Mixup) and the random sampler
// have no bound.
func TestClassBound(t *testing.T) {
	for _, tc := range []struct {
		sampler string
		m, rank int
		want    int
	}{
		{"m_per_class", 4, 1, 4},
		{"hierarchical", 2, 1, 2},
		{"m_per_class", 4, 2, 0}, // label sets: an item can share a label with more than M − 1 others
		{"random", 4, 1, 0},
	} {
		e := &engine{cfg: &Config{Sampler: SamplerConfig{Name: tc.sampler, M: tc.m}}}
		if got := e.classBound(tc.rank); got != tc.want {
			t.Errorf("%s, M %d, labels of rank %d: bound %d, want %d", tc.sampler, tc.m, tc.rank, got, tc.want)
		}
	}
}
