#!/usr/bin/env bash
# cli_diagnose.sh - the slow suite's planted bottlenecks: `ringfeed bench
# --diagnose --json` must name each one.
#   decode-bound    full-size JPEGs, one compute thread (reads are far faster);
#   storage-bound   raw files whose reads are slowed by the test-only hook
#                   RINGFEED_TEST_READ_DELAY_US (the ring thread judges every
#                   read 4 ms late: at most 250 reads/s) - a planted slow
#                   device, stated as such; a cgroup io.max limit would need a
#                   loop device this test cannot count on;
#   consumer-bound  a 200 ms training step per batch of 8 (the input is far
#                   faster).
# usage: cli_diagnose.sh RINGFEED
set -euo pipefail
RF=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-diag.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$RF" gen --out "$T/jpg" --count 160 --classes 4 > /dev/null
"$RF" gen --raw --out "$T/raw" --count 400 --classes 4 --min-size 1000 --max-size 8000 > /dev/null
verdict() { /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["verdict"]); assert set(d["stages"]) >= {"fetch","prep","full","with_consumer"}'; }
fail=0
check() { # want got what
	if [ "$1" = "$2" ]; then echo "ok: $3 -> $2"; else echo "FAIL: $3: expected $1, got $2"; fail=1; fi
}
got=$("$RF" bench --source "$T/jpg" --threads 1 --batch 16 --diagnose --batches 8 --json | verdict)
check decode-bound "$got" "full-size JPEGs, 1 thread"
got=$(RINGFEED_TEST_READ_DELAY_US=4000 "$RF" bench --raw --source "$T/raw" --batch 16 --diagnose --batches 6 --json | verdict)
check storage-bound "$got" "raw reads slowed to 250/s"
got=$("$RF" bench --source "$T/jpg" --threads 2 --batch 8 --resize 64 --crop 56 --diagnose --batches 6 --step-ms 200 --json | verdict)
check consumer-bound "$got" "a 200 ms step per batch of 8"
echo "$((3 - fail)) passed, $fail failed"
exit $fail
