"""PyTorch side of the GPU check's training-step timings (scripts/gpu-check.sh, issue 22).

The same workloads as `gpucheck bench` (its arguments come from `gpucheck torchargs --case C`):
  smallcnn        the small CNN 32-64-128 (BN, max-pool, GAP, linear 128, L2) on 28x28 grey images
  resnet50        torchvision-layout ResNet-50 v1.5 (GAP, linear to --dim, L2)
  vit_b16         ViT-B/16 (pre-norm, class token, linear to --dim, L2)
  idml_pa         (--loss idml_pa) ResNet-50 (frozen BN, average + max pooling) with IDML's two heads, a 512-d
                  semantic (L2-normalised) and a 512-d uncertainty embedding (raw), trained with IDML-ProxyAnchor
                  (seed 002 Eq. 5, 8, 18: C_IN = 1 - (1 - C) exp(-(||u_i|| + gamma) / (tau ||s_i - p_j||)),
                  tau = 5, gamma = 0, margin 0.1, scale 32) on batches of --batch originals and --batch mixed
                  images (mixup with label sets, lambda ~ Beta(1, 1): 2 x --batch images a step), AdamW (lr 6e-4,
                  decoupled weight decay 1e-4 on every parameter, proxies at 100x the rate), gradient entries
                  clipped at 10 -- dmlkit's "idml" loss with base proxyanchor and the gpucheck idml_pa case.
  rsk_multistage  ResNet-50 (frozen BN) with RS@k at a large batch by multistage backprop in chunks:
                  embed all chunks without autograd, dL/dE on the whole batch, re-embed chunk by chunk
                  and backpropagate sum(emb * dL/dE[chunk]) (seed 003, Algorithm 1), as dmlkit/train does.
Losses: contrastive as pytorch-metric-learning's ContrastiveLoss (L2 distance of normalised embeddings,
m+ = 0, m- = 1, each term averaged over its non-zero pairs; dmlkit's "contrastive" defaults), RS@k
(seed 003 Eq. 4-7, query excluded, K = {1,2,4,8,16}, tau1 = 1, tau2 = 0.01, exponent clamp 50,
positives in m-1 slots). Adam (lr 1e-4). The models are written out here (no torchvision needed) and
run on torch 1.13 (Debian, CPU dry run) and torch 2.x (GPU machine; attention uses
F.scaled_dot_product_attention where it exists).

--precision bf16 / fp16 runs the model's forward (and, multistage, its re-embedding) under
torch.autocast with that dtype -- PyTorch AMP, as the contextual authors' code trains -- with float32
weights and optimiser; the embeddings are cast to float32 before the loss, as dmlkit's train.precision
does. fp16 adds a torch.cuda.amp.GradScaler (dynamic loss scaling; dmlkit's is static). fp32 (the
default) is unchanged. torch 1.13's CPU autocast supports bfloat16 only.

--saved-tensors 1 runs no step: it builds one forward pass and loss and reports the tensors the autograd graph
saves for the backward pass (each storage once, parameters and the batch left out), by grad_fn and dtype, beside
`gpucheck memory` (scripts/memory-account.py puts the two side by side).

Each step copies the batch from host memory to the device and reads the loss back, as dmlkit's step
does. The first step is not timed (cuDNN autotuning, lazy initialisation); step_ms is the mean of the
others. Writes one JSON object (--json) and prints it.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def contrastive(e, y):
    sq = (e * e).sum(1)
    d2 = (sq[:, None] + sq[None, :] - 2 * e @ e.t()).clamp_min(0)
    ok = d2 > 1e-12
    d = torch.where(ok, d2.clamp_min(1e-12).sqrt(), torch.zeros_like(d2))
    same = y[:, None] == y[None, :]
    eye = torch.eye(len(y), dtype=torch.bool, device=e.device)
    pos, neg = same & ~eye, ~same
    pt = F.relu(d) * pos
    nt = F.relu(1 - d) * neg
    return pt.sum() / (pt > 0).sum().clamp_min(1) + nt.sum() / (nt > 0).sum().clamp_min(1)


def sig_clamped(x, tau):
    return 1.0 / (1.0 + torch.exp(torch.clamp(-x / tau, -50, 50)))


def rsk(emb, labels, spc, ks=(1, 2, 4, 8, 16), tau1=1.0, tau2=0.01):
    """RS@k without SiMix on a class-contiguous batch of spc images per class."""
    e = F.normalize(emb, dim=1)
    s = e @ e.t()
    n = s.shape[0]
    dev = s.device
    q = torch.arange(n, device=dev)
    blk = (q // spc) * spc
    off = torch.arange(spc - 1, device=dev)[None]
    pos = blk[:, None] + off + (off >= (q % spc)[:, None]).long()  # the other spc-1 of q's class
    sx = s.gather(1, pos)                                            # [N, P]
    total = sig_clamped(s[:, None, :] - sx[:, :, None], tau2).sum(-1)  # [N, P]
    self_q = sig_clamped(s[q, q][:, None] - sx, tau2)
    rank = 1 + total - 0.5 - self_q                                  # z = x and z = q removed
    npos = spc - 1
    loss = 0
    for k in ks:
        num = sig_clamped(k - rank, tau1).sum(1).clamp(max=k)
        loss = loss + (1 - num / min(k, npos))
    return (loss / len(ks)).mean()


def idml_proxyanchor(emb, sets, proxies, dim, tau=5.0, gamma=0.0, margin=0.1, scale=32.0):
    """IDML-ProxyAnchor on emb = [B, dim + U] (semantic, uncertainty) with label sets [B, S] (-1 = empty).

    dmlkit's losses.IDMLConfig with base proxyanchor: the semantic part is L2-normalised, the proxies
    too; alpha = ||s_i - p_j||, beta = ||u_i|| (a proxy has no uncertainty), e = exp(-(beta + gamma) /
    (tau * alpha)), C_IN = 1 - (1 - cos) e; positive term averaged over the proxies with a member in the
    batch, negative term over all proxies."""
    s = F.normalize(emb[:, :dim], dim=1)
    u = emb[:, dim:]
    p = F.normalize(proxies, dim=1)
    cos = s @ p.t()
    alpha = (2 - 2 * cos).clamp_min(0).sqrt().clamp_min(1e-12)
    beta = u.norm(dim=1, keepdim=True)
    cin = 1 - (1 - cos) * torch.exp(-(beta + gamma) / (tau * alpha))
    nc = proxies.shape[0]
    member = (sets[:, :, None] == torch.arange(nc, device=emb.device)[None, None, :]).any(1)  # [B, C]
    neg_inf = torch.full_like(cin, float("-inf"))
    pos = torch.logsumexp(torch.cat([cin.new_zeros(1, nc),
                                     torch.where(member, -scale * (cin - margin), neg_inf)]), 0)
    neg = torch.logsumexp(torch.cat([cin.new_zeros(1, nc),
                                     torch.where(member, neg_inf, scale * (cin + margin))]), 0)
    has = member.any(0)
    return pos[has].sum() / has.sum().clamp_min(1) + neg.sum() / nc


def mixup_host(x, y, gen):
    """dmlkit's train.Mixup: the n originals, then n images lam x_i + (1 - lam) x_perm(i) with one
    lam ~ Beta(1, 1) per batch; label sets {y_i, -1} and {y_i, y_perm(i)} (-1 when equal)."""
    n = x.shape[0]
    lam = torch.rand(1, generator=gen).item()  # Beta(1, 1) is uniform
    perm = torch.randperm(n, generator=gen)
    xm = torch.cat([x, lam * x + (1 - lam) * x[perm]])
    second = torch.where(y[perm] == y, torch.full_like(y, -1), y[perm])
    sets = torch.cat([torch.stack([y, torch.full_like(y, -1)], 1), torch.stack([y, second], 1)])
    return xm, sets


class SmallCNN(nn.Module):
    def __init__(self, dim=128):
        super().__init__()
        self.c = nn.ModuleList([nn.Conv2d(i, o, 3, padding=1, bias=False) for i, o in [(1, 32), (32, 64), (64, 128)]])
        self.b = nn.ModuleList([nn.BatchNorm2d(o) for o in [32, 64, 128]])
        self.fc = nn.Linear(128, dim)

    def forward(self, x):
        for i in range(3):
            x = F.relu(self.b[i](self.c[i](x)))
            if i < 2:
                x = F.max_pool2d(x, 2)
        return F.normalize(self.fc(x.mean((2, 3))), dim=1)


class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        out = 4 * width
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.down = None
        if stride != 1 or cin != out:
            self.down = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    """unc > 0: IDML's layout, average + max pooling and a second (uncertainty) head of width unc,
    forward returns concat(normalised semantic, raw uncertainty)."""

    def __init__(self, dim=512, unc=0):
        super().__init__()
        self.unc = nn.Linear(2048, unc) if unc else None
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        layers, cin = [], 64
        for s, (n, w) in enumerate(zip([3, 4, 6, 3], [64, 128, 256, 512])):
            for b in range(n):
                layers.append(Bottleneck(cin, w, 2 if (b == 0 and s > 0) else 1))
                cin = 4 * w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(2048, dim)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)
        x = self.layers(x)
        if self.unc is None:
            return F.normalize(self.fc(x.mean((2, 3))), dim=1)
        f = x.mean((2, 3)) + x.amax((2, 3))
        return torch.cat([F.normalize(self.fc(f), dim=1), self.unc(f)], 1)


class Block(nn.Module):
    def __init__(self, d, heads, mlp):
        super().__init__()
        self.ln1 = nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d, eps=1e-6)
        self.fc1 = nn.Linear(d, mlp)
        self.fc2 = nn.Linear(mlp, d)
        self.heads = heads

    def forward(self, x):
        b, n, d = x.shape
        qkv = self.qkv(self.ln1(x)).reshape(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        if hasattr(F, "scaled_dot_product_attention"):
            a = F.scaled_dot_product_attention(q, k, v)
        else:
            a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(d // self.heads), -1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class ViTB16(nn.Module):
    def __init__(self, size, dim=512, d=768, heads=12, layers=12, mlp=3072, patch=16):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.Sequential(*[Block(d, heads, mlp) for _ in range(layers)])
        self.ln = nn.LayerNorm(d, eps=1e-6)
        self.fc = nn.Linear(d, dim)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.ln(self.blocks(x))
        return F.normalize(self.fc(x[:, 0]), dim=1)


def to_dev_once(a, dev, x_host, y_host):
    """The batch on the device (channels-last for CNNs on CUDA), copied from host memory."""
    x = x_host.to(dev, non_blocking=False)
    if dev.type == "cuda" and a.backbone != "vit_b16":
        x = x.contiguous(memory_format=torch.channels_last)
    return x, y_host.to(dev)


def autocast_ctx(a, dev):
    if a.precision == "fp32":
        import contextlib
        return contextlib.nullcontext()
    return torch.autocast(dev.type, dtype=torch.bfloat16 if a.precision == "bf16" else torch.float16)


def storage_of(t):
    """(data pointer, bytes) of the storage under tensor t (views share it)."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    nb = st.nbytes() if callable(getattr(st, "nbytes", None)) else st.size() * t.element_size()
    return st.data_ptr(), nb


