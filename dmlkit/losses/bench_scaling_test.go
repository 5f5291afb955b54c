package losses_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dmlkit/dmlkit/dmlkit/losses"
	"github.com/dmlkit/dmlkit/dmlkit/reproduce"
)

// scalingPoint is one loss at one batch size in TestBenchLossScaling's output.
type scalingPoint struct {
	Loss      string  `json:"loss"`
	Batch     int     `json:"batch"`
	Seconds   float64 `json:"seconds"`     // median forward+backward, after a compiling warm-up
	PeakHeapB uint64  `json:"peak_heap_b"` // peak Go heap during one forward+backward, above the heap before it
	CPU       string  `json:"cpu"`
	NumCPU    int     `json:"num_cpu"`
	// Skipped says why the point was not measured: its projected peak heap (the growth exponent of
	// the loss's last two points carried on) is over the memory budget.
	Skipped string `json:"skipped,omitempty"`
}

// projectedPeak carries the growth of the last two measured points (b1, m1), (b2, m2) on to batch
// b: m2·(b/b2)^e with e = log(m2/m1)/log(b2/b1) (a loss with a [B, B, B] tensor has e ≈ 3). With
// fewer than two points it returns 0 (no projection).
func projectedPeak(pts []scalingPoint, b int) float64 {
	if len(pts) < 2 {
		return 0
	}
	p1, p2 := pts[len(pts)-2], pts[len(pts)-1]
	if p1.PeakHeapB == 0 || p2.PeakHeapB == 0 || p1.Batch == p2.Batch {
		return 0
	}
	e := math.Log(float64(p2.PeakHeapB)/float64(p1.PeakHeapB)) / math.Log(float64(p2.Batch)/float64(p1.Batch))
	return float64(p2.PeakHeapB) * math.Pow(float64(b)/float64(p2.Batch), e)
}

// TestBenchLossScaling is seed 004 Fig. 8's measurement: the contextual loss's and ROADMAP's
// forward+backward time and memory against the batch size (d = 512 embeddings, 4 per class), on the
// Go backend. Memory is the peak of the Go heap (the Go backend's buffers live there), sampled
// every millisecond during one call, above the heap in use before it. It asserts nothing (times
// are not tests); it prints a table with the CPU model and, with DMLKIT_BENCH_OUT=file.json,
// writes the points for a figure. Batches: DMLKIT_BENCH_BATCHES (default 128,256,512,1024,2048).
// A point whose peak heap, projected from the loss's last two points, exceeds DMLKIT_BENCH_MAX_MB
// (default 8000) is skipped and recorded as such (ROADMAP's [B, B, B] rank tensor: about 3 GB at
// B = 512, so about 24 GB at 1,024).
//
//	DMLKIT_BENCH=1 go test -run TestBenchLossScaling -v ./dmlkit/losses
func TestBenchLossScaling(t *testing.T) {
	if os.Getenv("DMLKIT_BENCH") != "1" {
		t.Skip("benchmark: set DMLKIT_BENCH=1")
	}
	batches := []int{128, 256, 512, 1024, 2048}
	if s := os.Getenv("DMLKIT_BENCH_BATCHES"); s != "" {
		batches = nil
		for _, f := range strings.Split(s, ",") {
			b, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || b < 8 {
				t.Fatalf("DMLKIT_BENCH_BATCHES: %q", f)
			}
			batches = append(batches, b)
		}
	}
	reps := benchEnvInt("DMLKIT_BENCH_REPS", 3)
	const d, spc = 512, 4
	roadmap, err := losses.New("roadmap", nil)
	if err != nil {
		t.Fatal(err)
	}
	cpu := reproduce.CPUModel()
	budget := float64(benchEnvInt("DMLKIT_BENCH_MAX_MB", 8000)) * 1e6
	var out []scalingPoint
	measured := map[string][]scalingPoint{}
	for _, b := range batches {
		emb, labels := benchBatch(b, d, spc)
		for _, c := range []struct {
			name string
			loss losses.Loss
		}{{"contextual", losses.DefaultContextual()}, {"roadmap", roadmap}} {
			if proj := projectedPeak(measured[c.name], b); proj > budget {
				p := scalingPoint{Loss: c.name, Batch: b, CPU: cpu, NumCPU: runtime.NumCPU(),
					Skipped: fmt.Sprintf("projected peak heap %.0f MB > DMLKIT_BENCH_MAX_MB %.0f", proj/1e6, budget/1e6)}
				out = append(out, p)
				t.Logf("%-10s B=%-5d skipped: %s", c.name, b, p.Skipped)
				continue
			}
			run := benchGoRunner(t, c.loss, emb, labels, b, d)
			run() // compile
			peak := peakHeapDuring(func() { run() })
			var times []time.Duration
			for r := 0; r < reps; r++ {
				el, _ := run()
				times = append(times, el)
			}
			p := scalingPoint{Loss: c.name, Batch: b, Seconds: benchMedian(times).Seconds(), PeakHeapB: peak, CPU: cpu, NumCPU: runtime.NumCPU()}
			out = append(out, p)
			measured[c.name] = append(measured[c.name], p)
			t.Logf("%-10s B=%-5d %8.3f s  peak heap %8.1f MB  (%s, %d cores)", c.name, b, p.Seconds, float64(p.PeakHeapB)/1e6, cpu, p.NumCPU)
		}
	}
	if path := os.Getenv("DMLKIT_BENCH_OUT"); path != "" {
		data, err := json.MarshalIndent(out, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// peakHeapDuring returns the peak of runtime.MemStats.HeapAlloc while f runs, above its value
// just before (after a GC), sampled every millisecond.
func peakHeapDuring(f func()) uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
					peak.Store(m.HeapAlloc - base)
				}
			}
		}
	}()
	f()
	close(done)
	return peak.Load()
}

// TestProjectedPeak: a cubic loss measured at 1 MB (B = 100) and 8 MB (B = 200) projects 64 MB at
// B = 400; a linear one 10, 20 → 40; one point projects nothing.
func TestProjectedPeak(t *testing.T) {
	cubic := []scalingPoint{{Batch: 100, PeakHeapB: 1e6}, {Batch: 200, PeakHeapB: 8e6}}
	if got := projectedPeak(cubic, 400); math.Abs(got-64e6) > 1 {
		t.Errorf("cubic: %v, want 64e6", got)
	}
	linear := []scalingPoint{{Batch: 100, PeakHeapB: 10}, {Batch: 200, PeakHeapB: 20}}
	if got := projectedPeak(linear, 400); math.Abs(got-40) > 1e-9 {
		t.Errorf("linear: %v, want 40", got)
	}
	if got := projectedPeak(cubic[:1], 400); got != 0 {
		t.Errorf("one point: %v, want 0", got)
	}
}
