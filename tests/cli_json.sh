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
echo "$passed passed, 0 failed"
