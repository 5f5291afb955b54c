#!/usr/bin/env bash
# check-browser.sh — run the tour notebook in the classic Jupyter Notebook UI in headless Chromium
# (tools/browsercheck, chromedp): start the server on 127.0.0.1 with a random token, run all cells,
# assert no error output and at least one rendered image, save a screenshot. Then open every HTML
# export (notebooks/*.html) offline, page scripts off, and fail on a formula left as TeX or a first
# result below the first screen (out/browser/<name>-export.png: each export's first screen).
#
#   scripts/check-browser.sh                                   # out/browser/00_tour.png
#   scripts/check-browser.sh -notebook notebooks/00_tour.ipynb -out /tmp/b -timeout 5m
#
# Needs the notebook stack (scripts/install-notebook-stack.sh) and Debian's Chromium
# (apt-get install chromium; installed here when missing and apt-get is available).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOMLX_BACKEND=${GOMLX_BACKEND:-go}
export GOMLX_NO_AUTO_INSTALL=1 GOFLAGS=${GOFLAGS:--modcacherw} PYDEVD_DISABLE_FILE_VALIDATION=1
gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH

if ! command -v chromium >/dev/null; then
	sudo=()
	[[ $(id -u) != 0 ]] && sudo=(sudo)
	echo "check-browser: apt-get install chromium" >&2
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
		--no-install-recommends chromium >/dev/null
fi
mkdir -p out/bin
(cd tools && go build -o ../out/bin/browsercheck ./browsercheck)
t0=$(date +%s)
out/bin/browsercheck -chromium "$(command -v chromium)" "$@"
out/bin/browsercheck -chromium "$(command -v chromium)" -exports 'notebooks/*.html' "$@"
echo "check-browser: ok in $(($(date +%s) - t0)) s"
