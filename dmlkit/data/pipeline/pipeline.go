// Package pipeline is dmlkit's image input pipeline for the full-scale benchmarks: decode
// JPEG/PNG, resize the short side, random crop, horizontal flip and normalise, in parallel
// workers with a bounded queue. Decoding and resizing happen once ([BuildCache]); the cache
// holds uint8 RGB images so each epoch only crops, flips and normalises ([Loader]).
//
// Resizing is Pillow's antialiased bilinear ("triangle") resampling, which torchvision's
// Resize uses for PIL images: a separable convolution whose triangle kernel is widened by the
// downscaling factor, so downsampling averages every input pixel instead of skipping them. The
// decoder and the resampling live in the leaf package raster, shared with dmlkit/data's
// in-memory loaders.
package pipeline

import (
	"fmt"
	"image"

	"github.com/dmlkit/dmlkit/dmlkit/data/raster"
)

// RGB is an 8-bit RGB image stored row-major as [H, W, 3] (the type of package raster, which
// holds the decoder and the resampling so that dmlkit/data can share them).
type RGB = raster.RGB

// NewRGB allocates a black w×h image.
func NewRGB(w, h int) *RGB { return raster.NewRGB(w, h) }

// DecodeFile decodes a JPEG or PNG file to RGB (grey and paletted images are expanded; alpha
// is dropped). Errors name the file.
func DecodeFile(path string) (*RGB, error) {
	im, err := raster.DecodeFile(path)
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	return im, nil
}

// FromImage converts any image.Image to RGB.
func FromImage(im image.Image) *RGB { return raster.FromImage(im) }

// Resize resamples img to w×h with antialiased bilinear filtering ([raster.Resize]).
func Resize(img *RGB, w, h int) *RGB { return raster.Resize(img, w, h) }

// ResizeShort resizes img so that its shorter side is short, keeping the aspect ratio; the
// longer side is int(short·long/short_in), truncated as torchvision's Resize(int) does.
func ResizeShort(img *RGB, short int) *RGB { return raster.ResizeShort(img, short) }

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
