// Package raster holds the 8-bit RGB image type that dmlkit decodes into, and the one
// implementation of its resampling and crop geometry: Pillow's antialiased bilinear resize
// ([Resize]) and torchvision's RandomResizedCrop box ([RandomResizedCropBox]). It is a leaf
// package (standard library only) so that both dmlkit/data — whose in-memory loaders resize
// images when they load them — and dmlkit/data/pipeline, which imports data, share it.
//
// Resizing is Pillow's antialiased bilinear ("triangle") resampling, which torchvision's
// Resize uses for PIL images: a separable convolution whose triangle kernel is widened by the
// downscaling factor, so downsampling averages every input pixel instead of skipping them, and
// upsampling is plain bilinear interpolation with pixel centres at half-integers.
package raster

import (
	"bufio"
	"bytes"
	"fmt"
	"image"
	"image/draw"
	_ "image/jpeg" // JPEG decoder
	_ "image/png"  // PNG decoder
	"io"
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
	im, err := Decode(bufio.NewReaderSize(f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return im, nil
}

// DecodeBytes decodes an encoded JPEG or PNG held in memory (see [DecodeFile]).
func DecodeBytes(b []byte) (*RGB, error) { return Decode(bytes.NewReader(b)) }

// Decode decodes a JPEG or PNG stream to RGB.
func Decode(r io.Reader) (*RGB, error) {
	im, _, err := image.Decode(r)
	if err != nil {
		return nil, err
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

// Resize resamples the whole of img to w×h with antialiased bilinear filtering (the aspect
// ratio changes when w/h differs from img's). A same-size call returns a copy.
func Resize(img *RGB, w, h int) *RGB {
	out := NewRGB(w, h)
	ResizeInto(out.Pix, img, w, h)
	return out
}

// ResizeInto writes the w×h resize of img (see [Resize]) into dst, which must hold w·h·3 bytes.
func ResizeInto(dst []uint8, img *RGB, w, h int) {
	var r Resizer
	r.ResizeInto(dst, img, w, h)
}

// Resizer is [ResizeInto] with its filter taps and scratch buffers kept between calls, for
// resizing many images of one size without allocating (a loader worker holds one). The zero
// value is ready; a Resizer must not be used by two goroutines at once.
type Resizer struct {
	inW, inH, w, h int
	tx, ty         []taps
	tmp, rowf, acc []float32
}

// ResizeInto writes the w×h resize of img into dst (w·h·3 bytes), as the package function.
func (r *Resizer) ResizeInto(dst []uint8, img *RGB, w, h int) {
	if w == img.W && h == img.H {
		copy(dst, img.Pix)
		return
	}
	if r.inW != img.W || r.w != w {
		r.tx, r.inW, r.w = triangleTaps(img.W, w), img.W, w
	}
	if r.inH != img.H || r.h != h {
		r.ty, r.inH, r.h = triangleTaps(img.H, h), img.H, h
	}
	tx, ty := r.tx, r.ty
	// Horizontal pass into float32 [img.H, w, 3]; each source row is converted to float32 once.
	r.tmp = grow(r.tmp, img.H*w*3)
	r.rowf = grow(r.rowf, img.W*3)
	tmp, rowf := r.tmp, r.rowf
	for y := 0; y < img.H; y++ {
		for i, v := range img.Pix[y*img.W*3 : (y+1)*img.W*3] {
			rowf[i] = float32(v)
		}
		d := tmp[y*w*3 : (y+1)*w*3]
		for x, t := range tx {
			var r, g, b float32
			src := rowf[t.lo*3 : (t.lo+len(t.w))*3]
			for k, wt := range t.w {
				p := src[3*k : 3*k+3 : 3*k+3]
				r += wt * p[0]
				g += wt * p[1]
				b += wt * p[2]
			}
			o := d[3*x : 3*x+3 : 3*x+3]
			o[0], o[1], o[2] = r, g, b
		}
	}
	row := w * 3
	r.acc = grow(r.acc, row)
	acc := r.acc
	for y, t := range ty {
		clear(acc)
		for k, wt := range t.w {
			src := tmp[(t.lo+k)*row : (t.lo+k+1)*row]
			src = src[:len(acc)]
			for i, v := range src {
				acc[i] += wt * v
			}
		}
		o := dst[y*row : (y+1)*row]
		o = o[:len(acc)]
		for i, v := range acc {
			o[i] = clampByte(v)
		}
	}
}

// grow returns b resliced to n elements, reallocated when too small.
func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
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

// Crop returns a copy of the w×h box of img at (x0, y0); the box must lie inside img.
func Crop(img *RGB, x0, y0, w, h int) *RGB {
	out := NewRGB(w, h)
	for y := 0; y < h; y++ {
		copy(out.Pix[y*w*3:(y+1)*w*3], img.Pix[((y0+y)*img.W+x0)*3:])
	}
	return out
}

// FlipH mirrors img left-right in place.
func FlipH(img *RGB) {
	for y := 0; y < img.H; y++ {
		row := img.Pix[y*img.W*3 : (y+1)*img.W*3]
		for a, b := 0, img.W-1; a < b; a, b = a+1, b-1 {
			pa, pb := row[3*a:3*a+3:3*a+3], row[3*b:3*b+3:3*b+3]
			pa[0], pb[0] = pb[0], pa[0]
			pa[1], pb[1] = pb[1], pa[1]
			pa[2], pb[2] = pb[2], pa[2]
		}
	}
}
