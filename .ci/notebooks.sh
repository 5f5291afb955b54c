#!/usr/bin/env bash
# .ci/notebooks.sh — the notebook part of CI (called by .ci/run):
#   1. install the pinned notebook stack if needed (scripts/install-notebook-stack.sh);
#   2. execute and check every notebook at SCALE=smoke (scripts/check-notebooks.sh);
#   3. run the tour in the classic Notebook UI in headless Chromium (scripts/check-browser.sh);
#      NB_BROWSER_CHECK=0 skips it.
# Extra arguments go to scripts/check-notebooks.sh. Outputs: out/notebooks/, out/browser/.
#
# Budget: the whole step must stay under 10 minutes. Measured on the 2-core CI machine type
# (shared): install ~60 s cold, ~2 s when done; tour notebook ~100 s with cold Go caches, ~12 s
# warm; browser check ~20 s warm (+ ~50 s to build the chromedp program once, + ~1-2 min apt for
# Chromium on a bare machine). To keep it fast, cache between CI runs:
#   $(go env GOMODCACHE)  $(go env GOCACHE)  $(go env GOPATH)/bin  ~/.local/share/jupyter/kernels/gonb
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
t0=$(date +%s)
scripts/install-notebook-stack.sh
timeout 600 scripts/check-notebooks.sh "$@"
if [[ ${NB_BROWSER_CHECK:-1} != 0 ]]; then
	timeout 420 scripts/check-browser.sh
fi
echo ".ci/notebooks.sh: ok in $(($(date +%s) - t0)) s"
