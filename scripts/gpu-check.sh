#!/usr/bin/env bash
# gpu-check.sh — the GPU check bundle of issue 22: dmlkit on an accelerator (XLA/PJRT with the CUDA
# plugin of the machine's JAX install) against the pure-Go backend and PyTorch on the same machine.
#
# Phases (each one process or more, each under a timeout; results appended to <out>/parts.jsonl):
#   device   list the backend, the PJRT plugin and the devices; fail naming the environment it needs
#   losses   every registered loss: float32 value and gradient on the device vs the Go backend (tf32=false)
#   metrics  exact kNN on the device + retrieval metrics on a 60,502 × 512 SOP-sized random set vs
#            dmlkit/metrics on the CPU (tf32=false)
#   bench    training-step time: small CNN b256 28², ResNet-50 b64 224², ViT-B/16 b64 224², RS@k
#            multistage ResNet-50 b4000 in chunks of 250, IDML-ProxyAnchor ResNet-50 b120 + 120 mixup
#            images (512 + 512 heads, AdamW; --cases idml_pa, not in the default list) — dmlkit (XLA
#            defaults, TF32 on) and the same models in PyTorch (scripts/gpucheck_torch.py, TF32 on); ratios and peak GPU memory;
#            each case in every precision of --precisions (default fp32,bf16: dmlkit train.precision beside
#            PyTorch AMP, torch.autocast; fp16 also possible), one report row per case and precision; dmlkit's
#            part also holds XLA's memory report of every executable it compiled (code, inputs, outputs, aliases,
#            temporary), the step's beside nvidia-smi's peak in the report
#   smoke    each reproductions/*/spec.yaml at scale full, one run per backbone/batch/multistage
#            group, a few steps on synthetic images
# then `gpucheck report` writes <out>/<date>-<gpu>.json and .md (the JSON report and the summary).
#
# Usage (GPU machine; the binary is built elsewhere, see README "GPU check"):
#   scripts/gpu-check.sh --out DIR [--phases device,losses,metrics,bench,smoke] [--deadline SECONDS]
#                        [--cases smallcnn,resnet50,vit_b16,rsk_multistage,idml_pa] [--smoke-steps N]
#                        [--precisions fp32,bf16,fp16]   (bench rows; default fp32,bf16)
#                        [--smoke-only I,J,...]   (representatives by index, in that order)
# CPU dry run here (Go backend on both sides, PyTorch CPU, sizes scaled down, a few minutes on 2 cores):
#   scripts/gpu-check.sh --cpu            (writes reproductions/gpu/cpu-dryrun-<date>.{json,md})
# Re-render a report from the parts of several runs (e.g. the two device calls), then the README's
# generated GPU block from every report in reproductions/gpu (`gpucheck readme`):
#   scripts/gpu-check.sh --report DIR1,DIR2 --out reproductions/gpu
#
# Exit status: 0 when every phase ran and every check agreed; 1 on a mismatch or a failed phase;
# 2 on a usage or set-up error (no binary, no plugin).
#
# Device time measured on one H100 (2026-11-25, reproductions/gpu/2026-11-25-h100.md):
#   machine start and working-tree copy ~0.5 min (counted as device time)
#   device 2 s · losses 63 s · metrics 33 s · bench smallcnn 5 + 18 s, resnet50 35 + 28 s,
#   vit_b16 83 + 16 s (dmlkit + PyTorch, compilation included), rsk_multistage 69 + 54 s
#   · smoke 16-82 s per representative (10 representatives: about 6 min once all compile)
#   total ≈ 14 min. idml_pa (not in the default cases): 37 + 26 s on an H200 (2026-11-26).
#   These bench times are fp32 only; the bf16 rows (issue 35, not yet run on a GPU) add about as
#   much again. One device command may run 10 minutes, so a session runs it as two calls:
#   --phases device,losses,metrics,bench --cases smallcnn,resnet50,vit_b16 (≈ 5.5 min), then
#   --phases device,bench,smoke --cases rsk_multistage (≈ 8 min), each with --deadline 540
#   (phases that would not finish in time are skipped and reported). For the precision comparison
#   alone: --phases device,bench --cases resnet50,vit_b16 --precisions fp32,bf16, then
#   --phases device,bench --cases rsk_multistage,idml_pa --precisions fp32,bf16.
set -u -o pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"

