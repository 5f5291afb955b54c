#!/usr/bin/env python3
"""memory-account.py — where a training step's memory goes, dmlkit's graph beside PyTorch's autograd (issue 35 item 2).

For each gpucheck bench case (smallcnn, resnet50, vit_b16, idml_pa, rsk_multistage's stage 3 on one
chunk) and precision (fp32, bf16) it records:
  dmlkit   `gpucheck memory`: the step's graph as dmlkit builds it for XLA (native convolutions, fused
           BatchNorm, plain MatMul), accounted without running it (dmlkit/train.MeasureStepMemory) — the
           variables (weights, BatchNorm statistics, optimiser state), the batch, and the activations:
           the forward tensors the backward pass reads. Three graphs: as the GPU runs of 2026-11-25/26
           compiled it (composite BatchNorm, autodiff's ReLU, sliced stem max-pool), with the fused
           BatchNorm alone, and now (fused BatchNorm + models.XLAMemoryPaths). "if fused": the
           activations left if XLA recomputes every cheap producer inside the backward fusions that read it.
  PyTorch  scripts/gpucheck_torch.py --saved-tensors: the tensors the same model's autograd graph saves
           (each storage once; parameters and the batch left out), on the CPU with torch 1.13 — the same
           tensors PyTorch CUDA saves, except attention, where torch >= 2 saves less through
           scaled_dot_product_attention.
dmlkit is accounted at the bench case's batch (a graph costs nothing to build); PyTorch runs forward
passes at batches 8 and 16 and is extrapolated linearly to the bench batch (the activations are linear
in the batch but for the loss's B x B terms, which are small here); dmlkit's own batch 8 and 16 accounts
give its slope beside PyTorch's.

Usage (BIN built with -ldflags "-X main.buildCommit=$(git rev-parse --short HEAD)", so the report names its commit):
  scripts/memory-account.py --gpucheck BIN [--python /usr/bin/python3] --md OUT.md --json OUT.json
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile

CASES = ["smallcnn", "resnet50", "vit_b16", "idml_pa", "rsk_multistage"]
PRECISIONS = ["fp32", "bf16"]
SWEEP = [8, 16]
GIB = float(1 << 30)


def run_json(cmd):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "part.json")
        p = subprocess.run(cmd + ["--json", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if not os.path.exists(out):
            raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-2000:]))
        with open(out) as f:
            rep = json.load(f)
    if not rep.get("ok"):
        raise RuntimeError("%s: %s" % (" ".join(cmd), rep.get("error")))
    return rep


def dmlkit(a, case, precision, batch=0, bn="fused", paths=True):
    cmd = [a.gpucheck, "memory", "--case", case, "--precision", precision, "--bn", bn,
           "--xla-memory-paths=%s" % ("true" if paths else "false")]
    if batch:
        cmd += ["--batch", str(batch)]
    return run_json(cmd)


def torch(a, case, precision, batch):
    args = subprocess.run([a.gpucheck, "torchargs", "--case", case, "--precision", precision],
                          stdout=subprocess.PIPE, text=True, check=True).stdout.split()
    return run_json([a.python, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpucheck_torch.py")] + args +
                    ["--batch", str(batch), "--chunk", "0", "--device", "cpu", "--saved-tensors", "1"])


def images(rep):
    """Images a step (or a chunk) of a gpucheck memory part."""
    return rep["account"]["batch"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpucheck", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--md", required=True)
    ap.add_argument("--json", required=True)
    a = ap.parse_args()
    rows = []
    for case in CASES:
        for prec in PRECISIONS:
            r = {"case": case, "precision": prec}
            r["before"] = dmlkit(a, case, prec, bn="composite", paths=False)["account"]
            r["fused_bn"] = dmlkit(a, case, prec, paths=False)["account"]
            now = dmlkit(a, case, prec)
            r["now"], r["images"] = now["account"], images(now)
            r["dmlkit_sweep"], sweep_acc = {}, {}
            for b in SWEEP:
                acc = sweep_acc[b] = dmlkit(a, case, prec, batch=b)["account"]
                r["dmlkit_sweep"][b] = acc["saved"] + acc["param_derived"]
            r["torch_sweep"] = {}
            for b in SWEEP:
                t = torch(a, case, prec, b)
                r["torch_sweep"][b] = t["saved_bytes"]
                r["torch_params"] = t["param_bytes"]
                r["torch_device"] = t.get("device", "")
                r["torch_version"] = t.get("torch_version", "")
                if b == SWEEP[0]:
                    r["torch_by_op"] = t["saved_by_op"]
            (b0, b1) = SWEEP
            # batch -> images: idml_pa's mixup doubles the images; rsk's chunk is the batch.
            per = 2 if case == "idml_pa" else 1
            slope = (r["torch_sweep"][b1] - r["torch_sweep"][b0]) / float((b1 - b0) * per)
            r["torch_slope"] = slope
            r["torch_at_images"] = r["torch_sweep"][b0] + slope * (r["images"] - b0 * per)
            r["dmlkit_slope"] = (r["dmlkit_sweep"][b1] - r["dmlkit_sweep"][b0]) / float((b1 - b0) * per)
            if case in ("resnet50", "vit_b16") and prec == "fp32":
                r["dmlkit_by_op_8"] = sweep_acc[8]
            rows.append(r)
            print("%s %s: dmlkit now %.2f GiB (before %.2f), PyTorch %.2f GiB" % (
                case, prec, r["now"]["saved"] / GIB, r["before"]["saved"] / GIB, r["torch_at_images"] / GIB), file=sys.stderr)
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        pass
    commit = subprocess.run([a.gpucheck, "version"], stdout=subprocess.PIPE, text=True).stdout.strip() or "unknown"
    meta = {"cpu": cpu, "torch": rows[0].get("torch_version", ""), "commit": commit}
    with open(a.json, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1, sort_keys=True)
        f.write("\n")
    write_md(a.md, rows, meta)


def g(b):
    return "%.2f" % (b / GIB)


def write_md(path, rows, meta):
    L = []
    p = L.append
    p("# Where a training step's memory goes: dmlkit's graph beside PyTorch's autograd\n")
    p("Written by `scripts/memory-account.py` (issue 35 item 2) from commit %s on a CPU (%s), PyTorch %s. No step runs on a "
      "GPU here: dmlkit's side is its step graph as built for XLA, accounted by `gpucheck memory` "
      "(`train.MeasureStepMemory`); PyTorch's is the tensors its autograd graph saves "
      "(`gpucheck_torch.py --saved-tensors`), extrapolated linearly from batches 8 and 16. GiB at the bench "
      "case's images a step (rsk_multistage: one chunk's stage 3). PyTorch CUDA saves the same tensors but for "
      "two things: torch >= 2 computes attention with scaled_dot_product_attention (which keeps less than the "
      "explicit softmax torch 1.13 runs here), and CUDA autocast runs the softmax in float32 where CPU autocast "
      "keeps bfloat16 (the bf16 ViT row).\n" % (meta["commit"], meta["cpu"], meta["torch"]))
    p("**Tensors kept for the backward pass** (GiB): the activations and, in bf16, the half-precision copies of the "
      "weights the backward pass reads (PyTorch's autocast caches such copies too, and its count includes them). "
      "*Before*: the graph the GPU runs of 2026-11-25/26 compiled (composite BatchNorm; autodiff's ReLU, softmax, GELU "
      "and LayerNorm; the stem max-pool as nine slices). *Fused BN*: the fused BatchNorm alone. *Now*: fused BatchNorm "
      "and `models.XLAMemoryPaths` (gradients written from what PyTorch keeps; one reduce-window). *If cheap producers "
      "fuse*: the same graph if XLA recomputes every element-wise op, convert, broadcast, slice or transpose inside "
      "the backward fusions that read it (it also expands batch-norm-grad into such ops) — another reading of the graph, "
      "not XLA's buffer assignment, which a GPU run has to report.\n")
    p("| case | precision | images | dmlkit before | dmlkit, fused BN | dmlkit now | dmlkit now, if cheap producers fuse "
      "| PyTorch | now / PyTorch | if fused / PyTorch | MiB per image: dmlkit now / PyTorch |")
    p("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        kept = lambda acc: acc["saved"] + acc["param_derived"]
        now, fused = kept(r["now"]), r["now"]["saved_fused"] + r["now"]["param_derived"]
        p("| %s | %s | %d | %s | %s | %s | %s | %s | %.2f× | %.2f× | %.1f / %.1f |" % (
            r["case"], r["precision"], r["images"], g(kept(r["before"])), g(kept(r["fused_bn"])),
            g(now), g(fused), g(r["torch_at_images"]), now / r["torch_at_images"], fused / r["torch_at_images"],
            r["dmlkit_slope"] / 2**20, r["torch_slope"] / 2**20))
    p("")
    p("**Variables** (GiB): dmlkit's are every variable the step reads — weights, BatchNorm statistics, the "
      "optimiser's two moments; PyTorch's column is 3× its parameters (weights and Adam's two moments). "
      "Gradients take the trainable bytes again on both sides.\n")
    p("| case | precision | dmlkit variables | dmlkit trainable | PyTorch 3 × parameters | dmlkit batch input |")
    p("|---|---|---|---|---|---|")
    for r in rows:
        if r["precision"] != "fp32":
            continue
        p("| %s | %s | %s | %s | %s | %s |" % (r["case"], r["precision"], g(r["now"]["variables"]),
                                             g(r["now"]["trainable"]), g(3 * r["torch_params"]), g(r["now"]["inputs"])))
    p("")
    for r in rows:
        if "dmlkit_by_op_8" not in r:
            continue
        acc = r["dmlkit_by_op_8"]
        p("**%s, fp32, batch 8: the kept tensors by the op that made them** (MiB)\n" % r["case"])
        p("| dmlkit op | tensors | MiB | | PyTorch saved by | tensors | MiB |")
        p("|---|---|---|---|---|---|---|")
        d = acc["saved_by_op"][:8]
        t = list(r["torch_by_op"].items())[:8]
        for i in range(max(len(d), len(t))):
            left = "| %s | %d | %.1f |" % (d[i]["name"], d[i]["count"], d[i]["bytes"] / 2**20) if i < len(d) else "| | | |"
            right = " | %s | %d | %.1f |" % (t[i][0], t[i][1][0], t[i][1][1] / 2**20) if i < len(t) else " | | | |"
            p(left + right)
        p("| total | | %.1f | | total | | %.1f |" % (acc["saved"] / 2**20, r["torch_sweep"][8] / 2**20))
        p("")
    with open(path, "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
