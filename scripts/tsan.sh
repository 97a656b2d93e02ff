#!/usr/bin/env bash
# tsan.sh - builds ringfeed with ThreadSanitizer (build-tsan/) and runs the
# lifecycle harness (tests/tsan/lifecycle.c) over a matrix of compute
# threads x read paths x raw, then the CLI in a few configurations (out of
# order, saved and resumed, destroy mid-run, token windows), and the
# credentials' refresh thread beside a signer (tests/tsan/credentials.c).
# Criterion's test programs cannot start under TSan, hence a harness. Any TSan report fails its run
# (halt_on_error); no report is suppressed. Ends with
# "tsan: N passed, N failed".
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build-tsan -Db_sanitize=thread -Dtests=false -Dcuda=disabled -Db_lundef=false
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-tsan-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
build-tsan/ringfeed gen --out "$tmp/data" --count 40 --classes 3 --threads 1 >/dev/null
build-tsan/ringfeed gen --raw --out "$tmp/raw" --count 40 --classes 2 --min-size 100 \
	--max-size 9000 --threads 1 >/dev/null
build-tsan/ringfeed gen --tokens --out "$tmp/tok" --shards 3 --shard-tokens 20000 >/dev/null
build-tsan/ringfeed pack --tokens "$tmp/tok" -o "$tmp/tokz" --frame-tokens 500 >/dev/null

passed=0
failed=0
run() {
	if "$@" >"$tmp/out" 2>&1; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "tsan: FAILED: $*" >&2
		tail -40 "$tmp/out" >&2
	fi
}
for t in 1 2 4; do
	for p in fixed plain pread; do
		run build-tsan/tests/tsan/tsan_lifecycle "$tmp/data" $t $p 0
	done
done
for p in fixed plain pread; do
	run build-tsan/tests/tsan/tsan_lifecycle "$tmp/raw" 1 $p 1
done
# the credentials' refresh thread beside a signer, and destroyed mid-refresh
if [ -x build-tsan/tests/tsan/tsan_credentials ]; then
	mkdir "$tmp/credentials"
	run build-tsan/tests/tsan/tsan_credentials "$tmp/credentials"
fi
common="--source $tmp/data --batch 4 --resize 32 --crop 24 --epochs 2 --no-progress"
run build-tsan/ringfeed bench $common --threads 3 --out-of-order
run build-tsan/ringfeed bench $common --threads 2 --save-state "$tmp/s" --after 5
run build-tsan/ringfeed bench $common --threads 2 --resume "$tmp/s" --io-depth 3 --prefetch 2
run build-tsan/ringfeed bench --source "$tmp/data" --batch 4 --resize 32 --crop 24 --no-progress --threads 2 --batches 2 --io-depth 64
run build-tsan/ringfeed bench --source "$tmp/raw" --raw --batch 8 --epochs 2 --no-progress
# token windows: landed by the ring thread, or decompressed by compute threads
# (.bin.zst), shuffled and in llm.c's order (chunks), out of order, resumed
tokens="--seq 63 --batch 8 --epochs 2 --no-progress"
run build-tsan/ringfeed bench --source "$tmp/tok" $tokens --out-of-order
run build-tsan/ringfeed bench --source "$tmp/tokz" $tokens --threads 3 --no-shuffle
run build-tsan/ringfeed bench --source "$tmp/tokz" $tokens --threads 2 --save-state "$tmp/t" --after 7
run build-tsan/ringfeed bench --source "$tmp/tokz" $tokens --threads 1 --resume "$tmp/t" --io-depth 3
# the node-local cache over http (tests/fault_server.py, no faults): a run
# that fills it, one that reads it, and two at once sharing it
build-tsan/ringfeed pack "$tmp/data" -o "$tmp/shards" --shard-size 64K >/dev/null
# and 8 MiB of raw shards, twice the smallest cache (two loaders evicting)
build-tsan/ringfeed gen --raw --out "$tmp/rawbig" --count 160 --classes 2 --min-size 40000 \
	--max-size 60000 --threads 1 >/dev/null
build-tsan/ringfeed pack "$tmp/rawbig" -o "$tmp/shards/big" --raw --shard-size 1M >/dev/null
python3 tests/fault_server.py "$tmp/shards" --p503 0 --preset 0 --pshort 0 --lifetime 300 \
	>"$tmp/server" 2>/dev/null &
server=$!
for _ in $(seq 100); do grep -q '^port ' "$tmp/server" && break; sleep 0.1; done
port=$(awk '/^port / {print $2}' "$tmp/server")
n=$(ls "$tmp/shards" | grep -c '\.tar$')
remote="--source http://127.0.0.1:$port/shard-{000000..$(printf %06d $((n - 1)))}.tar --batch 4"
remote="$remote --resize 32 --crop 24 --no-progress --cache-dir $tmp/cache --threads 2"
run build-tsan/ringfeed bench $remote --epochs 2
run build-tsan/ringfeed bench $remote --epochs 1 --io-depth 3
# two loaders with caches in one process (train and validation), each
# ring thread evicting its cache at once with the other's
nbig=$(ls "$tmp/shards/big" | grep -c '\.tar$')
run build-tsan/tests/tsan/tsan_two_caches \
	"http://127.0.0.1:$port/big/shard-{000000..$(printf %06d $((nbig - 1)))}.tar" "$tmp/cache2"
rm -rf "$tmp/cache"
pids=
for x in a b; do
	(build-tsan/ringfeed bench $remote --epochs 2 >"$tmp/$x" 2>&1; echo $? >"$tmp/$x.rc") &
	pids="$pids $!"
done
wait $pids
for x in a b; do
	if [ "$(cat "$tmp/$x.rc")" = 0 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "tsan: FAILED: two processes sharing a cache ($x)" >&2
		tail -40 "$tmp/$x" >&2
	fi
done
kill "$server" 2>/dev/null || true
echo "tsan: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
