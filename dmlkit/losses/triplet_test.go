package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blTriplet is an independent float64 loop over anchors, positives and negatives.
func blTriplet(b losstest.Batch, c *losses.TripletConfig) float64 { return blTripletRefs(b, 0, c) }

// blTripletRefs is blTriplet with anchors = rows [0, nq) and references = rows [nq, B) when nq > 0.
func blTripletRefs(b losstest.Batch, nq int, c *losses.TripletConfig) float64 {
	dist := func(i, j int) float64 {
		d := losstest.Dist(losstest.Row(b.Emb, b.D, i), losstest.Row(b.Emb, b.D, j), c.Normalize)
		if c.Distance == "squared_l2" {
			return d * d
		}
		return d
	}
	var terms []float64
	for a := 0; a < blNumQueries(b, nq); a++ {
		if c.Mining == "hard" {
			hp, hn, okP, okN := 0.0, math.Inf(1), false, false
			for j := nq; j < b.B; j++ {
				if j == a {
					continue
				}
				if b.Labels[j] == b.Labels[a] {
					hp, okP = math.Max(hp, dist(a, j)), true
				} else {
					hn, okN = math.Min(hn, dist(a, j)), true
				}
			}
			if okP && okN {
				terms = append(terms, math.Max(0, hp-hn+c.Margin))
			}
			continue
		}
		for p := nq; p < b.B; p++ {
			if p == a || b.Labels[p] != b.Labels[a] {
				continue
			}
			for n := nq; n < b.B; n++ {
				if b.Labels[n] == b.Labels[a] {
					continue
				}
				dap, dan := dist(a, p), dist(a, n)
				if c.Mining == "semihard" && !(dan > dap && dan < dap+c.Margin) {
					continue
				}
				terms = append(terms, math.Max(0, dap-dan+c.Margin))
			}
		}
	}
	s, n := 0.0, 0
	for _, v := range terms {
		if c.AvgNonZero && v == 0 {
			continue
		}
		s, n = s+v, n+1
	}
	if n == 0 {
		return 0
	}
	return s / float64(n)
}

func TestTripletHandWorked(t *testing.T) {
	// e0=(1,0), e1=(0,1) class 0; e2=(1,1)/√2 class 1; normalised l2 distances: d01=√2,
	// d02=d12=√(2−√2)=0.765367. Triplets (a,p,n): (0,1,2) and (1,0,2): √2−0.765367+m each; anchor 2
	// has no positive. m=0.05 -> both 0.698846; AvgNonZero mean = 0.698846.
	b := losstest.Batch{Emb: []float64{1, 0, 0, 1, 1, 1}, B: 3, D: 2, Labels: []int64{0, 0, 1}}
	want := math.Sqrt2 - math.Sqrt(2-math.Sqrt2) + 0.05
	got, _ := losstest.Value(t, losses.DefaultTriplet(), b, losses.EvalOptions{})
	if math.Abs(got-want) > 1e-12 {
		t.Fatalf("triplet = %.15g, want %.15g", got, want)
	}
}

func TestTripletMatchesBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	for _, c := range []*losses.TripletConfig{
		losses.DefaultTriplet(),
		{Margin: 0.2, Distance: "squared_l2", Normalize: true, Mining: "all", AvgNonZero: false},
		{Margin: 0.5, Distance: "l2", Normalize: true, Mining: "semihard", AvgNonZero: true},
		{Margin: 0.3, Distance: "l2", Normalize: false, Mining: "hard", AvgNonZero: false},
		{Margin: 0.1, Distance: "squared_l2", Normalize: true, Mining: "hard", AvgNonZero: true},
	} {
		b := losstest.Random(8, 4, labels)
		got, _ := losstest.Value(t, c, b, losses.EvalOptions{})
		want := blTriplet(b, c)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: graph %.15g, brute force %.15g", *c, got, want)
		}
		if want == 0 {
			t.Errorf("%+v: test batch has no active triplet; pick another", *c)
		}
		losstest.CheckGradient(t, c, b, losses.EvalOptions{}, 1e-6)
		losstest.CheckPermutationInvariant(t, c, b, losses.EvalOptions{}, 1e-12)
	}
}

func TestTripletDegenerate(t *testing.T) {
	for _, mining := range []string{"all", "semihard", "hard"} {
		c := losses.DefaultTriplet()
		c.Mining = mining
		for _, labels := range [][]int64{{0, 1, 2, 3}, {5, 5, 5, 5}} {
			v, g := losstest.Value(t, c, losstest.Random(9, 3, labels), losses.EvalOptions{})
			if v != 0 {
				t.Errorf("%s, labels %v: %v, want 0 (no triplets)", mining, labels, v)
			}
			for _, x := range g {
				if math.IsNaN(x) || x != 0 {
					t.Fatalf("%s, labels %v: gradient %v, want 0", mining, labels, x)
				}
			}
		}
	}
	if _, err := losses.New("triplet", map[string]any{"mining": "easy"}); err == nil {
		t.Fatal("bad mining accepted")
	}
}

func TestTripletWithReferences(t *testing.T) {
	b := losstest.Random(35, 4, []int64{0, 1, 2, 3, 0, 0, 1, 2, 2, 3, 1})
	for _, mining := range []string{"all", "semihard", "hard"} {
		c := &losses.TripletConfig{Margin: 0.5, Distance: "l2", Normalize: true, Mining: mining, AvgNonZero: true}
		got, _ := losstest.Value(t, &blRefSplit{c, 4}, b, losses.EvalOptions{})
		if want := blTripletRefs(b, 4, c); math.Abs(got-want) > 1e-12 || want == 0 {
			t.Errorf("%s with references: graph %.15g, brute force %.15g", mining, got, want)
		}
	}
}