def saved_tensors(loss, params, x):
    """The tensors loss's autograd graph saves for the backward pass: every grad_fn's _saved_*
    tensors, each storage counted once (a view shares its base's), parameters and the batch x
    left out. Returns saved_bytes, saved_by_op (grad_fn name -> [count, bytes], largest first)
    and saved_by_dtype."""
    skip = {storage_of(p)[0] for p in params} | {storage_of(x)[0]}
    seen_fn, seen, by_op, by_dt = set(), set(), {}, {}
    stack, total = [loss.grad_fn], 0
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen_fn:
            continue
        seen_fn.add(fn)
        for name in dir(fn):
            if not name.startswith("_saved_"):
                continue
            try:
                v = getattr(fn, name)
            except Exception:  # e.g. a saved tensor already freed
                continue
            for t in (v if isinstance(v, (tuple, list)) else [v]):
                if not isinstance(t, torch.Tensor):
                    continue
                ptr, nb = storage_of(t)
                if ptr == 0 or ptr in skip or ptr in seen:
                    continue
                seen.add(ptr)
                total += nb
                op = type(fn).__name__
                by_op.setdefault(op, [0, 0])
                by_op[op][0] += 1
                by_op[op][1] += nb
                dt = str(t.dtype).replace("torch.", "")
                by_dt.setdefault(dt, [0, 0])
                by_dt[dt][0] += 1
                by_dt[dt][1] += nb
        stack.extend(f for f, _ in fn.next_functions)
    order = lambda d: dict(sorted(d.items(), key=lambda kv: -kv[1][1]))
    uniq = {storage_of(p)[0]: p.numel() * p.element_size() for p in params}
    return {"saved_bytes": total, "saved_by_op": order(by_op), "saved_by_dtype": order(by_dt),
            "param_bytes": sum(uniq.values())}


