#!/usr/bin/env bash
# shards.sh - tar shards against the device's limits and their peers, side
# by side in one run (issue 11). Four parts:
#   small       RAW: COUNT (200,000) files of 1-16 KiB; PACK: the same,
#               `ringfeed pack --raw --align 4096`. File data cold (echo 1)
#               before every timed run, metadata warm. fio: io_uring,
#               O_DIRECT, random reads --bsrange=4k-16k at QD 128 on one file
#               of the set's total size (the same-size limit, IOPS);
#               ringfeed raw on the pack (random access) and on the loose
#               tree; the pread thread pool (bench/peers/pread_threads.c,
#               16 and 64 threads) on the loose tree; CPU seconds (user +
#               system, of the whole process) per file for ringfeed loose
#               and for the pool.
#   sequential  fio sequential 1 MiB reads at QD 32 (MB/s) against ringfeed
#               raw --shard-access sequential on the pack: the shards' bytes
#               over its time (and the samples' bytes).
#   jpeg        IMG: IMAGES (5,000) generated JPEGs, packed; ringfeed (Resize
#               256 + CenterCrop 224, threads = cores) on the loose tree and
#               on the pack, data warm (decode-bound); the `webdataset`
#               package (DataLoader, num_workers = cores, the same transform)
#               on the same shards.
#   zstd        ZRAW: ZCOUNT (4,000) compressible text records of ZMIN to ZMAX
#               bytes (32-256 KiB), packed --compress zstd:3; ringfeed raw on
#               it, data warm: the pool's decompressed MB/s against `zstd
#               -b3` single-thread decompression speed on the same records
#               times the threads.
# The shard runs load an index cache written by an untimed first run (as a
# training job's later runs do; the first run scans the shards' headers).
# Prints each run and medians, then the ratios the issue sets as targets.
# The raw runs use --prefetch PREFETCH (16): with 4 slots of 64 samples a
# batch waiting for its slowest read holds a quarter of the reads in flight,
# and the device's queue runs short (35,300 vs 43,700 files/s measured).
# Needs root (drop_caches). Environment: ROUNDS (3), COUNT, IMAGES, ZCOUNT,
# FIO_SECONDS (10), PARTS ("small sequential jpeg zstd"), DATA_DIR
# (bench/data), PREFETCH, OUT_JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
ROUNDS=${ROUNDS:-3}
COUNT=${COUNT:-200000}
IMAGES=${IMAGES:-5000}
ZCOUNT=${ZCOUNT:-4000}
ZMIN=${ZMIN:-32768}
ZMAX=${ZMAX:-262144}
FIO_SECONDS=${FIO_SECONDS:-10}
PREFETCH=${PREFETCH:-16}
PARTS=${PARTS:-small sequential jpeg zstd}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
RAW=$DATA_DIR/raw-$COUNT
PACK=$DATA_DIR/raw-$COUNT.pack
IMG=$DATA_DIR/jpeg-$IMAGES
IMGPACK=$DATA_DIR/jpeg-$IMAGES.pack
ZRAW=$DATA_DIR/text-$ZCOUNT-$ZMIN-$ZMAX
ZPACK=$ZRAW.zpack
RF=$ROOT/build/ringfeed
PREAD=$ROOT/build/bench/pread_threads
PY=/usr/bin/python3
CORES=$(nproc)
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-shards.XXXXXX")}
[ "$(id -u)" -eq 0 ] || { echo "shards.sh: needs root to drop the page cache" >&2; exit 1; }

"$ROOT/scripts/deps.sh" fio zstd python3-torch python3-torchvision
"$ROOT/scripts/build.sh" build -Dbench=enabled
if ! "$PY" -c 'import webdataset' 2>/dev/null; then
	"$PY" -m pip install --quiet --break-system-packages webdataset
fi
mkdir -p "$DATA_DIR"
: > "$OUT_JSON"

