"""PyTorch 1.13 reference implementations of dmlkit's proposed losses, for timing comparisons.

Run by dmlkit/losses/bench_test.go (TestBenchLosses, DMLKIT_BENCH=1) as

    OPENBLAS_CORETYPE=Cooperlake OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 losses_ref.py CASE EMB LABELS B D REPS

EMB is a raw little-endian float32 [B, D] file, LABELS a raw int64 [B] file (batches are
class-contiguous with equal class counts, as the authors' codes need). It prints one JSON line:
{"case", "value", "seconds"} with seconds the median forward+backward time over REPS runs after one
warm-up. The formulas are the papers' (same defaults and options as the Go side of the benchmark):

  rsk_simix   RS@k (seed 003 Eq. 4-7, query excluded, clipping, exponent clamp ±50) with SiMix
              (Eq. 8-10) by similarity mixing, α = 0.5, K = {1,2,4,8,12,...,32}, τ1 = 1, τ2 = 0.01;
              the [N, P, N] rank tensor in query chunks of ~16M elements with checkpointing.
  contextual  seed 004 Eq. 1-7 as in the paper's pseudocode (topk, straight-through step with
              gradient α = 10), k = 4, ε = 0.05, λ = 0.4, γ = 0.1, δ± = 0.75/0.6, s̃ = 0.3.
  smoothap    Smooth-AP (τ = 0.01, query excluded) alone.
  smoothap_tcm  Smooth-AP + TCM (seed 000 Eq. 5, m± = 0.9/0.5, λ± = 1).
  tcm_overhead  smoothap, smoothap_tcm and tcm alone, interleaved run by run (at least 5 rounds);
              prints their medians as Base, Combined, TCM.
"""
import json
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.set_num_threads(2)


def sig_clamped(x, tau):
    return 1.0 / (1.0 + torch.exp(torch.clamp(-x / tau, -50, 50)))


def _rank_chunk(rows, sx_rows, tau2):
    return sig_clamped(rows[:, None, :] - sx_rows[:, :, None], float(tau2)).sum(-1)


