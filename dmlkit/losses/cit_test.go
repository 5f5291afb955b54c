package losses_test

import (
	"math"
	"reflect"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// bruteCIT loops over every triplet (a, p, n) of seed 001 Eq. 4, 7, 8.
func bruteCIT(b losstest.Batch, c *losses.CITConfig) float64 {
	cos := func(i, j int) float64 {
		return losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
	}
	sum, n := 0.0, 0
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			if p == a || b.Labels[p] != b.Labels[a] {
				continue
			}
			for ng := 0; ng < b.B; ng++ {
				if b.Labels[ng] == b.Labels[a] {
					continue
				}
				sap, san, spn := cos(a, p), cos(a, ng), cos(p, ng)
				le := math.Max(0, 1-math.Exp(-(san-sap)))
				lp := -(sap - math.Log(math.Exp(san)+math.Exp(spn)))
				l := c.Gamma*le + (1-c.Gamma)*lp
				if c.AvgNonZero && l <= 0 {
					continue
				}
				sum += l
				n++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

func TestCITHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) label 0; e2=(1,0) label 1. Triplets (a,p,n): (0,1,2) and (1,0,2).
	// (0,1,2): S_ap = 0, S_an = 1, S_pn = 0: l_e = 1 − e^{−1}; l_p = log(e + 1) − 0.
	// (1,0,2): S_ap = 0, S_an = 0, S_pn = 1: l_e = 0;          l_p = log(1 + e).
	// γ = 1: paper mean (1 − e^{−1})/2 = 0.31606; code (avg non-zero) 1 − e^{−1} = 0.63212.
	// γ = 0.5: each triplet 0.5·l_e + 0.5·log(1+e); paper mean 0.25(1 − e^{−1}) + 0.5·log(1+e).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	e1 := 1 - math.Exp(-1)
	for _, tc := range []struct {
		c    *losses.CITConfig
		want float64
	}{
		{&losses.CITConfig{Gamma: 1}, e1 / 2},
		{&losses.CITConfig{Gamma: 1, AvgNonZero: true}, e1},
		{&losses.CITConfig{Gamma: 0.5}, 0.25*e1 + 0.5*math.Log(1+math.E)},
	} {
		got, _ := losstest.Value(t, tc.c, b, losses.EvalOptions{})
		if math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: %.15g, want %.15g", *tc.c, got, tc.want)
		}
	}
}

func TestCITMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.CITConfig{
		losses.DefaultCIT(),
		{Gamma: 1, AvgNonZero: true},
		{Gamma: 0.5},
		{Gamma: 0.3, AvgNonZero: true},
		{Gamma: 0},
	} {
		b := losstest.Random(61, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := bruteCIT(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestCITCodeVsPaper(t *testing.T) {
	// The code averages only over violating triplets (l_e > 0 for γ = 1), so its value is larger by
	// the factor N_T / N_active (papers-vs-code §3: 0.257 vs 0.108 on its batch, ×2.4).
	b := losstest.Random(62, 5, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3})
	paper, _ := losstest.Value(t, losses.DefaultCIT(), b, losses.EvalOptions{})
	code, _ := losstest.Value(t, &losses.CITConfig{Gamma: 1, AvgNonZero: true}, b, losses.EvalOptions{})
	// Independently: count the triplets and the active ones.
	var nAll, nActive int
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			for n := 0; n < b.B; n++ {
				if p == a || b.Labels[p] != b.Labels[a] || b.Labels[n] == b.Labels[a] {
					continue
				}
				nAll++
				ra, rp, rn := losstest.Row(b.Emb, b.D, a), losstest.Row(b.Emb, b.D, p), losstest.Row(b.Emb, b.D, n)
				if losstest.Cosine(ra, rn) > losstest.Cosine(ra, rp) {
					nActive++
				}
			}
		}
	}
	if nActive == 0 || nActive == nAll {
		t.Fatalf("test batch has %d/%d active triplets; need a mix", nActive, nAll)
	}
	if ratio := code / paper; math.Abs(ratio-float64(nAll)/float64(nActive)) > 1e-9 {
		t.Errorf("code/paper = %.12g, want N_T/N_active = %d/%d", ratio, nAll, nActive)
	}
	t.Logf("CIT paper %.4f, code (avg non-zero) %.4f", paper, code)
}

