package report

import (
	"bytes"
	"image/png"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// embRecords: arcface and arcface+tcm, seeds 1 and 0 (stored in that order), with 2-D unit
// embeddings of 4 classes × 50 points; seed 0 of each loss is more compact than seed 1.
func embRecords() []sweep.Record {
	mk := func(expr string, seed int64, spread float64) sweep.Record {
		var x, y, l []float64
		for c := 0; c < 4; c++ {
			for i := 0; i < 50; i++ {
				a := float64(c)*math.Pi/2 + spread*(float64(i)/49-0.5)
				x, y, l = append(x, math.Cos(a)), append(y, math.Sin(a)), append(l, float64(c))
			}
		}
		cfg := map[string]any{"loss": map[string]any{"set": map[string]any{"expr": expr}}, "seed": seed}
		h, _ := sweep.Hash(cfg)
		return sweep.Record{Hash: h, Scale: "small", Seed: seed, Config: cfg, Metrics: sweep.Metrics{"R@1": 0.9},
			Series: sweep.Series{"emb2d/x": x, "emb2d/y": y, "emb2d/label": l}}
	}
	return []sweep.Record{mk("arcface", 1, 1.0), mk("arcface", 0, 0.4), mk("arcface+tcm", 1, 0.8), mk("arcface+tcm", 0, 0.2)}
}

func TestEmbedding2DFigure(t *testing.T) {
	s := mustParse(t, `
paper: toy
figures:
  - {name: fig5, kind: embedding2d, series: [emb2d/x, emb2d/y, emb2d/label], group: [loss.set.expr], title: "MNIST 2-D"}
  - {name: nolabel, kind: embedding2d, series: [emb2d/x, emb2d/y, emb2d/class], group: [loss.set.expr]}
`)
	dir := t.TempDir()
	st := plots.DefaultStyle()
	res := RenderFigures(nil, s, embRecords(), "small", dir, st)
	if res[0].Err != nil || len(res[0].Files) != 3 {
		t.Fatalf("fig5: %+v", res[0])
	}
	b, _ := os.ReadFile(res[0].Files[0])
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	// Two panels side by side at page width (6.9in) at 300 dpi.
	if w := img.Bounds().Dx(); w != 2070 {
		t.Errorf("PNG width %d, want 2070", w)
	}
	for _, f := range res[0].Files[1:] {
		if b, _ := os.ReadFile(f); len(b) < 10000 {
			t.Errorf("%s: %d bytes", f, len(b))
		}
	}
	// Missing series: the error names the series, the group and the record.
	if err := res[1].Err; err == nil || !strings.Contains(err.Error(), `no series "emb2d/class"`) || !strings.Contains(err.Error(), "loss.set.expr=arcface") {
		t.Errorf("nolabel: %v", err)
	}

	// Each panel shows the group's lowest seed, and says so: seed 0 spreads ±0.2 rad (arcface),
	// so the circular std of 50 evenly spaced angles over [−0.2, 0.2] is below that of seed 1.
	fig, err := BuildFigure(s.Figures[0], embRecords(), st)
	if err != nil {
		t.Fatal(err)
	}
	ef := fig.(*plots.EmbeddingFigure)
	if !ef.OnCircle || len(ef.Titles) != 2 || ef.Titles[0] != "arcface (seed 0, first of 2 runs, R@1 0.90)" || ef.Titles[1] != "arcface+tcm (seed 0, first of 2 runs, R@1 0.90)" {
		t.Fatalf("titles %q, on circle %v", ef.Titles, ef.OnCircle)
	}
	// The angles of class 0 are 0.4(i/49 − ½): R̄ = mean cos, by direct summation here.
	var rbar float64
	for i := 0; i < 50; i++ {
		rbar += math.Cos(0.4 * (float64(i)/49 - 0.5))
	}
	rbar /= 50
	if got := ef.Classes[0][0]; math.Abs(got.R-rbar) > 1e-12 || math.Abs(got.CircStd-math.Sqrt(-2*math.Log(rbar))) > 1e-9 {
		t.Errorf("class 0 of arcface seed 0: %+v, want R̄ %v", got, rbar)
	}

	// check(): the kind needs exactly three series.
	if _, err := sweep.Parse([]byte("paper: x\nfigures: [{name: f, kind: embedding2d, series: [a, b]}]\n"), "bad.yaml"); err == nil ||
		!strings.Contains(err.Error(), `kind "embedding2d" needs 3 series, got 2`) {
		t.Errorf("two series: %v", err)
	}
}