def rsk_simix(emb, labels, spc, ks=(1, 2, 4, 8, 12, 16, 20, 24, 28, 32), tau1=1.0, tau2=0.01, alpha=0.5):
    b = emb.shape[0]
    e = F.normalize(emb, dim=1)
    s = e @ e.t()
    ncls = b // spc
    pi, pj = torch.triu_indices(spc, spc, 1)
    npair = pi.numel()
    base = (torch.arange(ncls) * spc)[:, None]
    # Items ordered class by class: spc originals then npair virtual examples.
    per = spc + npair
    i1 = torch.cat([base + torch.arange(spc)[None], base + pi[None]], 1).reshape(-1)
    i2 = torch.cat([base + torch.arange(spc)[None], base + pj[None]], 1).reshape(-1)
    w1 = torch.cat([torch.ones(ncls, spc), torch.full((ncls, npair), alpha)], 1).reshape(-1)
    w2 = 1 - w1
    a = w1[:, None] * s[i1] + w2[:, None] * s[i2]          # Eq. 9
    sall = a[:, i1] * w1[None] + a[:, i2] * w2[None]       # Eq. 10
    n = sall.shape[0]
    # Positives of item q: the other per-1 items of its class block.
    q = torch.arange(n)
    blk = (q // per) * per
    off = torch.arange(per - 1)[None]
    pos = blk[:, None] + off + (off >= (q % per)[:, None]).long()   # skip q itself
    sx = sall.gather(1, pos)                                        # [N, P]
    # Σ_z σ((s_qz − s_qx)/τ2) over all z, by chunks of queries under activation checkpointing so the
    # [N, P, N] tensor is never held whole (same memory scheme as the Go side).
    chunk = max(1, (1 << 24) // (sx.shape[1] * n))
    total = torch.cat([checkpoint(_rank_chunk, sall[a:a + chunk], sx[a:a + chunk], torch.tensor(tau2))
                       for a in range(0, n, chunk)])
    # Ω = B ∖ {q}, z ≠ x: subtract the z = x term (σ(0)) and the z = q term.
    self_q = sig_clamped(sall[q, q][:, None] - sx, tau2)
    rank = 1 + total - 0.5 - self_q
    npos = per - 1
    loss = 0
    for k in ks:
        num = sig_clamped(k - rank, tau1).sum(1).clamp(max=k)
        loss = loss + (1 - num / min(k, npos))
    return (loss / len(ks)).mean()


class _Step(torch.autograd.Function):
    alpha = 10.0

    @staticmethod
    def forward(ctx, x):
        return (x >= 0).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g * _Step.alpha


def contextual(emb, labels, k=4, eps=0.05, lam=0.4, gamma=0.1, dpos=0.75, dneg=0.6, s_tilde=0.3):
    f = F.normalize(emb, dim=1)
    s = f @ f.t()
    y = (labels[:, None] == labels[None]).to(s.dtype)
    d = 2 - 2 * s
    dk = -(-d).topk(k, dim=1).values[:, -1:]
    nk = _Step.apply(-d + dk.detach() + eps)
    mplus = (nk @ nk.t()) / nk.sum(1, keepdim=True).detach()
    nn_ = 1 - nk
    mminus = (nn_ @ nn_.t()) / nn_.sum(1, keepdim=True).detach()
    w1 = 0.5 * (mplus + mminus) * nk
    dk2 = -(-d).topk(k // 2, dim=1).values[:, -1:]
    nk2 = _Step.apply(-d + dk2.detach() + eps)
    r = nk2 * nk2.t()
    w2 = (r @ w1) / r.sum(1, keepdim=True)
    w = 0.5 * (w2 + w2.t())
    n = s.shape[0]
    offdiag = 1 - torch.eye(n)
    lctx = ((y - w).square() * offdiag).sum() / (n * n)
    lreg = (s.mean() - s_tilde).square()
    pos = y * offdiag
    neg = 1 - y
    tp = F.relu(dpos - s) * pos
    tn = F.relu(s - dneg) * neg
    lcon = tp.sum() / (tp > 0).sum().clamp(min=1) + tn.sum() / (tn > 0).sum().clamp(min=1)
    return lam * lctx + (1 - lam) * lcon + gamma * lreg


def smoothap(emb, labels, tau=0.01):
    e = F.normalize(emb, dim=1)
    s = e @ e.t()
    b = s.shape[0]
    eye = torch.eye(b, dtype=torch.bool)
    pos = (labels[:, None] == labels[None]) & ~eye
    cand = ~eye
    diff = s[:, None, :] - s[:, :, None]                 # [i, p, k] = s_ik − s_ip
    g = torch.sigmoid(diff / tau)
    notpk = ~eye[None]
    posk = pos[:, None, :] & notpk
    negk = (cand & ~pos)[:, None, :] & notpk
    rank_pos = 1 + (g * posk).sum(-1)
    rank_all = rank_pos + (g * negk).sum(-1)
    npos = pos.sum(1)
    ap = ((rank_pos / rank_all) * pos).sum(1) / npos.clamp(min=1)
    valid = npos > 0
    return (1 - ap)[valid].mean()


def tcm(emb, labels, mpos=0.9, mneg=0.5):
    e = F.normalize(emb, dim=1)
    s = e @ e.t()
    b = s.shape[0]
    eye = torch.eye(b, dtype=torch.bool)
    same = labels[:, None] == labels[None]
    hp = same & ~eye & (s <= mpos)
    hn = ~same & (s >= mneg)
    lp = ((mpos - s) * hp).sum() / hp.sum().clamp(min=1)
    ln = ((s - mneg) * hn).sum() / hn.sum().clamp(min=1)
    return lp + ln


def main():
    case, emb_path, lab_path = sys.argv[1:4]
    b, d, reps = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    emb0 = torch.from_numpy(np.fromfile(emb_path, dtype="<f4").reshape(b, d).copy())
    labels = torch.from_numpy(np.fromfile(lab_path, dtype="<i8").copy())
    spc = int((labels == labels[0]).sum())
    if case == "tcm_overhead":
        fns = [lambda e: smoothap(e, labels), lambda e: smoothap(e, labels) + tcm(e, labels), lambda e: tcm(e, labels)]
        ts, vals = [[] for _ in fns], [None] * len(fns)
        for r in range(max(reps, 5) + 1):   # interleaved, first round is the warm-up
            for i, f in enumerate(fns):
                emb = emb0.clone().requires_grad_(True)
                t0 = time.perf_counter()
                loss = f(emb)
                loss.backward()
                dt = time.perf_counter() - t0
                vals[i] = float(loss)
                if r > 0:
                    ts[i].append(dt)
        med = [statistics.median(x) for x in ts]
        print(json.dumps({"case": case, "value": vals[1], "seconds": med[1],
                          "Base": med[0], "Combined": med[1], "TCM": med[2]}))
        return
    fn = {
        "rsk_simix": lambda e: rsk_simix(e, labels, spc),
        "contextual": lambda e: contextual(e, labels),
        "smoothap": lambda e: smoothap(e, labels),
        "smoothap_tcm": lambda e: smoothap(e, labels) + tcm(e, labels),
        "tcm": lambda e: tcm(e, labels),
    }[case]
    times, value = [], None
    for r in range(reps + 1):
        emb = emb0.clone().requires_grad_(True)
        t0 = time.perf_counter()
        loss = fn(emb)
        loss.backward()
        dt = time.perf_counter() - t0
        value = float(loss)
        if r > 0:
            times.append(dt)
    print(json.dumps({"case": case, "value": value, "seconds": statistics.median(times)}))


if __name__ == "__main__":
    main()
