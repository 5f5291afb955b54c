"""Writes the ONNX-backbone fixture of dmlkit/models/onnxbackbone_test.go.

A torchvision-style ResNet in miniature: conv 3x3 (3->4) -> BN -> ReLU -> max pool 3/2/1,
a basic residual block (4 -> 4, identity shortcut), a strided basic block (4 -> 8, stride 2,
1x1 conv + BN shortcut), global average pool, flatten and a classifier that is removed before
the export (m.fc = nn.Identity(), the README's recipe), so the output is the [B, 8] feature.
Every BatchNorm has random running statistics and affine parameters, so the test sees whether
the statistics are used.

Exported with PyTorch 1.13 (Debian python3-torch; no onnx package needed):
  - training=TrainingMode.PRESERVE on the eval-mode model and do_constant_folding=False keep
    the BatchNormalization nodes and the state_dict names of the initializers (EVAL mode would
    fold each BN into its convolution);
  - the batch axis is dynamic (dynamic_axes), the spatial axes are not: dmlkit relaxes them.

Writes into the directory given as argv[1] (default: this script's directory):
  onnx_backbone.onnx     the model, input "images" [B, 3, 10, 10] (NCHW), output "features" [B, 8]
  onnx_backbone_x.npy    a fixed input [2, 3, 10, 10] float32, uniform [0, 1), NCHW
  onnx_backbone_y.npy    PyTorch's eval-mode output for it [2, 8]
  onnx_backbone_gx.npy   d(sum of squares of the output)/d input [2, 3, 10, 10] (NCHW)
  onnx_backbone_gw.npy   d(sum of squares of the output)/d layer2.0.conv1.weight [8, 4, 3, 3]
  onnx_backbone_gg.npy   d(sum of squares of the output)/d bn1.weight [4]
  onnx_backbone_y1.npy   the output of layer1 (ONNX node output
                         "/layer1/layer1.0/relu_1/Relu_output_0", [2, 4, 5, 5]) averaged over
                         the spatial axes [2, 4] (dmlkit's model.onnx_output with pool avg)

Run: /usr/bin/python3 dmlkit/models/testdata/make_onnx_backbone.py
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn


class BasicBlock(nn.Module):
    def __init__(s, inp, out, stride):
        super().__init__()
        s.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        s.bn1 = nn.BatchNorm2d(out)
        s.relu = nn.ReLU(inplace=True)
        s.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        s.bn2 = nn.BatchNorm2d(out)
        s.downsample = None
        if stride != 1 or inp != out:
            s.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(s, x):
        idt = x if s.downsample is None else s.downsample(x)
        o = s.relu(s.bn1(s.conv1(x)))
        return s.relu(s.bn2(s.conv2(o)) + idt)


class TinyResNet(nn.Module):
    """torchvision.models.ResNet's structure and names, 2 stages of 1 block, widths 4 and 8."""

    def __init__(s):
        super().__init__()
        s.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
        s.bn1 = nn.BatchNorm2d(4)
        s.relu = nn.ReLU(inplace=True)
        s.maxpool = nn.MaxPool2d(3, 2, 1)
        s.layer1 = nn.Sequential(BasicBlock(4, 4, 1))
        s.layer2 = nn.Sequential(BasicBlock(4, 8, 2))
        s.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        s.fc = nn.Linear(8, 10)

    def forward(s, x):
        x = s.maxpool(s.relu(s.bn1(s.conv1(x))))
        x = s.layer2(s.layer1(x))
        return s.fc(torch.flatten(s.avgpool(x), 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    m = TinyResNet()
    for b in m.modules():
        if isinstance(b, nn.BatchNorm2d):
            b.running_mean.uniform_(-0.2, 0.2)
            b.running_var.uniform_(0.5, 1.5)
            b.weight.data.uniform_(0.5, 1.5)
            b.bias.data.uniform_(-0.2, 0.2)
    m.fc = nn.Identity()  # the feature extractor: remove the classifier before exporting
    m.eval()
    x = torch.rand(2, 3, 10, 10)
    torch.onnx.export(m, torch.zeros(1, 3, 10, 10), os.path.join(out, "onnx_backbone.onnx"),
                      input_names=["images"], output_names=["features"],
                      dynamic_axes={"images": {0: "batch"}, "features": {0: "batch"}},
                      do_constant_folding=False, training=torch.onnx.TrainingMode.PRESERVE)
    xg = x.clone().requires_grad_(True)
    y = m(xg)
    loss = (y * y).sum()
    loss.backward()
    np.save(os.path.join(out, "onnx_backbone_x.npy"), x.numpy())
    np.save(os.path.join(out, "onnx_backbone_y.npy"), y.detach().numpy())
    np.save(os.path.join(out, "onnx_backbone_gx.npy"), xg.grad.numpy())
    np.save(os.path.join(out, "onnx_backbone_gw.npy"), m.layer2[0].conv1.weight.grad.numpy())
    np.save(os.path.join(out, "onnx_backbone_gg.npy"), m.bn1.weight.grad.numpy())
    with torch.no_grad():
        y1 = m.layer1(m.maxpool(m.relu(m.bn1(m.conv1(x))))).mean((2, 3))
    np.save(os.path.join(out, "onnx_backbone_y1.npy"), y1.numpy())


if __name__ == "__main__":
    main()
