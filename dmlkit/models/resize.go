package models

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
)

// ResizeImages resamples images x [B, H, W, C] to [B, size, size, C] with bilinear
// interpolation and half-pixel centres (output pixel i samples the input at (i + 0.5)·H/size −
// 0.5, clamped at the borders), without antialiasing: the model.input_size step. Images already
// size × size are returned unchanged. The result has x's dtype; gradients flow to x.
func ResizeImages(x *Node, size int) *Node {
	if x.Rank() != 4 {
		panic(fmt.Sprintf("models: input_size needs [B, H, W, C] images, got %s", x.Shape()))
	}
	if x.Shape().Dim(1) == size && x.Shape().Dim(2) == size {
		return x
	}
	return Interpolate(x, NoInterpolation, size, size, NoInterpolation).Bilinear().HalfPixelCenters(true).Done()
}
