// Package classify runs an imported TFLite image classifier ([models.TFLiteModel]) on image
// files: decode (BMP, JPEG, PNG) → resize the whole image to the model's input size (no crop,
// aspect ratio not kept) → the model → probabilities and the top-K labels. It is what
// `dmlkit classify` calls, a check a user can run that imported ImageNet weights work.
//
// The two resizes are those of ../shared/tools/tflite_ref.py, the NumPy oracle the tests compare
// with: "bilinear" (half-pixel centres, no antialiasing, rounded half up; TFLite's
// RESIZE_BILINEAR with half_pixel_centers and OpenCV's INTER_LINEAR) and "nearest" (output pixel
// i takes source pixel ⌊(i + 0.5)·in/out⌋).
package classify

import (
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // registers JPEG with image.Decode
	_ "image/png"  // registers PNG with image.Decode
	"math"
	"os"

	"github.com/dmlkit/dmlkit/dmlkit/checksum"
	_ "golang.org/x/image/bmp" // registers BMP with image.Decode
)

// RGB is an 8-bit RGB image, row-major [H, W, 3].
type RGB struct {
	H, W int
	Pix  []uint8
}

// ReadImage decodes a BMP (24- or 32-bit uncompressed), JPEG or PNG file to 8-bit RGB. Alpha
// is dropped (the colour channels are taken unpremultiplied); grey images are repeated to RGB.
// An image listed in the SHA256SUMS beside it must have the listed digest ([checksum.File]).
func ReadImage(path string) (*RGB, error) {
	if _, err := checksum.File(path); err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("classify: %w", err)
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("classify: %s: %w (BMP, JPEG and PNG are read)", path, err)
	}
	return ToRGB(img), nil
}

// ToRGB converts any image to 8-bit RGB: non-premultiplied colour channels, alpha dropped.
func ToRGB(img image.Image) *RGB {
	b := img.Bounds()
	out := &RGB{H: b.Dy(), W: b.Dx(), Pix: make([]uint8, 3*b.Dx()*b.Dy())}
	i := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			var r, g, bl uint8
			switch im := img.(type) {
			case *image.NRGBA:
				c := im.NRGBAAt(x, y)
				r, g, bl = c.R, c.G, c.B
			case *image.RGBA:
				// x/image/bmp gives RGBA for opaque BMPs; alpha 255, so premultiplied = plain.
				c := im.RGBAAt(x, y)
				r, g, bl = c.R, c.G, c.B
				if c.A != 255 {
					n := color.NRGBAModel.Convert(c).(color.NRGBA)
					r, g, bl = n.R, n.G, n.B
				}
			default:
				n := color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
				r, g, bl = n.R, n.G, n.B
			}
			out.Pix[i], out.Pix[i+1], out.Pix[i+2] = r, g, bl
			i += 3
		}
	}
	return out
}

// Resize returns img resized to h×w by method "bilinear" or "nearest" (see the package doc).
func Resize(img *RGB, h, w int, method string) (*RGB, error) {
	switch method {
	case "bilinear":
		return ResizeBilinear(img, h, w), nil
	case "nearest":
		return ResizeNearest(img, h, w), nil
	}
	return nil, fmt.Errorf("classify: resize %q: want bilinear or nearest", method)
}

// ResizeNearest resizes img to h×w: output pixel (i, j) is source pixel
// (⌊(i + 0.5)·H/h⌋, ⌊(j + 0.5)·W/w⌋), computed in float64 as tflite_ref.py does.
func ResizeNearest(img *RGB, h, w int) *RGB {
	out := &RGB{H: h, W: w, Pix: make([]uint8, 3*h*w)}
	for i := 0; i < h; i++ {
		sy := min(int((float64(i)+0.5)*float64(img.H)/float64(h)), img.H-1)
		for j := 0; j < w; j++ {
			sx := min(int((float64(j)+0.5)*float64(img.W)/float64(w)), img.W-1)
			copy(out.Pix[3*(i*w+j):3*(i*w+j)+3], img.Pix[3*(sy*img.W+sx):])
		}
	}
	return out
}

// bilinearAxis returns, for each output index, the two source indices and the weight of the
// second: source coordinate s = (i + 0.5)·in/out − 0.5 clamped to [0, in−1], lo = ⌊s⌋,
// hi = min(lo+1, in−1), frac = s − lo.
func bilinearAxis(in, out int) (lo, hi []int, frac []float64) {
	lo, hi, frac = make([]int, out), make([]int, out), make([]float64, out)
	for i := range lo {
		s := (float64(i)+0.5)*(float64(in)/float64(out)) - 0.5
		s = math.Min(math.Max(s, 0), float64(in-1))
		lo[i] = int(math.Floor(s))
		hi[i] = min(lo[i]+1, in-1)
		frac[i] = s - float64(lo[i])
	}
	return lo, hi, frac
}

// ResizeBilinear resizes img to h×w with half-pixel centres and no antialiasing: each output
// pixel interpolates its 2×2 source neighbours ([bilinearAxis]), first along x (top and bottom
// rows) then along y, in float64, and is rounded half up (⌊v + 0.5⌋) to uint8.
func ResizeBilinear(img *RGB, h, w int) *RGB {
	y0, y1, fy := bilinearAxis(img.H, h)
	x0, x1, fx := bilinearAxis(img.W, w)
	out := &RGB{H: h, W: w, Pix: make([]uint8, 3*h*w)}
	px := func(y, x, c int) float64 { return float64(img.Pix[3*(y*img.W+x)+c]) }
	for i := 0; i < h; i++ {
		for j := 0; j < w; j++ {
			for c := 0; c < 3; c++ {
				top := px(y0[i], x0[j], c)*(1-fx[j]) + px(y0[i], x1[j], c)*fx[j]
				bottom := px(y1[i], x0[j], c)*(1-fx[j]) + px(y1[i], x1[j], c)*fx[j]
				v := math.Floor(top*(1-fy[i]) + bottom*fy[i] + 0.5)
				out.Pix[3*(i*w+j)+c] = uint8(math.Min(math.Max(v, 0), 255))
			}
		}
	}
	return out
}
