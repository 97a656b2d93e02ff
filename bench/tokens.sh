#!/usr/bin/env bash
# tokens.sh - token shards against the device's limits and their peers, side
# by side in one run (issue 12). Data: SHARDS (4) shards of SHARD_TOKENS
# (32,000,000) GPT-2 tokens (`ringfeed gen --tokens`, Zipf ids), 128M tokens,
# 256 MB. Page cache dropped (echo 3) before every timed run: data cold.
#   random      fio 4 KiB random reads (io_uring, O_DIRECT, QD 128, over the
#               shard files): IOPS, the device's limit for windows of T = 1024
#               (2,050 bytes: one or two 4 KiB blocks); ringfeed random windows
#               (shuffle over all shards, T = SEQ, B = BATCH rows, --prefetch
#               PREFETCH: a batch waiting for its slowest read holds its slot,
#               so more, smaller slots keep the device's queue full); the
#               llm.c peer with its shuffle (bench/peers/llmc_loader.c: a
#               seeded order of shards and of batch positions, one fread of
#               B*T+1 tokens a batch); nanoGPT's get_batch (memmap, random
#               windows; NANOGPT_BATCHES batches). Windows/s, CPU per 10,000
#               windows (user + system: ringfeed's whole process, the peers'
#               timed loop) and ringfeed's ring thread CPU per 10,000 windows.
#   sequential  fio sequential 1 MiB reads at QD 32 (MB/s); ringfeed in llm.c's
#               order (--no-shuffle: 1 MiB chunks), MB/s of the windows'
#               token bytes over the steady time, and bytes_read over the
#               whole run's; the llm.c peer without shuffle.
#   zstd        the same shards packed (`ringfeed pack --tokens`, frames of
#               4,096 tokens) read by ringfeed, random and sequential, against
#               the plain shards' figures (compute threads decompress).
# Each part ROUNDS (3) times; prints every run, the medians, and the ratios
# the issue sets (ringfeed random windows/s >= 0.9 x fio 4k IOPS; sequential
# MB/s >= 0.9 x fio's). Needs root (drop_caches). Environment: ROUNDS,
# SHARDS, SHARD_TOKENS, SEQ (1024), BATCH (16), PREFETCH (32), FIO_SECONDS
# (10), NANOGPT_BATCHES (2000), PARTS ("random sequential zstd"), DATA_DIR
# (bench/data), OUT_JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 0
fi
ROUNDS=${ROUNDS:-3}
SHARDS=${SHARDS:-4}
SHARD_TOKENS=${SHARD_TOKENS:-32000000}
SEQ=${SEQ:-1024}
BATCH=${BATCH:-16}
PREFETCH=${PREFETCH:-32}
FIO_SECONDS=${FIO_SECONDS:-10}
NANOGPT_BATCHES=${NANOGPT_BATCHES:-2000}
PARTS=${PARTS:-random sequential zstd}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
TOK=$DATA_DIR/tokens-$SHARDS-$SHARD_TOKENS
TOKZ=$TOK.zst
RF=$ROOT/build/ringfeed
LLMC=$ROOT/build/bench/llmc_loader
PY=/usr/bin/python3
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-tokens.XXXXXX")}
[ "$(id -u)" -eq 0 ] || { echo "tokens.sh: needs root to drop the page cache" >&2; exit 1; }

"$ROOT/scripts/deps.sh" fio python3-torch python3-numpy
"$ROOT/scripts/build.sh" build -Dbench=enabled
mkdir -p "$DATA_DIR"
: > "$OUT_JSON"

drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
show() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[2]); r=d.get("iops", d.get("steady_samples_per_s", d.get("windows_per_s", 0))); print("  %-26s %10.0f /s %8.1f MB/s%s%s" % (sys.argv[1], r, d.get("mb_per_s", 0), ("  CPU %.0f ms / 10k windows" % (1e7 * d["cpu_s"] / d["samples"])) if "cpu_s" in d else "", ("  ring %.1f ms" % d["stages"]["ring_cpu_ms_per_10k"]) if "stages" in d else ""))' "$1" "$2"; }
# the CPU seconds (user + system) of a command, appended to its JSON object
timed() {
	local t out
	t=$(mktemp)
	out=$(/usr/bin/time -f '%U %S' -o "$t" "$@")
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); u,s=open(sys.argv[2]).read().split()[-2:]; d["cpu_s"]=float(u)+float(s); print(json.dumps(d))' "$out" "$t"
	rm -f "$t"
}
fio_json() { "$PY" -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(json.dumps({"iops": j["iops"], "mb_per_s": j["bw_bytes"]/1e6}))'; }

echo "machine: $(nproc) cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA_DIR"), $(date -u '+%Y-%m-%d %H:%M UTC')"
[ -d "$TOK" ] || "$RF" gen --tokens --out "$TOK" --shards "$SHARDS" --shard-tokens "$SHARD_TOKENS"
if [[ $PARTS == *zstd* ]] && [ ! -d "$TOKZ" ]; then
	"$RF" pack --tokens "$TOK" -o "$TOKZ"
fi
FILES=$(ls "$TOK"/tokens_*.bin | paste -sd:)
FILE_LIST=$(ls "$TOK"/tokens_*.bin)
echo "data: $TOK: $SHARDS shards x $SHARD_TOKENS tokens; T = $SEQ, B = $BATCH, prefetch $PREFETCH"

# ringfeed bench on the token source, with its own arguments; mb_per_s
# becomes the windows' token bytes a second (steady: without set-up), as the
# peers count theirs ("read_mb_per_s" keeps the bytes read: compressed ones
# for .bin.zst)
rf() {
	local x
	x=$(timed "$RF" bench --seq "$SEQ" --batch "$BATCH" --prefetch "$PREFETCH" --json "$@")
	"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); d["read_mb_per_s"]=d["mb_per_s"]; d["mb_per_s"]=d["steady_samples_per_s"]*(int(sys.argv[2])+1)*2/1e6; print(json.dumps(d))' "$x" "$SEQ"
}
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	if [[ $PARTS == *random* ]]; then
		drop
		x=$(fio --name=randread --filename="$FILES" --rw=randread --bs=4k --direct=1 \
			--ioengine=io_uring --iodepth=128 --runtime="$FIO_SECONDS" --time_based \
			--group_reporting --output-format=json | fio_json)
		record fio_rand4k "$r" "$x"; show "fio 4k random QD128" "$x"
		drop
		x=$(rf --source "$TOK" --seed "$r")
		record rf_random "$r" "$x"; show "ringfeed random" "$x"
		drop
		# shellcheck disable=SC2086
		x=$("$LLMC" --seq "$SEQ" --batch "$BATCH" --random --seed "$r" $FILE_LIST)
		record llmc_random "$r" "$x"; show "llm.c loader, shuffled" "$x"
		drop
		# shellcheck disable=SC2086
		x=$("$PY" "$ROOT/bench/peers/nanogpt_memmap.py" --seq "$SEQ" --batch "$BATCH" \
			--batches "$NANOGPT_BATCHES" --seed "$r" $FILE_LIST)
		record nanogpt "$r" "$x"; show "nanoGPT memmap" "$x"
	fi
	if [[ $PARTS == *sequential* ]]; then
		drop
		x=$(fio --name=seqread --filename="$FILES" --rw=read --bs=1M --direct=1 \
			--ioengine=io_uring --iodepth=32 --runtime="$FIO_SECONDS" --time_based \
			--group_reporting --output-format=json | fio_json)
		record fio_seq "$r" "$x"; show "fio seq 1M QD32" "$x"
		drop
		x=$(rf --source "$TOK" --no-shuffle)
		record rf_seq "$r" "$x"; show "ringfeed llm.c order" "$x"
		drop
		# shellcheck disable=SC2086
		x=$("$LLMC" --seq "$SEQ" --batch "$BATCH" --sequential $FILE_LIST)
		record llmc_seq "$r" "$x"; show "llm.c loader, in order" "$x"
	fi
	if [[ $PARTS == *zstd* ]]; then
		drop
		x=$(rf --source "$TOKZ" --seed "$r")
		record rf_zstd_random "$r" "$x"; show "ringfeed .bin.zst random" "$x"
		drop
		x=$(rf --source "$TOKZ" --no-shuffle)
		record rf_zstd_seq "$r" "$x"; show "ringfeed .bin.zst in order" "$x"
	fi