func TestCITDegenerate(t *testing.T) {
	// No negatives (one class) or no positives (all distinct): no triplets -> 0, finite gradient.
	for _, labels := range [][]int64{{1, 1, 1}, {0, 1, 2}} {
		v, g := losstest.Value(t, losses.DefaultCIT(), losstest.Random(7, 3, labels), losses.EvalOptions{})
		if v != 0 || math.IsNaN(g[0]) {
			t.Errorf("labels %v: %v, want 0", labels, v)
		}
	}
	if _, err := losses.New("cit", map[string]any{"gamma": 1.5}); err == nil {
		t.Error("gamma 1.5 accepted")
	}
}

// diagnose evaluates l.BuildDiagnosed on the batch (float64, 16 classes) and returns the loss,
// the diagnostics by name and their names in order.
func diagnose(t *testing.T, l losses.Loss, b losstest.Batch) (float64, map[string]float64, []string) {
	t.Helper()
	return diagnoseClasses(t, l, b, 16)
}

// diagnoseClasses is [diagnose] with the number of classes the loss is told (proxy losses).
func diagnoseClasses(t *testing.T, l losses.Loss, b losstest.Batch, numClasses int) (float64, map[string]float64, []string) {
	t.Helper()
	d, ok := l.(losses.Diagnoser)
	if !ok {
		t.Fatalf("%s does not implement losses.Diagnoser", l.Name())
	}
	var names []string
	exec, err := model.NewExec(backend.MustShared(), model.NewStore(), func(scope *model.Scope, e, y *graph.Node) []*graph.Node {
		loss, ds := d.BuildDiagnosed(losses.Inputs{Emb: e, Labels: y, Scope: scope.In("loss"), NumClasses: numClasses})
		out := []*graph.Node{graph.ConvertDType(loss, dtypes.Float64)}
		names = names[:0]
		for _, x := range ds {
			if x.Value.Rank() != 0 {
				t.Errorf("diagnostic %s has shape %s, want a scalar", x.Name, x.Value.Shape())
			}
			names = append(names, x.Name)
			out = append(out, graph.ConvertDType(x.Value, dtypes.Float64))
		}
		return out
	})
	if err != nil {
		t.Fatal(err)
	}
	emb := tensors.FromFlatDataAndDimensions(append([]float64(nil), b.Emb...), b.B, b.D)
	var lab *tensors.Tensor
	if b.SetSize > 1 {
		lab = tensors.FromFlatDataAndDimensions(append([]int64(nil), b.Labels...), b.B, b.SetSize)
	} else {
		lab = tensors.FromFlatDataAndDimensions(append([]int64(nil), b.Labels...), b.B)
	}
	outs, err := exec.Call(emb, lab)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]float64{}
	for i, n := range names {
		if _, dup := m[n]; dup {
			t.Errorf("diagnostic %q twice", n)
		}
		m[n] = tensors.ToScalar[float64](outs[i+1])
	}
	return tensors.ToScalar[float64](outs[0]), m, append([]string(nil), names...)
}

// citDiag are the diagnostics of CIT computed by a naive triple loop.
type citDiag struct {
	loss, le, lp    float64
	hard, nTriplets int
}