mode=gpu
scale=""
phases=device,losses,metrics,bench,smoke
out=""
bin=""
deadline=0
report_dirs=""
smoke_steps=3
cases=smallcnn,resnet50,vit_b16,rsk_multistage
precisions=fp32,bf16
smoke_only=""
date_tag=$(date -u +%Y-%m-%d)

usage() { sed -n '2,45p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) mode=cpu ;;
    --scale) scale=$2; shift ;;
    --phases) phases=$2; shift ;;
    --out) out=$2; shift ;;
    --bin) bin=$2; shift ;;
    --deadline) deadline=$2; shift ;;
    --report) report_dirs=$2; shift ;;
    --smoke-steps) smoke_steps=$2; shift ;;
    --cases) cases=$2; shift ;;
    --precisions) precisions=$2; shift ;;
    --smoke-only) smoke_only=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "gpu-check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$scale" ] || { [ $mode = cpu ] && scale=small || scale=full; }

die() { echo "gpu-check.sh: $*" >&2; exit 2; }

# --- the binary -------------------------------------------------------------------------------
if [ -z "$bin" ]; then
  if [ $mode = cpu ]; then bin=bin/gpucheck/dmlkit-gpucheck-cpu; else bin=bin/gpucheck/dmlkit-gpucheck; fi
fi
if [ $mode = cpu ] && [ -z "$report_dirs" ]; then
  # The dry run builds its own (pure-Go backend, SIMD) binary; a GPU machine has no Go.
  echo "building $bin (GOEXPERIMENT=simd, pure-Go backend)"
  GOTOOLCHAIN=auto GOEXPERIMENT=simd go build -ldflags="-X main.buildCommit=$(git rev-parse --short HEAD 2>/dev/null)" -o "$bin" ./cmd/gpucheck || die "go build failed"
fi
if [ ! -x "$bin" ]; then
  [ -n "$report_dirs" ] && command -v go >/dev/null && { GOTOOLCHAIN=auto go build -o "$bin" ./cmd/gpucheck || die "go build failed"; }
  [ -x "$bin" ] || die "no binary at $bin. Build it on a machine with Go (the GPU machine has none) and carry it along:
  GOTOOLCHAIN=auto CGO_ENABLED=1 go build -tags xla -ldflags=\"-s -w -X main.buildCommit=\$(git rev-parse --short HEAD)\" -o bin/gpucheck/dmlkit-gpucheck ./cmd/gpucheck
and name bin/gpucheck in the device tool's carry list."
fi

# --- report only ------------------------------------------------------------------------------
if [ -n "$report_dirs" ]; then
  [ -n "$out" ] || out=reproductions/gpu
  mkdir -p "$out"
  args=()
  IFS=, read -ra ds <<<"$report_dirs"
  for d in "${ds[@]}"; do args+=(--parts "$d"); done
  gpu=$(sed -n 's/^gpu_slug=//p' "${ds[0]}/meta.txt" 2>/dev/null | head -1)
  d0=$(sed -n 's/^date=//p' "${ds[0]}/meta.txt" 2>/dev/null | head -1)
  name="${d0:-$date_tag}-${gpu:-gpu}"
  "$bin" report "${args[@]}" --json "$out/$name.json" --md "$out/$name.md" --title "dmlkit GPU check: ${gpu:-gpu}, ${d0:-$date_tag}"
  rc=$?
  # The README's generated GPU block, from every stored report (here, where the repository is).
  if [ "$out" = reproductions/gpu ] && grep -q 'dmlkit:gpu:begin' README.md 2>/dev/null; then
    "$bin" readme --reports reproductions/gpu --readme README.md || rc=1
  fi
  exit $rc
fi

