package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// blMarginFixed is the margin loss with a fixed [B, B] matrix of negative-pair counts.
type blMarginFixed struct {
	c      *losses.MarginConfig
	counts [][]float64
}

func (f *blMarginFixed) Name() string { return "margin" }
func (f *blMarginFixed) Build(in losses.Inputs) *graph.Node {
	return f.c.BuildWithNegatives(in, graph.ConvertDType(graph.Const(in.Emb.Graph(), f.counts), in.Emb.DType()))
}

// blMarginProbe returns Σ counts ⊙ w for the sampler's counts (to read the draws through Evaluate).
type blMarginProbe struct {
	c *losses.MarginConfig
	w [][]float64
}

func (p *blMarginProbe) Name() string { return "margin" }
func (p *blMarginProbe) Build(in losses.Inputs) *graph.Node {
	counts := p.c.SampleNegatives(in)
	return graph.ReduceAllSum(graph.Mul(counts, graph.ConvertDType(graph.Const(in.Emb.Graph(), p.w), in.Emb.DType())))
}

func blProbe(t *testing.T, c *losses.MarginConfig, b losstest.Batch, w [][]float64, seed int64) float64 {
	t.Helper()
	res, err := losses.Evaluate(backend.MustShared(), &blMarginProbe{c, w}, b.Emb, b.B, b.D, b.Labels, 1, losses.EvalOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return res.Value
}

// blMargin is an independent float64 loop given the negative counts and per-class β.
func blMargin(b losstest.Batch, c *losses.MarginConfig, counts [][]float64, beta func(label int64) float64) float64 {
	sum, active := 0.0, 0.0
	for a := 0; a < b.B; a++ {
		hasNeg := false
		for n := 0; n < b.B; n++ {
			if b.Labels[n] != b.Labels[a] && counts[a][n] > 0 {
				hasNeg = true
			}
		}
		for j := 0; j < b.B; j++ {
			if j == a {
				continue
			}
			d := losstest.Dist(losstest.Row(b.Emb, b.D, a), losstest.Row(b.Emb, b.D, j), true)
			if b.Labels[j] == b.Labels[a] {
				if l := c.Margin + d - beta(b.Labels[a]); hasNeg && l > 0 {
					sum, active = sum+l, active+1
				}
			} else if l := c.Margin + beta(b.Labels[a]) - d; l > 0 {
				sum, active = sum+counts[a][j]*l, active+counts[a][j]
			}
		}
	}
	if active == 0 {
		return 0
	}
	return sum / active
}

func TestMarginFixedNegatives(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	b := losstest.Random(29, 4, labels)
	// A fixed "draw": for anchor a and its k-th positive, the ((a+k) mod #neg)-th negative.
	counts := make([][]float64, b.B)
	for a := range counts {
		counts[a] = make([]float64, b.B)
		var negs []int
		for n := range labels {
			if labels[n] != labels[a] {
				negs = append(negs, n)
			}
		}
		k := 0
		for p := range labels {
			if p != a && labels[p] == labels[a] {
				counts[a][negs[(a+k)%len(negs)]]++
				k++
			}
		}
	}
	c := losses.DefaultMargin()
	c.Beta = 1.0 // puts both positive and negative hinges in their active range for this batch
	got, _ := losstest.Value(t, &blMarginFixed{c, counts}, b, losses.EvalOptions{})
	want := blMargin(b, c, counts, func(int64) float64 { return c.Beta })
	if math.Abs(got-want) > 1e-12 || want == 0 {
		t.Fatalf("margin = %.15g, brute force %.15g", got, want)
	}
	losstest.CheckGradient(t, &blMarginFixed{c, counts}, b, losses.EvalOptions{}, 1e-6)

	// Learnable class-specific β read from the store.
	betas := []float64{0.9, 1.1, 1.3, 0.7}
	store := model.NewStore()
	if _, err := store.Scope("/loss").CreateVariable("beta", tensors.FromFlatDataAndDimensions(betas, 4)); err != nil {
		t.Fatal(err)
	}
	lc := *c
	lc.LearnBeta = true
	got, _ = losstest.Value(t, &blMarginFixed{&lc, counts}, b, losses.EvalOptions{Store: store})
	want = blMargin(b, c, counts, func(l int64) float64 { return betas[l] })
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("learned β: margin = %.15g, brute force %.15g", got, want)
	}
}

