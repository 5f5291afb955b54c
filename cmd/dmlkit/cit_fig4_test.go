package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/backend"
	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
)

// citFig4Grid is the x axis of our Fig. 4: Δ = S_an − S_ap from −1 to 1 with S_ap = −Δ/2,
// S_an = Δ/2 and S_pn = 0 (a positive and a negative that are orthogonal to each other).
func citFig4Grid(n int) (delta, sap, san, spn []float64) {
	for i := 0; i < n; i++ {
		d := -1 + 2*float64(i)/float64(n-1)
		delta, sap, san, spn = append(delta, d), append(sap, -d/2), append(san, d/2), append(spn, 0)
	}
	return
}

// citGradients returns ∂l/∂S_ap and ∂l/∂S_an of the per-triplet CIT loss as implemented
// (losses.CITTripletTerms, the function the loss is built from), by graph.Gradient.
func citGradients(t *testing.T, sap, san, spn []float64, gamma float64) (gap, gan []float64) {
	t.Helper()
	e, err := graph.NewExec(backend.MustShared(), func(ap, an, pn *graph.Node) []*graph.Node {
		_, _, l := losses.CITTripletTerms(ap, an, pn, gamma)
		return graph.Gradient(graph.ReduceAllSum(l), ap, an)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := len(sap)
	out, err := e.Exec(tensors.FromFlatDataAndDimensions(sap, n), tensors.FromFlatDataAndDimensions(san, n), tensors.FromFlatDataAndDimensions(spn, n))
	if err != nil {
		t.Fatal(err)
	}
	return tensors.MustCopyFlatData[float64](out[0]), tensors.MustCopyFlatData[float64](out[1])
}

// TestCITFig4 checks the gradients of the CIT loss as implemented against the derivatives worked
// out by hand from Eq. 4, 7, 8 (not the paper's Eq. 17-18, which have sign errors):
//
//	∂l/∂S_ap = −γ e^{S_ap − S_an} [S_an > S_ap] − (1 − γ)
//	∂l/∂S_an =  γ e^{S_ap − S_an} [S_an > S_ap] + (1 − γ) e^{S_an} / (e^{S_an} + e^{S_pn})
//
// and the paper's reading of Fig. 4 (γ = 0.5 puts more weight than γ = 1 on easy triplets, S_an <
// S_ap, where γ = 1 gives no gradient at all), and draws the figure. DMLKIT_WRITE_FIGURES=1 writes
// it to figures/cit/fig4_gradients.* (the committed copy); otherwise to a temporary directory.
func TestCITFig4(t *testing.T) {
	delta, sap, san, spn := citFig4Grid(201)
	var series []plots.Series
	for _, gamma := range []float64{0.5, 1} {
		gap, gan := citGradients(t, sap, san, spn, gamma)
		for i := range delta {
			hard := 0.0
			if san[i] > sap[i] {
				hard = 1
			}
			e := math.Exp(sap[i] - san[i])
			wantAP := -gamma*e*hard - (1 - gamma)
			wantAN := gamma*e*hard + (1-gamma)*math.Exp(san[i])/(math.Exp(san[i])+math.Exp(spn[i]))
			if delta[i] != 0 && (math.Abs(gap[i]-wantAP) > 1e-12 || math.Abs(gan[i]-wantAN) > 1e-12) {
				t.Fatalf("γ %g, Δ %g: gradients (%g, %g), want (%g, %g)", gamma, delta[i], gap[i], gan[i], wantAP, wantAN)
			}
			if gamma == 1 && delta[i] < 0 && (gap[i] != 0 || gan[i] != 0) {
				t.Errorf("γ = 1, easy triplet Δ %g: gradient (%g, %g), want 0", delta[i], gap[i], gan[i])
			}
		}
		name := fmt.Sprintf("γ = %g", gamma)
		series = append(series,
			plots.Series{Name: "∂L/∂s(a,p), " + name, X: delta, Y: gap},
			plots.Series{Name: "∂L/∂s(a,n), " + name, X: delta, Y: gan})
	}
	st := plots.DefaultStyle()
	p, err := plots.Lines(st, plots.Labels{X: "s(a,n) − s(a,p), with s(p,n) = 0", Y: "gradient of the per-triplet loss"}, series)
	if err != nil {
		t.Fatal(err)
	}
	// The similarities are written s(a,n), not S_an (issue 32: no identifiers in figure text).
	if _, texts := plots.CheckLayout(p, st); len(texts) > 0 {
		for _, x := range texts {
			if raw := sweep.RawTexts(x); len(raw) > 0 {
				t.Errorf("figure text %q shows %s", x, raw)
			}
		}
	}
	dir := t.TempDir()
	if os.Getenv("DMLKIT_WRITE_FIGURES") == "1" {
		dir = filepath.Join("..", "..", "figures", "cit")
	}
	files, err := plots.Save(p, st, filepath.Join(dir, "fig4_gradients"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if s, err := os.Stat(f); err != nil || s.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
