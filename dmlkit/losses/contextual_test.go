package losses_test

import (
	"math"
	"sort"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// ctxSquaredDistances returns D = 2 − 2·cos for all pairs of a batch.
func ctxSquaredDistances(emb []float64, n, d int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = make([]float64, n)
		for j := range out[i] {
			out[i][j] = 2 - 2*losstest.Cosine(losstest.Row(emb, d, i), losstest.Row(emb, d, j))
		}
	}
	return out
}

// ctxBruteContext computes L_ctx (seed 004 Eq. 2–5) by loops from a "live" distance matrix dl and a
// "frozen" one df. Everything the graph detaches — the k-th neighbour thresholds, the step values of
// θ and the row sums of Eq. 3 — comes from df; θ's straight-through part is α·(x(dl) − x(df)), i.e.
// α·(df − dl). With dl = df this is the loss value; finite differences in dl (df fixed) give exactly
// the straight-through gradient the graph must produce.
func ctxBruteContext(dl, df [][]float64, y [][]bool, c *losses.ContextualConfig) float64 {
	n := len(dl)
	kth := func(row []float64, k int) float64 {
		r := append([]float64(nil), row...)
		sort.Float64s(r)
		return r[min(k, n)-1]
	}
	nbr := func(k int) [][]float64 {
		m := make([][]float64, n)
		for i := range m {
			m[i] = make([]float64, n)
			thr := kth(df[i], k)
			for j := range m[i] {
				step := 0.0
				if -df[i][j]+thr+c.Eps >= 0 {
					step = 1
				}
				m[i][j] = step + c.Alpha*(df[i][j]-dl[i][j])
			}
		}
		return m
	}
	frozenRowSums := func(k int) (in, out []float64) {
		in, out = make([]float64, n), make([]float64, n)
		for i := 0; i < n; i++ {
			thr := kth(df[i], k)
			for j := 0; j < n; j++ {
				if -df[i][j]+thr+c.Eps >= 0 {
					in[i]++
				} else {
					out[i]++
				}
			}
			in[i], out[i] = math.Max(in[i], 1), math.Max(out[i], 1)
		}
		return in, out
	}
	nk, nh := nbr(c.K), nbr(max(c.K/2, 1))
	rowIn, rowOut := frozenRowSums(c.K)
	wt := make([][]float64, n)
	for i := range wt {
		wt[i] = make([]float64, n)
		for j := range wt[i] {
			var mp, mm float64
			for p := 0; p < n; p++ {
				mp += nk[i][p] * nk[j][p]
				mm += (1 - nk[i][p]) * (1 - nk[j][p])
			}
			wt[i][j] = 0.5 * (mp/rowIn[i] + mm/rowOut[i]) * nk[i][j]
		}
	}
	// Query expansion normaliser |R(i)|: live, or frozen (step values only) with DetachQENorm.
	nhFrozen := make([][]float64, n)
	for i := range nhFrozen {
		nhFrozen[i] = make([]float64, n)
		thr := kth(df[i], max(c.K/2, 1))
		for j := range nhFrozen[i] {
			if -df[i][j]+thr+c.Eps >= 0 {
				nhFrozen[i][j] = 1
			}
		}
	}
	what := make([][]float64, n)
	for i := range what {
		what[i] = make([]float64, n)
		rowR := 0.0
		for p := 0; p < n; p++ {
			if c.DetachQENorm {
				rowR += nhFrozen[i][p] * nhFrozen[p][i]
			} else {
				rowR += nh[i][p] * nh[p][i]
			}
		}
		for j := 0; j < n; j++ {
			for p := 0; p < n; p++ {
				what[i][j] += nh[i][p] * nh[p][i] * wt[p][j]
			}
			what[i][j] /= rowR
		}
	}
	l := 0.0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			yij := 0.0
			if y[i][j] {
				yij = 1
			}
			w := 0.5 * (what[i][j] + what[j][i])
			l += (yij - w) * (yij - w)
		}
	}
	return l / float64(n*n)
}

