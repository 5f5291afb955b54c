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
# The outputs are one transaction: every notebook and HTML export is built and linted in a staging
# directory first, and notebooks/ is written only when all of them succeeded; a notebook that fails
# to execute, export or lint leaves every committed notebook and export as it was (the staged files
# of a failed lint are kept in out/export-notebooks/ to look at).
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
stage=$tmp/stage
mkdir -p "$stage"
staged=() # notebooks in $stage, each with its HTML export beside it
installed=() # their committed paths, in the same order

# export_html NB: NB's HTML export beside it, typeset and stamped.
export_html() {
	jupyter nbconvert --to html --log-level=WARN "${html_flags[@]}" --output-dir "$(dirname "$1")" "$1"
	out/bin/nbcheck -render-math "${1%.ipynb}.html"
	out/bin/nbcheck -stamp "$1"
}

# install [html-only]: lint the staged notebooks and exports, then move them (only the exports with
# html-only) over the committed ones — or, when the lint fails, keep them in out/export-notebooks/
# and leave notebooks/ alone.
install() {
	if ! out/bin/nbcheck -lint -staged "$stage" "${installed[@]}"; then
		rm -rf out/export-notebooks && mkdir -p out/export-notebooks && cp "$stage"/* out/export-notebooks/
		echo "export-notebooks: lint failed; notebooks/ is unchanged (the staged files are in out/export-notebooks/)" >&2
		exit 1
	fi
	local i what="${installed[*]} and their HTML exports"
	[[ ${1:-} == html-only ]] && what="the HTML exports of ${installed[*]}"
	for i in "${!staged[@]}"; do
		[[ ${1:-} == html-only ]] || cp "${staged[$i]}" "${installed[$i]}"
		cp "${staged[$i]%.ipynb}.html" "${installed[$i]%.ipynb}.html"
	done
	echo "export-notebooks: wrote $what"
}

# NB_EXPORT_HTML_ONLY=1: only export the committed notebooks to HTML again (no execution).
if [[ ${NB_EXPORT_HTML_ONLY:-0} == 1 ]]; then
	hfiles=("$@")
	((${#hfiles[@]})) || hfiles=(notebooks/*.ipynb)
	for nb in "${hfiles[@]}"; do
		cp "$nb" "$stage/"
		export_html "$stage/$(basename "$nb")"
		staged+=("$stage/$(basename "$nb")") installed+=("$nb")
	done
	install html-only
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
		echo "export-notebooks: $nb failed; every committed notebook is unchanged" >&2
		exit 1
	fi
	out/bin/nbcheck -normalize "$stage/$name.ipynb" "$tmp/$name.ipynb"
	export_html "$stage/$name.ipynb"
	staged+=("$stage/$name.ipynb") installed+=("$nb")
	echo "export-notebooks: exported $nb and ${nb%.ipynb}.html (staged) in $(($(date +%s) - t0)) s"
done
install
