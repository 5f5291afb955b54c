package pipeline

import (
	"fmt"

	"github.com/dmlkit/dmlkit/dmlkit/data"
)

// LoadImages decodes a benchmark split into an in-memory [data.Images] of size×size RGB images
// (short side resized to size with the antialiased filter, then the centre crop), for small-
// resolution experiments on CPU (e.g. CUB at 64 px). Labels, Coarse and class names are kept.
// progress may be nil. The first decode error is returned, naming its file.
func LoadImages(f *data.Files, size, workers int, progress func(done, total int)) (*data.Images, error) {
	if size < 1 {
		return nil, fmt.Errorf("pipeline: LoadImages %s: size %d", f.Name, size)
	}
	c, err := BuildCache(f.Paths, f.Labels, size, workers, progress)
	if err != nil {
		return nil, err
	}
	out := &data.Images{Name: f.Name, N: f.Len(), H: size, W: size, C: 3, Pix: make([]uint8, f.Len()*size*size*3),
		Labels: append([]int32(nil), f.Labels...)}
	if f.Coarse != nil {
		out.Coarse = append([]int32(nil), f.Coarse...)
	}
	if len(f.ClassNames) > 0 {
		maxL := int32(-1)
		for _, l := range f.Labels {
			maxL = max(maxL, l)
		}
		if maxL >= 0 && maxL < 1<<20 {
			out.ClassNames = make([]string, maxL+1)
			for l, n := range f.ClassNames {
				if l >= 0 && l <= maxL {
					out.ClassNames[l] = n
				}
			}
		}
	}
	row := size * 3
	for i, im := range c.Images {
		x0, y0 := (im.W-size)/2, (im.H-size)/2
		dst := out.Image(i)
		for y := 0; y < size; y++ {
			copy(dst[y*row:(y+1)*row], im.Pix[((y0+y)*im.W+x0)*3:])
		}
	}
	return out, out.Validate()
}
