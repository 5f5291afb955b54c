package losses_test

import (
	"math"
	"sort"
	"strings"
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
	return ctxSurrogateGrad(b, c, clamp, ctxBruteContext)
}

// ctxSurrogateGrad is ctxStraightThroughGrad for any brute-force surrogate brute(dl, df, y, c)
// (ctxBruteContext, or ctxBruteAblation for the Table 5 options).
func ctxSurrogateGrad(b losstest.Batch, c *losses.ContextualConfig, clamp bool,
	brute func(dl, df [][]float64, y [][]bool, c *losses.ContextualConfig) float64) []float64 {
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
			fp := brute(dl, df, y, c)
			dl[i][j] = df[i][j] - h
			fm := brute(dl, df, y, c)
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
	return ctxChainToEmbeddings(b, gd)
}

// ctxChainToEmbeddings turns gd = ∂L/∂D(i, j) into ∂L/∂e through D_ij = 2 − 2 ê_i·ê_j:
// ∂(ê_i·ê_j)/∂e_i = (ê_j − (ê_i·ê_j) ê_i)/‖e_i‖.
func ctxChainToEmbeddings(b losstest.Batch, gd [][]float64) []float64 {
	n := b.B
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

// ctxDual is a value with its derivative along one direction (forward-mode differentiation).
type ctxDual struct{ v, d float64 }

func (a ctxDual) add(b ctxDual) ctxDual { return ctxDual{a.v + b.v, a.d + b.d} }
func (a ctxDual) sub(b ctxDual) ctxDual { return ctxDual{a.v - b.v, a.d - b.d} }
func (a ctxDual) mul(b ctxDual) ctxDual { return ctxDual{a.v * b.v, a.d*b.v + a.v*b.d} }
func (a ctxDual) div(b ctxDual) ctxDual {
	return ctxDual{a.v / b.v, (a.d*b.v - a.v*b.d) / (b.v * b.v)}
}
func (a ctxDual) scale(k float64) ctxDual { return ctxDual{k * a.v, k * a.d} }

// ctxDualMin is min with torch.minimum's derivative: that of the smaller operand, the mean of both
// on a tie.
func ctxDualMin(a, b ctxDual) ctxDual {
	switch {
	case a.v < b.v:
		return a
	case a.v > b.v:
		return b
	}
	return ctxDual{a.v, (a.d + b.d) / 2}
}

// ctxBruteAblation is a second, literal implementation of L_ctx with the Table 5 options, written
// after the authors' ablations.py (get_jaccard_similarity) rather than after contextual.go: M₋ is
// summed directly over the complements (no identity), min is applied entry by entry — including
// inside the query-expansion product. Live/frozen distances dl/df as in ctxBruteContext: the
// thresholds and every detached quantity come from df; the straight-through θ is
// step(df) + α·(df − dl), the sigmoid θ_σ is σ((−dl + thr + ε)/τ), so finite differences in dl
// give the graph's gradient wherever no min sits at a tie.
func ctxBruteAblation(dl, df [][]float64, y [][]bool, c *losses.ContextualConfig) float64 {
	return ctxBruteAblationDual(dl, df, y, c, -1, -1).v
}

// ctxBruteAblationDual is ctxBruteAblation carrying, beside each value, its derivative with respect
// to the live distance D(si, sj) (si = −1: none). Its min uses torch.minimum's tie rule, which is
// how the graph differentiates min; finite differences cannot check that rule where mins nest at a
// tie (min(min(x, 0), 0) has central-difference slope ½ at 0, the rule gives ¼), and 0/1 ties are
// everywhere under the exact step.
func ctxBruteAblationDual(dl, df [][]float64, y [][]bool, c *losses.ContextualConfig, si, sj int) ctxDual {
	n := len(dl)
	orDef := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	steps, heav, and := orDef(c.Steps, "all"), orDef(c.Heaviside, "straight_through"), orDef(c.LogicalAnd, "mul")
	land := func(a, b ctxDual) ctxDual {
		if and == "min" {
			return ctxDualMin(a, b)
		}
		return a.mul(b)
	}
	one := ctxDual{v: 1}
	kth := func(row []float64, k int) float64 {
		r := append([]float64(nil), row...)
		sort.Float64s(r)
		return r[min(k, n)-1]
	}
	// indicator returns θ(−D + thr + ε) per pair, live (from dl, with its derivative) and frozen
	// (from df, derivative 0).
	indicator := func(k int) (live, frozen [][]ctxDual) {
		live, frozen = make([][]ctxDual, n), make([][]ctxDual, n)
		for i := 0; i < n; i++ {
			live[i], frozen[i] = make([]ctxDual, n), make([]ctxDual, n)
			thr := kth(df[i], k)
			for j := 0; j < n; j++ {
				xf := -df[i][j] + thr + c.Eps
				xl := -dl[i][j] + thr + c.Eps
				dx := 0.0 // ∂x/∂D(si, sj)
				if i == si && j == sj {
					dx = -1
				}
				if heav == "sigmoid" {
					sl := 1 / (1 + math.Exp(-xl/c.SigmoidTau))
					live[i][j] = ctxDual{sl, sl * (1 - sl) / c.SigmoidTau * dx}
					frozen[i][j] = ctxDual{v: 1 / (1 + math.Exp(-xf/c.SigmoidTau))}
					continue
				}
				if xf >= 0 {
					frozen[i][j].v = 1
				}
				live[i][j] = ctxDual{frozen[i][j].v + c.Alpha*(xl-xf), c.Alpha * dx}
			}
		}
		return live, frozen
	}
	nonEmpty := func(x ctxDual) ctxDual {
		if x.v > 0 {
			return x
		}
		return one
	}
	k := min(c.K, n)
	nk, nkF := indicator(k)
	var w [][]ctxDual
	if steps == "step1" {
		w = nk
	} else {
		wt := make([][]ctxDual, n)
		if steps == "no_intersection" {
			wt = nk
		} else {
			src := nkF // sg(|N(i)|), sg(|Nᶜ(i)|)
			if c.LiveEq24Norms {
				src = nk
			}
			rowIn, rowOut := make([]ctxDual, n), make([]ctxDual, n)
			for i := 0; i < n; i++ {
				for p := 0; p < n; p++ {
					rowIn[i] = rowIn[i].add(src[i][p])
					rowOut[i] = rowOut[i].add(one.sub(src[i][p]))
				}
				rowIn[i], rowOut[i] = nonEmpty(rowIn[i]), nonEmpty(rowOut[i])
			}
			for i := 0; i < n; i++ {
				wt[i] = make([]ctxDual, n)
				for j := 0; j < n; j++ {
					var mp, mm ctxDual
					for p := 0; p < n; p++ {
						mp = mp.add(land(nk[i][p], nk[j][p]))
						mm = mm.add(land(one.sub(nk[i][p]), one.sub(nk[j][p])))
					}
					inter := mp.div(rowIn[i])
					if !c.DropMMinus {
						inter = inter.add(mm.div(rowOut[i])).scale(0.5)
					}
					wt[i][j] = land(inter, nk[i][j])
				}
			}
		}
		if steps == "no_qe" {
			w = wt
		} else {
			nh, nhF := indicator(max(k/2, 1))
			what := make([][]ctxDual, n)
			for i := 0; i < n; i++ {
				what[i] = make([]ctxDual, n)
				var rowR ctxDual
				for p := 0; p < n; p++ {
					if c.DetachQENorm {
						rowR = rowR.add(land(nhF[i][p], nhF[p][i]))
					} else {
						rowR = rowR.add(land(nh[i][p], nh[p][i]))
					}
				}
				rowR = nonEmpty(rowR)
				for j := 0; j < n; j++ {
					for p := 0; p < n; p++ {
						what[i][j] = what[i][j].add(land(land(nh[i][p], nh[p][i]), wt[p][j]))
					}
					what[i][j] = what[i][j].div(rowR)
				}
			}
			w = make([][]ctxDual, n)
			for i := 0; i < n; i++ {
				w[i] = make([]ctxDual, n)
				for j := 0; j < n; j++ {
					w[i][j] = what[i][j].add(what[j][i]).scale(0.5)
				}
			}
		}
	}
	var l ctxDual
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			yij := ctxDual{}
			if y[i][j] {
				yij = one
			}
			e := yij.sub(w[i][j])
			l = l.add(e.mul(e))
		}
	}
	return l.scale(1 / float64(n*n))
}

