package models

import (
	"os"
	"path/filepath"
	"sync"
	"time"
)

// fileCache keeps one value per file (and variant, e.g. the ONNX output chosen) for the life of
// the process, loaded again when the file's size or modification time changes: [Build] runs for
// every graph, and each should not parse the weights file again.
type fileCache[T any] struct {
	mu sync.Mutex
	m  map[string]fileCached[T]
}

type fileCached[T any] struct {
	size  int64
	mtime time.Time
	value T
}

// get returns the value of path and variant, from the cache or from load; an error finding the
// file goes through statErr, load's errors are returned as they are.
func (c *fileCache[T]) get(path, variant string, statErr func(error) error, load func() (T, error)) (T, error) {
	var zero T
	abs, err := filepath.Abs(path)
	if err != nil {
		return zero, statErr(err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return zero, statErr(err)
	}
	key := abs + "\x00" + variant
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[key]; ok && e.size == fi.Size() && e.mtime.Equal(fi.ModTime()) {
		return e.value, nil
	}
	v, err := load()
	if err != nil {
		return zero, err
	}
	if c.m == nil {
		c.m = map[string]fileCached[T]{}
	}
	c.m[key] = fileCached[T]{fi.Size(), fi.ModTime(), v}
	return v, nil
}
