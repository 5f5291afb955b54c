#!/usr/bin/env bash
# check-jupyterlab.sh — open dmlkit's notebooks in real JupyterLab with the GoNB kernel, in headless
# Chromium, and run the tour and one paper notebook at SCALE=smoke through JupyterLab's own UI.
#
# JupyterLab is not packaged in Debian 12, so this lays (once, then reuses) a Debian 13 "trixie"
# root with `debootstrap --variant=minbase` and installs `jupyterlab python3-ipykernel` there from
# Debian's archive (no pip). The server runs chrooted in that root, in a private mount namespace
# (`unshare -m`: every mount disappears with the server) into which the host's Go toolchain, GOPATH
# (gonb, goimports, the module cache with the go1.27.4 toolchain), Go build cache, this checkout
# (read-only: the notebooks cannot be rewritten) and ../shared (the data, read-only) are
# bind-mounted at their host paths, so the kernel builds the cells exactly as on the host, with
# warm caches. Debian 12's Chromium on the host drives JupyterLab's UI (tools/browsercheck -lab):
# it opens every notebooks/*.ipynb at /lab/tree/NAME.ipynb, waits for the notebook panel to render
# and screenshots it; for the run notebooks it clears the outputs, runs all cells (JupyterLab's
# "Run All Cells" command) and fails on an error output or when no image rendered.
#
#   scripts/check-jupyterlab.sh                 # tour + tcm_opis; out/jupyterlab/*.png, summary.json
#   JLAB_RUN="00_tour.ipynb" scripts/check-jupyterlab.sh
#   JLAB_PREPARE_ONLY=1 scripts/check-jupyterlab.sh    # only lay/update the trixie root
#   JLAB_SERVE=1 scripts/check-jupyterlab.sh           # no check: serve notebooks/ in JupyterLab for you
#                                                      # (checkout mounted read-write, autosave on; Ctrl-C stops)
#
# Environment:
#   DMLKIT_TRIXIE_ROOT   the root (default .cache/trixie-root: git-ignored, and a leading dot keeps
#                        `go test ./...` out of it); reused when it already holds jupyter-lab
#   DEBIAN_MIRROR        the Debian mirror (default: the first Debian URI in this machine's apt sources)
#   JLAB_RUN             notebooks to run (default "00_tour.ipynb tcm_opis.ipynb"); "" opens only
#   JLAB_OUT             output directory (default out/jupyterlab)
#   JLAB_TIMEOUT         limit of the browser part (default 20m)
#
# Needs root (debootstrap, chroot, unshare -m, mount), Debian's debootstrap and chromium (installed
# when missing), network to the Debian archive on the first run (850 packages, 1.8 GB on disk) and to the Go module proxy
# only for modules not yet in the cache. Paper notebooks at SCALE=smoke retrain their smoke sweep:
# Omniglot (../shared/data/omniglot, $DMLKIT_DATA, or `dmlkit data fetch omniglot`).
# Not part of .ci/run (the first run lays a 1.8 GB root, ~8 min; a run ~5 min): the by-hand / nightly check, see notebooks/README.md.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$(pwd)
log() { printf 'check-jupyterlab: %s\n' "$*" >&2; }
t0=$(date +%s)

[[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot, unshare -m)"; exit 1; }
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOEXPERIMENT=${GOEXPERIMENT:-simd} GOFLAGS=${GOFLAGS:--modcacherw}

root=${DMLKIT_TRIXIE_ROOT:-$repo/.cache/trixie-root}
out=${JLAB_OUT:-out/jupyterlab}
run_nbs=${JLAB_RUN-00_tour.ipynb tcm_opis.ipynb}

apt_host() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	log "apt-get install ${missing[*]} (host)"
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		"${missing[@]}" >/dev/null
}

# mirror prints the Debian mirror of this machine's apt sources (deb822 .sources or one-line format).
mirror() {
	if [[ -n ${DEBIAN_MIRROR:-} ]]; then echo "$DEBIAN_MIRROR"; return; fi
	local m
	m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1=="URIs:" {for (i=2;i<=NF;i++) print $i}'
		grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list | awk '{for (i=2;i<=NF;i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}')
	m=$(grep -E '/debian/?$' <<<"$m" | head -1)
	echo "${m:-http://deb.debian.org/debian}"
}

# in_root CMD... runs CMD chrooted in the root, in a private mount namespace with /proc, /dev and
# /sys mounted and the extra bind mounts in $binds (host path = path in the root; ":ro" suffix).
binds=()
in_root() {
	local setup='set -e; r=$1; shift
mount -t proc proc "$r/proc"; mount --rbind /dev "$r/dev"; mount --rbind /sys "$r/sys"
while [ "$1" != -- ]; do
	p=${1%:ro}; mkdir -p "$r$p"; mount --bind "$p" "$r$p"
	[ "$p" = "$1" ] || mount -o remount,bind,ro "$r$p"
	shift
done; shift
exec chroot "$r" "$@"'
	cp -L /etc/resolv.conf "$root/etc/resolv.conf"
	unshare --mount --propagation private -- bash -c "$setup" in_root "$root" "${binds[@]}" -- "$@"
}

