package evaluate

import (
	"math"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
)

// TestIDMLPullClosedForm: one positive pair (one class of two images, so every batch is the same
// pair, no negatives). The contrastive loss (m₊ = 0) is the pair's distance, averaged over the two
// ordered pairs: D for the base and D_IN = α·e for IDML, e = exp(−(β + γ)/(τα)), α = ‖ŝ₀ − ŝ₁‖,
// β = ‖u₀ + u₁‖. Both depend on s₀ only through α, so the ratio of the gradient norms is
// dD_IN/dα = e·(1 + (β + γ)/(τα)) — worked out by hand, compared at 1e−9.
func TestIDMLPullClosedForm(t *testing.T) {
	th := 0.7
	emb := []float32{1, 0, float32(math.Cos(th)), float32(math.Sin(th))}
	unc := []float32{0.3, -0.2, 0.5, 0.4}
	c := losses.DefaultIDML()
	c.Base, c.Tau, c.Gamma = "contrastive", 5, 0.5
	res, err := IDMLPull(emb, unc, 2, 2, 2, []int64{3, 3}, PullOptions{Loss: c, Classes: 1, PerClass: 2, Batches: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// α and β from the float32 inputs, as the loss sees them.
	s1x, s1y := float64(emb[2]), float64(emb[3])
	n1 := math.Hypot(s1x, s1y)
	alpha := math.Hypot(1-s1x/n1, -s1y/n1)
	beta := math.Hypot(float64(unc[0])+float64(unc[2]), float64(unc[1])+float64(unc[3]))
	r := (beta + 0.5) / alpha
	want := math.Exp(-r/5) * (1 + r/5)
	if len(res.Unc) != 10 || len(res.DecileRatio) != 10 {
		t.Fatalf("rows %d, deciles %d: want 10 and 10", len(res.Unc), len(res.DecileRatio))
	}
	for i := range res.Unc {
		if res.Base[i] == 0 || math.Abs(res.IDML[i]/res.Base[i]-want) > 1e-9 {
			t.Fatalf("row %d: pulls %g / %g = %.12g, want e(1 + r/τ) = %.12g", i, res.IDML[i], res.Base[i], res.IDML[i]/res.Base[i], want)
		}
	}
	for k, v := range res.DecileRatio {
		if math.Abs(v-want) > 1e-9 {
			t.Errorf("decile %d: ratio %g, want %g", k, v, want)
		}
	}
	if u0 := math.Hypot(0.3, -0.2); math.Abs(res.DecileUnc[0]-u0) > 1e-6 {
		t.Errorf("lowest decile ‖u‖ %g, want ‖u₀‖ = %g", res.DecileUnc[0], u0)
	}
}

// TestIDMLPullZeroUncertainty: with u = 0 and γ = 0 IDML is its base, so every ratio is 1 (up to
// rounding), on random batches of several classes with negatives.
func TestIDMLPullZeroUncertainty(t *testing.T) {
	const n, d, du = 40, 6, 3
	emb := make([]float32, n*d)
	labels := make([]int64, n)
	for i := range n {
		labels[i] = int64(i / 4)
		for j := range d {
			emb[i*d+j] = float32(math.Sin(float64(7*i+3*j+1)) + 0.3*float64(j%2))
		}
	}
	c := losses.DefaultIDML()
	c.Base = "contrastive"
	res, err := IDMLPull(emb, make([]float32, n*du), n, d, du, labels, PullOptions{Loss: c, Classes: 4, PerClass: 4, Batches: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unc) != 48 {
		t.Fatalf("%d rows, want 3 × 16", len(res.Unc))
	}
	for i := range res.Unc {
		if res.Base[i] > 0 && math.Abs(res.IDML[i]/res.Base[i]-1) > 1e-12 {
			t.Fatalf("row %d: ratio %g with zero uncertainty", i, res.IDML[i]/res.Base[i])
		}
	}
}

func TestIDMLPullErrors(t *testing.T) {
	pa := losses.DefaultIDML() // proxyanchor base
	ct := losses.DefaultIDML()
	ct.Base = "contrastive"
	emb, unc, lab := make([]float32, 8*2), make([]float32, 8), []int64{0, 0, 0, 0, 1, 1, 1, 1}
	for _, c := range []struct {
		opt  PullOptions
		want string
	}{
		{PullOptions{Loss: pa}, "pair loss"},
		{PullOptions{}, "no idml loss"},
		{PullOptions{Loss: ct, Classes: 3, PerClass: 4}, "2 classes have ≥ 4 images, want 3"},
	} {
		if _, err := IDMLPull(emb, unc, 8, 2, 1, lab, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error containing %q", c.opt, err, c.want)
		}
	}
}

func TestPullDeciles(t *testing.T) {
	// 20 rows: ‖u‖ = 20 − i (given in reverse), base pull 1, IDML pull 2·‖u‖ → two rows per tenth:
	// tenth k holds ‖u‖ 2k+1, 2k+2 → mean 2k + 1.5, ratio (4k+2 + 4k+4)/2 = 4k + 3.
	var unc, base, idml []float64
	for i := range 20 {
		u := float64(20 - i)
		unc = append(unc, u)
		base = append(base, 1)
		idml = append(idml, 2*u)
	}
	du, ratio := pullDeciles(unc, base, idml)
	for k := range 10 {
		if du[k] != 2*float64(k)+1.5 || ratio[k] != 4*float64(k)+3 {
			t.Fatalf("tenth %d: ‖u‖ %g ratio %g, want %g, %g", k, du[k], ratio[k], 2*float64(k)+1.5, 4*float64(k)+3)
		}
	}
	// A vanishing base pull does not dominate: the tenth of ‖u‖ 1, 2 (rows 19, 18) with base pulls
	// 1e-15 and 1 and IDML pulls 1 and 1 has the ratio of sums 2/(1 + 1e-15), not the mean of the
	// ratios (1e15 + 1)/2; a tenth whose base pulls are all 0 is NaN.
	base[19], idml[19], idml[18] = 1e-15, 1, 1
	base[16], base[17] = 0, 0
	_, ratio = pullDeciles(unc, base, idml)
	if math.Abs(ratio[0]-2/(1+1e-15)) > 1e-12 || !math.IsNaN(ratio[1]) {
		t.Errorf("tenths 0, 1: ratios %g, %g; want 2, NaN", ratio[0], ratio[1])
	}
	if du, _ := pullDeciles(unc[:9], base[:9], idml[:9]); du != nil {
		t.Error("fewer than 10 rows gave deciles")
	}
}
