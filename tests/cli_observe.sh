#!/usr/bin/env bash
# cli_observe.sh - what `ringfeed bench` and `ringfeed tune` show: --log
# writes one JSON line per batch with its wait, fetch and prep times and
# bytes; progress goes to stderr only when asked (or to a terminal), for
# bench, gen and index alike; tune
# tries configurations, repeats its finalists (their median and spread),
# reports the best and a recommendation within the noise or 5% of it, and
# its report page has the tune chart.
# usage: cli_observe.sh RINGFEED
set -euo pipefail
RF=$1
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-obs.XXXXXX")
trap 'rm -rf "$T"' EXIT
"$RF" gen --out "$T/jpg" --count 48 --classes 3 > /dev/null
small=(--source "$T/jpg" --batch 8 --resize 64 --crop 56 --threads 2)
pass=0 fail=0
ok() { echo "ok: $1"; pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }

"$RF" bench "${small[@]}" --epochs 2 --log "$T/log.jsonl" > /dev/null 2> "$T/err1"
n=$(wc -l < "$T/log.jsonl")
[ "$n" = 12 ] && ok "--log: 12 lines for 12 batches" || bad "--log: $n lines, expected 12"
/usr/bin/python3 - "$T/log.jsonl" <<'PY' && ok "--log lines are JSON with batch, wait, fetch, prep, bytes" || bad "--log content"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["batch"] for r in rows] == list(range(12))
for r in rows:
    assert r["wait_ms"] >= 0 and r["fetch_ms"] >= 0 and r["prep_ms"] > 0 and r["bytes"] > 0
    assert r["samples"] == 8
PY
grep -q "batches ready" "$T/err1" && bad "progress shown without a terminal" || ok "no progress when stderr is not a terminal"
"$RF" bench "${small[@]}" --epochs 2 --progress > /dev/null 2> "$T/err2"
grep -q "reads in flight .*batches ready" "$T/err2" && ok "--progress shows rate and queues" || bad "--progress shows nothing"

# long gen and index runs show their count on a terminal (script(1) gives one)
if command -v script > /dev/null; then
	script -qc "$RF gen --out $T/g2 --count 300 --classes 2" /dev/null | tr '\r' '\n' | grep -q "gen: 300 / 300 images" &&
		ok "gen shows progress on a terminal" || bad "gen progress"
	"$RF" gen --raw --out "$T/r5k" --count 5000 --classes 2 --min-size 1 --max-size 8 > /dev/null
	script -qc "$RF index --raw $T/r5k -o $T/i.idx" /dev/null | tr '\r' '\n' | grep -q "^index: 4096 files" &&
		ok "index shows progress on a terminal (every 4,096 files)" || bad "index progress"
	"$RF" index "$T/jpg" -o "$T/i.idx" 2>&1 | grep -q "index:" && bad "index progress without a terminal" ||
		ok "index quiet without a terminal"
fi

"$RF" tune "${small[@]}" --batches 4 --json --report "$T/tune.html" > "$T/tune.json"
/usr/bin/python3 - "$T/tune.json" <<'PY' && ok "tune: trials, finalists repeated, best, recommended within the noise or 5%" || bad "tune output"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["trials"]) >= 4, d
fin = d["finalists"]
assert 1 <= len(fin) <= 4, fin
key = lambda c: (c["threads"], c["io_depth"], c["prefetch"], c["batch"])
for f in fin:  # at least 3 runs each, at most 7; median and range from them
    runs = sorted(f["all"])
    assert 3 <= f["runs"] == len(runs) <= 7, f
    assert f["min"] == runs[0] and f["max"] == runs[-1], f
    assert f["min"] <= f["samples_per_s"] <= f["max"], f
best, rec = d["best"], d["recommended"]
assert best["samples_per_s"] == max(f["samples_per_s"] for f in fin)
assert key(rec) in [key(f) for f in fin] and key(best) in [key(f) for f in fin]
overlap = rec["max"] >= best["min"]
assert overlap or rec["samples_per_s"] >= 0.95 * best["samples_per_s"], (best, rec)
assert d["difference_is_noise"] == (key(rec) != key(best) and overlap)
assert isinstance(d["machine"]["busy"], bool) and d["machine"]["cpus"] >= 1
assert (d["machine"]["warning"] is None) != d["machine"]["busy"]
PY
"$RF" tune "${small[@]}" --batches 4 > "$T/tune.txt" 2>/dev/null
grep -q "^  the finalists, [0-9]* runs each (median, lowest-highest, spread):" "$T/tune.txt" &&
	grep -q "^recommended: --threads" "$T/tune.txt" && ok "tune: finalists' medians and spread in text" ||
	bad "tune text: $(cat "$T/tune.txt")"
grep -q '<h2>Finalists, repeated: samples/s</h2>' "$T/tune.html" && ! grep -q 'Consumer wait' "$T/tune.html" &&
	ok "tune --report: its own titles, no empty consumer section" || bad "tune report titles"
grep -q 'id="chart-tune"' "$T/tune.html" && ok "tune --report has the tune chart" || bad "tune report"
grep -q "coordinate descent" <<< "$("$RF" tune --help)" && ok "tune --help" || bad "tune --help"
echo "$pass passed, $fail failed"
exit $((fail > 0))
