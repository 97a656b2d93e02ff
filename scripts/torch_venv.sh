#!/usr/bin/env bash
# torch_venv.sh - a cached virtual environment with current PyTorch from
# PyPI (the default wheel; it runs on the CPU without a GPU) and pytest, for testing the ringfeed package against
# pip's torch as well as Debian's python3-torch. Prints the venv's python.
# Created once under ${RINGFEED_VENV:-/root/.cache/ringfeed-torch-venv};
# large (torch and its CUDA wheels, some GiB), so scripts/test.sh does not
# make it; docs/TESTING.md ("Building by hand") says how to test in it.
set -euo pipefail
venv=${RINGFEED_VENV:-/root/.cache/ringfeed-torch-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import torch, pytest' 2>/dev/null; then
	/usr/bin/python3 -m venv "$venv" >&2
	"$venv/bin/pip" install -q --upgrade pip >&2
	"$venv/bin/pip" install -q torch pytest >&2
fi
echo "$venv/bin/python"