# --- environment --------------------------------------------------------------------------------
if [ $mode = cpu ]; then
  py=python3
  for p in /usr/bin/python3 python3; do
    if $p -c 'import torch' 2>/dev/null; then py=$p; break; fi
  done
  $py -c 'import torch' 2>/dev/null || die "PyTorch is not importable (Debian: apt-get install python3-torch)"
  export GOMLX_BACKEND=go
  check_backend=go
  bench_backend=go
  torch_device=cpu
  gpu_slug=cpu
  gpu_name=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)
  [ -n "$out" ] || out=reproductions/gpu
  work=$(mktemp -d "${TMPDIR:-/tmp}/gpucheck-cpu-XXXXXX")
  report_base="cpu-dryrun-$date_tag"
  title="dmlkit GPU check — CPU dry run ($gpu_name), $date_tag"
  export OMP_WAIT_POLICY=PASSIVE
else
  py=python3
  [ -n "$out" ] || die "--out DIR is required on the GPU machine (the device tool returns only what is written under \$OUT: use --out \$OUT/gpucheck)"
  work="$out"
  command -v nvidia-smi >/dev/null || echo "warning: nvidia-smi not found: no GPU memory sampling" >&2
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
  gpu_slug=$(echo "$gpu_name" | grep -oiE 'h100|h200|a100|l40s|l4|b200|gh200' | head -1 | tr 'A-Z' 'a-z')
  [ -n "$gpu_slug" ] || gpu_slug=gpu
  # The CUDA PJRT plugin of the JAX install: site-packages/jax_plugins/xla_cuda*/xla_cuda_plugin.so
  sites=$($py -c 'import site, sys; print("\n".join(dict.fromkeys(site.getsitepackages() + [site.getusersitepackages()] + [p for p in sys.path if p])))' 2>/dev/null)
  plugins=$(for s in $sites; do ls -1 "$s"/jax_plugins/xla_cuda*/*.so 2>/dev/null; done | sort -u)
  echo "PJRT CUDA plugins found in the Python install ($py):"
  if [ -n "$plugins" ]; then echo "$plugins" | sed 's/^/  /'; else echo "  none"; fi
  if [ -z "${GOMLX_BACKEND:-}" ]; then
    plugin=$(echo "$plugins" | grep -m1 'cuda13' || true)
    [ -n "$plugin" ] || plugin=$(echo "$plugins" | head -1)
    [ -n "$plugin" ] || die "no jax_plugins/xla_cuda*/*.so under $sites.
Install jax-cuda13-pjrt, or set GOMLX_BACKEND=xla:/abs/path/to/pjrt_plugin.so yourself; see also
GOPJRT_CUDA_CHECKS=0 (skip go-xla's nvidia/ lookup beside the plugin) and
XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda (where ptxas and libdevice are)."
    check_backend="xla:$plugin,tf32=false"
    bench_backend="xla:$plugin"
  else
    plugin=${GOMLX_BACKEND#xla:}; plugin=${plugin%%,*}
    check_backend="$GOMLX_BACKEND,tf32=false"
    bench_backend="$GOMLX_BACKEND"
  fi
  echo "plugin: $plugin"
  # cuDNN, cuBLAS, NVRTC... of the pip install, in case the plugin does not find them by itself.
  nvlibs=$(for s in $sites; do ls -d "$s"/nvidia/*/lib 2>/dev/null; done | paste -sd: -)
  [ -n "$nvlibs" ] && export LD_LIBRARY_PATH="$nvlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  if [ -z "${XLA_FLAGS:-}" ] && [ -x /usr/local/cuda/bin/ptxas ] && [ "${GOPJRT_CUDA_CHECKS:-}" = 0 ]; then
    export XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda
  fi
  torch_device=cuda
  report_base="$date_tag-$gpu_slug"
  title="dmlkit GPU check: $gpu_name, $date_tag"
fi
export GOMLX_NO_AUTO_INSTALL=1
mkdir -p "$work" "$out"
parts="$work/parts.jsonl"
phases_tsv="$work/phases.tsv"
log="$work/log.txt"
tmpd=$(mktemp -d)
trap 'rm -rf "$tmpd"' EXIT
start=$(date +%s)

{
  echo "date=$date_tag"
  echo "mode=$mode (scale $scale)"
  echo "gpu=$gpu_name"
  echo "gpu_slug=$gpu_slug"
  [ $mode = gpu ] && echo "driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)"
  [ $mode = gpu ] && echo "plugin=$plugin"
  [ $mode = gpu ] && echo "jax=$($py -c 'import jax; print(jax.__version__)' 2>/dev/null)"
  echo "torch=$($py -c 'import torch; print(torch.__version__)' 2>/dev/null)"
  echo "cpu_model=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1) ($(nproc) threads)"
  echo "backend_checks=$check_backend"
  echo "backend_bench=$bench_backend"
  # The binary's stamped commit (-X main.buildCommit); the device's copy of the tree is not the
  # local repository, so its git HEAD can name another commit (it did on 2026-11-25).
  bc=$("$bin" version 2>/dev/null)
  if [ -n "$bc" ] && [ "$bc" != unknown ]; then echo "commit=$bc"
  else echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown) (git HEAD where the script ran; binary not stamped)"; fi
  echo "estimated_device_minutes_h100=14 (measured 2026-11-25, see scripts/gpu-check.sh header)"
} >>"$work/meta.txt"

# add_part NAME FILE: append FILE's JSON object to parts.jsonl as {"name": NAME, "data": ...}.
add_part() {
  [ -s "$2" ] || return 0
  printf '{"name":"%s","data":%s}\n' "$1" "$(tr -d '\n' <"$2")" >>"$parts"
}

# time_left: seconds left before --deadline (a large number when there is none).
time_left() {
  if [ "$deadline" -le 0 ]; then echo 1000000; else echo $((deadline - ($(date +%s) - start))); fi
}

# run_step NAME TIMEOUT CMD...: run under a timeout, log, record exit status and seconds.
# Skipped (recorded, exit 0 for the phase list) when the deadline would be passed.
run_step() {
  local name=$1 limit=$2; shift 2
  local left; left=$(time_left)
  if [ "$left" -lt "$limit" ]; then
    printf '%s\t0\t0\tskipped: %ss left before --deadline, needs up to %ss\n' "$name" "$left" "$limit" >>"$phases_tsv"
    echo "== $name: skipped (deadline)" | tee -a "$log"
    return 0
  fi
  echo "== $name: $*" | tee -a "$log"
  local t0 rc; t0=$(date +%s.%N)
  timeout --kill-after=15 "$limit" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local dt; dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')
  local note=""
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && note="timeout after ${limit}s"
  printf '%s\t%s\t%.1f\t%s\n' "$name" "$rc" "$dt" "$note" >>"$phases_tsv"
  return "$rc"
}

# with_gpumem NAME CMD...: sample nvidia-smi every 100 ms around CMD, write the gpumem part.
with_gpumem() {
  local name=$1; shift
  if [ $mode != gpu ] || ! command -v nvidia-smi >/dev/null; then "$@"; return; fi
  local base; base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 >"$tmpd/mem" 2>/dev/null &
  local spid=$!
  "$@"; local rc=$?
  kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
  # A step run_step skipped (deadline) sampled an idle GPU: no part, so that it cannot stand in
  # for a sample of the same case from another call when the parts are merged.
  if tail -1 "$phases_tsv" 2>/dev/null | cut -f4 | grep -q '^skipped'; then return $rc; fi
  local peak; peak=$(sort -n "$tmpd/mem" | tail -1)
  printf '{"peak_mib": %s, "baseline_mib": %s}\n' "${peak:-0}" "${base:-0}" >"$tmpd/gpumem.json"
  add_part "gpumem-$name" "$tmpd/gpumem.json"
  return $rc
}

has_phase() { case ",$phases," in *",$1,"*) return 0 ;; esac; return 1; }

# Timeouts (seconds) of the full and the small scale.
if [ "$scale" = full ]; then
  t_dev=120 t_loss=300 t_metrics=300 t_bench=${GPUCHECK_T_BENCH:-240} t_bench_ms=${GPUCHECK_T_BENCH_MS:-360} t_torch=${GPUCHECK_T_TORCH:-150} t_smoke=300
else
  t_dev=120 t_loss=300 t_metrics=300 t_bench=300 t_bench_ms=300 t_torch=300 t_smoke=600
fi

# --- phases ---------------------------------------------------------------------------------------
fail=0
if has_phase device; then
  GOMLX_BACKEND=$check_backend run_step device "$t_dev" "$bin" device --json "$tmpd/device.json"
  rc=$?
  add_part device "$tmpd/device.json"
  if [ $rc != 0 ]; then
    echo "gpu-check.sh: the backend could not be loaded; nothing else can run (see above for the environment it needs)" | tee -a "$log" >&2
    "$bin" report --parts "$work" --json "$out/$report_base.json" --md "$out/$report_base.md" --title "$title" >/dev/null 2>&1
    exit 2
  fi
fi
if has_phase losses; then
  GOMLX_BACKEND=$check_backend run_step losses "$t_loss" "$bin" losses --scale "$scale" --json "$tmpd/losses.json" || fail=1
  add_part losses "$tmpd/losses.json"
fi
if has_phase metrics; then
  GOMLX_BACKEND=$check_backend run_step metrics "$t_metrics" "$bin" metrics --scale "$scale" --json "$tmpd/metrics.json" || fail=1
  add_part metrics "$tmpd/metrics.json"
fi
if has_phase bench; then
  for c in ${cases//,/ }; do
    for prec in ${precisions//,/ }; do
      # The report's row key: the case, "+<precision>" unless fp32 (gpucheck's benchCase.rowKey).
      key=$c; [ "$prec" = fp32 ] || key="$c+$prec"
      lim=$t_bench; [ $c = rsk_multistage ] && lim=$t_bench_ms
      rm -f "$tmpd/b.json" "$tmpd/t.json"
      GOMLX_BACKEND=$bench_backend with_gpumem "dmlkit-$key" run_step "bench-dmlkit-$key" "$lim" "$bin" bench --case $c --scale "$scale" --precision "$prec" --json "$tmpd/b.json" || fail=1
      add_part "bench-dmlkit-$key" "$tmpd/b.json"
      targs=$("$bin" torchargs --case $c --scale "$scale" --precision "$prec") || { fail=1; continue; }
      # shellcheck disable=SC2086
      with_gpumem "torch-$key" run_step "bench-torch-$key" "$t_torch" env PYTHONUNBUFFERED=1 "$py" scripts/gpucheck_torch.py $targs --device $torch_device --json "$tmpd/t.json" || fail=1
      add_part "bench-torch-$key" "$tmpd/t.json"
    done
  done
fi
if has_phase smoke; then
  n=$(GOMLX_BACKEND=$bench_backend "$bin" smoke --scale "$scale" --list 2>>"$log")
  if [ -z "$n" ]; then
    printf 'smoke\t2\t0\tcould not plan the full-scale runs (see log)\n' >>"$phases_tsv"; fail=1
  fi
  idxs=$(seq 0 $((${n:-0} - 1)))
  [ -n "$smoke_only" ] && idxs=${smoke_only//,/ }
  for i in $idxs; do
    rm -f "$tmpd/s.json"
    GOMLX_BACKEND=$bench_backend with_gpumem "smoke-$i" run_step "smoke-$i" "$t_smoke" "$bin" smoke --scale "$scale" --only $i --steps "$smoke_steps" --json "$tmpd/s.json" || fail=1
    if [ -s "$tmpd/s.json" ]; then
      add_part "smoke-$i" "$tmpd/s.json"
    elif [ "$(tail -1 "$phases_tsv" | cut -f2)" != 0 ]; then
      printf '{"phase":"smoke","ok":false,"error":"representative %d: %s","runs":[]}\n' "$i" "$(tail -1 "$phases_tsv" | cut -f4 | sed 's/"/\\"/g')" >"$tmpd/s.json"
      add_part "smoke-$i" "$tmpd/s.json"
    fi
  done
fi

echo "== report: $out/$report_base.{json,md}  (parts: $parts; $(( $(date +%s) - start ))s)" | tee -a "$log"
"$bin" report --parts "$work" --json "$out/$report_base.json" --md "$out/$report_base.md" --title "$title"
rc=$?
[ $rc = 0 ] && [ $fail != 0 ] && rc=1
echo "gpu-check.sh: exit $rc" | tee -a "$log"
exit $rc
