#!/usr/bin/env bash
# moto_venv.sh - a cached virtual environment with moto's S3/IAM/STS server
# (moto[server], from PyPI; boto3 comes with it), for python/tests/test_s3.py,
# which runs a real S3 API server on 127.0.0.1. Prints the venv's python.
# Created once under ${RINGFEED_MOTO_VENV:-/root/.cache/ringfeed-moto-venv}.
# Where it cannot be made (PyPI unreachable, no venv module) it exits 1 with
# its last line on stderr saying why; scripts/test.sh passes that line on and
# the S3 tests skip with it.
set -uo pipefail
exec "$(dirname "$0")/py_venv.sh" moto_venv.sh "${RINGFEED_MOTO_VENV:-/root/.cache/ringfeed-moto-venv}" 'moto.server, boto3' 'moto[server]'
