package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// idmlDiagnose evaluates c.BuildDiagnosed on the batch (float64) and returns the loss and the
// diagnostics in order.
func idmlDiagnose(t *testing.T, c *losses.IDMLConfig, b losstest.Batch, numClasses int) (float64, []string, []float64) {
	t.Helper()
	loss, m, names := diagnoseClasses(t, c, b, numClasses)
	vals := make([]float64, len(names))
	for i, n := range names {
		vals[i] = m[n]
	}
	return loss, names, vals
}

// TestIDMLDiagnostics checks the uncertainty-norm diagnostics by hand. Rows are [s | u] with
// ‖u‖ = 5 (3-4-5), 0, 1 and 2:
//   - plain labels: unc_norm = (5 + 0 + 1 + 2)/4 = 2 only;
//   - label sets {0,−1}, {1,−1}, {0,1}, {1,0}: rows 2 and 3 are mixed, so unc_norm_orig =
//     (5 + 0)/2 = 2.5, unc_norm_mixed = (1 + 2)/2 = 1.5, two of each;
//   - sets {0,−1}, {1,1}, {2,−1}, {−1,1}: no row holds two distinct labels ({1,1} is one class),
//     so unc_norm_orig = 2 over 4 rows and the empty mixed group gives 0 (not NaN) with count 0;
//   - the same numbers with unc_dim 1 (s = the first 3 columns, u = the last: ‖u‖ = 4, 0, 0, 2)
//     and the mixup sets: unc_norm = 6/4 = 1.5, unc_norm_orig = (4 + 0)/2 = 2, unc_norm_mixed =
//     (0 + 2)/2 = 1.
//
// The loss returned beside them is bit-identical to Build's (via losses.Evaluate).
func TestIDMLDiagnostics(t *testing.T) {
	emb := []float64{
		1, 0, 3, 4,
		0, 1, 0, 0,
		1, 1, 1, 0,
		1, -1, 0, 2,
	}
	names5 := []string{"unc_norm", "unc_norm_orig", "orig_count", "unc_norm_mixed", "mixed_count"}
	for _, tc := range []struct {
		name    string
		emb     []float64
		d, unc  int
		labels  []int64
		setSize int
		names   []string
		want    []float64
	}{
		{"plain", emb, 4, 0, []int64{0, 1, 0, 1}, 1, []string{"unc_norm"}, []float64{2}},
		{"mixup", emb, 4, 0, []int64{0, -1, 1, -1, 0, 1, 1, 0}, 2, names5, []float64{2, 2.5, 2, 1.5, 2}},
		{"no mixed", emb, 4, 0, []int64{0, -1, 1, 1, 2, -1, -1, 1}, 2, names5, []float64{2, 2, 4, 0, 0}},
		{"unc_dim 1", emb, 4, 1, []int64{0, -1, 1, -1, 0, 1, 1, 0}, 2, names5, []float64{1.5, 2, 2, 1, 2}},
	} {
		c := idmlBaseConfig("contrastive", "sim", func(c *losses.IDMLConfig) { c.UncDim = tc.unc })
		b := losstest.Batch{Emb: tc.emb, B: 4, D: tc.d, Labels: tc.labels, SetSize: tc.setSize}
		loss, names, vals := idmlDiagnose(t, c, b, 3)
		if len(names) != len(tc.names) {
			t.Fatalf("%s: diagnostics %v, want %v", tc.name, names, tc.names)
		}
		for i := range names {
			if names[i] != tc.names[i] || math.Abs(vals[i]-tc.want[i]) > 1e-15 || math.IsNaN(vals[i]) {
				t.Errorf("%s: %s = %v, want %s = %v", tc.name, names[i], vals[i], tc.names[i], tc.want[i])
			}
		}
		if built, _ := losstest.Value(t, c, b, losses.EvalOptions{}); built != loss {
			t.Errorf("%s: BuildDiagnosed loss %.17g != Build %.17g", tc.name, loss, built)
		}
	}
	var _ losses.Diagnoser = losses.DefaultIDML()
}
