package pipeline

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Config configures a [Loader].
type Config struct {
	Crop      int  // output side (e.g. 224); must not exceed any cached image's sides
	BatchSize int  // images per batch (the last batch may be smaller)
	Train     bool // random crop + random horizontal flip; otherwise the centre crop
	Mean, Std [3]float32
	Workers   int // goroutines preparing batches (0: GOMAXPROCS)
	Queue     int // most batches prepared ahead of the consumer (0: 2·Workers)
	Seed      uint64
}

// Batch is one prepared batch: X is [len(Index), Crop, Crop, 3] float32 (NHWC).
type Batch struct {
	X      []float32
	Labels []int32
	Index  []int // cache indices of the images
}

// Loader delivers the batches of one epoch in order. Batch b is prepared by one worker with
// its own random stream derived from (Seed, epoch, b), so the output does not depend on the
// number of workers or on scheduling.
type Loader struct {
	cfg      Config
	cache    *Cache
	batches  [][]int
	results  []chan *Batch
	sem      chan struct{}
	quit     chan struct{}
	wg       sync.WaitGroup
	next     int
	maxAhead int // test hook: the most batches seen in flight
	mu       sync.Mutex
	inFlight int
}

// NewLoader starts preparing the batches of epoch for the cache indices order (nil: all, in
// cache order; shuffle them yourself for training). Call Close when done early.
func NewLoader(c *Cache, cfg Config, order []int, epoch int) (*Loader, error) {
	if cfg.Crop < 1 || cfg.BatchSize < 1 {
		return nil, fmt.Errorf("pipeline: crop %d and batch size %d must be ≥ 1", cfg.Crop, cfg.BatchSize)
	}
	for c := 0; c < 3; c++ {
		if cfg.Std[c] == 0 {
			cfg.Std[c] = 1
		}
	}
	if order == nil {
		order = make([]int, len(c.Images))
		for i := range order {
			order[i] = i
		}
	}
	for _, i := range order {
		if i < 0 || i >= len(c.Images) {
			return nil, fmt.Errorf("pipeline: index %d outside the cache (%d images)", i, len(c.Images))
		}
		if im := c.Images[i]; im.W < cfg.Crop || im.H < cfg.Crop {
			return nil, fmt.Errorf("pipeline: image %d is %dx%d, smaller than the %d crop", i, im.W, im.H, cfg.Crop)
		}
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Queue <= 0 {
		cfg.Queue = 2 * cfg.Workers
	}
	l := &Loader{cfg: cfg, cache: c, sem: make(chan struct{}, cfg.Queue), quit: make(chan struct{})}
	for s := 0; s < len(order); s += cfg.BatchSize {
		l.batches = append(l.batches, order[s:min(s+cfg.BatchSize, len(order))])
	}
	l.results = make([]chan *Batch, len(l.batches))
	for i := range l.results {
		l.results[i] = make(chan *Batch, 1)
	}
	jobs := make(chan int)
	// Dispatcher: hands out batch numbers, at most Queue ahead of the consumer.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(jobs)
		for b := range l.batches {
			select {
			case l.sem <- struct{}{}:
			case <-l.quit:
				return
			}
			l.mu.Lock()
			l.inFlight++
			l.maxAhead = max(l.maxAhead, l.inFlight)
			l.mu.Unlock()
			select {
			case jobs <- b:
			case <-l.quit:
				return
			}
		}
	}()
	for w := 0; w < cfg.Workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for b := range jobs {
				l.results[b] <- l.prepare(b, epoch)
			}
		}()
	}
	return l, nil
}

// prepare builds batch b.
func (l *Loader) prepare(b, epoch int) *Batch {
	idx := l.batches[b]
	cfg := l.cfg
	r := rand.New(rand.NewPCG(cfg.Seed^uint64(epoch)*0x9e3779b97f4a7c15, uint64(b)))
	sz := cfg.Crop * cfg.Crop * 3
	out := &Batch{X: make([]float32, len(idx)*sz), Index: idx}
	if l.cache.Labels != nil {
		out.Labels = make([]int32, len(idx))
	}
	for k, i := range idx {
		im := l.cache.Images[i]
		x0, y0, flip := (im.W-cfg.Crop)/2, (im.H-cfg.Crop)/2, false
		if cfg.Train {
			x0, y0 = r.IntN(im.W-cfg.Crop+1), r.IntN(im.H-cfg.Crop+1)
			flip = r.IntN(2) == 1
		}
		CropNormalize(out.X[k*sz:(k+1)*sz], im, x0, y0, cfg.Crop, flip, cfg.Mean, cfg.Std)
		if out.Labels != nil {
			out.Labels[k] = l.cache.Labels[i]
		}
	}
	return out
}

// NumBatches is the number of batches in the epoch.
func (l *Loader) NumBatches() int { return len(l.batches) }

// Next returns the next batch, or nil after the last one.
func (l *Loader) Next() *Batch {
	if l.next >= len(l.batches) {
		return nil
	}
	b := <-l.results[l.next]
	l.next++
	l.mu.Lock()
	l.inFlight--
	l.mu.Unlock()
	<-l.sem
	return b
}

// Close stops the workers (needed only when the epoch is abandoned early).
func (l *Loader) Close() {
	select {
	case <-l.quit:
	default:
		close(l.quit)
	}
	// Result channels have room for their one batch, so workers never block on delivery; the
	// dispatcher stops at quit and closes the job channel.
	l.wg.Wait()
}
