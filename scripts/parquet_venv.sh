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
venv=${RINGFEED_PARQUET_VENV:-/root/.cache/ringfeed-parquet-venv}
usable() { "$venv/bin/python" -c 'import pyarrow.parquet' 2>/dev/null; }
if [ ! -x "$venv/bin/python" ] || ! usable; then
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	if ! /usr/bin/python3 -m venv "$venv" >"$log" 2>&1; then
		cat "$log" >&2
		echo "parquet_venv.sh: cannot make a venv at $venv ($(tail -n 1 "$log"); Debian: python3-venv)" >&2
		exit 1
	fi
	# one quick try: a machine without PyPI says so in seconds, not minutes
	if ! "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 20 \
		pyarrow >"$log" 2>&1 || ! usable; then
		cat "$log" >&2
		why=$(grep -m1 '^ERROR' "$log" || tail -n 1 "$log")
		if grep -qE 'NewConnectionError|Temporary failure in name resolution|Network is unreachable|timed out|ProxyError' "$log"; then
			why="PyPI is unreachable ($why)"
		fi
		echo "parquet_venv.sh: cannot install pyarrow into $venv: ${why:-pip failed}" >&2
		exit 1
	fi
fi
echo "$venv/bin/python"
