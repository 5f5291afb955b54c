#!/usr/bin/env bash
# export-notebooks.sh — execute every notebooks/*.ipynb from the stored results and commit-ready:
# the executed notebook is written back into notebooks/ (normalized: no timings, stable cell
# numbering and kernel metadata, no "go: downloading" noise) and its HTML export beside it
# (notebooks/<name>.html, `jupyter nbconvert --to html`, stamped with the notebook's content hash).
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
	jupyter nbconvert --to html --log-level=WARN --output-dir "$(dirname "$nb")" "$nb"
	out/bin/nbcheck -stamp "$nb"
	echo "export-notebooks: exported $nb and ${nb%.ipynb}.html in $(($(date +%s) - t0)) s"
done
out/bin/nbcheck -lint "${files[@]}"
