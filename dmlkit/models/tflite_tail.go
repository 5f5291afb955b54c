package models

import (
	"fmt"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/ml/model"
)

// Splitting a TFLite MobileNet into a fixed prefix and a trainable tail (model.trainable_tail).
//
// A block boundary is an op index k (0 < k < FeatureOp) where the graph can be cut: exactly one
// tensor computed before op k (the graph input included) is read by op k or a later op — the cut
// tensor, [1, H', W', C'] in the file — and it is a block's output:
//
//   - MobileNetV2 (the graph has linear bottlenecks: a CONV_2D without fused activation before
//     FeatureOp): the cut tensor is the output of such a linear 1×1 projection or of an ADD (a
//     residual block's sum). Inside a residual block the block's input stays live until its ADD,
//     so no cut falls there; the last boundary, before the final 1×1 convolution to 1280
//     channels, starts no block. The Coral V2 files have 16 blocks after the first (expanded_conv,
//     which has no expansion and directly follows the stem): the inverted residuals
//     expanded_conv_1 … expanded_conv_16 (TF2 file: _2 … _17).
//   - MobileNetV1 (no linear bottleneck): the cut tensor is a CONV_2D output read by a
//     DEPTHWISE_CONV_2D, the start of a depthwise-separable block (depthwise 3×3 → pointwise
//     1×1); the Coral V1 embedding extractor has 13, the last ending in the 1024-channel map.
//
// The last n blocks begin at [TFLiteModel.TailStart](n); ops [0, start) are the prefix
// ([TFLiteModel.Prefix]) and ops [start, FeatureOp] with the global average the tail
// ([TFLiteModel.TailFeatures]). For MobileNetV2 the tail holds the last n inverted residuals,
// the final 1×1 convolution to 1280 channels and the pooling. The cut tensors at a 96 px input
// for the uint8 MobileNetV2: n = 1, 2, 3 (ops 58, 54, 50): [3, 3, 160]; n = 4–6: [6, 6, 96]; for
// the V1 embedding extractor: n = 1 (op 25): [3, 3, 1024] (7.2 times its pooled features),
// n = 2, 3: [6, 6, 512].

// BlockStarts returns the op indices at which the blocks of the feature extractor begin,
// ascending (see the comment above for how a boundary is identified); nil when none is found.
func (m *TFLiteModel) BlockStarts() []int {
	m.blocksOnce.Do(func() { m.blocks = m.findBlockStarts() })
	return m.blocks
}

func (m *TFLiteModel) findBlockStarts() []int {
	// producer[t] and lastUse[t] for every computed tensor (the graph input: producer −1).
	producer, lastUse := map[int]int{m.Inputs[0]: -1}, map[int]int{}
	for k, op := range m.Ops {
		for _, t := range op.Inputs {
			if t >= 0 && m.Tensors[t].Data == nil {
				lastUse[t] = k
			}
		}
		for _, t := range op.Outputs {
			producer[t] = k
		}
	}
	linear := false
	for k := 0; k < m.FeatureOp; k++ {
		if op := m.Ops[k]; op.Code == tflConv2D && op.Activation == tflActNone {
			linear = true
		}
	}
	var starts []int
	for k := 1; k < m.FeatureOp; k++ {
		t, ok := m.cut(k, producer, lastUse)
		if !ok || producer[t] < 0 {
			continue
		}
		p := m.Ops[producer[t]]
		switch {
		case linear && (p.Code == tflAdd || p.Code == tflConv2D && p.Activation == tflActNone):
			starts = append(starts, k)
		case !linear && p.Code == tflConv2D && m.Ops[k].Code == tflDepthwiseConv2D:
			starts = append(starts, k)
		}
	}
	if linear && len(starts) > 0 {
		starts = starts[:len(starts)-1] // the final 1×1 convolution, not a block
	}
	return starts
}

// cut returns the only tensor computed before op k that op k or a later op reads, and whether
// there is exactly one.
func (m *TFLiteModel) cut(k int, producer, lastUse map[int]int) (int, bool) {
	found, n := -1, 0
	for t, p := range producer {
		if p < k && lastUse[t] >= k {
			found, n = t, n+1
		}
	}
	return found, n == 1
}

// TailStart returns the index of the first op of the last n blocks ([TFLiteModel.BlockStarts]),
// n ≥ 1. Errors say how many blocks the file has.
func (m *TFLiteModel) TailStart(n int) (int, error) {
	b := m.BlockStarts()
	if n < 1 || n > len(b) {
		return 0, fmt.Errorf("%d: want 1 to %d (the blocks of %s)", n, len(b), m.Path)
	}
	return b[len(b)-n], nil
}

// CutTensor returns the tensor that crosses the boundary at op start (a [TFLiteModel.BlockStarts]
// entry): the prefix's output and the tail's input.
func (m *TFLiteModel) CutTensor(start int) int {
	return m.Ops[start].Inputs[0]
}

