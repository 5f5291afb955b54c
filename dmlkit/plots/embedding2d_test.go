package plots

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCircularStatsClosedForm(t *testing.T) {
	// Two angles μ ± α: the mean resultant vector is (cos α)(cos μ, sin μ), so R̄ = cos α and the
	// mean direction is μ, also when μ ± α straddles ±π (μ = 3, α = 0.3: 2.7 and 3.3 ≡ −2.98).
	// {0, 0, π/2}: (C̄, S̄) = (2/3, 1/3), R̄ = √5/3, direction atan(1/2).
	// One angle: R̄ = 1, σ = 0. n equally spaced angles: R̄ = 0 (σ = +Inf up to rounding).
	for _, c := range []struct {
		name      string
		angles    []float64
		dir, rbar float64
	}{
		{"pair at 0.5", []float64{0.5 - 0.3, 0.5 + 0.3}, 0.5, math.Cos(0.3)},
		{"pair across pi", []float64{2.7, 3.3}, 3, math.Cos(0.3)},
		{"pair at -2", []float64{-2 - 1.2, -2 + 1.2}, -2, math.Cos(1.2)},
		{"weighted", []float64{0, 0, math.Pi / 2}, math.Atan(0.5), math.Sqrt(5) / 3},
		{"single", []float64{-1}, -1, 1},
		{"quarter", []float64{0, math.Pi / 2}, math.Pi / 4, math.Sqrt2 / 2},
	} {
		dir, rbar, std := CircularStats(c.angles)
		const tol = 1e-14 // a few cos/sin/atan2 roundings
		if math.Abs(dir-c.dir) > tol || math.Abs(rbar-c.rbar) > tol || math.Abs(std-math.Sqrt(-2*math.Log(c.rbar))) > 1e-7 {
			t.Errorf("%s: dir %v R̄ %v σ %v, want %v %v %v", c.name, dir, rbar, std, c.dir, c.rbar, math.Sqrt(-2*math.Log(c.rbar)))
		}
	}
	var even []float64
	for k := 0; k < 7; k++ {
		even = append(even, 0.1+2*math.Pi*float64(k)/7)
	}
	if _, rbar, std := CircularStats(even); rbar > 1e-15 || std < 8 {
		t.Errorf("equally spaced: R̄ %v σ %v, want 0 and huge", rbar, std)
	}
	if s := CircStd(0); !math.IsInf(s, 1) {
		t.Errorf("CircStd(0) = %v", s)
	}
	// σ of a wrapped normal N(0, s²) with R̄ = exp(−s²/2) is s.
	if s := CircStd(math.Exp(-0.5 * 0.7 * 0.7)); math.Abs(s-0.7) > 1e-15 {
		t.Errorf("CircStd(exp(-0.245)) = %v, want 0.7", s)
	}
	if d, r, s := CircularStats(nil); !math.IsNaN(d) || !math.IsNaN(r) || !math.IsNaN(s) {
		t.Errorf("no angles: %v %v %v", d, r, s)
	}
}

func TestSpreadAndBandwidth(t *testing.T) {
	// Points of norm 2 at angles ±0.4 and one at the origin: centroid (2·2cos0.4)/3 on the x axis,
	// mean radius 4/3, R̄ of the two directions cos 0.4, bandwidth 1.06·sqrt(−2 ln cos 0.4)·2^(−1/5).
	a := 0.4
	s := Spread(3, []float64{2 * math.Cos(a), 2 * math.Cos(a), 0}, []float64{2 * math.Sin(a), -2 * math.Sin(a), 0})
	want := ClassSpread{Label: 3, N: 3, Mean: [2]float64{4 * math.Cos(a) / 3, 0}, Radius: 4.0 / 3, Direction: 0, R: math.Cos(a),
		CircStd: math.Sqrt(-2 * math.Log(math.Cos(a))), Bandwidth: 1.06 * math.Sqrt(-2*math.Log(math.Cos(a))) * math.Pow(2, -0.2)}
	got := []float64{s.Mean[0], s.Mean[1], s.Radius, s.Direction, s.R, s.CircStd, s.Bandwidth}
	exp := []float64{want.Mean[0], want.Mean[1], want.Radius, want.Direction, want.R, want.CircStd, want.Bandwidth}
	for i := range got {
		if math.Abs(got[i]-exp[i]) > 1e-12 || s.N != 3 || s.Label != 3 {
			t.Fatalf("Spread = %+v, want %+v", s, want)
		}
	}
	// Clamps: identical angles (σ = 0) give MinBandwidth; none give MaxBandwidth.
	if h := CircularBandwidth([]float64{1, 1, 1}); h != MinBandwidth {
		t.Errorf("bandwidth of identical angles %v", h)
	}
	if h := CircularBandwidth(nil); h != MaxBandwidth {
		t.Errorf("bandwidth of no angles %v", h)
	}
}

