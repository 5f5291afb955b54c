#!/usr/bin/env bash
# podman-build.sh — prove docker/Dockerfile on a machine that cannot pull images (no registry):
#
#   1. bootstrap a Debian bookworm base with debootstrap and `podman import` it
#      (localhost/debian-local:bookworm; reused if present);
#   2. import the Go toolchain dmlkit pins (go1.27.4, from the module cache that GOTOOLCHAIN=auto
#      filled) as localhost/go-local:<version> — the stand-in for golang:<version>-bookworm;
#   3. build docker/Dockerfile with --pull=never, BASE_IMAGE/GO_IMAGE pointing at those, and
#      JUPYTER=notebook (Debian's classic Notebook: JupyterLab needs PyPI, which is unreachable
#      here), FETCH_DATA="" and CHECK_NOTEBOOKS=0 (the benchmarks' hosts are unreachable here, so
#      the image carries none; step 4 checks the notebooks with them mounted at /data);
#   4. run the image with --network none and a mounted results volume: `reproduce env`,
#      `reproduce notebooks` at SCALE=smoke, and `reproduce $PAPER` (default tcm) when reproductions/$PAPER/spec.yaml exists;
#   5. check that env.json, the executed notebooks and the figures (valid PNGs) are on the volume.
#
#   scripts/podman-build.sh                 # work dir /var/tmp/dmlkit-podman
#   PODMAN_WORK=/big/disk PAPER=tcm DMLKIT_DATA_HOST=/data scripts/podman-build.sh
#
# The benchmarks are mounted read-only at /data from $DMLKIT_DATA_HOST (default ../shared/data
# beside the checkout) when that directory exists.
#
# Needs root (debootstrap, rootful podman) and installs podman, buildah, debootstrap, runc and
# fuse-overlayfs with apt-get when missing. Measured on the 2-core CI machine type: see
# docker/README.md. Not part of the default CI run (it takes minutes and most of the CPU).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${PODMAN_WORK:-/var/tmp/dmlkit-podman}
image=${DMLKIT_IMAGE:-localhost/dmlkit:cpu-local}
base=localhost/debian-local:bookworm
paper=${PAPER:-tcm}
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOFLAGS=${GOFLAGS:--modcacherw}

