#!/usr/bin/env bash
# moto_venv.sh - a cached virtual environment with moto's S3/IAM/STS server
# (moto[server], from PyPI; boto3 comes with it), for python/tests/test_s3.py,
# which runs a real S3 API server on 127.0.0.1. Prints the venv's python.
# Created once under ${RINGFEED_MOTO_VENV:-/root/.cache/ringfeed-moto-venv}.
# Where it cannot be made (PyPI unreachable, no venv module) it exits 1 with
# its last line on stderr saying why; scripts/test.sh passes that line on and
# the S3 tests skip with it.
set -uo pipefail
venv=${RINGFEED_MOTO_VENV:-/root/.cache/ringfeed-moto-venv}
usable() { "$venv/bin/python" -c 'import moto.server, boto3' 2>/dev/null; }
if [ ! -x "$venv/bin/python" ] || ! usable; then
	log=$(mktemp)
	trap 'rm -f "$log"' EXIT
	if ! /usr/bin/python3 -m venv "$venv" >"$log" 2>&1; then
		cat "$log" >&2
		echo "moto_venv.sh: cannot make a venv at $venv ($(tail -n 1 "$log"); Debian: python3-venv)" >&2
		exit 1
	fi
	# one quick try: a machine without PyPI says so in seconds, not minutes
	if ! "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 20 \
		'moto[server]' >"$log" 2>&1 || ! usable; then
		cat "$log" >&2
		why=$(grep -m1 '^ERROR' "$log" || tail -n 1 "$log")
		if grep -qE 'NewConnectionError|Temporary failure in name resolution|Network is unreachable|timed out|ProxyError' "$log"; then
			why="PyPI is unreachable ($why)"
		fi
		echo "moto_venv.sh: cannot install moto[server] into $venv: ${why:-pip failed}" >&2
		exit 1
	fi
fi
echo "$venv/bin/python"
