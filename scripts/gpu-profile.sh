#!/usr/bin/env bash
# gpu-profile.sh — where the time of one ResNet-50 training step goes, in each framework (issue 49 item 2).
#
#   scripts/gpu-profile.sh --out DIR [--case resnet50] [--precision fp32] [--timeout SECONDS]
#
# On the GPU machine, after `gpu-check.sh` (same binary, bin/gpucheck/dmlkit-gpucheck, carried):
#   1. dmlkit's bench of the case, 2 steps, with XLA's autotuning results dumped
#      (--xla_gpu_dump_autotune_results_to): the same convolution and GEMM choices as the bench;
#   2. the same bench, 3 steps, under Nsight Compute (ncu, one metric: gpu__time_duration.sum, clocks left
#      alone) with those results loaded, so that no autotuning kernel runs under the profiler: every kernel
#      of the compiled step, one line each, in DIR/ncu.csv;
#   3. PyTorch's step (scripts/gpucheck_torch.py, same case) under torch.profiler: DIR/torch-profile.json,
#      the ops with the most self CUDA time per step.
# Not yet run on a GPU (2026-11-28's device time ran out first): its two files are to be read by hand
# (ncu.csv: one row per kernel launch, the step's kernels are the ones repeated 3 times).
# Each stage runs under --timeout (default 150 s); a stage that fails or times out is logged, not fatal.
set -u -o pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out="" case=resnet50 prec=fp32 limit=150
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --case) case=$2; shift ;;
    --precision) prec=$2; shift ;;
    --timeout) limit=$2; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-profile.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || { echo "gpu-profile.sh: --out DIR is required" >&2; exit 2; }
bin=bin/gpucheck/dmlkit-gpucheck
[ -x "$bin" ] || { echo "gpu-profile.sh: no binary at $bin" >&2; exit 2; }
mkdir -p "$out"
sites=$(python3 -c 'import site, sys; print("\n".join(dict.fromkeys(site.getsitepackages() + [p for p in sys.path if p])))')
plugin=$(for s in $sites; do ls -1 "$s"/jax_plugins/xla_cuda*/*.so 2>/dev/null; done | sort -u | grep -m1 cuda13)
[ -n "$plugin" ] || { echo "gpu-profile.sh: no CUDA PJRT plugin under $sites" >&2; exit 2; }
nvlibs=$(for s in $sites; do ls -d "$s"/nvidia/*/lib 2>/dev/null; done | paste -sd: -)
[ -n "$nvlibs" ] && export LD_LIBRARY_PATH="$nvlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GOMLX_BACKEND="xla:$plugin" GOMLX_NO_AUTO_INSTALL=1
at=$(mktemp -d)/autotune.textproto
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
rc=0
echo "== 1. dmlkit $case $prec, autotuning results to $at"
XLA_FLAGS="--xla_gpu_dump_autotune_results_to=$at" timeout "$limit" "$bin" bench --case "$case" --precision "$prec" --steps 2 || rc=1
if [ -s "$at" ] && [ -n "$ncu" ]; then
  echo "== 2. $ncu on dmlkit $case $prec (3 steps), autotuning results loaded"
  XLA_FLAGS="--xla_gpu_load_autotune_results_from=$at" timeout "$limit" "$ncu" --clock-control none \
    --metrics gpu__time_duration.sum --csv --log-file "$out/ncu.csv" "$bin" bench --case "$case" --precision "$prec" --steps 3 || rc=1
else
  echo "== 2. skipped: autotuning results ${at} empty or ncu not found (${ncu:-none})"; rc=1
fi
echo "== 3. PyTorch $case $prec under torch.profiler"
# shellcheck disable=SC2046
timeout "$limit" env PYTHONUNBUFFERED=1 python3 scripts/gpucheck_torch.py $("$bin" torchargs --case "$case" --precision "$prec") \
  --steps 4 --profile-top 15 --device cuda --json "$out/torch-profile.json" || rc=1
echo "gpu-profile.sh: exit $rc"
exit $rc
