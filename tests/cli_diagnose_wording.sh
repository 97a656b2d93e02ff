#!/usr/bin/env bash
# cli_diagnose_wording.sh - what `ringfeed bench --diagnose` says, on the
# four kinds of run a newcomer makes (issue 38): raw files, JPEGs, a remote
# source (tar shards served over http by tests/fault_server.py on
# 127.0.0.1, no faults) and token windows. Checks the wording and the
# numbers' consistency, never a speed:
#   - plurals: no "1 threads", "1 cores", "1 batches" ...;
#   - where nothing is decoded (raw, tokens) no comparison with a prep
#     stage that does not exist: prep is "none" in text, null in JSON, and
#     the verdict does not say "< prep";
#   - GPU decode (--decode auto) suggested only where this build has CUDA
#     and sees a device;
#   - the fetch line gives MB/s and reads/s (requests/s when remote);
#   - JSON has no -1 sentinel anywhere (absent values are null);
#   - the cost to the trainer: "a CPU-bound step of X ms took Y ms beside
#     the loader (...)" in text, the report and JSON, where slowdown_pct is
#     Y over X, the model is min(feed, batch/step), the comparison is with
#     one compute thread fewer, and a thread count is recommended exactly
#     when that run trained more than 5% faster;
#   - tune and diagnose warn when the machine is busy (made so here with
#     busy loops, one a CPU).
# usage: cli_diagnose_wording.sh RINGFEED
set -euo pipefail
RF=$1
here=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-diagw.XXXXXX")
server= spinners=()
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT INT TERM
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "SKIP: no python3 to read the JSON"; exit 77; }
pass=0 fail=0 skip=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }

"$RF" gen --out "$T/jpg" --count 96 --classes 4 --threads 1 > /dev/null
"$RF" gen --raw --out "$T/raw" --count 400 --classes 4 --min-size 1000 --max-size 8000 > /dev/null
"$RF" gen --tokens --out "$T/tok" --shards 2 --shard-tokens 100000 > /dev/null 2>&1
gpu=0
"$RF" --version | grep -Eq 'cuda: built in, [1-9][0-9]* device' && gpu=1

# The checks common to every run: TEXT JSON REPORT WHAT NODECODE(0|1) REMOTE(0|1)
check() {
	local txt=$1 json=$2 html=$3 what=$4 nodecode=$5 remote=$6
	if grep -Eq '(^|[^0-9.])1 (threads|compute threads|cores|CPUs|batches|runs|reads|requests)\b' "$txt"; then
		bad "$what: a wrong plural: $(grep -Eo '(^|[^0-9.])1 [a-z ]*s\b' "$txt" | head -1)"
	else ok "$what: plurals"; fi
	local unit=reads
	[ "$remote" = 1 ] && unit=requests
	grep -Eq "^  fetch \(reads only\) +[0-9]+ samples/s; [0-9.]+ MB/s, [0-9]+ $unit/s" "$txt" &&
		ok "$what: the fetch line has MB/s and $unit/s" || bad "$what: fetch line: $(grep fetch "$txt")"
	if [ "$nodecode" = 1 ]; then
		grep -q '^  prep (compute) *none: ' "$txt" && ! grep -Eq '< prep|prep [0-9]' "$txt" &&
			ok "$what: no prep stage to compare with" || bad "$what: compares with prep: $(grep -E 'prep|verdict' "$txt")"
		! grep -q 'prep (compute)' "$html" && ok "$what: no prep bar in the report" || bad "$what: a prep bar in the report"
	fi
	if [ "$gpu" = 0 ]; then
		! grep -q -- '--decode auto' "$txt" "$json" && ok "$what: no GPU advice without a device" ||
			bad "$what: GPU advice without a device: $(grep -h -- '--decode auto' "$txt" "$json")"
	fi
	grep -Eq '^cost to the trainer: a CPU-bound step of [0-9.]+ ms took [0-9.]+ ms beside the loader \(' "$txt" &&
		ok "$what: the step slowdown line" || bad "$what: no step slowdown line"
	grep -q 'class="finding">Cost to the trainer: a CPU-bound step of' "$html" &&
		ok "$what: the report has the trainer's cost" || bad "$what: report without the trainer's cost"
	"$PY" - "$json" "$nodecode" <<'PY' && ok "$what: JSON: nulls, no -1, trainer figures consistent" || bad "$what: JSON"
import json, math, sys
d = json.load(open(sys.argv[1])); nodecode = sys.argv[2] == "1"
def walk(v, path="$"):
    if isinstance(v, dict):  # slowdown_pct may be any number: a step can come out quicker
        for k, x in v.items():
            if k != "slowdown_pct": walk(x, path + "." + k)
    elif isinstance(v, list):
        for i, x in enumerate(v): walk(x, "%s[%d]" % (path, i))
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        assert v != -1, "a -1 sentinel at " + path
walk(d)
st = d["stages"]
assert st["engines"] is None or d["stages"]["engines"] > 0
if nodecode:
    assert st["prep"] is None and "< prep" not in d["why"], (st, d["why"])
else:
    assert st["prep"] > 0
f = d["fetch"]
assert f["mb_per_s"] >= 0 and (f.get("reads_per_s", f.get("requests_per_s")) or 0) >= 0
assert f["read_latency_ms"] is None or f["read_latency_ms"] >= 0
t = d["trainer"]
assert t["step_alone_ms"] > 0 and t["step_beside_ms"] > 0
# the times are printed to 0.001 ms and the slowdown to 0.1%: the slowdown
# must lie within what the rounded times allow (a short step's rounding
# moves the ratio by more than any fixed tolerance)
a, b = t["step_alone_ms"], t["step_beside_ms"]
lo = 100 * ((b - 5e-4) / (a + 5e-4) - 1) - 0.05
hi = 100 * ((b + 5e-4) / max(a - 5e-4, 1e-9) - 1) + 0.05
assert lo <= t["slowdown_pct"] <= hi, (t, lo, hi)
cur = t["current"]
assert cur["threads"] == d["threads"] and cur["step_beside_ms"] == t["step_beside_ms"]
for r in [cur] + ([t["fewer"]] if t["fewer"] else []):
    assert abs(r["model_samples_per_s"] - min(r["feed_samples_per_s"], r["step_allows_samples_per_s"])) < 0.01, r
if t["fewer"]:
    assert t["fewer"]["threads"] == cur["threads"] - 1 >= 1
    faster = t["fewer"]["measured_samples_per_s"] > 1.05 * cur["measured_samples_per_s"]
    assert t["fewer_threads_faster"] == faster
    assert t["recommended_threads"] == (t["fewer"]["threads"] if faster else None)
else:
    assert t["fewer_threads_faster"] is False and t["recommended_threads"] is None
assert "CPU-bound step of" in t["line"]
m = d["machine"]
assert isinstance(m["busy"], bool) and (m["warning"] is None) != m["busy"]
PY
}

