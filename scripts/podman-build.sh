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
#      `reproduce notebooks` at SCALE=smoke (every notebook, or those $NOTEBOOKS names), and
#      `reproduce $PAPER` (default tcm) when reproductions/$PAPER/spec.yaml exists;
#   5. check that env.json, the executed notebooks and the figures (valid PNGs) are on the volume;
#   6. write what it measured (each step's seconds, the image's size, the date, CPU and load) to
#      $PODMAN_WORK/measured.md, and with PODMAN_README=1 into docker/README.md's measured table
#      (between its podman-build markers; only when every step passed).
#
#   scripts/podman-build.sh                 # all notebooks; work dir /var/tmp/dmlkit-podman
#   NOTEBOOKS="00_tour tcm_opis" scripts/podman-build.sh   # CI's variant (.ci/run): the tour and one paper notebook
#   PODMAN_WORK=/big/disk PAPER=tcm DMLKIT_DATA_HOST=/data scripts/podman-build.sh
#   NOTEBOOKS="00_tour tcm_opis" PODMAN_README=1 scripts/podman-build.sh   # regenerate docker/README.md's table
#
# The benchmarks are mounted read-only at /data from $DMLKIT_DATA_HOST (default ../shared/data
# beside the checkout) when that directory exists, and Fashion-MNIST from Debian's
# dataset-fashion-mnist package (installed when missing) at /usr/share/datasets/fashion-mnist.
#
# Needs root (debootstrap, rootful podman) and installs podman, buildah, debootstrap, runc and
# fuse-overlayfs with apt-get when missing. Measured on the 2-core CI machine type: the table in
# docker/README.md, written by this script (PODMAN_README=1) from its run.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=${PODMAN_WORK:-/var/tmp/dmlkit-podman}
image=${DMLKIT_IMAGE:-localhost/dmlkit:cpu-local}
base=localhost/debian-local:bookworm
paper=${PAPER:-tcm}
notebooks=${NOTEBOOKS:-}
export GOTOOLCHAIN=${GOTOOLCHAIN:-auto} GOFLAGS=${GOFLAGS:--modcacherw}

t0=$(date +%s)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A took=() # step -> seconds, for measured.md
step() { printf '\npodman-build: [%4d s] %s\n' "$(($(date +%s) - t0))" "$*" >&2; }
die() { printf 'podman-build: FAIL: %s\n' "$*" >&2; exit 1; }
[[ $(id -u) == 0 ]] || die "run as root (debootstrap and rootful podman)"

