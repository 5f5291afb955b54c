#!/usr/bin/env bash
# check-reading.sh — every page a reader opens, laid out whole in headless Chromium
# (tools/browsercheck -read): the notebooks' HTML exports (notebooks/*.html) in a 1200-px window,
# README.md and reproductions/*/README.md rendered as GitHub renders Markdown (GFM, its 980-px
# column and table style). For each page it writes the screenshots of its whole column
# (<out>/<page>/NN.png, 2000 px each: look at them), and <out>/read.json and <out>/read.md: the
# height of each page, of a notebook's results (everything above its first "Appendix" heading) and
# where that height goes (figures, tables, claims, code), and each page's sections. It fails when a
# notebook's results take more than 20,000 px, a table does not fit its column (drawn past the
# text's edge, or scrolled sideways on GitHub), an image does not load or a table cell is cut with
# "…". Pages are opened offline with their scripts off (what the HTML export shows anywhere).
#
#   scripts/check-reading.sh                        # out: ${TMPDIR:-/tmp}/dmlkit-reading
#   READ_OUT=/tmp/r scripts/check-reading.sh 'notebooks/tcm_opis.html'
#   READ_REPORT=notebooks/reading-check.md scripts/check-reading.sh   # also copy read.md there (to commit)
#
# About 2 minutes for the 7 exports and 7 READMEs on a 2-core machine (a page of 40,000 px: 15 s).
# Needs Debian's Chromium (apt-get install chromium; installed here when missing and apt-get is there).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--modcacherw}
out=${READ_OUT:-${TMPDIR:-/tmp}/dmlkit-reading}
pages=${1:-notebooks/*.html README.md reproductions/*/README.md}

if ! command -v chromium >/dev/null; then
	sudo=()
	[[ $(id -u) != 0 ]] && sudo=(sudo)
	echo "check-reading: apt-get install chromium" >&2
	"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
		--no-install-recommends chromium >/dev/null
fi
mkdir -p out/bin "$out"
(cd tools && go build -o ../out/bin/browsercheck ./browsercheck)
t0=$(date +%s)
rc=0
out/bin/browsercheck -chromium "$(command -v chromium)" -read "$pages" -out "$out" -timeout 15m || rc=$?
if [[ -n ${READ_REPORT:-} && -f $out/read.md ]]; then
	cp "$out/read.md" "$READ_REPORT"
	echo "check-reading: wrote $READ_REPORT"
fi
echo "check-reading: $([[ $rc == 0 ]] && echo ok || echo FAILED) in $(($(date +%s) - t0)) s; screenshots and read.md in $out"
exit "$rc"
