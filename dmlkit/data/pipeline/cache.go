package pipeline

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// Cache holds decoded images resized to a common short side, as uint8 RGB.
type Cache struct {
	Short  int
	Images []*RGB
	Labels []int32
}

// Bytes is the memory the cached pixels take.
func (c *Cache) Bytes() int64 {
	var n int64
	for _, im := range c.Images {
		n += int64(len(im.Pix))
	}
	return n
}

// BuildCache decodes paths with workers goroutines (0: GOMAXPROCS), resizes each image's short
// side to short and keeps the uint8 result. progress, if non-nil, is called after each image
// (from worker goroutines; it must be safe for concurrent use). The first error stops the work
// and is returned, naming its file.
func BuildCache(paths []string, labels []int32, short, workers int, progress func(done, total int)) (*Cache, error) {
	if labels != nil && len(labels) != len(paths) {
		return nil, fmt.Errorf("pipeline: %d labels for %d paths", len(labels), len(paths))
	}
	if short < 1 {
		return nil, fmt.Errorf("pipeline: short side %d", short)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	c := &Cache{Short: short, Images: make([]*RGB, len(paths)), Labels: labels}
	var next, done atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= len(paths) {
					return
				}
				im, err := DecodeFile(paths[i])
				if err != nil {
					once.Do(func() { firstErr = err })
					failed.Store(true)
					return
				}
				c.Images[i] = ResizeShort(im, short)
				d := int(done.Add(1))
				if progress != nil {
					progress(d, len(paths))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return c, nil
}