// wrappedNormal is the wrapped-normal density by its Fourier series (Mardia & Jupp 2000, eq. 3.5.64):
// f(θ) = (1/2π)(1 + 2 Σ_{p≥1} ρ^{p²} cos p(θ − μ)), ρ = exp(−h²/2). A second implementation to check
// WrappedKDE, which sums Gaussians over wraps instead.
func wrappedNormal(theta, mu, h float64) float64 {
	rho := math.Exp(-h * h / 2)
	s := 1.0
	for p := 1; p < 400; p++ {
		term := math.Pow(rho, float64(p*p))
		if term < 1e-300 {
			break
		}
		s += 2 * term * math.Cos(float64(p)*(theta-mu))
	}
	return s / (2 * math.Pi)
}

func TestWrappedKDE(t *testing.T) {
	// The estimate of one angle is the wrapped normal around it: compare with the Fourier series
	// at bandwidths from narrow to wider than the circle (where the density is nearly 1/2π).
	at := []float64{-3.1, -1, 0, 0.2, 1.5, 3.14}
	for _, h := range []float64{0.05, 0.5, 2, math.Pi} {
		got := WrappedKDE([]float64{0.2}, h, at)
		for j, th := range at {
			want := wrappedNormal(th, 0.2, h)
			// Relative 1e-12, plus 1e-14 absolute: the Fourier series sums ~30 terms of size up to 1 that
			// cancel to ~0 far from the point, leaving rounding of a few 1e-15.
			if math.Abs(got[j]-want) > 1e-12*want+1e-14 {
				t.Errorf("h=%v θ=%v: KDE %v, wrapped normal %v", h, th, got[j], want)
			}
		}
	}
	// ∫ f = 1 over the circle. The integrand is periodic and smooth, so the midpoint rule with M
	// points is exact up to the aliased Fourier coefficients, of size ρ^{M²} = exp(−M²h²/2): with
	// M = 4000 and h ≥ 0.01 that is below exp(−800); what remains is rounding (~1e-13 over the
	// sum), so the tolerance is 1e-10.
	angles := []float64{-3.13, -3, -1, 0, 0.01, 2.5, 3.14159}
	const m = 4000
	grid := make([]float64, m)
	for j := range grid {
		grid[j] = -math.Pi + (float64(j)+0.5)*2*math.Pi/m
	}
	for _, h := range []float64{MinBandwidth, 0.1, 1, MaxBandwidth, CircularBandwidth(angles)} {
		f := WrappedKDE(angles, h, grid)
		sum := 0.0
		for _, v := range f {
			sum += v
		}
		if integral := sum * 2 * math.Pi / m; math.Abs(integral-1) > 1e-10 {
			t.Errorf("h=%v: ∫f = %.15f, want 1", h, integral)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("WrappedKDE accepted h = 0")
		}
	}()
	WrappedKDE(angles, 0, grid)
}

func TestKDE2DIntegratesToOne(t *testing.T) {
	// Points in [−1, 1]²; the grid [−8, 8]² (cell 0.1) reaches > 20 bandwidths beyond them, and a
	// Gaussian's midpoint sum with cells ≤ h/3 is exact to exp(−2π²(h/Δ)²) < 1e-70, so Σ z Δ² = 1
	// up to rounding.
	var x, y []float64
	for i := 0; i < 60; i++ {
		x = append(x, math.Sin(float64(i)*1.7))
		y = append(y, math.Cos(float64(i)*0.9)*0.5)
	}
	z := KDE2D(x, y, -8, 8, 160)
	sum := 0.0
	for _, row := range z {
		for _, v := range row {
			sum += v
		}
	}
	if got := sum * 0.1 * 0.1; math.Abs(got-1) > 1e-9 {
		t.Errorf("Σ z Δ² = %.12f, want 1", got)
	}
}

func TestClassColors(t *testing.T) {
	st := DefaultStyle()
	if c := st.ClassColors(3); c[0] != PrintPalette[0] || c[2] != PrintPalette[2] {
		t.Errorf("3 classes: %v", c)
	}
	c := st.ClassColors(10)
	seen := map[[3]uint32]bool{}
	for _, col := range c {
		r, g, b, _ := col.RGBA()
		seen[[3]uint32{r, g, b}] = true
	}
	if len(seen) != 10 {
		t.Errorf("10 classes got %d distinct colours", len(seen))
	}
}