// ctxDualGrad is the gradient of λ·L_ctx with respect to the embeddings from the forward-mode
// derivatives of ctxBruteAblationDual in each D(i, j), chained as in ctxSurrogateGrad.
func ctxDualGrad(b losstest.Batch, c *losses.ContextualConfig) []float64 {
	df := ctxSquaredDistances(b.Emb, b.B, b.D)
	y := ctxLabels(b)
	gd := make([][]float64, b.B)
	for i := range gd {
		gd[i] = make([]float64, b.B)
		for j := range gd[i] {
			gd[i][j] = c.Lambda * ctxBruteAblationDual(df, df, y, c, i, j).d
		}
	}
	return ctxChainToEmbeddings(b, gd)
}

// ctxAblations are the Table 5 rows (and two combinations the authors' ablations.py also runs) as
// options of the contextual loss; base is applied first (λ, γ, τ of the case).
func ctxAblations(base losses.ContextualConfig) []struct {
	row string
	c   *losses.ContextualConfig
} {
	mk := func(f func(c *losses.ContextualConfig)) *losses.ContextualConfig {
		c := base
		f(&c)
		return &c
	}
	return []struct {
		row string
		c   *losses.ContextualConfig
	}{
		{"row 1: step1", mk(func(c *losses.ContextualConfig) { c.Steps = "step1" })},
		{"row 2: step1 + sigmoid", mk(func(c *losses.ContextualConfig) { c.Steps, c.Heaviside = "step1", "sigmoid" })},
		{"row 3: no_qe", mk(func(c *losses.ContextualConfig) { c.Steps = "no_qe" })},
		{"row 4: no_intersection", mk(func(c *losses.ContextualConfig) { c.Steps = "no_intersection" })},
		{"row 5: min", mk(func(c *losses.ContextualConfig) { c.LogicalAnd = "min" })},
		{"row 6: sigmoid", mk(func(c *losses.ContextualConfig) { c.Heaviside = "sigmoid" })},
		{"row 7: drop_m_minus", mk(func(c *losses.ContextualConfig) { c.DropMMinus = true })},
		{"row 8: live_eq24_norms", mk(func(c *losses.ContextualConfig) { c.LiveEq24Norms = true })},
		{"row 9: final (defaults)", mk(func(c *losses.ContextualConfig) {})},
		{"ablations.py 4: no_qe + drop_m_minus", mk(func(c *losses.ContextualConfig) { c.Steps, c.DropMMinus = "no_qe", true })},
		{"min + sigmoid + live norms", mk(func(c *losses.ContextualConfig) {
			c.LogicalAnd, c.Heaviside, c.LiveEq24Norms = "min", "sigmoid", true
		})},
		{"min + no_intersection + detach |R|", mk(func(c *losses.ContextualConfig) {
			c.LogicalAnd, c.Steps, c.DetachQENorm = "min", "no_intersection", true
		})},
	}
}