def freeze_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.eval()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--case", required=True)
    ap.add_argument("--backbone", required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=0)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--loss", default="contrastive")
    ap.add_argument("--frozen-bn", type=int, default=0)
    ap.add_argument("--max-class-size", type=int, default=4)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all cores)")
    ap.add_argument("--tf32", type=int, default=1, help="allow TF32 matmuls and convolutions (XLA's default on CUDA)")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
                    help="fp32, or AMP (torch.autocast) with bfloat16 / float16 activations")
    ap.add_argument("--saved-tensors", type=int, default=0,
                    help="1: run no steps; build one step's forward and loss and report the tensors its autograd graph "
                         "saves for the backward pass (bytes by op; parameters and the batch left out), beside "
                         "`gpucheck memory` (dmlkit's graph account)")
    ap.add_argument("--profile-top", type=int, default=0,
                    help="K > 0: after the timed steps, run 3 more under torch.profiler and record the K ops with the "
                         "most self device time per step (CUDA; CPU time on the CPU) as \"profile\"")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    rep = {"side": "torch", "case": a.case, "ok": False, "torch_version": torch.__version__, "precision": a.precision}
    try:
        run(a, rep)
        rep["ok"] = True
    except Exception as ex:  # recorded, not raised: the report shows which side failed
        rep["error"] = "%s: %s" % (type(ex).__name__, ex)
    rep["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    out = json.dumps(rep)
    print(out)
    if a.json:
        with open(a.json, "w") as f:
            f.write(out + "\n")
    sys.exit(0 if rep["ok"] else 1)


def run(a, rep):
    dev = torch.device(a.device)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available to PyTorch")
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = bool(a.tf32)
        torch.backends.cudnn.allow_tf32 = bool(a.tf32)
        rep["device"] = "cuda: " + torch.cuda.get_device_name(0)
        rep["tf32"] = bool(a.tf32)
    else:
        n = a.threads or os.cpu_count()
        torch.set_num_threads(n)
        model = "unknown CPU"
        try:
            with open("/proc/cpuinfo") as f:
                model = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
        except (OSError, StopIteration):
            pass
        rep["device"] = "cpu: %s" % model
        rep["tf32"] = False
    rep["threads"] = torch.get_num_threads()
    torch.manual_seed(0)
    if a.backbone == "cnn":
        m = SmallCNN(a.dim)
    elif a.backbone == "resnet50":
        m = ResNet50(a.dim, a.dim if a.loss == "idml_pa" else 0)
    elif a.backbone == "vit_b16":
        m = ViTB16(a.size, a.dim)
    else:
        raise ValueError("backbone %r" % a.backbone)
    m = m.to(dev)
    if dev.type == "cuda" and a.backbone != "vit_b16":
        m = m.to(memory_format=torch.channels_last)
    m.train()
    if a.frozen_bn:
        freeze_bn(m)
    rep["params"] = sum(p.numel() for p in m.parameters())
    spc = 4
    x_host = torch.randn(a.batch, a.channels, a.size, a.size)
    y_host = torch.arange(a.batch) // spc
    if a.loss == "idml_pa":
        # The synthetic training set of the gpucheck case has 2 x batch / 4 classes (two batches an epoch).
        proxies = nn.Parameter(torch.randn(2 * a.batch // spc, a.dim, device=dev) * math.sqrt(2.0 / (2 * a.batch // spc)))
        opt = torch.optim.AdamW([{"params": m.parameters()}, {"params": [proxies], "lr": 6e-2}], lr=6e-4, weight_decay=1e-4)
        x_host, y_host = mixup_host(x_host, y_host, torch.Generator().manual_seed(0))
        loss_fn = lambda e, y: idml_proxyanchor(e, y, proxies, a.dim)
        params = list(m.parameters()) + [proxies]
    else:
        opt = torch.optim.Adam(m.parameters(), 1e-4)
        params = None
    if a.loss == "rsk":
        loss_fn = lambda e, y: rsk(e, y, spc)
    elif a.loss == "contrastive":
        loss_fn = contrastive
    elif a.loss != "idml_pa":
        raise ValueError("loss %r" % a.loss)

    if a.saved_tensors:
        x, y = to_dev_once(a, dev, x_host, y_host)
        with autocast_ctx(a, dev):
            e = m(x)
        rep.update(saved_tensors(loss_fn(e.float(), y), list(m.parameters()) + ([] if params is None else params), x))
        rep["batch_images"] = x.shape[0]
        return

    def to_dev():
        return to_dev_once(a, dev, x_host, y_host)

    def step_direct():
        x, y = to_dev()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(m(x), y)
        loss.backward()
        if params is not None:
            torch.nn.utils.clip_grad_value_(params, 10.0)
        opt.step()
        return loss.item()

    def step_multistage():
        x, y = to_dev()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad():
            e = torch.cat([m(x[i:i + a.chunk]) for i in range(0, a.batch, a.chunk)])
        e.requires_grad_(True)
        loss = loss_fn(e, y)
        (g,) = torch.autograd.grad(loss, e)
        for i in range(0, a.batch, a.chunk):
            (m(x[i:i + a.chunk]) * g[i:i + a.chunk]).sum().backward()
        opt.step()
        return loss.item()

    step = step_multistage if a.chunk > 0 else step_direct
    if a.precision != "fp32":
        step = amp_steps(a, dev, m, opt, loss_fn, params, to_dev)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    loss = step()
    rep["first_step_ms"] = (time.perf_counter() - t0) * 1e3
    times = []
    for _ in range(max(a.steps - 1, 1)):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    rep["step_ms"] = sum(times) / len(times)
    rep["timed_steps"] = len(times)
    rep["final_loss"] = loss
    if not math.isfinite(loss):
        raise RuntimeError("non-finite loss %r" % loss)
    if dev.type == "cuda":
        rep["max_memory_allocated_mib"] = torch.cuda.max_memory_allocated() / 2**20
    if a.profile_top > 0:
        rep["profile"] = profile_top(step, dev, a.profile_top)


def profile_top(step, dev, k, steps=3):
    """The k ops (aten names, kernels folded into the op that launched them) with the most self
    device time, per step over `steps` steps under torch.profiler: [{op, self_ms, calls}] per step."""
    from torch.profiler import ProfilerActivity, profile

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(activities=acts) as prof:
        for _ in range(steps):
            step()
        if dev.type == "cuda":
            torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        if dev.type == "cuda":
            t = getattr(ev, "self_device_time_total", None)
            if t is None:
                t = ev.self_cuda_time_total
        else:
            t = ev.self_cpu_time_total
        if t > 0:
            rows.append({"op": ev.key, "self_ms": t / 1e3 / steps, "calls": ev.count / steps})
    rows.sort(key=lambda r: -r["self_ms"])
    total = sum(r["self_ms"] for r in rows)
    return {"steps": steps, "device_ms_per_step": total, "top": rows[:k]}


def amp_steps(a, dev, m, opt, loss_fn, params, to_dev):
    """The step of --precision bf16 / fp16: the model's forward under torch.autocast, the loss in
    float32 on the float32-cast embeddings, fp16 with a GradScaler (bf16 needs none)."""
    dtype = torch.bfloat16 if a.precision == "bf16" else torch.float16
    if dev.type == "cpu" and dtype != torch.bfloat16 and not torch.__version__.startswith("2"):
        raise RuntimeError("torch %s: CPU autocast supports bfloat16 only" % torch.__version__)
    scaler = None
    if a.precision == "fp16":
        scaler = torch.cuda.amp.GradScaler(enabled=dev.type == "cuda")

    def amp():
        return autocast_ctx(a, dev)

    def backward(t):
        (scaler.scale(t) if scaler is not None else t).backward()

    def finish():
        if scaler is not None:
            scaler.unscale_(opt)
        if params is not None:
            torch.nn.utils.clip_grad_value_(params, 10.0)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()

    def step_direct():
        x, y = to_dev()
        opt.zero_grad(set_to_none=True)
        with amp():
            e = m(x)
        loss = loss_fn(e.float(), y)
        backward(loss)
        finish()
        return loss.item()

    def step_multistage():
        x, y = to_dev()
        opt.zero_grad(set_to_none=True)
        with torch.no_grad(), amp():
            e = torch.cat([m(x[i:i + a.chunk]).float() for i in range(0, a.batch, a.chunk)])
        e.requires_grad_(True)
        loss = loss_fn(e, y)
        (g,) = torch.autograd.grad(loss, e)
        for i in range(0, a.batch, a.chunk):
            with amp():
                emb = m(x[i:i + a.chunk])
            backward((emb.float() * g[i:i + a.chunk]).sum())
        finish()
        return loss.item()

    return step_multistage if a.chunk > 0 else step_direct


if __name__ == "__main__":
    main()
