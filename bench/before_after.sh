#!/usr/bin/env bash
# before_after.sh - is a change within noise? Two builds of ringfeed, runs
# interleaved (round r: BEFORE then AFTER when r is odd, AFTER then BEFORE
# when even, so that drift hits both alike), medians and after/before:
#   jpeg   Resize 256 + CenterCrop 224, uint8 HWC, threads = cores, on
#          IMAGES (5,000) generated JPEGs, data warm (decode-bound);
#   small  raw mode on COUNT (200,000) files of 1-16 KiB, io-depth 512,
#          file data cold (sync; echo 1 > drop_caches before every run),
#          metadata warm (storage-bound).
#
#   bench/before_after.sh BEFORE AFTER
#
# BEFORE and AFTER are ringfeed executables. Needs root (drop_caches).
# Environment: ROUNDS (5), IMAGES, COUNT, PARTS ("jpeg small"), DATA_DIR
# (bench/data).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -ne 2 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	[ $# -eq 2 ] || [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]
	exit $?
fi
BEFORE=$(realpath "$1")
AFTER=$(realpath "$2")
ROUNDS=${ROUNDS:-5}
IMAGES=${IMAGES:-5000}
COUNT=${COUNT:-200000}
PARTS=${PARTS:-jpeg small}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
IMG=$DATA_DIR/jpeg-$IMAGES
RAW=$DATA_DIR/raw-$COUNT
OUT=$(mktemp "${TMPDIR:-/tmp}/before-after.XXXXXX")
trap 'rm -f "$OUT"' EXIT
mkdir -p "$DATA_DIR"
[ -d "$IMG" ] || "$AFTER" gen --out "$IMG" --count "$IMAGES" --classes 10 >/dev/null
[ -d "$RAW" ] || "$AFTER" gen --raw --out "$RAW" --count "$COUNT" --classes 100 \
	--min-size 1024 --max-size 16384 >/dev/null

run() { # part, which, binary
	local opts
	if [ "$1" = jpeg ]; then
		opts=(--source "$IMG" --threads "$(nproc)")
	else
		sync
		echo 1 > /proc/sys/vm/drop_caches
		opts=(--source "$RAW" --raw --raw-max 16 --io-depth 512)
	fi
	local j
	j=$("$3" bench "${opts[@]}" --json)
	printf '%s %s %s\n' "$1" "$2" "$(printf '%s' "$j" | sed -n 's/.*"steady_samples_per_s":\([0-9.]*\).*/\1/p')" | tee -a "$OUT"
}

for part in $PARTS; do
	# untimed: warms the JPEG tree, or the raw tree's metadata
	"$AFTER" bench --source "$([ "$part" = jpeg ] && echo "$IMG" || echo "$RAW")" \
		$([ "$part" = jpeg ] || echo --raw --raw-max 16) --json >/dev/null
	for r in $(seq 1 "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then
			run "$part" before "$BEFORE"
			run "$part" after "$AFTER"
		else
			run "$part" after "$AFTER"
			run "$part" before "$BEFORE"
		fi
	done
done
python3 - "$OUT" <<'EOF'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    part, which, rate = line.split()
    runs.setdefault(part, {}).setdefault(which, []).append(float(rate))
for part, r in runs.items():
    b, a = statistics.median(r["before"]), statistics.median(r["after"])
    print("%-6s samples/s median: before %9.0f  after %9.0f  after/before %.3f  "
          "(spread before %.0f-%.0f, after %.0f-%.0f)" % (part, b, a, a / b, min(r["before"]),
          max(r["before"]), min(r["after"]), max(r["after"])))
EOF
