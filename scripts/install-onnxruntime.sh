#!/usr/bin/env bash
# Installs the ONNX Runtime shared library for dmlkit's optional ONNX Runtime backend (build tag
# `onnx`, GOMLX_BACKEND=onnx:cpu). Debian has no onnxruntime package; the library is taken from the
# npm package onnxruntime-node (pinned below) with `npm pack`, which downloads the tarball without
# running any install script. Needs npm and access to the npm registry (not run by CI).
#
#   scripts/install-onnxruntime.sh [--dest DIR] [--from onnxruntime-node-VERSION.tgz]
#
# --dest  where libonnxruntime.so.1 goes (default ~/.local/lib/dmlkit/onnxruntime-VERSION)
# --from  use an already downloaded tarball instead of `npm pack` (offline machines)
#
# It prints the environment to use, e.g.
#   export ONNXRUNTIME_SHARED_LIBRARY_PATH=~/.local/lib/dmlkit/onnxruntime-1.30.0/libonnxruntime.so.1
# then (from the repository root; README.md "Backends"):
#   GOTOOLCHAIN=auto GOEXPERIMENT=simd go build -tags onnx -o bin/dmlkit-onnx ./cmd/dmlkit
#   GOMLX_BACKEND=onnx:cpu bin/dmlkit-onnx env
set -euo pipefail

version="${ORT_NPM_VERSION:-1.30.0}"
# sha256 of package/bin/napi-v6/linux/x64/libonnxruntime.so.1 in onnxruntime-node 1.30.0.
pinned_sha256="ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23"
dest=""
from=""
while [ $# -gt 0 ]; do
	case "$1" in
	--dest) dest="$2"; shift 2 ;;
	--from) from="$2"; shift 2 ;;
	*) echo "install-onnxruntime.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
dest="${dest:-$HOME/.local/lib/dmlkit/onnxruntime-$version}"

case "$(uname -m)" in
x86_64) arch=x64 ;;
aarch64) arch=arm64 ;;
*) echo "install-onnxruntime.sh: no onnxruntime-node library for $(uname -m)" >&2; exit 1 ;;
esac
member="package/bin/napi-v6/linux/$arch/libonnxruntime.so.1"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ -z "$from" ]; then
	command -v npm >/dev/null || { echo "install-onnxruntime.sh: needs npm (Debian: apt-get install npm)" >&2; exit 1; }
	(cd "$tmp" && npm pack --silent "onnxruntime-node@$version" >/dev/null)
	from="$tmp/onnxruntime-node-$version.tgz"
fi
[ -f "$from" ] || { echo "install-onnxruntime.sh: $from: no such file" >&2; exit 1; }
tar -xzf "$from" -C "$tmp" "$member" || { echo "install-onnxruntime.sh: $from has no $member" >&2; exit 1; }
if [ "$version" = "1.30.0" ] && [ "$arch" = x64 ]; then
	got="$(sha256sum "$tmp/$member" | cut -d' ' -f1)"
	if [ "$got" != "$pinned_sha256" ]; then
		echo "install-onnxruntime.sh: $member: sha256 $got, want $pinned_sha256" >&2
		exit 1
	fi
fi
mkdir -p "$dest"
cp "$tmp/$member" "$dest/libonnxruntime.so.1"
echo "export ONNXRUNTIME_SHARED_LIBRARY_PATH=$dest/libonnxruntime.so.1"
