#!/usr/bin/env python3
"""amp-bn-error.py — how far PyTorch AMP's bfloat16 step is from float32 on a randomly initialised ResNet-18,
with frozen and with training-mode BatchNorm: the PyTorch side of dmlkit's TestMixedPrecisionTracksFloat32
(dmlkit/models/precision_test.go), which found bfloat16 gradient errors of about 30 % with training-mode BN.

torchvision's resnet18 (16 outputs), a batch of 32 uniform [0, 1) images of 64 x 64, L2-normalised embeddings,
loss sum(e * w) with w uniform [0, 1); the forward pass under torch.autocast("cpu", bfloat16) against float32
from the same weights. Prints the relative L2 errors of the embeddings and of all parameter gradients for three
seeds. Needs torch and torchvision (Debian python3-torch, python3-torchvision): /usr/bin/python3 scripts/amp-bn-error.py
"""
import torch
import torch.nn.functional as F
import torchvision


def step(m, x, w, amp, train_bn):
    m.zero_grad(set_to_none=True)
    m.train(train_bn)
    if amp:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            e = m(x)
    else:
        e = m(x)
    e = F.normalize(e.float(), dim=1)
    (e * w).sum().backward()
    return e.detach().clone(), torch.cat([p.grad.flatten().clone() for p in m.parameters()])


def main():
    torch.set_num_threads(1)
    print("torch %s, torchvision %s" % (torch.__version__, torchvision.__version__))
    for train_bn in (False, True):
        rows = []
        for seed in range(3):
            torch.manual_seed(seed)
            m = torchvision.models.resnet18(num_classes=16)
            x, w = torch.rand(32, 3, 64, 64), torch.rand(32, 16)
            state = {k: v.clone() for k, v in m.state_dict().items()}
            e32, g32 = step(m, x, w, False, train_bn)
            m.load_state_dict(state)  # training-mode BN moved the running statistics
            e16, g16 = step(m, x, w, True, train_bn)
            rows.append("seed %d: embeddings %.3g, gradients %.3g" % (
                seed, ((e16 - e32).norm() / e32.norm()).item(), ((g16 - g32).norm() / g32.norm()).item()))
        print("%s BatchNorm, bf16 vs fp32 relative errors: %s" % ("training-mode" if train_bn else "frozen", "; ".join(rows)))


if __name__ == "__main__":
    main()
