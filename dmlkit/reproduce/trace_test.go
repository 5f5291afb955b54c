package reproduce

import (
	"slices"
	"testing"
)

// TestTraceLoss: the loss trace keeps every ⌈n/100⌉-th step (1-based), and always the last.
// Worked by hand: 250 steps → every 3rd: steps 1, 4, …, 250 (84 points, 250 = 1 + 3·83 already
// last); 301 steps → every 4th: 1, 5, …, 301 (76 points); 5 steps → all 5.
func TestTraceLoss(t *testing.T) {
	for _, tc := range []struct {
		n, points int
		last      float64
	}{{250, 84, 250}, {301, 76, 301}, {5, 5, 5}, {0, 0, 0}, {102, 52, 102}} {
		losses := make([]float64, tc.n)
		for i := range losses {
			losses[i] = float64(i + 1) // the loss of step s is s
		}
		dst := map[string][]float64{}
		traceLoss(losses, dst)
		st, ls := dst["trace/step"], dst["trace/loss"]
		if len(st) != tc.points || len(ls) != tc.points || !slices.Equal(st, ls) {
			t.Errorf("n=%d: %d steps, %d losses (want %d), equal %v", tc.n, len(st), len(ls), tc.points, slices.Equal(st, ls))
			continue
		}
		if tc.n > 0 && (st[0] != 1 || st[len(st)-1] != tc.last) {
			t.Errorf("n=%d: first %v, last %v", tc.n, st[0], st[len(st)-1])
		}
	}
}
