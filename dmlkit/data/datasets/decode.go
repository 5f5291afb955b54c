package datasets

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/dmlkit/dmlkit/dmlkit/data"
	"github.com/dmlkit/dmlkit/dmlkit/data/raster"
)

// decodeImages decodes n encoded JPEG/PNG images into an [Images] of size×size×3 (RGB): read(i)
// returns the bytes of image i and where(i) names it in errors (see [loadImages]).
func decodeImages(ds, name string, n, size, workers int, where func(int) string, read func(int) ([]byte, error),
	labels []int32, classNames []string, progress func(done, total int)) (*data.Images, error) {
	get := func(i int) (*raster.RGB, error) {
		b, err := read(i)
		if err != nil {
			return nil, err
		}
		im, err := raster.DecodeBytes(b)
		if err != nil {
			return nil, ferr(ds, where(i), 0, data.ErrFormat, "decode: %v", err)
		}
		return im, nil
	}
	return loadImages(ds, name, n, size, workers, where, get, labels, classNames, progress)
}

// loadImages fills an [Images] of size×size×3 (RGB) with the n images get returns; where(i)
// names image i in errors. Each whole image is resized to
// size×size by [raster.ResizeInto] (the pipeline's antialiased bilinear filter; a same-size
// image is copied). At most workers images are decoded at once (≤ 0: GOMAXPROCS); the output
// does not depend on the number of workers. The first failure stops the work and is returned
// as a *FileError naming the image.
func loadImages(ds, name string, n, size, workers int, where func(int) string, get func(int) (*raster.RGB, error),
	labels []int32, classNames []string, progress func(done, total int)) (*data.Images, error) {
	if size < 1 {
		return nil, fmt.Errorf("data: %s: size %d: want ≥ 1", ds, size)
	}
	if len(labels) != n {
		return nil, fmt.Errorf("data: %s: %d labels for %d images", ds, len(labels), n)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := &data.Images{Name: name, N: n, H: size, W: size, C: 3, Pix: make([]uint8, n*size*size*3),
		Labels: append([]int32(nil), labels...), ClassNames: classNames}
	var next, done atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var firstErr error
	fail := func(err error) {
		once.Do(func() { firstErr = err })
		failed.Store(true)
	}
	var wg sync.WaitGroup
	for w := 0; w < min(workers, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var rs raster.Resizer
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				im, err := get(i)
				if err != nil {
					if _, ok := err.(*data.FileError); !ok {
						err = ferr(ds, where(i), 0, nil, "%v", err)
					}
					fail(err)
					return
				}
				rs.ResizeInto(out.Image(i), im, size, size)
				if d := int(done.Add(1)); progress != nil {
					progress(d, n)
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
