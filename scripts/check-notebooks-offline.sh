#!/usr/bin/env bash
# check-notebooks-offline.sh — execute notebooks (default: the tour) with no module download and no
# checksum lookup possible, as on an air-gapped node or a laptop on a plane, after
# scripts/install-notebook-stack.sh:
#
#   - GOPROXY=off: nothing can be downloaded; every module must already be in the module cache;
#   - GOSUMDB names a checksum database that no machine has cached and that nobody can reach
#     (sumdb.invalid, at https://127.0.0.1:9): any module whose hash is not in the notebook
#     module's go.sum fails with "verifying module: …". sum.golang.org itself would not catch that
#     here: its lookups are cached in the module cache once a machine has been online, so an
#     unreachable sum.golang.org only fails on machines that never looked the modules up (the
#     container images);
#   - GONOSUMDB, GOPRIVATE and GOINSECURE empty (also in `go env -w`'s file) and GOFLAGS=-modcacherw:
#     verification stays on for every module;
#   - as root with unshare and ip: in a network namespace with only loopback (no network at all).
#
# Before the notebooks, a canary proves that the setting catches the failure: `go get` of a pinned
# module into an empty module (no go.sum) must fail with "verifying module". Then
# scripts/check-notebooks.sh executes the notebooks (without its lint; outputs in
# out/notebooks-offline/, or $NBCHECK_OUT).
#
#   scripts/check-notebooks-offline.sh                        # the tour
#   scripts/check-notebooks-offline.sh notebooks/tcm_opis.ipynb
#
# The go1.27.4 toolchain that go.mod pins is resolved first (GOTOOLCHAIN=auto: from the module cache,
# where install-notebook-stack.sh left it) and put first on PATH with GOTOOLCHAIN=local, as in the
# images: switching toolchains verifies the toolchain module against sum.golang.org's cached lookups,
# which the stand-in checksum database above does not have.
#
# Measured on the 2-core CI machine type (shared with other jobs, load average ~4), warm Go caches:
# the tour 44 s in all, the canary < 1 s. Before the setup cells wrote the checkout's go.sum files
# into GoNB's module, every Go cell of the tour failed here in 12 s ("verifying module:
# github.com/gomlx/compute@v0.1.14 … connection refused"; 8 problems, no image).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# The Go toolchain go.mod pins, first on PATH.
goroot=$(GOTOOLCHAIN=${GOTOOLCHAIN:-auto} go env GOROOT)
want=$(awk '$1 == "toolchain" {print $2}' go.mod)
have=$("$goroot/bin/go" env GOVERSION)
[[ -z $want || $want == "$have" ]] || { echo "check-notebooks-offline: go.mod wants $want, resolved $have" >&2; exit 1; }
export PATH=$goroot/bin:$PATH GOTOOLCHAIN=local

# A checksum database nobody has cached or can reach (its key made with golang.org/x/mod/sumdb/note.GenerateKey).
export GOPROXY=off GOSUMDB="sumdb.invalid+9609df31+AR/Y6A60wYhZAEF0LPDu2J1MitrNGI3xmjQb4F224jQP https://127.0.0.1:9"
export GOFLAGS=-modcacherw
unset GONOSUMDB GOPRIVATE GOINSECURE
for v in GONOSUMDB GOPRIVATE GOINSECURE; do
	[[ -z $(go env "$v") ]] || { echo "check-notebooks-offline: $v=$(go env "$v") (go env -w?) exempts modules from verification" >&2; exit 1; }
done

# The canary: without go.sum entries, verification must fail.
canary=$(mktemp -d)
trap 'rm -rf "$canary"' EXIT
(cd "$canary" && go mod init canary >/dev/null 2>&1 && go mod edit -go=1.27 -toolchain="$have")
if out=$(cd "$canary" && go get github.com/gomlx/compute@v0.1.14 2>&1); then
	echo "check-notebooks-offline: the canary's go get succeeded with no go.sum: this setting would not catch a missing checksum" >&2
	exit 1
fi
grep -q 'verifying module' <<<"$out" || { echo "check-notebooks-offline: the canary failed otherwise than on verification:" >&2; echo "$out" >&2; exit 1; }
echo "check-notebooks-offline: canary ok (no go.sum: $(head -1 <<<"$out" | cut -c1-120)…)"

nbs=("$@")
((${#nbs[@]})) || nbs=(notebooks/00_tour.ipynb)
export NB_LINT=0 NBCHECK_OUT=${NBCHECK_OUT:-out/notebooks-offline}
if [[ $(id -u) == 0 ]] && command -v unshare >/dev/null && command -v ip >/dev/null; then
	echo "check-notebooks-offline: ${nbs[*]} in a network namespace with only loopback, GOPROXY=off, GOSUMDB=sumdb.invalid"
	exec unshare -n bash -c 'ip link set lo up && exec scripts/check-notebooks.sh "$@"' bash "${nbs[@]}"
fi
echo "check-notebooks-offline: ${nbs[*]} with GOPROXY=off, GOSUMDB=sumdb.invalid (not root: the network stays up)"
exec scripts/check-notebooks.sh "${nbs[@]}"