// TestContextualAblationsMatchBruteForce: the value of every Table 5 variant equals the literal
// implementation (λ·L_ctx + (1−λ)·L_contrast + γ·L_reg with L_ctx from ctxBruteAblation). The
// tolerance 1e-12 is rounding: both sides sum the same ≤ 10³ float64 terms of size ≤ 1 in other
// orders. The brute force itself agrees with the independent ctxBruteContext on the defaults.
func TestContextualAblationsMatchBruteForce(t *testing.T) {
	labels := []int64{0, 0, 0, 1, 1, 1, 2, 2, 3, 3}
	b := losstest.Random(61, 4, labels)
	d := ctxSquaredDistances(b.Emb, b.B, b.D)
	y := ctxLabels(b)
	if got, want := ctxBruteAblation(d, d, y, losses.DefaultContextual()), ctxBruteContext(d, d, y, losses.DefaultContextual()); math.Abs(got-want) > 1e-14 {
		t.Fatalf("brute forces disagree on the defaults: %.15g vs %.15g", got, want)
	}
	for _, base := range []losses.ContextualConfig{
		{K: 4, Eps: 0.05, Alpha: 10, Lambda: 0.8, Gamma: 0, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3, SigmoidTau: 0.01}, // Table 5, λ = 0.8
		{K: 4, Eps: 0.05, Alpha: 10, Lambda: 1, Gamma: 0, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3, SigmoidTau: 0.1},    // Table 5, λ = 1
		{K: 3, Eps: 0.2, Alpha: 5, Lambda: 0.6, Gamma: 0.1, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.25, SigmoidTau: 0.3},
	} {
		for _, v := range ctxAblations(base) {
			got, _ := losstest.Value(t, v.c, b, losses.EvalOptions{})
			contr := bruteContrastive(b, &losses.ContrastiveConfig{Distance: "cosine", PosMargin: v.c.PosMargin, NegMargin: v.c.NegMargin, AvgNonZero: true})
			mean := 0.0
			for i := range d {
				for j := range d[i] {
					mean += (2 - d[i][j]) / 2
				}
			}
			mean /= float64(b.B * b.B)
			want := v.c.Lambda*ctxBruteAblation(d, d, y, v.c) + (1-v.c.Lambda)*contr + v.c.Gamma*(v.c.TargetSim-mean)*(v.c.TargetSim-mean)
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("%s (k %d, λ %g, τ %g): graph %.15g, brute force %.15g", v.row, v.c.K, v.c.Lambda, v.c.SigmoidTau, got, want)
			}
		}
	}
}

