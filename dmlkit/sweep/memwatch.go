package sweep

import (
	"bytes"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// Peak memory of a run, as [Execute] stores it in every record's metrics:
//
//	mem/peak_rss_mb      the largest resident set of the process (MiB) seen while the run was going,
//	                     sampled every [memSampleEvery] and at the run's start and end
//	mem/concurrent_runs  the most runs in flight in this process at one time during the run (itself
//	                     included)
//
// Runs share one process, so with mem/concurrent_runs = 1 the peak is this run's own (plus the
// process's baseline: data sets loaded, compiled graphs kept); above 1 it is an upper bound that
// includes the other runs. Host memory only: on an accelerator the device's memory is not in it.
// Sampling misses spikes shorter than the interval; the Go runtime keeps freed memory mapped for a
// while, which makes the resident set a high-water mark rather than an instantaneous value.
const (
	MetricPeakRSS    = "mem/peak_rss_mb"
	metricConcurrent = "mem/concurrent_runs"
)

// memSampleEvery is the sampling interval of the resident set while runs are going.
const memSampleEvery = 100 * time.Millisecond

// memWatch samples the process's resident set while spans (runs) are open.
type memWatch struct {
	read  func() int64 // resident bytes; 0 when unknown
	every time.Duration

	mu     sync.Mutex
	spans  map[*memSpan]struct{}
	ticker *time.Ticker
	done   chan struct{}
}

// memSpan is one run's view of the watch.
type memSpan struct {
	peak int64
	conc int
}

func newMemWatch(read func() int64, every time.Duration) *memWatch {
	return &memWatch{read: read, every: every, spans: map[*memSpan]struct{}{}}
}

// begin opens a span; the sampler runs while any span is open.
func (w *memWatch) begin() *memSpan {
	rss := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	s := &memSpan{}
	w.spans[s] = struct{}{}
	n := len(w.spans)
	for o := range w.spans {
		o.conc = max(o.conc, n)
		o.peak = max(o.peak, rss)
	}
	if w.ticker == nil {
		w.ticker = time.NewTicker(w.every)
		w.done = make(chan struct{})
		go w.loop(w.ticker, w.done)
	}
	return s
}

func (w *memWatch) loop(t *time.Ticker, done chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-t.C:
			w.sample()
		}
	}
}

func (w *memWatch) sample() {
	rss := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	for s := range w.spans {
		s.peak = max(s.peak, rss)
	}
}

// end closes s and returns its peak resident set in MiB (0 when the platform does not say) and the
// most spans open at once while it was.
func (w *memWatch) end(s *memSpan) (peakMB float64, concurrent int) {
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.spans, s)
	if len(w.spans) == 0 && w.ticker != nil {
		w.ticker.Stop()
		close(w.done)
		w.ticker, w.done = nil, nil
	}
	return float64(s.peak) / (1 << 20), s.conc
}

// residentBytes is the process's resident set: /proc/self/statm where there is one (Linux), else
// the Go runtime's mapped memory less what it has returned to the OS (memory the Go backend
// allocates is Go memory; cgo allocations, e.g. XLA's host buffers, are then missed).
func residentBytes() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		f := bytes.Fields(b)
		if len(f) >= 2 {
			if pages, err := strconv.ParseInt(string(f[1]), 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}
