#!/usr/bin/env bash
# export-notebooks.sh — execute every notebooks/*.ipynb from the stored results and commit-ready:
# the executed notebook is written back into notebooks/ (normalized: no timings, stable cell
# numbering and kernel metadata, no "go: downloading" noise) and its HTML export beside it
# (notebooks/<name>.html, `jupyter nbconvert --to html`, stamped with the notebook's content hash).
# The export reads online and offline: it links nbconvert upstream's pinned CDN copies of MathJax
# and require.js (Debian's nbconvert links file:///usr/share/javascript/…, which exists only on
# the exporting machine), and every formula is typeset at export time (`nbcheck -render-math`:
# KaTeX under Node.js, as MathML that the browser draws without any script or network). Cells
# tagged hide-input show only their outputs, cells tagged hide-cell nothing (notebooks/README.md).
# Then the lint that `go test ./scripts/nbcheck` runs (TestCommittedNotebooks) checks the result.
#
#   scripts/export-notebooks.sh                          # every notebook
#   scripts/export-notebooks.sh notebooks/tcm_opis.ipynb
#
# SCALE is small (the default of every notebook: read the stored records, train nothing) — set
# explicitly, whatever the caller's environment says, and DMLKIT_RETRAIN is cleared. Figures a
# notebook draws go to a temporary DMLKIT_FIGURES_DIR, so committed figures are never rewritten.
# Rerunning the script on the same tree gives the same cell outputs (run it twice and `git diff
# notebooks/` to see). Needs the notebook stack: scripts/install-notebook-stack.sh.
#
# By default the notebooks run in a snapshot of the last commit (`git archive HEAD`: the committed
# code, stored records and figures) with the working tree's notebooks copied in, so uncommitted
# edits elsewhere in the tree (other work in progress) neither break nor leak into the export;
# NB_EXPORT_REV=<rev> picks another commit, NB_EXPORT_REV= (empty) runs in the working tree itself.
#
# Time on the 2-core machine with warm Go caches: see the "exported ... in N s" lines it prints.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOMLX_BACKEND=${GOMLX_BACKEND:-go}
export GOMLX_NO_AUTO_INSTALL=1 GOFLAGS=${GOFLAGS:--modcacherw} PYDEVD_DISABLE_FILE_VALIDATION=1
export SCALE=small
unset DMLKIT_RETRAIN DMLKIT_RESULTS
gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/export-notebooks.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export DMLKIT_FIGURES_DIR=$tmp/figures

mkdir -p out/bin
go build -o out/bin/nbcheck ./scripts/nbcheck

# nbconvert upstream's defaults (pinned versions), not Debian's file:// paths.
html_flags=(
	--HTMLExporter.mathjax_url='https://cdnjs.cloudflare.com/ajax/libs/mathjax/2.7.7/MathJax.js?config=TeX-AMS_CHTML-full,Safe'
	--HTMLExporter.require_js_url='https://cdnjs.cloudflare.com/ajax/libs/require.js/2.1.10/require.min.js'
	--HTMLExporter.jquery_url='https://cdnjs.cloudflare.com/ajax/libs/jquery/2.0.3/jquery.min.js'
	--TagRemovePreprocessor.enabled=True
	--TagRemovePreprocessor.remove_input_tags=hide-input
	--TagRemovePreprocessor.remove_cell_tags=hide-cell
)
# NB_EXPORT_HTML_ONLY=1: only export the committed notebooks to HTML again (no execution).
if [[ ${NB_EXPORT_HTML_ONLY:-0} == 1 ]]; then
	hfiles=("$@")
	((${#hfiles[@]})) || hfiles=(notebooks/*.ipynb)
	for nb in "${hfiles[@]}"; do
		jupyter nbconvert --to html --log-level=WARN "${html_flags[@]}" --output-dir "$(dirname "$nb")" "$nb"
		out/bin/nbcheck -render-math "${nb%.ipynb}.html"
		out/bin/nbcheck -stamp "$nb"
	done
	out/bin/nbcheck -lint "$@"
	exit
fi

files=("$@")
((${#files[@]})) || files=(notebooks/*.ipynb)
rev=${NB_EXPORT_REV-HEAD}
root=.
if [[ -n $rev ]]; then
	root=$tmp/tree
	mkdir -p "$root"
	git archive "$rev" | tar -x -C "$root"
	cp "${files[@]}" "$root/notebooks/"
	# Data sets are found relative to the checkout (../shared/data, shared/data): the same for the snapshot.
	[[ -d ../shared ]] && ln -s "$(cd ../shared && pwd)" "$tmp/shared"
	[[ -d shared && ! -e $root/shared ]] && ln -s "$(cd shared && pwd)" "$root/shared"
	echo "export-notebooks: running in a snapshot of $(git rev-parse --short "$rev") with the working tree's notebooks"
fi
for nb in "${files[@]}"; do
	name=$(basename "$nb" .ipynb)
	t0=$(date +%s)
	echo "export-notebooks: executing $nb (SCALE=$SCALE) ..."
	if ! jupyter nbconvert --to notebook --execute \
		--ExecutePreprocessor.kernel_name=gonb --ExecutePreprocessor.timeout=1800 \
		--output "$tmp/$name.ipynb" "$root/notebooks/$name.ipynb" >"$tmp/$name.log" 2>&1; then
		grep -v '^[IWE][0-9][0-9][0-9][0-9] ' "$tmp/$name.log" | tail -30 >&2
		echo "export-notebooks: $nb failed; the committed notebook is unchanged" >&2
		exit 1
	fi
	out/bin/nbcheck -normalize "$nb" "$tmp/$name.ipynb"
	jupyter nbconvert --to html --log-level=WARN "${html_flags[@]}" --output-dir "$(dirname "$nb")" "$nb"
	out/bin/nbcheck -render-math "${nb%.ipynb}.html"
	out/bin/nbcheck -stamp "$nb"
	echo "export-notebooks: exported $nb and ${nb%.ipynb}.html in $(($(date +%s) - t0)) s"
done
out/bin/nbcheck -lint "${files[@]}"