// ctxBruteFull is the whole loss (Eq. 6) on a batch: context term + contrastive + regulariser.
func ctxBruteFull(b losstest.Batch, c *losses.ContextualConfig) float64 {
	d := ctxSquaredDistances(b.Emb, b.B, b.D)
	y := ctxLabels(b)
	lctx := ctxBruteContext(d, d, y, c)
	mean := 0.0
	for i := range d {
		for j := range d[i] {
			mean += (2 - d[i][j]) / 2
		}
	}
	mean /= float64(b.B * b.B)
	reg := (c.TargetSim - mean) * (c.TargetSim - mean)
	contr := bruteContrastive(b, &losses.ContrastiveConfig{Distance: "cosine", PosMargin: c.PosMargin, NegMargin: c.NegMargin, AvgNonZero: true})
	wc := 1 - c.Lambda
	if c.CodeWeights {
		wc = 1 - c.Lambda - c.Gamma
	}
	return c.Lambda*lctx + wc*contr + c.Gamma*reg
}

func ctxLabels(b losstest.Batch) [][]bool {
	y := make([][]bool, b.B)
	for i := range y {
		y[i] = make([]bool, b.B)
		for j := range y[i] {
			y[i][j] = b.Labels[i] == b.Labels[j]
		}
	}
	return y
}

// ctxStraightThroughGrad returns the straight-through gradient of λ·L_ctx with respect to the
// embeddings by brute force: finite differences of ctxBruteContext in each D(i,j) (frozen parts
// fixed; exact up to rounding because the surrogate is polynomial of degree ≤ 6 in D and the central
// difference of a cubic-or-lower term is exact — the residual O(h²) terms are ≲ 1e−8), optionally
// clamped per entry as Eq. 10, then chained through D = 2 − 2·cos(e_i, e_j) analytically.
func ctxStraightThroughGrad(b losstest.Batch, c *losses.ContextualConfig, clamp bool) []float64 {
	df := ctxSquaredDistances(b.Emb, b.B, b.D)
	y := ctxLabels(b)
	n := b.B
	gd := make([][]float64, n)
	const h = 1e-5
	for i := 0; i < n; i++ {
		gd[i] = make([]float64, n)
		for j := 0; j < n; j++ {
			dl := make([][]float64, n)
			for r := range dl {
				dl[r] = append([]float64(nil), df[r]...)
			}
			dl[i][j] = df[i][j] + h
			fp := ctxBruteContext(dl, df, y, c)
			dl[i][j] = df[i][j] - h
			fm := ctxBruteContext(dl, df, y, c)
			gd[i][j] = c.Lambda * (fp - fm) / (2 * h)
			if clamp {
				if y[i][j] {
					gd[i][j] = math.Max(gd[i][j], 0)
				} else {
					gd[i][j] = math.Min(gd[i][j], 0)
				}
			}
		}
	}
	// D_ij = 2 − 2 ê_i·ê_j; ∂(ê_i·ê_j)/∂e_i = (ê_j − (ê_i·ê_j) ê_i)/‖e_i‖.
	unit := rskNormalizedRows(b)
	norms := make([]float64, n)
	for i := range norms {
		r := losstest.Row(b.Emb, b.D, i)
		norms[i] = math.Sqrt(losstestDot(r, r))
	}
	grad := make([]float64, n*b.D)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			sij := losstestDot(unit[i], unit[j])
			for k := 0; k < b.D; k++ {
				grad[i*b.D+k] += -2 * gd[i][j] * (unit[j][k] - sij*unit[i][k]) / norms[i]
				grad[j*b.D+k] += -2 * gd[i][j] * (unit[i][k] - sij*unit[j][k]) / norms[j]
			}
		}
	}
	return grad
}

func TestContextualMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 0, 1, 1, 1, 2, 2, 3, 3}
	for _, c := range []*losses.ContextualConfig{
		losses.DefaultContextual(),
		{K: 4, Eps: 0.2, Alpha: 10, Lambda: 0.6, Gamma: 0.1, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.25, CodeWeights: true},
		{K: 3, Eps: 0, Alpha: 1, Lambda: 1, Gamma: 0, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3},
		{K: 4, Eps: 0.1, Alpha: 5, Lambda: 0.5, Gamma: 0.2, PosMargin: 0.5, NegMargin: 0.2, TargetSim: 0.3, DetachQENorm: true},
	} {
		b := losstest.Random(31, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		if want := ctxBruteFull(b, c); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestContextualStraightThroughGradient(t *testing.T) {
	// λ = 1, γ = 0: the loss is L_ctx alone; its gradient is defined by the straight-through rule,
	// so it is checked against finite differences of the brute-force surrogate (see ctxBruteContext).
	b := losstest.Random(41, 3, []int64{0, 0, 0, 1, 1, 1, 2, 2})
	for _, detach := range []bool{false, true} {
		for _, clamp := range []bool{false, true} {
			c := &losses.ContextualConfig{K: 4, Eps: 0.05, Alpha: 10, Lambda: 1, Gamma: 0, PosMargin: 0.75, NegMargin: 0.6,
				TargetSim: 0.3, DetachQENorm: detach, ClampGradients: clamp}
			_, got := losstest.Value(t, c, b, losses.EvalOptions{})
			want := ctxStraightThroughGrad(b, c, clamp)
			worst := 0.0
			for i := range got {
				worst = math.Max(worst, math.Abs(got[i]-want[i]))
			}
			if worst > 1e-6 {
				t.Errorf("detach=%v clamp=%v: gradient differs from the brute-force straight-through gradient by %.3g", detach, clamp, worst)
			}
		}
	}
}

func TestContextualSmoothPartsGradient(t *testing.T) {
	// λ = 0: only the contrastive term and the regulariser remain, both smooth away from hinge kinks.
	c := losses.DefaultContextual()
	c.Lambda = 0
	b := losstest.Random(43, 4, []int64{0, 0, 1, 1, 1, 2, 2, 0})
	losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
}

func TestContextualOptionsDiffer(t *testing.T) {
	b := losstest.Random(51, 4, []int64{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2})
	// Weights: paper (1−λ) vs 256-px code (1−λ−γ) differ by exactly γ·L_contrast.
	paper := losses.DefaultContextual()
	code := losses.DefaultContextual()
	code.CodeWeights = true
	vp, _ := losstest.Value(t, paper, b, losses.EvalOptions{})
	vc, _ := losstest.Value(t, code, b, losses.EvalOptions{})
	contr := bruteContrastive(b, &losses.ContrastiveConfig{Distance: "cosine", PosMargin: 0.75, NegMargin: 0.6, AvgNonZero: true})
	if math.Abs((vp-vc)-paper.Gamma*contr) > 1e-12 || contr == 0 {
		t.Errorf("paper − code weights = %.15g, want γ·L_contrast = %.15g", vp-vc, paper.Gamma*contr)
	}
	// Gradient clamping (Table 1) leaves the value alone but changes the gradient.
	clamped := losses.DefaultContextual()
	clamped.ClampGradients = true
	v1, g0 := losstest.Value(t, paper, b, losses.EvalOptions{})
	v2, g1 := losstest.Value(t, clamped, b, losses.EvalOptions{})
	diff := 0.0
	for i := range g0 {
		diff = math.Max(diff, math.Abs(g0[i]-g1[i]))
	}
	if v1 != v2 || diff < 1e-6 {
		t.Errorf("clamp: values %v vs %v (want equal), max gradient change %.3g (want > 1e-6)", v1, v2, diff)
	}
	// Detaching |R(i)| (paper prose) vs not (Eq. 27 and the code): same value, different gradient
	// (each variant's gradient is checked against brute force in TestContextualStraightThroughGradient).
	detached := losses.DefaultContextual()
	detached.DetachQENorm = true
	v3, g3 := losstest.Value(t, detached, b, losses.EvalOptions{})
	diff = 0
	for i := range g0 {
		diff = math.Max(diff, math.Abs(g0[i]-g3[i]))
	}
	if v1 != v3 || diff < 1e-6 {
		t.Errorf("detach_qe_norm: values %v vs %v (want equal), max gradient change %.3g (want > 1e-6)", v1, v3, diff)
	}
}

func TestContextualDegenerate(t *testing.T) {
	// All one class: y = 1 everywhere. Batch smaller than k: k is clipped to B, every sample is a
	// neighbour; no negatives. Must be finite and equal the brute force.
	for _, b := range []losstest.Batch{
		losstest.Random(3, 3, []int64{5, 5, 5}),
		losstest.Random(4, 3, []int64{0, 1, 2}),
		{Emb: []float64{1, 0, 1, 0, 1, 0, 1, 0}, B: 4, D: 2, Labels: []int64{0, 0, 1, 1}},
	} {
		c := losses.DefaultContextual()
		v, g := losstest.Value(t, c, b, losses.EvalOptions{})
		cb := *c
		cb.K = min(c.K, b.B)
		if want := ctxBruteFull(b, &cb); math.IsNaN(v) || math.Abs(v-want) > 1e-12 {
			t.Errorf("labels %v: %v, want %v", b.Labels, v, want)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatalf("labels %v: NaN gradient", b.Labels)
			}
		}
	}
	if _, err := losses.New("contextual", map[string]any{"k": 1}); err == nil {
		t.Error("k = 1 accepted")
	}
}
