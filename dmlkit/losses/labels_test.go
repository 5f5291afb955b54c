package losses_test

import (
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
)

// TestLabelsAgainstClassCount: Evaluate and EvaluateBlockwise reject a label at or above the class
// count and any negative label except −1 in a slot of a label set, naming the row, slot and value;
// the accepted cases return a finite value. (Before, proxyanchor with NumClasses 3 and labels 0–6
// returned a number.)
func TestLabelsAgainstClassCount(t *testing.T) {
	b := backend.MustShared()
	emb := []float64{1, 0, 0.8, 0.6, 0, 1, -0.6, 0.8, -1, 0, 0, -1}
	for _, tc := range []struct {
		name    string
		loss    string
		labels  []int64
		setSize int
		classes int
		want    string // "" = accepted
	}{
		{"above the count (proxy)", "proxyanchor", []int64{0, 1, 2, 3, 4, 5}, 1, 3, "row 3 is 3, outside the 3 classes"},
		{"above the count (pairs)", "contrastive", []int64{0, 0, 1, 1, 2, 3}, 1, 3, "row 5 is 3"},
		{"negative plain label", "proxyanchor", []int64{0, 0, 1, -1, 2, 2}, 1, 0, "row 3 is -1"},
		{"negative slot other than -1", "contrastive", []int64{0, -1, 0, -1, 1, -2, 1, -1, 2, -1, 2, 0}, 2, 0, "row 2, slot 1 is -2"},
		{"set slot above the count", "contrastive", []int64{0, -1, 0, -1, 1, 3, 1, -1, 2, -1, 2, 0}, 2, 3, "row 2, slot 1 is 3"},
		{"plain labels in range", "proxyanchor", []int64{0, 0, 1, 1, 2, 2}, 1, 3, ""},
		{"default count: max + 1", "proxyanchor", []int64{0, 0, 1, 1, 2, 2}, 1, 0, ""},
		{"-1 slots", "contrastive", []int64{0, -1, 0, -1, 1, -1, 1, -1, 2, -1, 2, 0}, 2, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := losses.New(tc.loss, nil)
			if err != nil {
				t.Fatal(err)
			}
			opt := losses.EvalOptions{NumClasses: tc.classes}
			res, err := losses.Evaluate(b, l, emb, 6, 2, tc.labels, tc.setSize, opt)
			check := func(what string, v float64, err error) {
				if tc.want == "" {
					if err != nil {
						t.Errorf("%s: %v", what, err)
					}
					return
				}
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: value %v, error %v; want an error containing %q", what, v, err, tc.want)
				}
			}
			check("Evaluate", res.Value, err)
			if tc.loss == "contrastive" {
				res, err := losses.EvaluateBlockwise(b, l, emb, 6, 2, tc.labels, tc.setSize, 4, opt)
				check("EvaluateBlockwise", res.Value, err)
			}
		})
	}
}