# --- 1. The trixie root with JupyterLab ---------------------------------------------------------
if [[ ! -x $root/usr/bin/jupyter-lab ]]; then
	apt_host debootstrap
	if [[ ! -f $root/.dmlkit-debootstrap-done ]]; then
		rm -rf "$root"
		mkdir -p "$(dirname "$root")"
		m=$(mirror)
		log "debootstrap --variant=minbase trixie $root $m (about a minute)"
		t=$(date +%s)
		debootstrap --variant=minbase --include=ca-certificates trixie "$root" "$m" >"$root.debootstrap.log" 2>&1 ||
			{ log "debootstrap failed, see $root.debootstrap.log"; exit 1; }
		touch "$root/.dmlkit-debootstrap-done"
		log "root laid in $(($(date +%s) - t)) s"
	fi
	# No fsync per file: the root is a throw-away cache (debootstrap itself unpacks this way).
	echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/dmlkit-unsafe-io"
	log "apt-get install jupyterlab python3-ipykernel (in the root)"
	t=$(date +%s)
	in_root /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
		sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends jupyterlab python3-ipykernel >/dev/null && apt-get clean'
	log "JupyterLab installed in $(($(date +%s) - t)) s"
fi
# JupyterLab's settings for this check: no autosave (the checkout is mounted read-only anyway), no
# news or update check (no network from the page), and every cell in the DOM (windowing off), so
# the browser sees every output.
mkdir -p "$root/usr/share/jupyter/lab/settings"
serve=${JLAB_SERVE:-0}
autosave=false repo_mode=:ro
[[ $serve == 1 ]] && autosave=true repo_mode=
cat >"$root/usr/share/jupyter/lab/settings/overrides.json" <<EOF
{
  "@jupyterlab/docmanager-extension:plugin": {"autosave": $autosave},
  "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false},
  "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"}
}
EOF
versions=$(in_root /usr/bin/env -i PATH=/usr/bin:/bin dpkg-query -W -f='${Package} ${Version}\n' \
	jupyterlab python3-jupyter-server python3-ipykernel python3 2>/dev/null)
log "in the root: $(tr '\n' ';' <<<"$versions")"
if [[ ${JLAB_PREPARE_ONLY:-0} == 1 ]]; then
	log "root ready in $(($(date +%s) - t0)) s: $root"
	exit 0
fi

# --- 2. GoNB and goimports at the versions tools/go.mod pins, on the host -------------------------
apt_host chromium
gobin=$(go env GOBIN)
[[ -n $gobin ]] || gobin=$(go env GOPATH)/bin
gonb_want=$(cd tools && go list -m -f '{{.Version}}' github.com/janpfeifer/gonb)
gimp_want=$(cd tools && go list -m -f '{{.Version}}' golang.org/x/tools)
have() { [[ -x $gobin/$1 ]] && go version -m "$gobin/$1" | awk -v m="$2" '$1=="mod" && $2==m {print $3}'; }
if [[ $(have gonb github.com/janpfeifer/gonb || true) != "$gonb_want" || $(have goimports golang.org/x/tools || true) != "$gimp_want" ]]; then
	log "go install tool (gonb $gonb_want, goimports $gimp_want)"
	(cd tools && go install tool)
fi
mkdir -p out/bin "$out"
(cd tools && go build -o ../out/bin/browsercheck ./browsercheck)