t0=$(date +%s)
step() { printf '\npodman-build: [%4d s] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
die() { printf 'podman-build: FAIL: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (debootstrap and rootful podman)"

# --- tools ------------------------------------------------------------------------------------
need=()
for c in podman buildah debootstrap runc fuse-overlayfs; do command -v "$c" >/dev/null || need+=("$c"); done
if ((${#need[@]})); then
	step "apt-get install ${need[*]}"
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		podman buildah debootstrap runc fuse-overlayfs uidmap >/dev/null
fi
mkdir -p "$work"
# crun 1.8 fails here ("cgroups in hybrid mode not supported"); without CAP_SYS_RESOURCE the
# default ulimits cannot be raised, so ask for what podman itself has.
cat >"$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
export CONTAINERS_CONF=$work/containers.conf
pm=(podman --storage-driver overlay)

# --- 1. Debian base ---------------------------------------------------------------------------
if "${pm[@]}" image exists "$base"; then
	step "base $base already present"
else
	mirror=${MIRROR:-$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -1)}
	[[ -n $mirror ]] || die "no apt mirror found in /etc/apt/sources.list*; set MIRROR=<debian mirror URL>"
	step "debootstrap bookworm from $mirror"
	rm -rf "$work/rootfs"
	debootstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		die "debootstrap failed, see $work/debootstrap.log"
	tar --numeric-owner -C "$work/rootfs" -c . | "${pm[@]}" import -q --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
	rm -rf "$work/rootfs"
fi

# --- 2. Go toolchain image --------------------------------------------------------------------
goversion=$(cd "$repo" && go env GOVERSION)
goroot=$(cd "$repo" && go env GOROOT)
want=$(awk '$1 == "toolchain" {print $2}' "$repo/go.mod")
[[ -z $want || $want == "$goversion" ]] || die "go.mod wants $want but the go command resolved $goversion"
goimage=localhost/go-local:${goversion#go}
if "${pm[@]}" image exists "$goimage"; then
	step "Go image $goimage already present"
else
	step "import $goroot as $goimage"
	tar --numeric-owner --owner=0 --group=0 -C "$goroot" --transform 's,^\.,usr/local/go,' -c . |
		"${pm[@]}" import -q - "$goimage" >/dev/null
fi

# --- 3. build ---------------------------------------------------------------------------------
step "build context: the checkout's tracked and untracked-but-not-ignored files"
ctx=$work/ctx
rm -rf "$ctx" && mkdir -p "$ctx"
(cd "$repo" && git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -c 2>/dev/null) | tar -C "$ctx" -x
step "podman build $image (JUPYTER=notebook, FETCH_DATA=\"\", CHECK_NOTEBOOKS=0)"
tb=$(date +%s)
# The host's CA bundle is mounted into every RUN step: Go inside the build needs it to reach the
# module proxy through this machine's network.
set +e
"${pm[@]}" build --pull=never -f "$ctx/docker/Dockerfile" \
	--build-arg BASE_IMAGE="$base" --build-arg GO_IMAGE="$goimage" --build-arg JUPYTER=notebook \
	--build-arg FETCH_DATA= --build-arg CHECK_NOTEBOOKS=0 \
	-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
	-t "$image" "$ctx" 2>&1 | tee "$work/build.log" |
	grep --line-buffered -E '] STEP|^STEP|^COMMIT|^nbcheck|^ok |FAIL|PROBLEM|^backend:|^check-notebooks|^Error' >&2
rc=${PIPESTATUS[0]}
set -e
((rc == 0)) || die "build failed (rc=$rc), see $work/build.log"
size=$("${pm[@]}" image inspect --format '{{.Size}}' "$image")
step "built $image in $(($(date +%s) - tb)) s, $((size / 1000000)) MB"

# --- 4. run -----------------------------------------------------------------------------------
results=$work/results
rm -rf "$results" && mkdir -p "$results" && chmod 0777 "$results" # the image runs as uid 1000
# Benchmarks: the machine's shared copy (read-only), if there is one.
data=${DMLKIT_DATA_HOST:-$repo/../shared/data}
datamount=()
[[ -d $data ]] && datamount=(-v "$(cd "$data" && pwd):/data:ro")
run=("${pm[@]}" run --rm --network none -v "$results:/results" "${datamount[@]}" -e SCALE=smoke "$image")
step "reproduce env"
"${run[@]}" reproduce env
step "reproduce notebooks (SCALE=smoke)"
tr=$(date +%s)
set +e
"${run[@]}" reproduce notebooks 2>&1 | grep -v '^[IWE][0-9]\{4\} ' >&2 # leave out GoNB's klog lines
rc=${PIPESTATUS[0]}
set -e
((rc == 0)) || die "reproduce notebooks failed (rc=$rc)"
step "notebooks ran in the container in $(($(date +%s) - tr)) s"
if [[ -f $ctx/reproductions/$paper/spec.yaml ]]; then
	step "reproduce $paper (SCALE=smoke)"
	tp=$(date +%s)
	set +e
	"${run[@]}" reproduce "$paper" 2>&1 | tail -20 >&2
	rc=${PIPESTATUS[0]}
	set -e
	((rc == 0)) || die "reproduce $paper failed (rc=$rc)"
	[[ -n $(find "$results/$paper/figures" -name '*.png' 2>/dev/null | head -1) ]] ||
		die "reproduce $paper wrote no PNG figures to $results/$paper/figures"
	step "reproduce $paper took $(($(date +%s) - tp)) s"
else
	step "reproductions/$paper/spec.yaml not in the checkout yet: skipped 'reproduce $paper'"
fi

# --- 5. check the volume ----------------------------------------------------------------------
step "checking the results volume $results"
grep -q '"backend": "go"' "$results/env.json" || die "env.json missing or not on the go backend"
[[ -s $results/notebooks/nbcheck.json ]] || die "no notebooks/nbcheck.json"
pngs=0
while IFS= read -r -d '' f; do
	[[ $(head -c 8 "$f" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || die "$f is not a PNG"
	pngs=$((pngs + 1))
	echo "  $f ($(stat -c %s "$f") bytes)" >&2
done < <(find "$results" -name '*.png' -print0)
((pngs > 0)) || die "no figures on the volume"
find "$results" -type f | sed "s|^$results/|  |" | sort >&2
step "ok: image $image ($((size / 1000000)) MB), $pngs figures on the volume; total $(($(date +%s) - t0)) s"
