#!/bin/sh
# cli_json.sh - machine-readable output stays valid whatever the paths hold:
# a dataset whose folder name has a quote, a backslash, a newline, a tab and
# a byte that is not UTF-8 goes through bench --json, --diagnose --json,
# tune --json, --log and --ids, and Python's json parses every line back
# (the source path included, as written).
# Usage (meson does this): cli_json.sh PATH_TO_ringfeed
set -eu
rf=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-json-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); }
command -v python3 >/dev/null || { echo "cli_json: no python3 to parse with"; exit 77; }

name=$(printf 'd"q\\b\nn\tt\377x')
"$rf" gen --out "$tmp/$name" --count 12 --classes 2 --threads 1 >/dev/null
src="$tmp/$name"
common="--batch 4 --resize 64 --crop 56 --threads 1"

check() { # FILE WHAT: every line parses; the source, where present, is the path
	python3 - "$1" "$src" "$2" <<'PY' || fail "$2: not valid JSON: $(head -c 400 "$1")"
import json, sys
path, src, what = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [l for l in open(path, "rb").read().split(b"\n") if l.strip()]
assert lines, "no output"
want = src.encode("utf-8", "surrogateescape").decode("latin-1")
for l in lines:
    d = json.loads(l.decode("utf-8"))
    if isinstance(d, dict) and "source" in d:
        # valid UTF-8 kept, the 0xff byte read as U+00FF
        got = d["source"]
        assert got.replace("\u00ff", "\udcff") == src or got == want or got == src.replace("\udcff", "\u00ff"), (got, src)
PY
	ok
}
"$rf" bench --source "$src" $common --json >"$tmp/bench.json"
check "$tmp/bench.json" "bench --json"
"$rf" bench --source "$src" $common --diagnose --batches 3 --json >"$tmp/diag.json" 2>/dev/null
check "$tmp/diag.json" "bench --diagnose --json"
"$rf" tune --source "$src" $common --batches 2 --json >"$tmp/tune.json" 2>/dev/null
check "$tmp/tune.json" "tune --json"
"$rf" bench --source "$src" $common --log "$tmp/log.jsonl" --ids "$tmp/ids.txt" >/dev/null
check "$tmp/log.jsonl" "--log"
[ "$(wc -l <"$tmp/ids.txt")" -eq 3 ] || fail "--ids: 3 lines for 3 batches"
ok
# A password in a URL (http://user:PASS@host/) is shown as user:***@ in
# every message, the --json output and the report, and stored nowhere (the
# index cache, `ringfeed index`'s index object, the state, the logs); the
# cache, the object and the state are the user's alone (0600). Served by
# tests/fault_server.py with no faults, which ignores the userinfo (curl
# sends it as Basic authorization).
here=$(cd "$(dirname "$0")" && pwd)
pw=SeCrEtPw42
sec="$tmp/secret"
mkdir -p "$sec/www"
"$rf" gen --out "$sec/jpg" --count 24 --classes 2 --threads 1 >/dev/null
"$rf" pack "$sec/jpg" -o "$sec/www/shards" --shard-size 100K >/dev/null
rm -f "$sec/www/shards/ringfeed.index" # the shards are scanned: their index is written here
python3 "$here/fault_server.py" "$sec/www" --port 0 --p503 0 --preset 0 --pshort 0 \
	--lifetime 120 >"$sec/server.out" 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT INT TERM
for _ in $(seq 200); do grep -q '^port ' "$sec/server.out" && break; sleep 0.05; done
port=$(awk '/^port /{print $2}' "$sec/server.out")
[ -n "$port" ] || fail "fault_server.py did not start"
url="http://alice:$pw@127.0.0.1:$port"
shards="$url/shards/shard-{000000..000002}.tar"
"$rf" bench --source "$shards" $common --json --index-cache "$sec/index" --save-state "$sec/state" \
	--ids "$sec/ids" --log "$sec/log" >"$sec/bench.json" 2>"$sec/bench.err" ||
	fail "bench over $shards: $(cat "$sec/bench.err")"
grep -q "\"source\":\"http://alice:\*\*\*@127.0.0.1:$port/shards/" "$sec/bench.json" ||
	fail "bench --json shows the source as alice:***@: $(head -c 300 "$sec/bench.json")"
"$rf" bench --source "$shards" $common --index-cache "$sec/index" --diagnose --batches 2 \
	--report "$sec/report.html" >"$sec/diag.out" 2>&1 || fail "diagnose: $(cat "$sec/diag.out")"
"$rf" index "$shards" -o "$sec/object" >"$sec/index.out" 2>&1 || fail "index: $(cat "$sec/index.out")"
# errors: a malformed URL source, a server that is gone (after it is stopped)
"$rf" bench --source "$url/shards/" $common >"$sec/e1.out" 2>&1 && fail "a folder URL is refused"
grep -q "alice:\*\*\*@" "$sec/e1.out" || fail "the error shows alice:***@: $(cat "$sec/e1.out")"
kill $server
wait $server 2>/dev/null || true
"$rf" bench --source "$shards" $common >"$sec/e2.out" 2>&1 && fail "a stopped server fails the run"
grep -q "alice:\*\*\*@127.0.0.1:$port" "$sec/e2.out" || fail "the error names the URL as alice:***@: $(cat "$sec/e2.out")"
leaks=$(grep -rl "$pw" "$sec" 2>/dev/null || true)
[ -z "$leaks" ] || fail "the password is in: $leaks"
for f in index object state; do
	mode=$(stat -c %a "$sec/$f")
	[ "$mode" = 600 ] || fail "$f: mode $mode, not 600"
done
ok

echo "$passed passed, 0 failed"