# RUN WHAT NODECODE REMOTE ARGS...: the text (with a report), then JSON
run() {
	local what=$1 nodecode=$2 remote=$3
	shift 3
	local base=$T/${what// /_}
	if ! "$RF" bench "$@" --diagnose --report "$base.html" > "$base.txt" 2> "$base.err" ||
	   ! "$RF" bench "$@" --diagnose --json > "$base.json" 2>> "$base.err"; then
		bad "$what: --diagnose failed: $(tail -3 "$base.err")"
		return
	fi
	check "$base.txt" "$base.json" "$base.html" "$what" "$nodecode" "$remote"
}

run raw 1 0 --raw --source "$T/raw" --batch 16 --batches 12
run jpeg 0 0 --source "$T/jpg" --threads 2 --batch 8 --resize 64 --crop 56 --batches 8
run "jpeg, 1 thread" 0 0 --source "$T/jpg" --threads 1 --batch 8 --batches 6
run tokens 1 0 --tokens --seq 64 --source "$T/tok/*.bin" --batch 8 --batches 12

# remote: JPEG shards over http from 127.0.0.1
mkdir -p "$T/www"
"$RF" pack "$T/jpg" -o "$T/www/shards" --shard-size 200K > /dev/null
rm -f "$T/www/shards/ringfeed.index" # scanned over http, as a remote source is
"$PY" "$here/fault_server.py" "$T/www" --port 0 --p503 0 --preset 0 --pshort 0 --lifetime 300 \
	> "$T/server.out" 2> /dev/null &
server=$!
for _ in $(seq 200); do grep -q '^port ' "$T/server.out" && break; sleep 0.05; done
port=$(awk '/^port /{print $2}' "$T/server.out")
if [ -z "$port" ]; then
	echo "skip: remote: fault_server.py did not start"
	skip=$((skip + 1))
else
	last=$(($(ls "$T/www/shards/"*.tar | wc -l) - 1))
	run remote 0 1 --source "http://127.0.0.1:$port/shards/shard-{000000..$(printf %06d "$last")}.tar" \
		--batch 8 --resize 64 --crop 56 --batches 8
	grep -q '"requests_per_s"' "$T/remote.json" && ok "remote: JSON counts requests/s" || bad "remote: no requests_per_s"
fi

# a busy machine: a busy loop a CPU beside the run; both commands say so
cpus=$(grep -c '^cpu[0-9]' /proc/stat 2>/dev/null || echo 0)
if [ "$cpus" -lt 1 ] || [ "$cpus" -gt 64 ]; then
	echo "skip: busy machine: /proc/stat counts $cpus CPUs"
	skip=$((skip + 1))
else
	for _ in $(seq "$cpus"); do
		(while :; do :; done) &
		spinners+=($!)
	done
	"$RF" bench --source "$T/jpg" --threads 1 --batch 8 --resize 64 --crop 56 --diagnose --batches 8 \
		> "$T/busy.txt" 2>&1 || true
	"$RF" tune --source "$T/jpg" --threads 1 --batch 8 --resize 64 --crop 56 --batches 3 --json \
		> "$T/busy_tune.json" 2> /dev/null || true
	for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
	spinners=()
	grep -Eq '^warning: the machine is busy \(load [0-9.]+ on [0-9]+ CPUs?, other processes used [0-9.]+ of them meanwhile\): figures are noisy' "$T/busy.txt" &&
		ok "diagnose warns of a busy machine" || bad "diagnose: no busy warning: $(tail -3 "$T/busy.txt")"
	"$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]))["machine"]; assert m["busy"] is True and m["warning"].startswith("the machine is busy"), m' \
		"$T/busy_tune.json" && ok "tune --json: machine busy" || bad "tune --json: no busy machine"
fi

echo "$pass passed, $fail failed, $skip skipped"
exit $((fail > 0))
