#!/usr/bin/env bash
# parquet_venv.sh - a cached virtual environment with the real Parquet
# writers the tests compare against: pyarrow (from PyPI: its wheels need
# NumPy 2, which Debian 12's python3-numpy is not, hence a venv of its own).
# tests/test_parquet.c runs tests/parquet_fixtures.py with its python.
# Prints the venv's python. Created once under
# ${RINGFEED_PARQUET_VENV:-/root/.cache/ringfeed-parquet-venv}. Where it
# cannot be made (PyPI unreachable, no venv module) it exits 1 with its last
# line on stderr saying why, and the Parquet tests skip saying so.
set -uo pipefail
exec "$(dirname "$0")/py_venv.sh" parquet_venv.sh "${RINGFEED_PARQUET_VENV:-/root/.cache/ringfeed-parquet-venv}" 'pyarrow.parquet' 'pyarrow'