// TestContextualAblationsGradient: with λ = 1, γ = 0 the gradient of every variant equals the
// forward-mode derivative of the literal implementation (ctxDualGrad; tolerance 1e-10, rounding
// of ≤ 10⁴ float64 terms). Where no min is involved, central finite differences of the same
// implementation in the live distances (ctxSurrogateGrad, h = 1e-5) must agree too — that checks
// the forward mode itself; tolerance 1e-6 as TestContextualStraightThroughGradient: the
// straight-through surrogates are polynomial (rational with live_eq24_norms) in D, and the sigmoid
// runs at τ = 0.2 so that its third derivative (∝ τ⁻³) keeps the O(h²) error ≲ 1e-8 while many
// pairs still have non-vanishing gradients. Min variants only have the forward-mode check (see
// ctxBruteAblationDual for why finite differences cannot referee torch.minimum's tie rule). Each
// variant's gradient must also differ from the default's (> 1e-4) except the defaults row.
func TestContextualAblationsGradient(t *testing.T) {
	b := losstest.Random(41, 3, []int64{0, 0, 0, 1, 1, 1, 2, 2})
	base := losses.ContextualConfig{K: 4, Eps: 0.05, Alpha: 10, Lambda: 1, Gamma: 0, PosMargin: 0.75, NegMargin: 0.6, TargetSim: 0.3, SigmoidTau: 0.2}
	_, g0 := losstest.Value(t, &base, b, losses.EvalOptions{})
	maxDiff := func(a, b []float64) float64 {
		m := 0.0
		for i := range a {
			m = math.Max(m, math.Abs(a[i]-b[i]))
		}
		return m
	}
	for _, v := range ctxAblations(base) {
		_, got := losstest.Value(t, v.c, b, losses.EvalOptions{})
		dual := ctxDualGrad(b, v.c)
		if worst := maxDiff(got, dual); worst > 1e-10 {
			t.Errorf("%s: gradient differs from the forward-mode brute force by %.3g", v.row, worst)
		}
		if v.c.LogicalAnd != "min" {
			if worst := maxDiff(dual, ctxSurrogateGrad(b, v.c, false, ctxBruteAblation)); worst > 1e-6 {
				t.Errorf("%s: forward-mode brute force differs from its finite differences by %.3g", v.row, worst)
			}
		}
		if change := maxDiff(got, g0); v.row != "row 9: final (defaults)" && change < 1e-4 {
			t.Errorf("%s: gradient equals the default's (max change %.3g)", v.row, change)
		}
	}
}

