#!/usr/bin/env bash
# datasets_venv.sh - a cached virtual environment for bench/parquet.sh's
# Python peers: the Hugging Face `datasets` library and PyPI's pyarrow on top
# of Debian's torch 1.13 and torchvision 0.14 (python3-torch,
# python3-torchvision). Debian's torch is built against NumPy 1, and pip
# would pull NumPy 2 in for pyarrow and datasets; so the venv sees the
# system's packages (--system-site-packages) and pins numpy<2 and pyarrow
# 24 (pyarrow 26 refuses NumPy 1 at import; 24 runs on it, and is the
# oldest the current datasets, 5.x, accepts). The alternative, scripts/torch_venv.sh (PyPI
# torch, some GiB), is not needed for a CPU benchmark. Prints the venv's
# python. Created once under
# ${RINGFEED_DATASETS_VENV:-/root/.cache/ringfeed-datasets-venv}; exits 1
# saying why where it cannot be made.
set -uo pipefail
"$(dirname "$0")/deps.sh" python3-torch python3-torchvision python3-venv >&2 || exit 1
PY_VENV_SYSTEM_SITE=1 exec "$(dirname "$0")/py_venv.sh" datasets_venv.sh \
	"${RINGFEED_DATASETS_VENV:-/root/.cache/ringfeed-datasets-venv}" \
	'datasets, pyarrow.parquet, torch, torchvision' 'numpy<2' 'pyarrow==24.*' datasets
