// Package pipeline is dmlkit's image input pipeline for the full-scale benchmarks: decode
// JPEG/PNG, resize the short side, random crop, horizontal flip and normalise, in parallel
// workers with a bounded queue. Decoding and resizing happen once ([BuildCache]); the cache
// holds uint8 RGB images so each epoch only crops, flips and normalises ([Loader]).
//
// Resizing is Pillow's antialiased bilinear ("triangle") resampling, which torchvision's
// Resize uses for PIL images: a separable convolution whose triangle kernel is widened by the
// downscaling factor, so downsampling averages every input pixel instead of skipping them.
package pipeline

import (
	"bufio"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg" // JPEG decoder
	_ "image/png"  // PNG decoder
	"math"
	"os"
)

// RGB is an 8-bit RGB image stored row-major as [H, W, 3].
type RGB struct {
	W, H int
	Pix  []uint8
}

// NewRGB allocates a black w×h image.
func NewRGB(w, h int) *RGB { return &RGB{W: w, H: h, Pix: make([]uint8, w*h*3)} }

// DecodeFile decodes a JPEG or PNG file to RGB (grey and paletted images are expanded; alpha
// is dropped). Errors name the file.
func DecodeFile(path string) (*RGB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	im, _, err := image.Decode(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("pipeline: decode %s: %w", path, err)
	}
	return FromImage(im), nil
}

// FromImage converts any image.Image to RGB.
func FromImage(im image.Image) *RGB {
	b := im.Bounds()
	out := NewRGB(b.Dx(), b.Dy())
	switch src := im.(type) {
	case *image.Gray:
		for y := 0; y < out.H; y++ {
			row := src.Pix[y*src.Stride : y*src.Stride+out.W]
			o := out.Pix[y*out.W*3:]
			for x, v := range row {
				o[3*x], o[3*x+1], o[3*x+2] = v, v, v
			}
		}
		return out
	}
	rgba, ok := im.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(image.Rect(0, 0, out.W, out.H))
		draw.Draw(rgba, rgba.Bounds(), im, b.Min, draw.Src) // fast path for YCbCr
	}
	for y := 0; y < out.H; y++ {
		row := rgba.Pix[y*rgba.Stride : y*rgba.Stride+4*out.W]
		o := out.Pix[y*out.W*3 : (y+1)*out.W*3]
		for x := 0; x < out.W; x++ {
			o[3*x], o[3*x+1], o[3*x+2] = row[4*x], row[4*x+1], row[4*x+2]
		}
	}
	return out
}

// taps are the precomputed resampling weights of one output coordinate.
type taps struct {
	lo int
	w  []float32
}

// triangleTaps computes Pillow's antialiased bilinear weights for resizing in → out samples.
func triangleTaps(in, out int) []taps {
	scale := float64(in) / float64(out)
	fs := math.Max(scale, 1)
	support := fs // the triangle's support is 1, widened by the downscaling factor
	t := make([]taps, out)
	for o := range t {
		center := (float64(o) + 0.5) * scale
		lo := max(0, int(center-support+0.5))
		hi := min(in, int(center+support+0.5))
		var ws []float64
		var sum float64
		for i := lo; i < hi; i++ {
			w := 1 - math.Abs((float64(i)-center+0.5)/fs)
			if w < 0 {
				w = 0
			}
			ws = append(ws, w)
			sum += w
		}
		t[o].lo = lo
		t[o].w = make([]float32, len(ws))
		for k, w := range ws {
			t[o].w[k] = float32(w / sum)
		}
	}
	return t
}

// Resize resamples img to w×h with antialiased bilinear filtering.
func Resize(img *RGB, w, h int) *RGB {
	if w == img.W && h == img.H {
		return &RGB{W: w, H: h, Pix: append([]uint8(nil), img.Pix...)}
	}
	tx, ty := triangleTaps(img.W, w), triangleTaps(img.H, h)
	// Horizontal pass into float32 [img.H, w, 3]; each source row is converted to float32 once.
	tmp := make([]float32, img.H*w*3)
	rowf := make([]float32, img.W*3)
	for y := 0; y < img.H; y++ {
		for i, v := range img.Pix[y*img.W*3 : (y+1)*img.W*3] {
			rowf[i] = float32(v)
		}
		dst := tmp[y*w*3 : (y+1)*w*3]
		for x, t := range tx {
			var r, g, b float32
			src := rowf[t.lo*3 : (t.lo+len(t.w))*3]
			for k, wt := range t.w {
				p := src[3*k : 3*k+3 : 3*k+3]
				r += wt * p[0]
				g += wt * p[1]
				b += wt * p[2]
			}
			d := dst[3*x : 3*x+3 : 3*x+3]
			d[0], d[1], d[2] = r, g, b
		}
	}
	out := NewRGB(w, h)
	row := w * 3
	acc := make([]float32, row)
	for y, t := range ty {
		clear(acc)
		for k, wt := range t.w {
			src := tmp[(t.lo+k)*row : (t.lo+k+1)*row]
			src = src[:len(acc)]
			for i, v := range src {
				acc[i] += wt * v
			}
		}
		dst := out.Pix[y*row : (y+1)*row]
		dst = dst[:len(acc)]
		for i, v := range acc {
			dst[i] = clampByte(v)
		}
	}
	return out
}

func clampByte(v float32) uint8 {
	v += 0.5
	if v <= 0 {
		return 0
	}
	if v >= 255 {
		return 255
	}
	return uint8(v)
}

// ResizeShort resizes img so that its shorter side is short, keeping the aspect ratio; the
// longer side is int(short·long/short_in), truncated as torchvision's Resize(int) does.
func ResizeShort(img *RGB, short int) *RGB {
	w, h := img.W, img.H
	if w <= h {
		return Resize(img, short, max(1, int(float64(short)*float64(h)/float64(w))))
	}
	return Resize(img, max(1, int(float64(short)*float64(w)/float64(h))), short)
}

// CropNormalize writes the size×size crop of img at (x0, y0), mirrored horizontally when flip,
// into dst ([size, size, 3] float32) as (pixel/255 − mean[c]) / std[c].
func CropNormalize(dst []float32, img *RGB, x0, y0, size int, flip bool, mean, std [3]float32) {
	var scale, shift [3]float32
	for c := 0; c < 3; c++ {
		scale[c] = 1 / (255 * std[c])
		shift[c] = -mean[c] / std[c]
	}
	for y := 0; y < size; y++ {
		src := img.Pix[((y0+y)*img.W+x0)*3:]
		d := dst[y*size*3 : (y+1)*size*3]
		for x := 0; x < size; x++ {
			sx := x
			if flip {
				sx = size - 1 - x
			}
			p := src[sx*3 : sx*3+3]
			d[3*x] = float32(p[0])*scale[0] + shift[0]
			d[3*x+1] = float32(p[1])*scale[1] + shift[1]
			d[3*x+2] = float32(p[2])*scale[2] + shift[2]
		}
	}
}

// ImageNetMean and ImageNetStd are the usual normalisation constants (RGB, for pixel/255).
var (
	ImageNetMean = [3]float32{0.485, 0.456, 0.406}
	ImageNetStd  = [3]float32{0.229, 0.224, 0.225}
)
