package losses_test

import (
	"math"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/losses/losstest"
)

// blMarginSoftmax is an independent float64 evaluation of ArcFace (arc=true) / CosFace with fixed
// class weights: mean cross-entropy of the scaled, margin-modified cosines.
func blMarginSoftmax(b losstest.Batch, w []float64, numClasses int, margin, scale float64, arc bool) float64 {
	total := 0.0
	for i := 0; i < b.B; i++ {
		logits := make([]float64, numClasses)
		for k := range logits {
			c := losstest.Cosine(losstest.Row(b.Emb, b.D, i), losstest.Row(w, b.D, k))
			if k == int(b.Labels[i]) {
				if arc {
					c = math.Cos(math.Acos(c) + margin)
				} else {
					c -= margin
				}
			}
			logits[k] = scale * c
		}
		m := math.Inf(-1)
		for _, l := range logits {
			m = math.Max(m, l)
		}
		z := 0.0
		for _, l := range logits {
			z += math.Exp(l - m)
		}
		total += m + math.Log(z) - logits[b.Labels[i]]
	}
	return total / float64(b.B)
}

func TestArcFaceCosFaceHandWorked(t *testing.T) {
	// One sample e=(1,0) of class 0; weights w0=(1,1) (θ0=45°), w1=(0,1) (θ1=90°). s=1.
	// ArcFace m=π/4: target cos(90°)=0, other cos 90° = 0 -> CE = log 2.
	// CosFace m=0.5: logits r−0.5 (target, r=cos 45°) and 0 -> CE = log(1+e^{0.5−r}).
	b := losstest.Batch{Emb: []float64{1, 0}, B: 1, D: 2, Labels: []int64{0}}
	w := []float64{1, 1, 0, 1}
	opt := func() losses.EvalOptions {
		return losses.EvalOptions{Store: blProxyStore(t, "weights", w, 2, 2), NumClasses: 2}
	}
	got, _ := losstest.Value(t, &losses.ArcFaceConfig{Margin: math.Pi / 4, Scale: 1}, b, opt())
	if math.Abs(got-math.Log(2)) > 1e-12 {
		t.Errorf("arcface = %.15g, want log 2", got)
	}
	r := 1 / math.Sqrt2
	got, _ = losstest.Value(t, &losses.CosFaceConfig{Margin: 0.5, Scale: 1}, b, opt())
	if want := math.Log1p(math.Exp(0.5 - r)); math.Abs(got-want) > 1e-12 {
		t.Errorf("cosface = %.15g, want %.15g", got, want)
	}
}

func TestArcFaceCosFaceMatchBruteForce(t *testing.T) {
	labels := []int64{0, 0, 1, 1, 1, 2, 2, 3}
	const numClasses, d = 5, 4
	w := blRandomProxies(2, numClasses, d)
	b := losstest.Random(13, d, labels)
	opt := func() losses.EvalOptions {
		return losses.EvalOptions{Store: blProxyStore(t, "weights", w, numClasses, d), NumClasses: numClasses}
	}
	for _, tc := range []struct {
		l             losses.Loss
		margin, scale float64
		arc           bool
	}{
		{losses.DefaultArcFace(), 0.5, 64, true},
		{&losses.ArcFaceConfig{Margin: 0.3, Scale: 4}, 0.3, 4, true},
		{losses.DefaultCosFace(), 0.35, 64, false},
		{&losses.CosFaceConfig{Margin: 0.2, Scale: 3}, 0.2, 3, false},
	} {
		got, _ := losstest.Value(t, tc.l, b, opt())
		want := blMarginSoftmax(b, w, numClasses, tc.margin, tc.scale, tc.arc)
		// Relative 1e-12: the clamp of cos to 1−1e-7 is far from these random cosines.
		if math.Abs(got-want) > 1e-12*math.Max(1, want) {
			t.Errorf("%s %+v: graph %.15g, brute force %.15g", tc.l.Name(), tc.l, got, want)
		}
		// s=64 multiplies second derivatives by s²; scale the tolerance with s.
		losstest.CheckGradient(t, tc.l, b, opt(), 1e-7*tc.scale*tc.scale)
		losstest.CheckPermutationInvariant(t, tc.l, b, opt(), 1e-12*math.Max(1, want))
	}
}

func TestArcFaceLearnableWeights(t *testing.T) {
	// Fresh weights from the seed: finite and reproducible; a single-class batch works.
	for _, name := range []string{"arcface", "cosface"} {
		l, err := losses.New(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := losstest.Random(14, 3, []int64{0, 0, 0})
		v1, g := losstest.Value(t, l, b, losses.EvalOptions{Seed: 3, NumClasses: 4})
		v2, _ := losstest.Value(t, l, b, losses.EvalOptions{Seed: 3, NumClasses: 4})
		if v1 != v2 || math.IsNaN(v1) || v1 <= 0 {
			t.Errorf("%s: %v vs %v", name, v1, v2)
		}
		for _, x := range g {
			if math.IsNaN(x) {
				t.Fatalf("%s: NaN gradient", name)
			}
		}
	}
	if _, err := losses.New("arcface", map[string]any{"scale": "0"}); err == nil {
		t.Error("scale 0 accepted")
	}
}