// CutShape returns the shape [H', W', C'] of the cut tensor at op start for an h × w input, by
// TFLite's padding rule along the prefix's strided ops.
func (m *TFLiteModel) CutShape(start, h, w int) []int {
	for k := 0; k < start; k++ {
		op := m.Ops[k]
		switch op.Code {
		case tflConv2D, tflDepthwiseConv2D:
			s := m.Tensors[op.Inputs[1]].Shape
			_, _, h = tflitePadding(h, s[1], op.StrideH, op.DilationH, op.Padding)
			_, _, w = tflitePadding(w, s[2], op.StrideW, op.DilationW, op.Padding)
		case tflAveragePool2D:
			_, _, h = tflitePadding(h, op.FilterH, op.StrideH, 1, op.Padding)
			_, _, w = tflitePadding(w, op.FilterW, op.StrideW, 1, op.Padding)
		}
	}
	s := m.Tensors[m.CutTensor(start)].Shape
	return []int{h, w, s[len(s)-1]}
}

// Prefix runs ops [0, start) on pixels x [B, H, W, C] in [0, 1] ([TFLiteModel.InputFromPixels])
// and returns the cut tensor [B, H', W', C'] ([TFLiteModel.CutShape]). start must be a
// [TFLiteModel.BlockStarts] entry. Variables are used from scope (created from the file when
// absent).
func (m *TFLiteModel) Prefix(scope *model.Scope, x *Node, start int) *Node {
	m.checkStart(start)
	v := m.run(scope, m.InputFromPixels(x, 1), 0, start)
	return v[m.CutTensor(start)]
}

// TailFeatures runs ops [start, FeatureOp) on the cut tensor h [B, H', W', C'] (what
// [TFLiteModel.Prefix] returns) and returns the global average of the last feature map
// [B, FeatureDim]: TailFeatures(Prefix(x, start), start) is [TFLiteModel.Features](x).
func (m *TFLiteModel) TailFeatures(scope *model.Scope, h *Node, start int) *Node {
	m.checkStart(start)
	if c := m.Tensors[m.CutTensor(start)].Shape; h.Rank() != 4 || h.Shape().Dim(3) != c[len(c)-1] {
		panic(fmt.Sprintf("models: %s: the tail at op %d needs [B, H, W, %d] inputs, got %s", m.Path, start, c[len(c)-1], h.Shape()))
	}
	v := m.runFrom(scope, m.CutTensor(start), h, start, m.FeatureOp)
	return ReduceMean(v[m.Ops[m.FeatureOp].Inputs[0]], 1, 2)
}

func (m *TFLiteModel) checkStart(start int) {
	for _, b := range m.BlockStarts() {
		if b == start {
			return
		}
	}
	panic(fmt.Sprintf("models: %s: op %d does not start a block (block starts: %v)", m.Path, start, m.BlockStarts()))
}

// TailConfig reads cfg's .tflite file ([CachedTFLite]) and returns it with the op index at which
// the trainable tail of cfg begins ([TFLiteModel.TailStart] of cfg.TrainableTail; a mobilenet
// backbone). Errors name model.pretrained, or model.trainable_tail and the file.
func TailConfig(cfg Config) (*TFLiteModel, int, error) {
	m, err := CachedTFLite(cfg.Pretrained)
	if err != nil {
		return nil, 0, fmt.Errorf("model.pretrained: %w", err)
	}
	start, err := m.TailStart(cfg.TrainableTail)
	if err != nil {
		return nil, 0, fmt.Errorf("model.trainable_tail: %w", err)
	}
	return m, start, nil
}

// BuildPrefix is the fixed part of a model.trainable_tail network: images x [B, H, W, C] in
// [0, 1], resized to cfg.InputSize when set, through the ops before the last cfg.TrainableTail
// blocks ([TFLiteModel.Prefix]) under scope's "backbone" (the scope given to [Build]): the cut
// tensor [B, H', W', C'] that the trainer caches. Panics where [Build] would, and on a
// configuration without a trainable tail.
func BuildPrefix(scope *model.Scope, cfg Config, x *Node) *Node {
	if cfg.TrainableTail <= 0 || !strings.HasPrefix(cfg.Backbone, "mobilenet_") {
		panic(fmt.Sprintf("models: BuildPrefix needs a mobilenet backbone with trainable_tail > 0, got %s with %d", cfg.Backbone, cfg.TrainableTail))
	}
	m, start, err := TailConfig(cfg)
	if err != nil {
		panic(fmt.Sprintf("models: %v", err))
	}
	if cfg.InputSize > 0 {
		x = ResizeImages(x, cfg.InputSize)
	}
	return m.Prefix(scope.At("backbone"), x, start)
}

// MobileNetTail is the mobilenet backbone of a [Config.TailOnly] configuration: the last
// cfg.TrainableTail blocks of the .tflite graph, its final convolution and the global average
// ([TFLiteModel.TailFeatures]) applied to cut maps h [B, H', W', C'] (what [BuildPrefix] gives),
// returning [B, FeatureDim]. Variables: the tail's only, trainable, named as in the full network.
// Panics if the file cannot be read or trainable_tail exceeds its blocks ([LoadPretrained]
// reports both as errors first).
func MobileNetTail(scope *model.Scope, cfg Config, h *Node) *Node {
	m, start, err := TailConfig(cfg)
	if err != nil {
		panic(fmt.Sprintf("models: backbone %s: %v", cfg.Backbone, err))
	}
	return m.TailFeatures(scope, h, start)
}