# --- 3. The host paths the kernel needs, mounted into the root at the same paths -------------------
# GOROOT of the host's own go command (GOTOOLCHAIN=auto then switches to go1.27.4 from the module
# cache, as on the host).
goroot=$(GOTOOLCHAIN=local go env GOROOT) gopath=$(go env GOPATH) gomodcache=$(go env GOMODCACHE) gocache=$(go env GOCACHE)
gopath=${gopath%%:*}
mkdir -p "$gocache"
tmp=$(mktemp -d /tmp/check-jupyterlab.XXXXXX) # the root's /tmp: GoNB's modules, figures, retrained records
binds=("$gopath" "$gocache" "$goroot:ro" "$repo$repo_mode" "$tmp") # a parent before what lies inside it
[[ $gomodcache == "$gopath"/* ]] || binds+=("$gomodcache")
[[ $gobin == "$gopath"/* ]] || binds+=("$gobin:ro")
shared=$(cd "$repo/.." && pwd)/shared
[[ -d $shared ]] && binds+=("$shared:ro")
# The checkout's own mountpoint inside the root must not be the root itself (default .cache/trixie-root
# lies inside the checkout: the read-only bind of the checkout shows the root's directory, harmless).
server_pid=
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM -- "-$server_pid" 2>/dev/null || true
		for _ in $(seq 20); do kill -0 -- "-$server_pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL -- "-$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
chmod 1777 "$tmp"
path_in_root=$gobin:$goroot/bin:/usr/local/bin:/usr/bin:/bin
genv=(/usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH="$path_in_root" TMPDIR=/tmp GOPATH="$gopath" GOMODCACHE="$gomodcache"
	GOCACHE="$gocache" GOTOOLCHAIN="$GOTOOLCHAIN" GOEXPERIMENT="$GOEXPERIMENT" GOFLAGS="$GOFLAGS"
	GOPROXY="$(go env GOPROXY)" GOSUMDB="$(go env GOSUMDB)" GOMLX_BACKEND=go GOMLX_NO_AUTO_INSTALL=1
	PYDEVD_DISABLE_FILE_VALIDATION=1 DMLKIT_FIGURES_DIR=/tmp/figures DMLKIT_RESULTS=/tmp/results)
if [[ $serve == 1 ]]; then
	[[ -n ${SCALE:-} ]] && genv+=(SCALE="$SCALE")
else
	genv+=(SCALE=smoke)
fi
[[ -n ${DMLKIT_DATA:-} ]] && genv+=(DMLKIT_DATA="$DMLKIT_DATA")

# Register the kernel inside the root, the project's way (kernelspec in the root's
# /root/.local/share/jupyter/kernels/gonb, pointing at the host's gonb through the mount).
in_root "${genv[@]}" gonb --install --raw_error --force_deps >"$out/gonb-install.log" 2>&1 ||
	{ log "gonb --install failed:"; cat "$out/gonb-install.log" >&2; exit 1; }
# (trixie's jupyterlab does not pull the `jupyter` command in: ask jupyter_client directly.)
in_root "${genv[@]}" python3 -c 'from jupyter_client.kernelspec import KernelSpecManager as K
for n, d in K().find_kernel_specs().items(): print(n, d)' >"$out/kernelspecs.txt" 2>&1
grep -q '^gonb ' "$out/kernelspecs.txt" || { log "gonb kernel not registered in the root"; cat "$out/kernelspecs.txt" >&2; exit 1; }

# --- 4. jupyter-lab on 127.0.0.1, a free port, a random token; the browser check -----------------
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
cd_nb=$repo/notebooks
log "jupyter-lab on 127.0.0.1:$port (server log $out/server.log)"
# set -m: the server runs as its own process group (the subshell holding the mount namespace, the
# server, its kernels), which cleanup stops. The token goes through the environment, not argv.
set -m
in_root "${genv[@]}" JUPYTER_TOKEN="$token" sh -c "cd $(printf %q "$cd_nb") && exec jupyter-lab --no-browser \
	--ip=127.0.0.1 --port=$port --port-retries=0 --allow-root --ServerApp.root_dir=$(printf %q "$cd_nb") \
	--LabApp.expose_app_in_browser=True" >"$out/server.log" 2>&1 &
server_pid=$!
set +m
for i in $(seq 120); do
	curl -fsS -o /dev/null "http://127.0.0.1:$port/api/status?token=$token" 2>/dev/null && break
	kill -0 "$server_pid" 2>/dev/null || { log "jupyter-lab exited:"; tail -20 "$out/server.log" >&2; exit 1; }
	sleep 0.5
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/api/status?token=$token" || { log "jupyter-lab did not come up"; exit 1; }
log "server up after $(($(date +%s) - t0)) s"
if [[ $serve == 1 ]]; then
	log "JupyterLab: http://127.0.0.1:$port/lab?token=$token  (Ctrl-C stops it)"
	wait "$server_pid" || true
	exit 0
fi

git_before=$(git status --porcelain 2>/dev/null || true)
open_nbs=$(cd notebooks && ls *.ipynb | paste -sd,)
set +e
JUPYTER_TOKEN=$token timeout "${JLAB_TIMEOUT:-20m}" out/bin/browsercheck -chromium "$(command -v chromium)" -out "$out" \
	-timeout "${JLAB_TIMEOUT:-20m}" -lab "http://127.0.0.1:$port" -lab-open "$open_nbs" -lab-run "$(tr ' ' , <<<"$run_nbs")"
rc=$?
set -e
{
	echo "$versions"
	echo "gonb $gonb_want (tools/go.mod), goimports $gimp_want, $(go version -m "$gobin/gonb" | head -1 | cut -f2-)"
	echo "chromium $(chromium --version 2>/dev/null)"
} >"$out/versions.txt"
if [[ $(git status --porcelain 2>/dev/null) != "$git_before" ]]; then
	log "the checkout changed:"; git status --short >&2; rc=1
fi
log "rc=$rc in $(($(date +%s) - t0)) s; screenshots and summary.json in $out/"
exit $rc