func TestMarginAll(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	b := losstest.Random(30, 4, labels)
	c := &losses.MarginConfig{Margin: 0.2, Beta: 1.0, Sampling: "all", Cutoff: 0.5, NonzeroLossCutoff: 1.4}
	all := make([][]float64, b.B)
	for a := range all {
		all[a] = make([]float64, b.B)
		for n := range labels {
			if labels[n] != labels[a] {
				all[a][n] = 1
			}
		}
	}
	got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
	if want := blMargin(b, c, all, func(int64) float64 { return c.Beta }); math.Abs(got-want) > 1e-12 {
		t.Fatalf("margin(all) = %.15g, brute force %.15g", got, want)
	}
	losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
	losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	for _, l := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
		for _, s := range []string{"all", "distance"} {
			cc := losses.DefaultMargin()
			cc.Sampling = s
			v, g := losstest.Value(t, cc, losstest.Random(31, 3, l), losses.EvalOptions{})
			if math.IsNaN(v) || (l[0] == 5 && v != 0) {
				t.Errorf("%s, labels %v: %v", s, l, v)
			}
			for _, x := range g {
				if math.IsNaN(x) {
					t.Fatal("NaN gradient")
				}
			}
		}
	}
}

func TestMarginSampler(t *testing.T) {
	// 30 identical class-0 samples at x0=(1,0,0,0) and 3 singleton negatives at distances 0.6, 0.9
	// and 1.3 from x0 (angle θ = 2·asin(d/2) in the first plane), plus one at distance 1.8 beyond
	// the non-zero-loss cutoff 1.4. Each class-0 anchor draws one negative for each of its 29
	// positives: 870 draws from p_k ∝ d^{2−n}(1−d²/4)^{−(n−3)/2}, n=4; the far negative is never
	// drawn; singleton anchors have no positive and draw nothing.
	dists := []float64{0.6, 0.9, 1.3, 1.8}
	const nPos, dim = 30, 4
	var emb []float64
	var labels []int64
	for i := 0; i < nPos; i++ {
		emb = append(emb, 1, 0, 0, 0)
		labels = append(labels, 0)
	}
	for k, d := range dists {
		th := 2 * math.Asin(d/2)
		emb = append(emb, math.Cos(th), math.Sin(th), 0, 0)
		labels = append(labels, int64(k+1))
	}
	b := losstest.Batch{Emb: emb, B: len(labels), D: dim, Labels: labels}
	c := losses.DefaultMargin()
	col := func(n int) [][]float64 {
		w := make([][]float64, b.B)
		for i := range w {
			w[i] = make([]float64, b.B)
			w[i][n] = 1
		}
		return w
	}
	weights := make([]float64, 3)
	total := 0.0
	for k := range weights {
		d := dists[k]
		weights[k] = math.Pow(d, 2-dim) * math.Pow(1-d*d/4, -(dim-3)/2.0)
		total += weights[k]
	}
	const draws = nPos * (nPos - 1)
	sum := 0.0
	for k := range dists {
		got := blProbe(t, c, b, col(nPos+k), 1)
		sum += got
		if k == 3 {
			if got != 0 {
				t.Errorf("negative beyond the cutoff drawn %v times", got)
			}
			continue
		}
		p := weights[k] / total
		sigma := math.Sqrt(p * (1 - p) / draws)
		if f := got / draws; math.Abs(f-p) > 4*sigma { // 4σ binomial band
			t.Errorf("negative at d=%.1f: frequency %.4f, want %.4f ± %.4f", dists[k], f, p, 4*sigma)
		}
	}
	if sum != draws {
		t.Errorf("%v draws, want %d (one per positive pair)", sum, draws)
	}
	// Determinism given the seed; another seed changes the draws.
	if a, a2 := blProbe(t, c, b, col(nPos), 1), blProbe(t, c, b, col(nPos), 1); a != a2 {
		t.Errorf("same seed: %v vs %v", a, a2)
	}
	changed := false
	for seed := int64(2); seed < 6 && !changed; seed++ {
		changed = blProbe(t, c, b, col(nPos), seed) != blProbe(t, c, b, col(nPos), 1)
	}
	if !changed {
		t.Error("draws do not depend on the seed")
	}
}
