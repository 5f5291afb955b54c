#!/usr/bin/env bash
# check-notebooks.sh — execute every notebooks/*.ipynb headless with the GoNB kernel (nbconvert /
# nbclient) at SCALE=smoke and fail on an error output, a missing or broken image, or a cell over
# its budget; then lint the committed notebooks (`nbcheck -lint`, as TestCommittedNotebooks: each
# committed with outputs, no machine paths, an up-to-date HTML export; NB_LINT=0 skips it). The
# checker is scripts/nbcheck (Go); this script sets up its environment.
#
#   scripts/check-notebooks.sh                        # all notebooks, outputs in out/notebooks/
#   scripts/check-notebooks.sh notebooks/00_tour.ipynb
#   NBCHECK_OUT=/results/notebooks scripts/check-notebooks.sh -scale small
#
# Flags before the notebook names go to nbcheck (-scale, -budget, -check-only; see its doc).
# Needs the notebook stack: scripts/install-notebook-stack.sh.
#
# What makes a rerun fast: the Go module cache and build cache (go env GOMODCACHE GOCACHE) —
# GoNB builds every cell with the ordinary go command, so a warm build cache turns a ~2 min cold
# run of the tour into ~20 s. Keep gopls off PATH: it indexes in the background and competes for
# the CPU.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOMLX_BACKEND=${GOMLX_BACKEND:-go}
export GOMLX_NO_AUTO_INSTALL=1 GOFLAGS=${GOFLAGS:--modcacherw} PYDEVD_DISABLE_FILE_VALIDATION=1
gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH

out=${NBCHECK_OUT:-out/notebooks}
mkdir -p "$out" out/bin
go build -o out/bin/nbcheck ./scripts/nbcheck
t0=$(date +%s)
set +e
out/bin/nbcheck -out "$out" "$@"
rc=$?
if [[ ${NB_LINT:-1} != 0 ]]; then
	out/bin/nbcheck -lint || rc=1
fi
set -e
echo "check-notebooks: rc=$rc in $(($(date +%s) - t0)) s; executed notebooks, logs and figures in $out/"
exit $rc
