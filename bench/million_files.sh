#!/usr/bin/env bash
# million_files.sh - the index at scale (issue 3): for a tree of COUNT files
# (default 1,000,000 raw files of 1..1024 bytes in 1,000 folders, generated if
# missing), measures
#   - the index build (directory walk + a stat per file) with cold metadata
#     (echo 3 > drop_caches), written as an index cache, and GNU find over the
#     same tree as a yardstick for the walk;
#   - loading the index from the cache, cold and warm;
#   - memory: index bytes per file, peak RSS;
#   - time to first batch, with the walk and with the cache.
# Needs root (drop_caches). Settings: DATA, COUNT, OUT_JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
DATA=${DATA:-$ROOT/bench/data/raw-1m}
COUNT=${COUNT:-1000000}
RF=$ROOT/build/ringfeed
CACHE=$(dirname "$DATA")/$(basename "$DATA").idx
[ "$(id -u)" -eq 0 ] || { echo "million_files.sh: needs root to drop the page cache" >&2; exit 1; }
"$ROOT/scripts/deps.sh"
"$ROOT/scripts/build.sh" build
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$RF" gen --raw --out "$DATA" --count "$COUNT" --classes 1000 --min-size 1 --max-size 1024
fi
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
secs() { /usr/bin/python3 -c 'import subprocess, sys, time; t = time.time(); subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True); print("%.3f" % (time.time() - t))' "$@"; }
echo "machine: $(nproc) cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA"), $(date -u '+%Y-%m-%d %H:%M UTC')"
rm -f "$CACHE"

drop
echo "find, cold metadata:        $(secs find "$DATA" -type f -printf '%s\n') s"
drop
echo "ringfeed index, cold:       $("$RF" index --raw "$DATA" -o "$CACHE")"
echo "ringfeed index, warm:       $("$RF" index --raw "$DATA" -o "$CACHE")"
echo "cache file:                 $(stat -c %s "$CACHE") bytes"
show() {
	/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[2]); print("%-27s set-up %.3f s, first batch %.3f s, index %d files, %.1f bytes/file, peak RSS %d MiB" % (sys.argv[1], d["create_s"], d["first_batch_s"], d["index_files"], d["index_bytes"] / d["index_files"], d["peak_rss_kib"] // 1024))' "$1" "$2"
}
drop
show "first batch, walk, cold:" "$("$RF" bench --raw --raw-max 1 --source "$DATA" --batches 1 --json)"
show "first batch, walk, warm:" "$("$RF" bench --raw --raw-max 1 --source "$DATA" --batches 1 --json)"
drop
show "first batch, cache, cold:" "$("$RF" bench --raw --raw-max 1 --source "$DATA" --index-cache "$CACHE" --batches 1 --json)"
show "first batch, cache, warm:" "$("$RF" bench --raw --raw-max 1 --source "$DATA" --index-cache "$CACHE" --batches 1 --json)"