// bruteCITDiag loops over every triplet (a, p, n) and averages l_e and l_p over the triplets the
// reduction keeps (all valid ones; with AvgNonZero those whose combined loss is > 0). Labels may
// be [B, S] label sets (−1 = empty slot): p is a positive of a if they share a label, n a
// negative if they share none.
func bruteCITDiag(b losstest.Batch, c *losses.CITConfig) citDiag {
	s := max(b.SetSize, 1)
	same := func(i, j int) bool {
		for _, x := range b.Labels[i*s : (i+1)*s] {
			for _, y := range b.Labels[j*s : (j+1)*s] {
				if x >= 0 && x == y {
					return true
				}
			}
		}
		return false
	}
	cos := func(i, j int) float64 {
		return losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j))
	}
	var d citDiag
	var sum, sumE, sumP float64
	var kept int
	for a := 0; a < b.B; a++ {
		for p := 0; p < b.B; p++ {
			if p == a || !same(a, p) {
				continue
			}
			for n := 0; n < b.B; n++ {
				if n == a || same(a, n) {
					continue
				}
				sap, san, spn := cos(a, p), cos(a, n), cos(p, n)
				le := math.Max(0, 1-math.Exp(-(san-sap)))
				lp := -(sap - math.Log(math.Exp(san)+math.Exp(spn)))
				l := c.Gamma*le + (1-c.Gamma)*lp
				d.nTriplets++
				if san > sap {
					d.hard++
				}
				if c.AvgNonZero && l <= 0 {
					continue
				}
				sum, sumE, sumP = sum+l, sumE+le, sumP+lp
				kept++
			}
		}
	}
	if kept > 0 {
		d.loss, d.le, d.lp = sum/float64(kept), sumE/float64(kept), sumP/float64(kept)
	}
	return d
}

func TestCITDiagnosticsHandWorked(t *testing.T) {
	// The batch of TestCITHandWorked: triplets (0,1,2) with S_ap = 0 < S_an = 1 (hard; l_e = 1 − e^{−1},
	// l_p = log(1 + e)) and (1,0,2) with S_ap = S_an = 0 (not hard; l_e = 0, l_p = log(1 + e)).
	// Paper reduction: L_e = (1 − e^{−1})/2, L_p = log(1 + e). AvgNonZero with γ = 1 keeps only
	// (0,1,2): L_e = 1 − e^{−1}, L_p = log(1 + e). 2 triplets, 1 hard, whatever γ.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	e1, lp := 1-math.Exp(-1), math.Log(1+math.E)
	for _, tc := range []struct {
		c      *losses.CITConfig
		le, lp float64
	}{
		{&losses.CITConfig{Gamma: 1}, e1 / 2, lp},
		{&losses.CITConfig{Gamma: 1, AvgNonZero: true}, e1, lp},
		{&losses.CITConfig{Gamma: 0.5}, e1 / 2, lp},
		{&losses.CITConfig{Gamma: 0}, e1 / 2, lp},
	} {
		loss, d, names := diagnose(t, tc.c, b)
		want := map[string]float64{"L_e": tc.le, "L_p": tc.lp, "hard_triplets": 1, "triplets": 2}
		if len(names) != len(want) {
			t.Errorf("%+v: diagnostics %q, want L_e, L_p, hard_triplets, triplets", *tc.c, names)
		}
		for k, w := range want {
			if got, ok := d[k]; !ok || math.Abs(got-w) > 1e-12 {
				t.Errorf("%+v: %s = %.15g, want %.15g", *tc.c, k, got, w)
			}
		}
		if wantL := tc.c.Gamma*tc.le + (1-tc.c.Gamma)*tc.lp; math.Abs(loss-wantL) > 1e-12 {
			t.Errorf("%+v: L = %.15g, want γ·L_e + (1−γ)·L_p = %.15g", *tc.c, loss, wantL)
		}
	}
}

// TestCITDiagnosticsMatchBruteForce checks BuildDiagnosed against the naive triple loop on
// random batches (float64: both sides sum O(B³) terms of size O(1), so 1e-12 is ample), plain
// labels and label sets, and that its loss is exactly Build's.
func TestCITDiagnosticsMatchBruteForce(t *testing.T) {
	plain := losstest.Random(63, 4, []int64{0, 0, 1, 1, 1, 2, 2, 3, 0})
	sets := losstest.Random(64, 3, make([]int64, 8))
	sets.Labels, sets.SetSize = []int64{0, -1, 0, 1, 1, -1, 2, 1, 2, -1, 3, 0, 3, -1, 1, 2}, 2
	for _, b := range []losstest.Batch{plain, sets} {
		for _, c := range []*losses.CITConfig{
			losses.DefaultCIT(),
			{Gamma: 1, AvgNonZero: true},
			{Gamma: 0.5},
			{Gamma: 0.3, AvgNonZero: true},
			{Gamma: 0},
		} {
			want := bruteCITDiag(b, c)
			if want.hard == 0 || want.hard == want.nTriplets {
				t.Fatalf("test batch has %d/%d hard triplets; need a mix", want.hard, want.nTriplets)
			}
			loss, d, _ := diagnose(t, c, b)
			built, _ := losstest.Value(t, c, b, losses.EvalOptions{})
			if loss != built {
				t.Errorf("set=%d %+v: BuildDiagnosed loss %.17g != Build %.17g", b.SetSize, *c, loss, built)
			}
			for _, x := range []struct {
				name      string
				got, want float64
			}{
				{"loss", loss, want.loss},
				{"L_e", d["L_e"], want.le},
				{"L_p", d["L_p"], want.lp},
				{"hard_triplets", d["hard_triplets"], float64(want.hard)},
				{"triplets", d["triplets"], float64(want.nTriplets)},
				{"γ·L_e + (1−γ)·L_p", c.Gamma*d["L_e"] + (1-c.Gamma)*d["L_p"], loss},
			} {
				if math.Abs(x.got-x.want) > 1e-12 {
					t.Errorf("set=%d %+v: %s = %.15g, want %.15g", b.SetSize, *c, x.name, x.got, x.want)
				}
			}
		}
	}
}

