#!/usr/bin/env bash
# small_files.sh - the small-files-on-disk case, side by side in one run:
#   fio         io_uring, O_DIRECT, 4 KiB random reads, iodepth 128, on one
#               file of the dataset's total size: the device's limit;
#   ringfeed    bench --raw (open -> read -> close per file, O_DIRECT);
#   pread       bench/peers/pread_threads.c, T threads open/read/close, T in
#               2, 16, 64 (the best counts);
#   torch       bench/peers/torch_bytes.py, DataLoader reading bytes,
#               num_workers = cores.
# Steady state of the epochs after the first: metadata warm (one untimed
# pass that stats the tree), file data cold (sync; echo 1 > drop_caches before
# every timed run). The first epoch with everything cold (echo 3) is measured
# separately, for ringfeed alone (index walk included).
# Needs root (drop_caches). Settings by environment: DATA (default
# bench/data/raw-200k, generated: COUNT 200000 files of MIN_SIZE 1024 to
# MAX_SIZE 16384 bytes), ROUNDS (3), IO_DEPTH (ringfeed, 512), FIO_SECONDS
# (15), OUT_JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
DATA=${DATA:-$ROOT/bench/data/raw-200k}
COUNT=${COUNT:-200000}
MIN_SIZE=${MIN_SIZE:-1024}
MAX_SIZE=${MAX_SIZE:-16384}
ROUNDS=${ROUNDS:-3}
IO_DEPTH=${IO_DEPTH:-512}
FIO_SECONDS=${FIO_SECONDS:-15}
RF=$ROOT/build/ringfeed
PREAD=$ROOT/build/bench/pread_threads
PY=/usr/bin/python3
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-small.XXXXXX")}
[ "$(id -u)" -eq 0 ] || { echo "small_files.sh: needs root to drop the page cache" >&2; exit 1; }

"$ROOT/scripts/deps.sh" fio python3-torch
"$ROOT/scripts/build.sh" build -Dbench=enabled
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$RF" gen --raw --out "$DATA" --count "$COUNT" --classes 100 --min-size "$MIN_SIZE" --max-size "$MAX_SIZE"
fi
LIST=$(mktemp "${TMPDIR:-/tmp}/ringfeed-list.XXXXXX")
find "$DATA" -type f > "$LIST"
NFILES=$(wc -l < "$LIST")
TOTAL=$(find "$DATA" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
FIO_FILE=$(dirname "$DATA")/fio-$(basename "$DATA").dat
: > "$OUT_JSON"

drop() { sync; echo "$1" > /proc/sys/vm/drop_caches; }
record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
# ringfeed's steady rate leaves out its set-up (index walk), as the peers are
# timed after listing their files
show() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[2]); print("  %-14s %9.0f files/s" % (sys.argv[1], d.get("files_per_s", d.get("steady_samples_per_s", d.get("iops", 0)))))' "$1" "$2"; }

echo "machine: $(nproc) cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA") ($(lsblk -dno NAME,ROTA,MODEL "$(findmnt -no SOURCE -T "$DATA")" 2>/dev/null | tr -s ' ')), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "data:    $DATA: $NFILES files, $TOTAL bytes"

# First epoch with everything cold: metadata and data (index walk included).
drop 3
first=$("$RF" bench --raw --raw-max $(( (MAX_SIZE + 1023) / 1024 )) --source "$DATA" --io-depth "$IO_DEPTH" --epochs 1 --json)
record ringfeed_cold_first_epoch 0 "$first"
echo "first epoch, everything cold (echo 3):"; show ringfeed "$first"

# Metadata warm from here on: one untimed pass that stats every file.
find "$DATA" -type f -printf '%s\n' > /dev/null

# fio on one file of the same total size (laid out once).
if [ ! -f "$FIO_FILE" ] || [ "$(stat -c %s "$FIO_FILE")" -lt "$TOTAL" ]; then
	fio --name=layout --filename="$FIO_FILE" --size="$TOTAL" --rw=write --bs=1M --direct=1 \
		--ioengine=psync --output=/dev/null
fi

for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	drop 1
	fio_json=$(fio --name=randread --filename="$FIO_FILE" --size="$TOTAL" --rw=randread --bs=4k \
		--direct=1 --ioengine=io_uring --iodepth=128 --runtime="$FIO_SECONDS" --time_based \
		--group_reporting --output-format=json | "$PY" -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(json.dumps({"iops": j["iops"], "mb_per_s": j["bw_bytes"]/1e6}))')
	record fio "$r" "$fio_json"; show fio "$fio_json"
	drop 1
	rf=$("$RF" bench --raw --raw-max $(( (MAX_SIZE + 1023) / 1024 )) --source "$DATA" --io-depth "$IO_DEPTH" --epochs 1 --seed "$r" --json)
	record ringfeed "$r" "$rf"; show ringfeed "$rf"
	for t in 2 16 64; do
		drop 1
		p=$("$PREAD" "$LIST" --threads "$t" --json)
		record "pread_T$t" "$r" "$p"; show "pread T=$t" "$p"
	done
	drop 1
	tb=$("$PY" "$ROOT/bench/peers/torch_bytes.py" --list "$LIST" --workers "$(nproc)" --json)
	record torch_bytes "$r" "$tb"; show "torch bytes" "$tb"
done
rm -f "$LIST"

"$PY" - "$OUT_JSON" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in runs:
    by.setdefault(r["case"], []).append(r["result"])
def rate(x):
    return x.get("files_per_s", x.get("steady_samples_per_s", x.get("iops")))
med = {k: statistics.median(rate(x) for x in v) for k, v in by.items()}
print()
for k, v in by.items():
    print("%-26s %s   median %9.0f" % (k, " ".join("%9.0f" % rate(x) for x in v), med[k]))
best_pread = max(med[k] for k in med if k.startswith("pread_T"))
best_t = max((k for k in med if k.startswith("pread_T")), key=lambda k: med[k])
rf = med["ringfeed"]
print()
print("ringfeed / fio IOPS:          %5.2fx  (target >= 0.8x)" % (rf / med["fio"]))
print("ringfeed / best pread (%s): %5.2fx  (target >= 3x)" % (best_t, rf / best_pread))
print("ringfeed / torch bytes:       %5.2fx" % (rf / med["torch_bytes"]))
ring = statistics.median(x["stages"]["ring_cpu_ms_per_10k"] for x in by["ringfeed"])
print("ring thread CPU per 10,000 files: %.1f ms" % ring)
print("first epoch, everything cold: %.0f files/s (%.2f s, index walk %.2f s)" % (
    rate(by["ringfeed_cold_first_epoch"][0]), by["ringfeed_cold_first_epoch"][0]["seconds"],
    by["ringfeed_cold_first_epoch"][0]["create_s"]))
print("raw runs: %s" % sys.argv[1])
PY
