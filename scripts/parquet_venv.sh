#!/usr/bin/env bash
# parquet_venv.sh - a cached virtual environment with the real Parquet
# writers the tests compare against, all from PyPI: pyarrow (its wheels need
# NumPy 2, which Debian 12's python3-numpy is not, hence a venv of its own),
# and the writers issue 39 names beside it: the `datasets` library (with
# Pillow, which its Image feature needs to encode), DuckDB and Polars (they
# and datasets agree on pyarrow: one venv). tests/test_parquet.c runs
# tests/parquet_fixtures.py, test_parquet_source.c tests/parquet_images.py
# and tests/parquet_writers.py with its python.
# Prints the venv's python. Created once under
# ${RINGFEED_PARQUET_VENV:-/root/.cache/ringfeed-parquet-venv}. Where it
# cannot be made (PyPI unreachable, no venv module) it exits 1 with its last
# line on stderr saying why, and the Parquet tests skip saying so.
set -uo pipefail
exec "$(dirname "$0")/py_venv.sh" parquet_venv.sh "${RINGFEED_PARQUET_VENV:-/root/.cache/ringfeed-parquet-venv}" \
	'pyarrow.parquet, datasets, duckdb, polars, PIL' pyarrow datasets duckdb polars pillow
