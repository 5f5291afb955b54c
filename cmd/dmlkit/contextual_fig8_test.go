package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot"

	"github.com/dmlkit/dmlkit/dmlkit/judge"
	"github.com/dmlkit/dmlkit/dmlkit/plots"
	"github.com/dmlkit/dmlkit/dmlkit/report"
	"github.com/dmlkit/dmlkit/dmlkit/sweep"
)

// fig8Point is one point of reproductions/contextual/bench/fig8_scaling.json, as
// TestBenchLossScaling (dmlkit/losses) writes it with DMLKIT_BENCH_OUT.
type fig8Point struct {
	Loss      string  `json:"loss"`
	Batch     int     `json:"batch"`
	Seconds   float64 `json:"seconds"`
	PeakHeapB uint64  `json:"peak_heap_b"`
	CPU       string  `json:"cpu"`
	NumCPU    int     `json:"num_cpu"`
	Skipped   string  `json:"skipped"`
}

// TestContextualFig8 draws seed 004 Fig. 8 (time and memory of one forward + backward against the
// batch size, the contextual loss against ROADMAP) from the committed benchmark output. It checks
// the file: both losses measured at the smallest batch, the contextual loss up to a batch of at
// least 2,000, every point either measured (positive time and memory) or
// skipped with its reason, and one CPU model throughout; each method in its colour and marker of the
// paper's other figures. With DMLKIT_WRITE_FIGURES=1 it writes
// figures/contextual/fig8_time.* and fig8_memory.* (the committed copies); otherwise to a
// temporary directory.
func TestContextualFig8(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "reproductions", "contextual", "bench", "fig8_scaling.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pts []fig8Point
	if err := json.Unmarshal(b, &pts); err != nil {
		t.Fatalf("fig8_scaling.json: %v", err)
	}
	// Each method in the colour and marker it has in the paper's other figures (report.PaperSlots
	// of the spec and its records, as `dmlkit figures contextual` draws them), under its label.
	spec, err := sweep.Load(filepath.Join("..", "..", "reproductions", "contextual", "spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := sweep.NewStore(filepath.Join(spec.Dir, "results")).Load()
	if err != nil {
		t.Fatal(err)
	}
	recs, _ = judge.DropSuperseded(spec, recs)
	slots := report.PaperSlots(spec, recs, "small")
	// The benchmark measures losses.DefaultContextual(): the full loss, λ = 0.4.
	names := map[string]string{"contextual": spec.Labels.Text["loss.name=contextual, loss.set.lambda=0.4"], "roadmap": spec.Labels.Value("loss.name", "roadmap")}
	for _, n := range names {
		if _, ok := slots[n]; !ok {
			t.Fatalf("%q has no slot among the paper's figures (%v): fig8 would draw it in another method's colour", n, slots)
		}
	}
	if slots[names["contextual"]] == slots[names["roadmap"]] {
		t.Fatalf("Contextual and ROADMAP share slot %d", slots[names["roadmap"]])
	}
	byLoss := map[string]*[2]plots.Series{}
	maxBatch := map[string]int{}
	cpu := ""
	for _, p := range pts {
		if names[p.Loss] == "" {
			t.Fatalf("unexpected loss %q", p.Loss)
		}
		if cpu == "" {
			cpu = p.CPU
		} else if p.CPU != cpu {
			t.Errorf("two CPU models in one benchmark: %q, %q", cpu, p.CPU)
		}
		if p.Skipped != "" {
			continue
		}
		if p.Seconds <= 0 || p.PeakHeapB == 0 {
			t.Errorf("%s B=%d: time %v, peak %d: not a measurement", p.Loss, p.Batch, p.Seconds, p.PeakHeapB)
		}
		s := byLoss[p.Loss]
		if s == nil {
			s = &[2]plots.Series{{Name: names[p.Loss], Markers: true}, {Name: names[p.Loss], Markers: true}}
			byLoss[p.Loss] = s
		}
		s[0].X, s[0].Y = append(s[0].X, float64(p.Batch)), append(s[0].Y, p.Seconds)
		s[1].X, s[1].Y = append(s[1].X, float64(p.Batch)), append(s[1].Y, float64(p.PeakHeapB)/1e6)
		maxBatch[p.Loss] = max(maxBatch[p.Loss], p.Batch)
	}
	if maxBatch["contextual"] < 2000 || maxBatch["roadmap"] == 0 {
		t.Fatalf("largest batches measured: %v (want contextual ≥ 2,000 and ROADMAP measured)", maxBatch)
	}
	dir := t.TempDir()
	if os.Getenv("DMLKIT_WRITE_FIGURES") == "1" {
		dir = filepath.Join("..", "..", "figures", "contextual")
	}
	st := plots.DefaultStyle()
	st.Slots = slots
	for i, f := range []struct{ name, y string }{{"fig8_time", "forward + backward (s)"}, {"fig8_memory", "peak heap (MB)"}} {
		series := []plots.Series{byLoss["contextual"][i], byLoss["roadmap"][i]}
		ch, err := plots.Lines(st, plots.Labels{X: "batch size", Y: f.y}, series)
		if err != nil {
			t.Fatal(err)
		}
		ch.LogX(series[0].X...)
		ch.Plot.Y.Scale = plot.LogScale{} // both span orders of magnitude
		ch.Plot.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		if probs, _ := plots.CheckLayout(ch, st); len(probs) > 0 {
			t.Errorf("%s layout: %q", f.name, probs)
		}
		if _, err := plots.Save(ch, st, filepath.Join(dir, f.name)); err != nil {
			t.Fatal(err)
		}
	}
}
