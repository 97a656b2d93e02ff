#!/usr/bin/env bash
# cli_parquet_columns.sh - `ringfeed bench` on Parquet files with --column
# and --fields: which column is the image and the label (a string label
# column; the image column named), other columns delivered as fields (the
# bytes the report counts equal what pyarrow reads of those columns), and
# the refusals a user meets: a column the file lacks (named, with the
# columns it has), --column on a source without columns, a field with no
# column. Files written by tests/parquet_columns.py with pyarrow.
# usage: cli_parquet_columns.sh RINGFEED   (skips, exit 77, without the
# parquet venv's python: scripts/parquet_venv.sh; RINGFEED_PARQUET_PYTHON
# names another)
set -uo pipefail
RF=$1
here=$(cd "$(dirname "$0")" && pwd)
py=${RINGFEED_PARQUET_PYTHON:-/root/.cache/ringfeed-parquet-venv/bin/python}
"$py" -c 'import pyarrow' 2>/dev/null ||
	{ echo "SKIP: no python with pyarrow at $py (scripts/parquet_venv.sh makes it)"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-pqcols.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
common="--batch 4 --resize 64 --crop 56 --threads 1"

"$RF" gen --out "$T/tree" --count 27 --classes 3 --threads 1 >/dev/null || { echo "gen failed"; exit 1; }
"$py" "$here/parquet_columns.py" "$T/tree" "$T/out" || { echo "parquet_columns.py failed"; exit 1; }
P=$T/out/cols.parquet
key() { "$py" -c "import json,sys; d=json.load(sys.stdin); print(d.get('$1', d['counters'].get('$1')))"; }

# the image column named, string labels, two fields (one nullable): every
# row once, no bad sample, the fields' bytes what pyarrow reads
json=$("$RF" bench --source "$P" $common --column image=alt,label=name \
	--fields 'caption,note?' --json 2>"$T/err")
check "bench --column --fields ran: $(cat "$T/err")" [ -n "$json" ]
check "27 samples" [ "$(key samples <<<"$json")" = 27 ]
check "no bad sample" [ "$(key bad_samples <<<"$json")" = 0 ]
want=$("$py" -c "
import pyarrow.parquet as pq
t = pq.read_table('$P', columns=['caption', 'note']).to_pylist()
print(sum(len(r['caption'].encode()) + len((r['note'] or '').encode()) for r in t))")
check "field bytes $(key field_bytes <<<"$json"), pyarrow's $want" \
	[ "$(key field_bytes <<<"$json")" = "$want" ]

# a required field that is null in some rows: those are bad samples
json=$("$RF" bench --source "$P" $common --fields note --on-error skip --json 2>/dev/null)
check "a null in a required field is a bad sample" [ "$(key bad_samples <<<"$json")" -ge 9 ]

# refusals: each names what is wrong
err=$("$RF" bench --source "$P" $common --column image=jpg 2>&1 >/dev/null)
check "an unknown column refused naming it and the file's columns: $err" \
	grep -q "cols.parquet: no column 'jpg'.*its columns: image, alt, " <<<"$err"
err=$("$RF" bench --source "$T/tree" $common --column label=cls 2>&1 >/dev/null)
check "--column on loose files refused: $err" grep -q "loose files, which have no columns" <<<"$err"
err=$("$RF" bench --source "$P" $common --fields title 2>&1 >/dev/null)
check "a field with no column refused: $err" grep -q "no column 'title'.*'title?'" <<<"$err"
err=$("$RF" bench --source "$P" $common --column lbl=x 2>&1 >/dev/null)
check "a key other than image and label refused: $err" \
	grep -q "'lbl=x' is not image=NAME or label=NAME" <<<"$err"
check "bench --help lists --column" grep -q -- "--column image=NAME,label=NAME" \
	<<<"$("$RF" bench --help)"

echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