done

"$PY" - "$OUT_JSON" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
def med(case, key):
    v = [r["result"][key] for r in runs if r["case"] == case and key in r["result"]]
    return statistics.median(v) if v else None
def rate(case):
    for k in ("iops", "steady_samples_per_s", "windows_per_s"):
        m = med(case, k)
        if m is not None:
            return m
    return None
def per(case, f):
    v = [f(r["result"]) for r in runs if r["case"] == case]
    return statistics.median(v) if v else None
# ringfeed's bytes_read (compressed ones for .bin.zst) over the time after set-up
def read_mb(x):
    return x["bytes_read"] / (x["seconds"] - x["create_s"]) / 1e6
def cpu_10k(x):
    return 1e7 * x["cpu_s"] / x["samples"]
print("runs and medians (windows/s; fio: IOPS):")
for case in ("fio_rand4k", "rf_random", "llmc_random", "nanogpt", "fio_seq", "rf_seq", "llmc_seq",
             "rf_zstd_random", "rf_zstd_seq"):
    r = rate(case)
    if r is None:
        continue
    rs = [x["result"] for x in runs if x["case"] == case]
    line = "  %-15s %s  median %10.0f /s %8.1f MB/s" % (case, " ".join(
        "%10.0f" % next(x[k] for k in ("iops", "steady_samples_per_s", "windows_per_s") if k in x)
        for x in rs), r, med(case, "mb_per_s"))
    if "bytes_read" in rs[0]:
        line += " (read %.1f)" % per(case, read_mb)
    if "cpu_s" in rs[0]:
        line += "  CPU %.0f ms / 10k" % per(case, cpu_10k)
    print(line)
def ratio(name, a, b, target=None):
    if a is None or b is None:
        return
    print("  %-58s %6.2fx%s" % (name, a / b, "" if target is None else
                               "  (target >= %.1fx: %s)" % (target, "met" if a / b >= target else "NOT met")))
print("ratios:")
ratio("ringfeed random windows/s / fio 4k random IOPS", rate("rf_random"), rate("fio_rand4k"), 0.9)
ratio("ringfeed llm.c order MB/s / fio sequential MB/s", med("rf_seq", "mb_per_s"), med("fio_seq", "mb_per_s"), 0.9)
ratio("  the same from bytes_read over the steady time", per("rf_seq", read_mb), med("fio_seq", "mb_per_s"))
ratio("ringfeed random / llm.c shuffled (windows/s, B rows/read)", rate("rf_random"), rate("llmc_random"))
ratio("ringfeed random / nanoGPT memmap (windows/s)", rate("rf_random"), rate("nanogpt"))
ratio("ringfeed in order / llm.c loader in order (windows/s)", rate("rf_seq"), rate("llmc_seq"))
ratio(".bin.zst random / .bin random (windows/s)", rate("rf_zstd_random"), rate("rf_random"))
ratio(".bin.zst in order / .bin in order (windows/s)", rate("rf_zstd_seq"), rate("rf_seq"))
v = [r["result"]["stages"]["ring_cpu_ms_per_10k"] for r in runs if r["case"] == "rf_random"]
if v:
    print("  ring thread CPU per 10,000 random windows: %.1f ms (median)" % statistics.median(v))
v = [r["result"]["stages"]["ring_cpu_ms_per_10k"] for r in runs if r["case"] == "rf_seq"]
if v:
    print("  ring thread CPU per 10,000 windows in order: %.1f ms (median)" % statistics.median(v))
print("runs: %s" % sys.argv[1])
PY
