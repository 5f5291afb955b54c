#!/usr/bin/env bash
# reproduce — batch entry point of the dmlkit images. Everything it writes goes under
# $RESULTS_DIR (default /results, a mounted volume); $SCALE is smoke, small or full.
#
#   reproduce PAPER [flags...]  dmlkit reproduce PAPER --scale "$SCALE" with its results, figures,
#                               tables and run directories under $RESULTS_DIR/PAPER/
#                               (PAPER: tcm, cit, idml, rsk, contextual, or a spec.yaml path;
#                               extra flags go to dmlkit reproduce, e.g. --workers 2 --only loss=tcm)
#   reproduce env               dmlkit env --json > "$RESULTS_DIR/env.json"
#   reproduce notebooks [...]   execute and check every notebook at $SCALE (scripts/check-notebooks.sh;
#                               arguments: nbcheck flags, then notebooks, e.g. notebooks/00_tour.ipynb):
#                               executed notebooks, logs and nbcheck.json in $RESULTS_DIR/notebooks/,
#                               figures in $RESULTS_DIR/notebooks/figures/<notebook>/ (the lint of the
#                               committed notebooks and their HTML exports is CI's, not run here)
#
# Every run also records the environment in $RESULTS_DIR/env.json.
set -euo pipefail

what=${1:-${PAPER:-}}
[[ $# -gt 0 ]] && shift
if [[ -z $what || $what == -h || $what == --help ]]; then
	sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
fi
results=${RESULTS_DIR:-/results}
scale=${SCALE:-small}
home=${DMLKIT_HOME:-$(cd "$(dirname "$(readlink -f "$0")")/.." && pwd)}
mkdir -p "$results"
if [[ ! -w $results ]]; then
	echo "reproduce: $results is not writable by uid $(id -u); mount a directory it can write to" >&2
	exit 1
fi
dmlkit env --json >"$results/env.json"

case $what in
env)
	cat "$results/env.json"
	;;
notebooks)
	cd "$home"
	NB_LINT=0 NBCHECK_OUT="$results/notebooks" DMLKIT_FIGURES_DIR="$results/notebooks/figures" \
		scripts/check-notebooks.sh -scale "$scale" "$@"
	;;
*)
	# The output directory is named after the paper (or after the directory of a spec.yaml).
	name=${what%/}
	[[ $name == */spec.yaml || $name == spec.yaml ]] && name=$(dirname "$name")
	name=$(basename "${name%.yaml}")
	out=$results/$name
	cd "$home"
	exec dmlkit reproduce "$what" --scale "$scale" --results "$out/results" --figures "$out/figures" \
		--tables "$out/tables" --workdir "$out/runs" "$@"
	;;
esac
