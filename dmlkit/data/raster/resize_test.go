package raster

import (
	"bytes"
	"testing"
)

// TestResizerReuse: one Resizer used for a sequence of different input and output sizes (its taps
// and buffers are reused or rebuilt) gives the same bytes as a fresh resize each time; the
// resampling itself is checked against a brute-force 2-D filter in package pipeline's tests.
func TestResizerReuse(t *testing.T) {
	var r Resizer
	for _, c := range []struct{ inW, inH, w, h int }{{32, 32, 96, 96}, {32, 32, 96, 96}, {20, 30, 96, 96}, {32, 32, 16, 16}, {30, 20, 16, 40}, {32, 32, 96, 96}} {
		img := gradient(c.inW, c.inH)
		got := make([]uint8, c.w*c.h*3)
		r.ResizeInto(got, img, c.w, c.h)
		if want := Resize(img, c.w, c.h).Pix; !bytes.Equal(got, want) {
			t.Fatalf("%dx%d → %dx%d: a reused Resizer differs from a fresh one", c.inW, c.inH, c.w, c.h)
		}
	}
}