drop() { sync; echo "$1" > /proc/sys/vm/drop_caches; }
record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
# the CPU seconds (user + system) of a command, appended to its JSON object
timed() {
	local t out
	t=$(mktemp)
	out=$(/usr/bin/time -f '%U %S' -o "$t" "$@")
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); u,s=open(sys.argv[2]).read().split()[-2:]; d["cpu_s"]=float(u)+float(s); print(json.dumps(d))' "$out" "$t"
	rm -f "$t"
}
show() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[2]); r=d.get("files_per_s", d.get("steady_samples_per_s", d.get("samples_per_s", d.get("iops", 0)))); print("  %-22s %10.0f /s %8.1f MB/s%s" % (sys.argv[1], r, d.get("mb_per_s", 0), ("  %.1f us CPU per file" % (1e6 * d["cpu_s"] / d.get("samples", d.get("files", 1)))) if "cpu_s" in d else ""))' "$1" "$2"; }
fio_json() { "$PY" -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(json.dumps({"iops": j["iops"], "mb_per_s": j["bw_bytes"]/1e6}))'; }
raw_max() { echo $(( ($1 + 1023) / 1024 )); }

echo "machine: $CORES cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA_DIR"), $(date -u '+%Y-%m-%d %H:%M UTC')"

# ---- data ----------------------------------------------------------------
if [[ $PARTS == *small* || $PARTS == *sequential* ]]; then
	[ -d "$RAW" ] || "$RF" gen --raw --out "$RAW" --count "$COUNT" --classes 100 --min-size 1024 --max-size 16384
	[ -d "$PACK" ] || "$RF" pack --raw "$RAW" -o "$PACK" --align 4096
	LIST=$(mktemp "${TMPDIR:-/tmp}/ringfeed-list.XXXXXX")
	find "$RAW" -type f > "$LIST"
	TOTAL=$(find "$RAW" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
	PACKBYTES=$(find "$PACK" -name '*.tar' -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
	FIO_FILE=$DATA_DIR/fio-raw-$COUNT.dat
	if [ ! -f "$FIO_FILE" ] || [ "$(stat -c %s "$FIO_FILE")" -lt "$PACKBYTES" ]; then
		fio --name=layout --filename="$FIO_FILE" --size="$PACKBYTES" --rw=write --bs=1M \
			--direct=1 --ioengine=psync --output=/dev/null
	fi
	echo "small: $RAW: $COUNT files, $TOTAL bytes; pack $PACKBYTES bytes"
	"$RF" index --raw "$RAW" -o "$RAW.idx" > /dev/null
	"$RF" index --raw "$PACK" -o "$PACK.idx" > /dev/null
	find "$RAW" -type f -printf '%s\n' > /dev/null # metadata warm
fi
if [[ $PARTS == *jpeg* ]]; then
	[ -d "$IMG" ] || "$RF" gen --out "$IMG" --count "$IMAGES" --classes 10
	[ -d "$IMGPACK" ] || "$RF" pack "$IMG" -o "$IMGPACK" --shard-size 32M
	"$RF" index "$IMG" -o "$IMG.idx" > /dev/null
	"$RF" index "$IMGPACK" -o "$IMGPACK.idx" > /dev/null
fi
if [[ $PARTS == *zstd* ]]; then
	if [ ! -d "$ZRAW" ]; then
		"$PY" - "$ZRAW" "$ZCOUNT" "$ZMIN" "$ZMAX" <<'PY'
import os, random, sys
out, n, lo, hi = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
random.seed(11)
# English-like records: words drawn with a Zipf-like skew, so that zstd has
# something to find (about 4-6x at level 3), as in text or JSON samples
vocab = ["w%d%s" % (i, "abcdefghij"[i % 10] * (1 + i % 7)) for i in range(5000)]
weights = [1.0 / (i + 1) for i in range(5000)]
for d in range(20):
    os.makedirs(os.path.join(out, "c%02d" % d), exist_ok=True)
for i in range(n):
    size = random.randint(lo, hi)
    words = random.choices(vocab, weights, k=size // 5)
    text = " ".join(words)[:size]
    with open(os.path.join(out, "c%02d" % (i % 20), "r%06d.txt" % i), "w") as f:
        f.write(text)
PY
	fi
	[ -d "$ZPACK" ] || "$RF" pack --raw "$ZRAW" -o "$ZPACK" --compress zstd:3 --shard-size 64M
	ZTOTAL=$(find "$ZRAW" -type f -printf '%s\n' | awk '{s += $1} END {printf "%.0f\n", s}')
	"$RF" index --raw "$ZPACK" -o "$ZPACK.idx" > /dev/null
fi

# ---- runs ------------------------------------------------------------------
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	if [[ $PARTS == *small* ]]; then
		drop 1
		x=$(fio --name=randread --filename="$FIO_FILE" --size="$PACKBYTES" --rw=randread \
			--bsrange=4k-16k --direct=1 --ioengine=io_uring --iodepth=128 \
			--runtime="$FIO_SECONDS" --time_based --group_reporting --output-format=json | fio_json)
		record fio_rand "$r" "$x"; show "fio 4k-16k QD128" "$x"
		drop 1
		x=$(timed "$RF" bench --raw --raw-max 16 --source "$PACK" --index-cache "$PACK.idx" \
			--io-depth 512 --prefetch "$PREFETCH" --seed "$r" --json)
		record rf_pack_random "$r" "$x"; show "ringfeed pack random" "$x"
		drop 1
		x=$(timed "$RF" bench --raw --raw-max 16 --source "$RAW" --index-cache "$RAW.idx" \
			--io-depth 512 --prefetch "$PREFETCH" --seed "$r" --json)
		record rf_loose "$r" "$x"; show "ringfeed loose" "$x"
		for t in 16 64; do
			drop 1
			x=$(timed "$PREAD" "$LIST" --threads "$t" --json)
			record "pread_T$t" "$r" "$x"; show "pread pool T=$t" "$x"
		done
	fi
	if [[ $PARTS == *sequential* ]]; then
		drop 1
		x=$(fio --name=seqread --filename="$FIO_FILE" --size="$PACKBYTES" --rw=read --bs=1M \
			--direct=1 --ioengine=io_uring --iodepth=32 --runtime="$FIO_SECONDS" \
			--time_based --group_reporting --output-format=json | fio_json)
		record fio_seq "$r" "$x"; show "fio seq 1M QD32" "$x"
		drop 1
		x=$("$RF" bench --raw --raw-max 16 --source "$PACK" --index-cache "$PACK.idx" \
			--shard-access sequential --io-depth 64 --prefetch "$PREFETCH" --seed "$r" --json)
		x=$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d["shard_mb_per_s"]=int(sys.argv[2])/1e6/(d["seconds"]-d["create_s"]); print(json.dumps(d))' "$x" "$PACKBYTES")
		record rf_pack_seq "$r" "$x"; show "ringfeed pack seq" "$x"
	fi
	if [[ $PARTS == *jpeg* ]]; then
		cat "$IMG"/*/* > /dev/null; cat "$IMGPACK"/*.tar > /dev/null # data warm
		x=$("$RF" bench --source "$IMG" --index-cache "$IMG.idx" --epochs 3 --seed "$r" --json)
		record rf_jpeg_loose "$r" "$x"; show "ringfeed jpeg loose" "$x"
		x=$("$RF" bench --source "$IMGPACK" --index-cache "$IMGPACK.idx" --epochs 3 --seed "$r" \
			--json)
		record rf_jpeg_pack "$r" "$x"; show "ringfeed jpeg pack" "$x"
		x=$("$PY" "$ROOT/bench/peers/webdataset_loader.py" --shards "$IMGPACK" --workers "$CORES" \
			--epochs 2 --json)
		record webdataset "$r" "$x"; show "webdataset" "$x"
	fi
	if [[ $PARTS == *zstd* ]]; then
		cat "$ZPACK"/*.tar > /dev/null
		x=$("$RF" bench --raw --raw-max $(( (ZMAX + 1023) / 1024 )) --source "$ZPACK" \
			--index-cache "$ZPACK.idx" --threads "$CORES" --epochs 3 --seed "$r" --json)
		# the pool's output: decompressed bytes (bench's MB/s counts what was read)
		x=$("$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d["mb_per_s_out"]=d["steady_samples_per_s"]*int(sys.argv[2])/int(sys.argv[3])/1e6; print(json.dumps(d))' "$x" "$ZTOTAL" "$ZCOUNT")
		record rf_zstd "$r" "$x"; show "ringfeed zstd raw" "$x"
		z=$(zstd -b3 -i3 -r "$ZRAW" 2>&1 | tr '\r' '\n' | grep -E 'MB/s.*MB/s' | tail -1 |
			"$PY" -c 'import json,re,sys; m=re.findall(r"([0-9.]+) MB/s", sys.stdin.read()); print(json.dumps({"compress_mb_per_s": float(m[0]), "mb_per_s": float(m[1])}))')
		record zstd_b "$r" "$z"; show "zstd -b3 (1 thread)" "$z"
	fi
done
[ -n "${LIST:-}" ] && rm -f "$LIST"

"$PY" - "$OUT_JSON" "$CORES" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
cores = int(sys.argv[2])
by = {}
for r in runs:
    by.setdefault(r["case"], []).append(r["result"])
def rate(x):
    for k in ("files_per_s", "steady_samples_per_s", "samples_per_s", "iops", "mb_per_s"):
        if k in x:
            return x[k]
    return 0.0
def med(case, f=rate):
    return statistics.median(f(x) for x in by[case])
def cpu_per_file(x):
    return 1e6 * x["cpu_s"] / x.get("samples", x.get("files", 1))
print()
for k, v in by.items():
    print("%-16s %s   median %10.1f" % (k, " ".join("%10.1f" % rate(x) for x in v), med(k)))
print()
if "fio_rand" in by:
    fio = med("fio_rand")
    pack, loose = med("rf_pack_random"), med("rf_loose")
    pools = {k: med(k) for k in by if k.startswith("pread_T")}
    best = max(pools, key=pools.get)
    print("small, packed random / fio same-size IOPS: %5.2fx  (target >= 0.9x)" % (pack / fio))
    print("small, packed random / loose:              %5.2fx  (target >= 1.5x)" % (pack / loose))
    print("small, loose / fio same-size IOPS:         %5.2fx  (target >= 0.9x)" % (loose / fio))
    print("small, loose / best pread pool (%s):  %5.2fx  (target >= 1.0x)" % (best, loose / pools[best]))
    rf_cpu, pool_cpu = med("rf_loose", cpu_per_file), med(best, cpu_per_file)
    print("CPU per file: ringfeed loose %.1f us, pool %s %.1f us: %.2f of it (target <= 0.2)" % (
        rf_cpu, best, pool_cpu, rf_cpu / pool_cpu))
    print("ring thread CPU per 10,000 files: loose %.1f ms, packed %.1f ms" % (
        med("rf_loose", lambda x: x["stages"]["ring_cpu_ms_per_10k"]),
        med("rf_pack_random", lambda x: x["stages"]["ring_cpu_ms_per_10k"])))
if "fio_seq" in by:
    fio = med("fio_seq", lambda x: x["mb_per_s"])
    seq = med("rf_pack_seq", lambda x: x["shard_mb_per_s"])
    print("sequential: shards %.0f MB/s / fio 1 MiB QD32 %.0f MB/s: %5.2fx  (target >= 0.9x); samples %.0f MB/s" % (
        seq, fio, seq / fio, med("rf_pack_seq", lambda x: x["mb_per_s"])))
if "rf_jpeg_loose" in by:
    lo, pk, wd = med("rf_jpeg_loose"), med("rf_jpeg_pack"), med("webdataset")
    print("jpeg: pack / loose: %5.3fx  (target within 3%%); ringfeed pack / webdataset: %5.2fx" % (pk / lo, pk / wd))
if "rf_zstd" in by:
    dec = med("rf_zstd", lambda x: x["mb_per_s_out"] if "mb_per_s_out" in x else x["mb_per_s"])
    zb = med("zstd_b", lambda x: x["mb_per_s"])
    print("zstd: pool %.0f MB/s decompressed / (zstd -b3 %.0f MB/s x %d threads): %5.2fx  (target >= 0.9x)" % (
        dec, zb, cores, dec / (zb * cores)))
print("raw runs: %s" % sys.argv[1])
PY
