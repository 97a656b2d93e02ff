#!/usr/bin/env bash
# py_venv.sh WHO VENV IMPORT PACKAGE... - a cached virtual environment for
# a peer or writer the tests run (moto_venv.sh, parquet_venv.sh call it):
# made once at VENV from /usr/bin/python3 with the PACKAGEs from PyPI,
# usable when `python -c "import IMPORT"` works (IMPORT may list several
# modules, "a, b": a venv made before a package was added is topped up).
# Prints the venv's python. Where it cannot be made (PyPI unreachable, no
# venv module) it exits 1 with its last line on stderr saying why (WHO: the
# calling script's name), which the tests that need it skip with.
# PY_VENV_SYSTEM_SITE=1: the venv sees the system's packages too (a peer
# that needs Debian's torch beside PyPI's packages: datasets_venv.sh).
set -uo pipefail
who=$1 venv=$2 import=$3
shift 3
usable() { "$venv/bin/python" -c "import $import" 2>/dev/null; }
if [ ! -x "$venv/bin/python" ] || ! usable; then
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	if ! /usr/bin/python3 -m venv ${PY_VENV_SYSTEM_SITE:+--system-site-packages} "$venv" >"$log" 2>&1; then
		cat "$log" >&2
		echo "$who: cannot make a venv at $venv ($(tail -n 1 "$log"); Debian: python3-venv)" >&2
		exit 1
	fi
	# one quick try: a machine without PyPI says so in seconds, not minutes
	if ! "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 20 \
		"$@" >"$log" 2>&1 || ! usable; then
		cat "$log" >&2
		why=$(grep -m1 '^ERROR' "$log" || tail -n 1 "$log")
		if grep -qE 'NewConnectionError|Temporary failure in name resolution|Network is unreachable|timed out|ProxyError' "$log"; then
			why="PyPI is unreachable ($why)"
		fi
		echo "$who: cannot install $* into $venv: ${why:-pip failed}" >&2
		exit 1
	fi
fi
echo "$venv/bin/python"
