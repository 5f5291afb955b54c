#!/usr/bin/env bash
# install-notebook-stack.sh — pinned, idempotent install of dmlkit's notebook stack.
#
#   1. Jupyter (classic Notebook 6, nbconvert, nbclient, jupyter-client, ipykernel) from Debian's
#      packages — on Debian/Ubuntu only, and only the packages not yet installed — with Node.js
#      and KaTeX (libjs-katex 0.16.4), which scripts/export-notebooks.sh uses to typeset the
#      formulas of the HTML exports (scripts/katex-render.js).
#   2. GoNB and goimports at the versions pinned in tools/go.mod (`go install tool`), skipped when
#      the binaries in $(go env GOPATH)/bin already carry those versions.
#   3. The GoNB kernel registered with Jupyter (`gonb --install --raw_error --force_deps`),
#      skipped when the kernelspec already points at that gonb binary.
#   4. Every module the notebooks build, in the module cache: `go mod download` of dmlkit's module
#      and of tools/ (each checked against its go.sum; under a second when they are there). With
#      the setup cells' go.sum line (notebooks/README.md) the notebooks then run with no network
#      (scripts/check-notebooks-offline.sh).
#
# Options (environment):
#   NB_STACK_APT=0        skip step 1 (e.g. Jupyter/JupyterLab installed with pip, see notebooks/README.md)
#   NB_STACK_FORCE=1      redo steps 2 and 3 even if they look done
#
# gopls is deliberately not installed: in CI it indexes in the background and competes for the CPU.
# Users who want completion in JupyterLab can add it themselves (see notebooks/README.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOFLAGS=${GOFLAGS:--modcacherw}
export PYDEVD_DISABLE_FILE_VALIDATION=1

log() { printf 'install-notebook-stack: %s\n' "$*" >&2; }
t0=$(date +%s)

# --- 1. Jupyter from Debian ------------------------------------------------------------------
apt_pkgs=(jupyter-notebook jupyter-nbconvert jupyter-client python3-nbclient python3-ipykernel nodejs libjs-katex)
if [[ ${NB_STACK_APT:-1} != 0 ]]; then
	missing=()
	for p in "${apt_pkgs[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	if ((${#missing[@]})); then
		if ! command -v apt-get >/dev/null; then
			log "missing ${missing[*]} and no apt-get: install Jupyter yourself (notebooks/README.md) and rerun with NB_STACK_APT=0"
			exit 1
		fi
		sudo=()
		[[ $(id -u) != 0 ]] && sudo=(sudo)
		log "apt-get install ${missing[*]}"
		"${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
		DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
			--no-install-recommends "${missing[@]}" >/dev/null
	else
		log "Debian Jupyter packages already installed"
	fi
fi
command -v jupyter >/dev/null || { log "jupyter not on PATH"; exit 1; }

# --- 2. GoNB + goimports at the pinned versions ------------------------------------------------
gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH)/bin
export PATH=$gobin:$PATH
# want_version MODULE prints the version tools/go.mod pins for MODULE.
want_version() { (cd "$here/tools" && go list -m -f '{{.Version}}' "$1"); }
# have_version BINARY MODULE prints the version of MODULE that BINARY was built from ("" if none).
have_version() {
	[[ -x $gobin/$1 ]] || return 0
	go version -m "$gobin/$1" 2>/dev/null | awk -v m="$2" '$1=="mod" && $2==m {print $3}'
}
gonb_want=$(want_version github.com/janpfeifer/gonb)
gimp_want=$(want_version golang.org/x/tools)
gonb_have=$(have_version gonb github.com/janpfeifer/gonb)
gimp_have=$(have_version goimports golang.org/x/tools)
if [[ ${NB_STACK_FORCE:-0} == 1 || $gonb_have != "$gonb_want" || $gimp_have != "$gimp_want" ]]; then
	log "go install tool (gonb $gonb_want, goimports $gimp_want; found '${gonb_have}', '${gimp_have}')"
	(cd "$here/tools" && go install tool)
else
	log "gonb $gonb_have and goimports $gimp_have already installed in $gobin"
fi

# --- 3. Register the kernel --------------------------------------------------------------------
kdir=$(jupyter kernelspec list --json 2>/dev/null |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["kernelspecs"].get("gonb",{}).get("resource_dir",""))' 2>/dev/null || true)
if [[ ${NB_STACK_FORCE:-0} == 1 || -z $kdir || ! -f $kdir/kernel.json ]] ||
	! grep -q -- "$gobin/gonb" "$kdir/kernel.json" || ! grep -q -- 'raw_error=true' "$kdir/kernel.json"; then
	log "gonb --install --raw_error --force_deps"
	gonb --install --raw_error --force_deps
else
	log "GoNB kernel already registered in $kdir"
fi
# Not `jupyter kernelspec list | grep -q`: grep -q exits at the first match, jupyter then dies of
# SIGPIPE and pipefail turns the match into a failure.
kernels=$(jupyter kernelspec list 2>/dev/null)
grep -q '^ *gonb ' <<<"$kernels" || { log "gonb kernel not registered"; exit 1; }
# --- 4. The notebooks' modules -----------------------------------------------------------------
log "go mod download (dmlkit and tools/: the modules the notebooks build, for runs with no network)"
(cd "$here" && go mod download) && (cd "$here/tools" && go mod download)
log "done in $(($(date +%s) - t0)) s (gonb $gonb_want, goimports $gimp_want)"
