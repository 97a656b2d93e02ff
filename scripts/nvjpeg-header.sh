#!/usr/bin/env bash
# nvjpeg-header.sh - puts nvjpeg.h where meson.build looks for it
# (.deps/nvjpeg/include, git-ignored) when the CUDA toolkit lacks it, as the
# toolkit installed here does. The header comes from the PyPI wheel
# nvidia-nvjpeg (NVIDIA's own redistributable); only the header is kept: the
# library is loaded at run time (dlopen("libnvjpeg.so.13")), never linked.
# Does nothing without a CUDA toolkit, or when the header is already there.
# A failed download is not an error: the build then has no GPU JPEG decode.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.deps/nvjpeg/include
[ -f "$dest/nvjpeg.h" ] && exit 0
cuda=${CUDA_PATH:-/usr/local/cuda}
command -v nvcc >/dev/null || [ -x "$cuda/bin/nvcc" ] || exit 0
[ -f "$cuda/include/nvjpeg.h" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=$(command -v python3)
if ! "$py" -m pip download -q --no-deps --only-binary=:all: --platform manylinux2014_x86_64 \
	--platform manylinux_2_17_x86_64 --python-version 3.11 -d "$tmp" 'nvidia-nvjpeg>=13,<14' \
	>/dev/null 2>&1; then
	echo "nvjpeg-header.sh: could not download the nvidia-nvjpeg wheel; building without GPU JPEG decode" >&2
	exit 0
fi
mkdir -p "$dest"
"$py" - "$tmp" "$dest" <<'PY'
import glob, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/nvidia_nvjpeg-*.whl")[0]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/include/nvjpeg.h"))
    open(sys.argv[2] + "/nvjpeg.h", "wb").write(z.read(name))
PY
echo "nvjpeg-header.sh: nvjpeg.h from $(basename "$tmp"/nvidia_nvjpeg-*.whl)" >&2