// ringData gives nClass classes of n points; class k is centred at angle 2πk/nClass with angular
// spread proportional to (k+1). radius scales the points (1: on the unit circle).
func ringData(nClass, n int, radius, phase float64) EmbeddingPanel {
	var p EmbeddingPanel
	for k := 0; k < nClass; k++ {
		for i := 0; i < n; i++ {
			// Deterministic spread: a quasi-uniform offset in [−w, w].
			w := 0.04 * float64(k+1)
			off := w * (2*math.Mod(float64(i)*0.618034, 1) - 1)
			a := phase + 2*math.Pi*float64(k)/float64(nClass) + off
			r := radius * (1 + 0.3*(radius-1)*math.Sin(float64(i)))
			p.X = append(p.X, r*math.Cos(a))
			p.Y = append(p.Y, r*math.Sin(a))
			p.Labels = append(p.Labels, float64(k))
		}
	}
	return p
}

func TestEmbedding2DRenders(t *testing.T) {
	st := PageStyle()
	dir := t.TempDir()
	if d := os.Getenv("DMLKIT_PLOTS_DUMP"); d != "" {
		dir = d
	}
	for _, c := range []struct {
		name     string
		radius   float64
		onCircle bool
	}{{"emb_circle", 1, true}, {"emb_plane", 3, false}} {
		a, b := ringData(10, 150, c.radius, 0), ringData(10, 150, c.radius, 0.2)
		a.Title, b.Title = "arcface (seed 0)", "arcface+tcm (seed 0)"
		fig, err := Embedding2D(st, Labels{Title: "MNIST, 2-D embeddings"}, []EmbeddingPanel{a, b})
		if err != nil {
			t.Fatal(err)
		}
		if fig.OnCircle != c.onCircle || len(fig.Classes) != 2 || len(fig.Classes[0]) != 10 {
			t.Fatalf("%s: on circle %v, classes %d×%d", c.name, fig.OnCircle, len(fig.Classes), len(fig.Classes[0]))
		}
		// Class k's offsets are ±0.04(k+1): more spread, larger σ.
		if cs := fig.Classes[0]; !(cs[0].CircStd < cs[4].CircStd && cs[4].CircStd < cs[9].CircStd) {
			t.Errorf("%s: σ not increasing with the spread: %v %v %v", c.name, cs[0].CircStd, cs[4].CircStd, cs[9].CircStd)
		}
		files, err := Save(fig, st, filepath.Join(dir, c.name))
		if err != nil {
			t.Fatal(err)
		}
		b0, _ := os.ReadFile(files[0])
		img, err := png.Decode(bytes.NewReader(b0))
		if err != nil {
			t.Fatal(err)
		}
		// Two panels sharing the page width (6.9in), 2.6in high, plus a title line of 1.6 × 9pt at 300 dpi.
		wantH := int(math.Round((2.6*72 + 1.6*9) / 72 * 300))
		if sz := img.Bounds().Size(); sz.X != 2070 || math.Abs(float64(sz.Y-wantH)) > 1 {
			t.Errorf("%s: PNG %v, want 2070×%d", c.name, sz, wantH)
		}
		if probs, _ := CheckLayout(fig, st); len(probs) > 0 {
			t.Errorf("%s: layout: %q", c.name, probs)
		}
		if f := nonWhiteFraction(img); f < 0.03 {
			t.Errorf("%s: only %.4f of the pixels are not white", c.name, f)
		}
		// The arrows are drawn opaque in the class colours.
		for _, k := range []int{0, 5} {
			if n := countColor(img, st.ClassColors(10)[k]); n < 100 {
				t.Errorf("%s: class %d colour in %d pixels, want ≥ 100", c.name, k, n)
			}
		}
		svg, _ := os.ReadFile(files[1])
		pdf, _ := os.ReadFile(files[2])
		if !bytes.Contains(svg[:300], []byte("<svg")) || len(svg) < 20000 {
			t.Errorf("%s: SVG invalid or trivial (%d bytes)", c.name, len(svg))
		}
		if !bytes.HasPrefix(pdf, []byte("%PDF-")) || len(pdf) < 20000 {
			t.Errorf("%s: PDF invalid or trivial (%d bytes)", c.name, len(pdf))
		}
	}
}

func TestEmbedding2DBadInputs(t *testing.T) {
	st := DefaultStyle()
	for _, c := range []struct {
		panels []EmbeddingPanel
		want   string
	}{
		{nil, "no panels"},
		{[]EmbeddingPanel{{Title: "a", X: []float64{1}, Y: []float64{0}}}, "1 x, 1 y and 0 labels"},
		{[]EmbeddingPanel{{Title: "a"}}, "no points"},
		{[]EmbeddingPanel{{Title: "a", X: []float64{1, math.NaN()}, Y: []float64{0, 1}, Labels: []float64{0, 1}}}, "point 1"},
	} {
		if _, err := Embedding2D(st, Labels{}, c.panels); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}
