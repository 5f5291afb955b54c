package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// bruteContrastive is an independent float64 loop over ordered pairs.
func bruteContrastive(b losstest.Batch, c *losses.ContrastiveConfig) float64 {
	var ps, ns float64
	var pn, nn int
	for i := 0; i < b.B; i++ {
		for j := 0; j < b.B; j++ {
			if i == j {
				continue
			}
			x, y := losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j)
			var term float64
			pos := b.Labels[i] == b.Labels[j]
			if c.Distance == "l2" {
				d := losstest.Dist(x, y, true)
				if pos {
					term = math.Max(0, d-c.PosMargin)
				} else {
					term = math.Max(0, c.NegMargin-d)
				}
			} else {
				s := losstest.Cosine(x, y)
				if pos {
					term = math.Max(0, c.PosMargin-s)
				} else {
					term = math.Max(0, s-c.NegMargin)
				}
			}
			if c.Squared {
				term *= term
			}
			if c.AvgNonZero && term == 0 {
				continue
			}
			if pos {
				ps += term
				pn++
			} else {
				ns += term
				nn++
			}
		}
	}
	out := 0.0
	if pn > 0 {
		out += ps / float64(pn)
	}
	if nn > 0 {
		out += ns / float64(nn)
	}
	return out
}

func TestContrastiveHandWorked(t *testing.T) {
	// Two positives at 90° and one negative opposite the first:
	// e0=(1,0), e1=(0,1) label 0; e2=(-1,0) label 1. Normalised distances: d01=√2, d02=2, d12=√2.
	// l2, m+=0, m-=1: positive pairs (0,1),(1,0): term √2 each -> mean √2.
	// negatives (0,2),(2,0): relu(1-2)=0; (1,2),(2,1): relu(1-√2)=0 -> no active negatives -> 0.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, -1, 0}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	got, _ := losstest.Value(t, losses.DefaultContrastive(), b, losses.EvalOptions{})
	if math.Abs(got-math.Sqrt2) > 1e-12 {
		t.Fatalf("contrastive = %.15g, want √2", got)
	}
	// cosine with seed 004's δ+=0.75, δ-=0.6: positives s01=0 -> 0.75 each -> mean 0.75;
	// negatives s02=-1, s12=0 -> all below 0.6 -> 0. Total 0.75.
	c := &losses.ContrastiveConfig{Distance: "cosine", PosMargin: 0.75, NegMargin: 0.6, AvgNonZero: true}
	got, _ = losstest.Value(t, c, b, losses.EvalOptions{})
	if math.Abs(got-0.75) > 1e-12 {
		t.Fatalf("cosine contrastive = %.15g, want 0.75", got)
	}
}

func TestContrastiveMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 2, 2, 2, 3}
	for _, c := range []*losses.ContrastiveConfig{
		losses.DefaultContrastive(),
		{Distance: "l2", PosMargin: 0.3, NegMargin: 1.2, AvgNonZero: false, Squared: true},
		{Distance: "cosine", PosMargin: 0.75, NegMargin: 0.6, AvgNonZero: true},
		{Distance: "cosine", PosMargin: 0.9, NegMargin: 0.1, AvgNonZero: false},
	} {
		b := losstest.Random(1, 5, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		want := bruteContrastive(b, c)
		if math.Abs(got-want) > 1e-12 { // both float64; only summation order differs
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestContrastiveDegenerateBatches(t *testing.T) {
	// All one class: no negatives -> negative term 0; all distinct: no positives -> positive term 0.
	one := losstest.Random(2, 3, []int64{4, 4, 4})
	v, g := losstest.Value(t, losses.DefaultContrastive(), one, losses.EvalOptions{})
	if want := bruteContrastive(one, losses.DefaultContrastive()); math.IsNaN(v) || math.Abs(v-want) > 1e-12 {
		t.Fatalf("single-class batch: %v", v)
	}
	for _, x := range g {
		if math.IsNaN(x) {
			t.Fatal("NaN gradient on single-class batch")
		}
	}
	distinct := losstest.Random(3, 3, []int64{0, 1, 2})
	c := &losses.ContrastiveConfig{Distance: "cosine", PosMargin: 0.75, NegMargin: 2, AvgNonZero: true}
	if v, _ := losstest.Value(t, c, distinct, losses.EvalOptions{}); v != 0 {
		t.Fatalf("no positives and no active negatives: %v, want 0", v)
	}
}

func TestRegistryContrastive(t *testing.T) {
	l, err := losses.New("contrastive", map[string]any{"distance": "cosine", "pos_margin": "0.75"})
	if err != nil {
		t.Fatal(err)
	}
	if c := l.(*losses.ContrastiveConfig); c.PosMargin != 0.75 || c.Distance != "cosine" || c.NegMargin != 1 {
		t.Fatalf("config %+v", c)
	}
	if _, err := losses.New("contrastive", map[string]any{"distance": "manhattan"}); err == nil {
		t.Fatal("bad distance accepted")
	}
	if _, err := losses.New("nosuch", nil); err == nil {
		t.Fatal("unknown loss accepted")
	}
}

func TestLabelSetsArePositiveToBothSources(t *testing.T) {
	// A mixup sample with label set {0, 1} is positive to both a class-0 and a class-1 sample.
	// Rows: e0 label {0,-1}, e1 label {1,-1}, e2 label {0,1}. Cosine, m+=1, m-=-1 (every negative active):
	// positive pairs: (0,2),(2,0),(1,2),(2,1); negatives (0,1),(1,0).
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, -1, 1, -1, 0, 1}, SetSize: 2}
	c := &losses.ContrastiveConfig{Distance: "cosine", PosMargin: 1, NegMargin: -1}
	got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
	// positives: s(e0,e2)=s(e1,e2)=1/√2 -> each 1-1/√2; negatives: s(e0,e1)=0 -> each 0-(-1)=1.
	want := (1 - 1/math.Sqrt2) + 1
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("label-set contrastive = %.15g, want %.15g", got, want)
	}
}