# --- tools ------------------------------------------------------------------------------------
need=()
for c in podman buildah debootstrap runc fuse-overlayfs; do command -v "$c" >/dev/null || need+=("$c"); done
# Fashion-MNIST (Debian's dataset-fashion-mnist, 30 MB): IDML's smoke sweep and notebook train on it,
# and the image carries no benchmark here (FETCH_DATA=""); it is mounted read-only where dmlkit looks.
fmnist=/usr/share/datasets/fashion-mnist
[[ -d $fmnist ]] || need+=(dataset-fashion-mnist)
if ((${#need[@]})); then
	step "apt-get install ${need[*]}"
	ta=$(date +%s)
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
		podman buildah debootstrap runc fuse-overlayfs uidmap dataset-fashion-mnist >/dev/null
	took[apt]=$(($(date +%s) - ta))
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
	tt=$(date +%s)
	mirror=${MIRROR:-$(awk '/^URIs:/ {print $2; exit} /^deb / {print $2; exit}' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | head -1)}
	[[ -n $mirror ]] || die "no apt mirror found in /etc/apt/sources.list*; set MIRROR=<debian mirror URL>"
	step "debootstrap bookworm from $mirror"
	rm -rf "$work/rootfs"
	debootstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		die "debootstrap failed, see $work/debootstrap.log"
	tar --numeric-owner -C "$work/rootfs" -c . | "${pm[@]}" import -q --change 'CMD ["/bin/bash"]' - "$base" >/dev/null
	rm -rf "$work/rootfs"
	took[base]=$(($(date +%s) - tt))
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
	tt=$(date +%s)
	tar --numeric-owner --owner=0 --group=0 -C "$goroot" --transform 's,^\.,usr/local/go,' -c . |
		"${pm[@]}" import -q - "$goimage" >/dev/null
	took[goimage]=$(($(date +%s) - tt))
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
took[build]=$(($(date +%s) - tb))
cached=$(grep -c -- '--> Using cache' "$work/build.log" || true)
steps=$(grep -c -E '(^|\] )STEP [0-9]+/[0-9]+:' "$work/build.log" || true) # "[2/2] STEP 9/30: RUN …"
step "built $image in ${took[build]} s, $((size / 1000000)) MB ($cached of $steps steps from the layer cache)"

# --- 4. run -----------------------------------------------------------------------------------
results=$work/results
rm -rf "$results" && mkdir -p "$results" && chmod 0777 "$results" # the image runs as uid 1000
# Benchmarks: the machine's shared copy (read-only), if there is one.
data=${DMLKIT_DATA_HOST:-$repo/../shared/data}
datamount=()
[[ -d $data ]] && datamount=(-v "$(cd "$data" && pwd):/data:ro")
datamount+=(-v "$fmnist:$fmnist:ro")
run=("${pm[@]}" run --rm --network none -v "$results:/results" "${datamount[@]}" -e SCALE=smoke "$image")
step "reproduce env"
tt=$(date +%s)
"${run[@]}" reproduce env
took[env]=$(($(date +%s) - tt))
nbargs=()
for n in $notebooks; do
	n=notebooks/$(basename "${n%.ipynb}").ipynb
	[[ -f $ctx/$n ]] || die "NOTEBOOKS names $n, which the checkout does not have"
	nbargs+=("$n")
done
nbnames=$(cd "$ctx" && if ((${#nbargs[@]})); then printf '%s\n' "${nbargs[@]}"; else ls notebooks/*.ipynb; fi |
	xargs -n1 basename | sed 's/\.ipynb$//' | paste -sd' ')
step "reproduce notebooks (SCALE=smoke): $nbnames"
tr=$(date +%s)
set +e
"${run[@]}" reproduce notebooks "${nbargs[@]}" 2>&1 | grep -v '^[IWE][0-9]\{4\} ' >&2 # leave out GoNB's klog lines
rc=${PIPESTATUS[0]}
set -e
((rc == 0)) || die "reproduce notebooks failed (rc=$rc)"
took[notebooks]=$(($(date +%s) - tr))
step "notebooks ran in the container in ${took[notebooks]} s"
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
	took[paper]=$(($(date +%s) - tp))
	step "reproduce $paper took ${took[paper]} s"
else
	step "reproductions/$paper/spec.yaml not in the checkout yet: skipped 'reproduce $paper'"
fi

# --- 5. check the volume ----------------------------------------------------------------------
step "checking the results volume $results"
# The image's backend is go:ops_sequential (the Go backend, its ops one at a time).
grep -q '"backend": "go[:"]' "$results/env.json" || die "env.json missing or not on the go backend"
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

# --- 6. what was measured ---------------------------------------------------------------------
total=$(($(date +%s) - t0))
cell() { [[ -n ${took[$1]:-} ]] && echo "${took[$1]}" || echo "$2"; }
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "?")
[[ -n $(git -C "$repo" status --porcelain 2>/dev/null) ]] && commit="$commit + uncommitted changes"
{
	echo "<!-- podman-build: written by scripts/podman-build.sh (PODMAN_README=1) from its run; do not edit by hand -->"
	echo "Measured $(date -u +%Y-%m-%d) (commit $commit) on $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'),"
	echo "$(nproc) cores shared with other jobs (load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end),"
	echo "$("${pm[@]}" --version), \`NOTEBOOKS=\"$notebooks\"\`:"
	echo
	echo "| Step | Seconds |"
	echo "|---|---|"
	echo "| apt-get install of podman, buildah, debootstrap, runc, fuse-overlayfs, dataset-fashion-mnist | $(cell apt 'installed already') |"
	echo "| debootstrap of Debian bookworm + \`podman import\` as the base | $(cell base 'reused') |"
	echo "| \`podman import\` of the $goversion toolchain | $(cell goimage 'reused') |"
	echo "| \`podman build\` ($cached of $steps steps from the layer cache): image $((size / 1000000)) MB | ${took[build]} |"
	echo "| \`reproduce env\`, \`--network none\` | ${took[env]} |"
	echo "| \`reproduce notebooks\` at \`SCALE=smoke\`, \`--network none\`: $nbnames | ${took[notebooks]} |"
	echo "| \`reproduce $paper\` at \`SCALE=smoke\`, \`--network none\` ($pngs PNG figures on the volume in all) | $(cell paper 'skipped') |"
	echo "| **whole script** | **$total** |"
	echo "<!-- /podman-build -->"
} >"$work/measured.md"
cat "$work/measured.md" >&2
if [[ ${PODMAN_README:-0} == 1 ]]; then
	readme=$repo/docker/README.md
	grep -q '^<!-- podman-build:' "$readme" && grep -q '^<!-- /podman-build -->' "$readme" ||
		die "$readme has no <!-- podman-build: … --> … <!-- /podman-build --> block to replace"
	awk -v f="$work/measured.md" '
		/^<!-- podman-build:/ { while ((getline l < f) > 0) print l; skip = 1; next }
		/^<!-- \/podman-build -->/ { skip = 0; next }
		!skip' "$readme" >"$work/README.md.new"
	mv "$work/README.md.new" "$readme"
	step "wrote the measured table into $readme"
fi
