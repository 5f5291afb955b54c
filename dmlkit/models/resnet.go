package models

import (
	"fmt"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// ResNet is torchvision's ResNet-18 ("18") or ResNet-50 ("50", v1.5: stride on the 3×3 conv of
// the bottleneck) without the classifier: conv7×7/2(64) → BN → ReLU → maxpool3×3/2 → four
// stages (widths 64, 128, 256, 512; strides 1, 2, 2, 2; blocks [2,2,2,2] basic or [3,4,6,3]
// bottleneck ×4) → global pooling. Output [B, 512] (18) or [B, 2048] (50). All convolutions are
// im2col ([Conv]); BatchNorm follows cfg.FrozenBN. Shapes: 224×224 input → 7×7 final map.
func ResNet(scope *model.Scope, depth string, cfg Config, x *Node, mode Mode) *Node {
	if x.Rank() != 4 {
		panic(fmt.Sprintf("models: ResNet needs [B, H, W, C] images, got %s", x.Shape()))
	}
	mode.FrozenBN = mode.FrozenBN || cfg.FrozenBN
	var blocks []int
	bottleneck := false
	switch depth {
	case "18":
		blocks = []int{2, 2, 2, 2}
	case "50":
		blocks = []int{3, 4, 6, 3}
		bottleneck = true
	default:
		panic(fmt.Sprintf("models: ResNet depth %q: want 18 or 50", depth))
	}
	h := Conv(scope.At("conv1"), x, 64, 7, 2, false)
	h = Relu(BatchNorm(scope.At("bn1"), h, mode))
	h = MaxPool3s2(h)
	widths := []int{64, 128, 256, 512}
	for s, n := range blocks {
		for b := 0; b < n; b++ {
			stride := 1
			if b == 0 && s > 0 {
				stride = 2
			}
			bs := scope.At("layer%d", s+1).At("%d", b)
			if bottleneck {
				h = bottleneckBlock(bs, h, widths[s], stride, mode)
			} else {
				h = basicBlock(bs, h, widths[s], stride, mode)
			}
		}
	}
	return GlobalPool(h, cfg.Pool, cfg.GeMP)
}

func shortcut(scope *model.Scope, x *Node, out, stride int, mode Mode) *Node {
	if stride == 1 && x.Shape().Dim(-1) == out {
		return x
	}
	return BatchNorm(scope.At("downsample_bn"), Conv(scope.At("downsample"), x, out, 1, stride, false), mode)
}

func basicBlock(scope *model.Scope, x *Node, width, stride int, mode Mode) *Node {
	h := Relu(BatchNorm(scope.At("bn1"), Conv(scope.At("conv1"), x, width, 3, stride, false), mode))
	h = BatchNorm(scope.At("bn2"), Conv(scope.At("conv2"), h, width, 3, 1, false), mode)
	return Relu(Add(h, shortcut(scope, x, width, stride, mode)))
}

func bottleneckBlock(scope *model.Scope, x *Node, width, stride int, mode Mode) *Node {
	out := 4 * width
	h := Relu(BatchNorm(scope.At("bn1"), Conv(scope.At("conv1"), x, width, 1, 1, false), mode))
	h = Relu(BatchNorm(scope.At("bn2"), Conv(scope.At("conv2"), h, width, 3, stride, false), mode))
	h = BatchNorm(scope.At("bn3"), Conv(scope.At("conv3"), h, out, 1, 1, false), mode)
	return Relu(Add(h, shortcut(scope, x, out, stride, mode)))
}