// TestContextualAblationClosedForms checks two variants against closed forms.
//   - step1 with the exact step (Eq. 32): L_1 = #{i ≠ j : y_ij ≠ N(i,j)} / n², N(i,j) = [D_ij ≤
//     D_i,(k) + ε], counted from the sorted distances.
//   - min for logical-and: with 0/1 operands min = product, so every straight-through variant has
//     the value of its mul counterpart (bit for bit is not required: 1e-15), only the gradient moves.
func TestContextualAblationClosedForms(t *testing.T) {
	b := losstest.Random(71, 3, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2})
	d := ctxSquaredDistances(b.Emb, b.B, b.D)
	y := ctxLabels(b)
	c := losses.ContextualConfig{K: 3, Eps: 0.1, Alpha: 10, Lambda: 1, Gamma: 0, Steps: "step1"}
	mismatches := 0
	for i := range d {
		row := append([]float64(nil), d[i]...)
		sort.Float64s(row)
		for j := range d[i] {
			if i != j && (d[i][j] <= row[c.K-1]+c.Eps) != y[i][j] {
				mismatches++
			}
		}
	}
	got, _ := losstest.Value(t, &c, b, losses.EvalOptions{})
	if want := float64(mismatches) / float64(b.B*b.B); math.Abs(got-want) > 1e-15 || mismatches == 0 {
		t.Errorf("step1: %.15g, want %d mismatches / %d = %.15g", got, mismatches, b.B*b.B, want)
	}
	for _, steps := range []string{"all", "no_qe", "no_intersection"} {
		mul := losses.ContextualConfig{K: 3, Eps: 0.1, Alpha: 10, Lambda: 1, Gamma: 0, Steps: steps}
		mn := mul
		mn.LogicalAnd = "min"
		vMul, _ := losstest.Value(t, &mul, b, losses.EvalOptions{})
		vMin, _ := losstest.Value(t, &mn, b, losses.EvalOptions{})
		if math.Abs(vMul-vMin) > 1e-15 {
			t.Errorf("steps %s: min %.17g, mul %.17g: want equal values", steps, vMin, vMul)
		}
	}
}

// TestContextualAblationOptionsValidated: bad values of the Table 5 options, and options that touch
// a skipped step, are errors from losses.New naming the field.
func TestContextualAblationOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		set   map[string]any
		field string // "" = accepted
	}{
		{map[string]any{"steps": "step2"}, "steps"},
		{map[string]any{"heaviside": "relu"}, "heaviside"},
		{map[string]any{"logical_and": "and"}, "logical_and"},
		{map[string]any{"heaviside": "sigmoid", "sigmoid_tau": 0}, "sigmoid_tau"},
		{map[string]any{"sigmoid_tau": -0.1}, "sigmoid_tau"},
		{map[string]any{"steps": "step1", "drop_m_minus": true}, "drop_m_minus"},
		{map[string]any{"steps": "no_intersection", "live_eq24_norms": true}, "live_eq24_norms"},
		{map[string]any{"steps": "step1", "logical_and": "min"}, "logical_and"},
		{map[string]any{"steps": "no_qe", "detach_qe_norm": true}, "detach_qe_norm"},
		{map[string]any{"steps": "step1", "heaviside": "sigmoid", "eps": 1e-5}, ""},
		{map[string]any{"steps": "no_qe", "drop_m_minus": true, "logical_and": "min", "live_eq24_norms": true}, ""},
		{map[string]any{"heaviside": "sigmoid", "sigmoid_tau": 0.05}, ""},
	} {
		_, err := losses.New("contextual", tc.set)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.set, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "contextual") {
			t.Errorf("%v: got %v; want an error naming contextual and %q", tc.set, err, tc.field)
		}
	}
	def := losses.DefaultContextual()
	if def.Steps != "all" || def.Heaviside != "straight_through" || def.LogicalAnd != "mul" || def.DropMMinus || def.LiveEq24Norms || def.SigmoidTau != 0.01 {
		t.Errorf("defaults changed: %+v", *def)
	}
}
