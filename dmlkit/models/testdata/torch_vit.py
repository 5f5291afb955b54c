"""Reference outputs for dmlkit/models/vit_test.go (TestTorchViTFromONNX).

Usage: python3 torch_vit.py OUTDIR

Builds a tiny Vision Transformer (image 32, patch 8, width 48, 3 heads, 2 blocks, MLP 96) with
torchvision's VisionTransformer module names and structure (torchvision is not installed here;
the classes below follow torchvision/models/vision_transformer.py), perturbs every parameter so
that none is at its initial value, and writes to OUTDIR:

  tv.onnx    the model exported with torchvision's names (do_constant_folding=False)
  timm.onnx  the same weights in a timm-structured model (qkv Linear, blocks.i.*), exported
  x.npy      input [2, 3, 32, 32] (NCHW);  y.npy  class-token features [2, 48]
  x2.npy     input [2, 3, 48, 40];         y2.npy features with the 4×4 position grid resized
             to 6×5 (bicubic, align_corners=True: torchvision's interpolate_embeddings)
  m_IN_OUT_AC.npy  F.interpolate's 1-D bicubic resize matrix [OUT, IN] (AC: 1 = align_corners)
"""
import sys
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(2)
IMAGE, PATCH, LAYERS, HEADS, DIM, MLP = 32, 8, 2, 3, 48, 96


class MLPBlock(nn.Sequential):
    def __init__(self, d, m):
        super().__init__(nn.Linear(d, m), nn.GELU(), nn.Dropout(0.0), nn.Linear(m, d), nn.Dropout(0.0))


class EncoderBlock(nn.Module):
    def __init__(self, heads, d, m):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(d, heads, dropout=0.0, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = MLPBlock(d, m)

    def forward(self, inp):
        x = self.ln_1(inp)
        x, _ = self.self_attention(x, x, x, need_weights=False)
        x = self.dropout(x) + inp
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, seq, layers, heads, d, m):
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, seq, d).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(OrderedDict(
            ("encoder_layer_%d" % i, EncoderBlock(heads, d, m)) for i in range(layers)))
        self.ln = nn.LayerNorm(d, eps=1e-6)

    def forward(self, x, pos=None):
        return self.ln(self.layers(self.dropout(x + (self.pos_embedding if pos is None else pos))))


class VisionTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_proj = nn.Conv2d(3, DIM, PATCH, PATCH)
        self.class_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.encoder = Encoder((IMAGE // PATCH) ** 2 + 1, LAYERS, HEADS, DIM, MLP)
        self.heads = nn.Sequential(OrderedDict(head=nn.Linear(DIM, 10)))

    def forward(self, x, pos=None):
        n = x.shape[0]
        x = self.conv_proj(x).reshape(n, DIM, -1).permute(0, 2, 1)
        x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1)
        return self.encoder(x, pos)[:, 0]


class TimmAttention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):  # timm.models.vision_transformer.Attention (non-fused path)
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = (q * (c // self.heads) ** -0.5) @ k.transpose(-2, -1)
        x = (a.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(x)


class TimmMlp(nn.Module):
    def __init__(self, d, m):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(d, m), nn.GELU(), nn.Linear(m, d)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TimmBlock(nn.Module):
    def __init__(self, d, heads, m):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(d, eps=1e-6), TimmAttention(d, heads)
        self.norm2, self.mlp = nn.LayerNorm(d, eps=1e-6), TimmMlp(d, m)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class PatchEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, DIM, PATCH, PATCH)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class TimmViT(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch_embed = PatchEmbed()
        self.cls_token = nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos_embed = nn.Parameter(torch.zeros(1, (IMAGE // PATCH) ** 2 + 1, DIM))
        self.blocks = nn.Sequential(*[TimmBlock(DIM, HEADS, MLP) for _ in range(LAYERS)])
        self.norm = nn.LayerNorm(DIM, eps=1e-6)
        self.head = nn.Linear(DIM, 10)

    def forward(self, x):
        x = self.patch_embed(x)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        return self.norm(self.blocks(x))[:, 0]


def to_timm(sd):
    out = {}
    for k, v in sd.items():
        k = (k.replace("conv_proj", "patch_embed.proj").replace("class_token", "cls_token")
             .replace("encoder.pos_embedding", "pos_embed").replace("encoder.layers.encoder_layer_", "blocks.")
             .replace("ln_1", "norm1").replace("ln_2", "norm2").replace("self_attention.in_proj_weight", "attn.qkv.weight")
             .replace("self_attention.in_proj_bias", "attn.qkv.bias").replace("self_attention.out_proj", "attn.proj")
             .replace("mlp.0", "mlp.fc1").replace("mlp.3", "mlp.fc2").replace("encoder.ln", "norm")
             .replace("heads.head", "head"))
        out[k] = v
    return out


def main(d):
    m = VisionTransformer()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    m.eval()
    x = torch.rand(2, 3, IMAGE, IMAGE)
    torch.onnx.export(m, x, d + "/tv.onnx", do_constant_folding=False)
    with torch.no_grad():
        y = m(x)
        t = TimmViT()
        t.load_state_dict(to_timm(m.state_dict()))
        t.eval()
        assert torch.allclose(t(x), y, atol=1e-5), "timm-layout model differs"
    torch.onnx.export(t, x, d + "/timm.onnx", do_constant_folding=False)
    np.save(d + "/x.npy", x.numpy())
    np.save(d + "/y.npy", y.numpy())

    # Position grid 4×4 → 6×5 for a 48×40 input, as torchvision's interpolate_embeddings.
    g0 = IMAGE // PATCH
    with torch.no_grad():
        pos = m.encoder.pos_embedding
        grid = pos[:, 1:].reshape(1, g0, g0, DIM).permute(0, 3, 1, 2)
        grid = F.interpolate(grid, size=(6, 5), mode="bicubic", align_corners=True)
        pos2 = torch.cat([pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, 30, DIM)], dim=1)
        x2 = torch.rand(2, 3, 48, 40)
        np.save(d + "/x2.npy", x2.numpy())
        np.save(d + "/y2.npy", m(x2, pos2).numpy())

    # 1-D bicubic resize matrices: column j is the resize of the j-th unit vector.
    for n_in, n_out in [(4, 7), (14, 24), (5, 3), (14, 10)]:
        for ac in (True, False):
            e = torch.eye(n_in, dtype=torch.float64).reshape(n_in, 1, n_in, 1)
            r = F.interpolate(e, size=(n_out, 1), mode="bicubic", align_corners=ac)
            np.save("%s/m_%d_%d_%d.npy" % (d, n_in, n_out, int(ac)), np.ascontiguousarray(r.reshape(n_in, n_out).T.numpy()))


if __name__ == "__main__":
    main(sys.argv[1])