// TestCITAnchorBlocks: building the cube in blocks of K anchors (K = 1, 2, 4 and 5 with a
// smaller last block, on B = 9 plain labels and B = 8 label sets) gives the unblocked value,
// gradient w.r.t. the embeddings and diagnostics: the same per-triplet terms summed in another
// order, so float64 sums of ≤ 9³ terms of size O(1) agree to 1e-12. K ≥ B is the unblocked graph
// itself (bit-identical).
func TestCITAnchorBlocks(t *testing.T) {
	plain := losstest.Random(65, 4, []int64{0, 0, 1, 1, 1, 2, 2, 3, 0})
	sets := losstest.Random(66, 3, make([]int64, 8))
	sets.Labels, sets.SetSize = []int64{0, -1, 0, 1, 1, -1, 2, 1, 2, -1, 3, 0, 3, -1, 1, 2}, 2
	for _, b := range []losstest.Batch{plain, sets} {
		for _, base := range []losses.CITConfig{{Gamma: 1}, {Gamma: 1, AvgNonZero: true}, {Gamma: 0.5}, {Gamma: 0.3, AvgNonZero: true}} {
			whole := base
			v0, g0 := losstest.Value(t, &whole, b, losses.EvalOptions{})
			_, d0, names0 := diagnose(t, &whole, b)
			for _, k := range []int{1, 2, 4, 5, b.B, b.B + 3} {
				c := base
				c.AnchorBlock = k
				v, g := losstest.Value(t, &c, b, losses.EvalOptions{})
				_, d, names := diagnose(t, &c, b)
				tol := 1e-12
				if k >= b.B {
					tol = 0
				}
				if math.Abs(v-v0) > tol {
					t.Errorf("set=%d %+v: value %.17g, unblocked %.17g", b.SetSize, c, v, v0)
				}
				worst := 0.0
				for i := range g {
					worst = math.Max(worst, math.Abs(g[i]-g0[i]))
				}
				if worst > tol {
					t.Errorf("set=%d %+v: gradient differs from the unblocked one by %.3g", b.SetSize, c, worst)
				}
				if !reflect.DeepEqual(names, names0) {
					t.Errorf("set=%d %+v: diagnostics %q, unblocked %q", b.SetSize, c, names, names0)
				}
				for _, n := range names0 {
					if math.Abs(d[n]-d0[n]) > tol {
						t.Errorf("set=%d %+v: %s = %.17g, unblocked %.17g", b.SetSize, c, n, d[n], d0[n])
					}
				}
			}
		}
	}
	// No triplets at all: 0 with a finite gradient, blocked or not.
	c := &losses.CITConfig{Gamma: 0.5, AnchorBlock: 2}
	if v, g := losstest.Value(t, c, losstest.Random(7, 3, []int64{0, 1, 2}), losses.EvalOptions{}); v != 0 || math.IsNaN(g[0]) {
		t.Errorf("blocked, no triplets: %v, want 0", v)
	}
	if _, err := losses.New("cit", map[string]any{"anchor_block": -1}); err == nil {
		t.Error("anchor_block -1 accepted")
	}
}
