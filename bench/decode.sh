#!/usr/bin/env bash
# decode.sh - decode and augment against the decode limit and the torch peer,
# side by side in one run (issue 4's targets):
#   1. the decode limit: bench/decode_limit.c (single-thread TurboJPEG
#      full-scale decode of the files held in memory) x THREADS;
#   2. ROUNDS alternating rounds of
#        ringfeed  Resize 256 + CenterCrop 224, uint8 HWC
#        ringfeed  RandomResizedCrop 224 + flip 0.5, uint8 HWC
#        ringfeed  Resize 256 + CenterCrop 224, float16 CHW normalized
#        torch     Resize 256 + CenterCrop 224  (num_workers = THREADS)
#        torch     RandomResizedCrop 224 + flip (num_workers = THREADS)
#   3. medians, the ratios the issue names, and each ringfeed case's
#      per-stage profile (from its median run).
# Usage: bench/decode.sh [--help]; settings by environment:
#   DATA (default bench/data/imagefolder-5000, generated if missing), COUNT
#   (5000), THREADS (2), ROUNDS (5), RINGFEED (build/ringfeed), OUT_JSON.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
DATA=${DATA:-$ROOT/bench/data/imagefolder-5000}
COUNT=${COUNT:-5000}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-5}
RINGFEED=${RINGFEED:-$ROOT/build/ringfeed}
LIMIT=$ROOT/build/bench/decode_limit
PY=/usr/bin/python3
PEER=$ROOT/bench/peers/torch_imagefolder.py
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-decode.XXXXXX")}

"$ROOT/scripts/deps.sh" python3-torch python3-torchvision python3-pil
"$ROOT/scripts/build.sh" build -Dbench=enabled
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$RINGFEED" gen --out "$DATA" --count "$COUNT" --classes 10
fi
: > "$OUT_JSON"

common=(--source "$DATA" --batch 64 --threads "$THREADS" --epochs 1)
declare -A CASES=(
	[rf_center_u8]="--resize 256 --crop 224"
	[rf_rrc_flip_u8]="--random-resized-crop 224 --flip 0.5"
	[rf_center_f16]="--resize 256 --crop 224 --dtype float16 --layout chw --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225"
	[torch_center]="--transform center"
	[torch_rrc_flip]="--transform rrc --flip 0.5"
)
ORDER=(rf_center_u8 rf_rrc_flip_u8 rf_center_f16 torch_center torch_rrc_flip)

run_case() { # name round
	local name=$1 round=$2 out
	if [[ $name == rf_* ]]; then
		# shellcheck disable=SC2086
		out=$("$RINGFEED" bench "${common[@]}" --seed "$round" ${CASES[$name]} --json)
	else
		# shellcheck disable=SC2086
		out=$("$PY" "$PEER" --source "$DATA" --workers "$THREADS" --batch 64 --seed "$round" \
			${CASES[$name]} --json)
	fi
	printf '{"case":"%s","round":%d,"result":%s}\n' "$name" "$round" "$out" >> "$OUT_JSON"
	"$PY" -c 'import json,sys; print("  %-16s %8.1f images/s" % (sys.argv[1], json.loads(sys.argv[2])["samples_per_s"]))' "$name" "$out"
}

echo "machine: $(nproc) cores, $(uname -r), data on $(findmnt -no SOURCE,FSTYPE -T "$DATA"), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "data:    $DATA ($(find "$DATA" -name '*.jpg' | wc -l) JPEGs)"
limit_json=$("$LIMIT" "$DATA" --threads "$THREADS" --json)
echo "decode limit: $limit_json"
echo "warm-up (untimed)..."
for name in "${ORDER[@]}"; do run_case "$name" 0 > /dev/null; done
: > "$OUT_JSON"
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	for name in "${ORDER[@]}"; do run_case "$name" "$r"; done
done

"$PY" - "$OUT_JSON" "$limit_json" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
limit = json.loads(sys.argv[2])["decode_limit_per_s"]
by = {}
for r in runs:
    by.setdefault(r["case"], []).append(r["result"])
med = {k: statistics.median(x["samples_per_s"] for x in v) for k, v in by.items()}
print()
print("%-16s %s  %9s" % ("images/s", " ".join("%8s" % ("r%d" % (i + 1)) for i in range(len(by["rf_center_u8"]))), "median"))
for k, v in by.items():
    print("%-16s %s  %9.1f" % (k, " ".join("%8.1f" % x["samples_per_s"] for x in v), med[k]))
print("\ndecode limit (full-scale TurboJPEG x threads): %.1f images/s" % limit)
def line(what, a, b, target):
    ratio = a / b
    print("  %-50s %5.2fx  (target %s: %s)" % (what, ratio, target,
          "met" if ratio >= float(target.strip("x>= ")) else "NOT met"))
line("center uint8 / decode limit", med["rf_center_u8"], limit, ">= 0.9x")
line("center uint8 / torch center (workers = threads)", med["rf_center_u8"], med["torch_center"], ">= 3.5x")
line("rrc+flip uint8 / decode limit", med["rf_rrc_flip_u8"], limit, ">= 1.3x")
line("rrc+flip uint8 / torch rrc+flip", med["rf_rrc_flip_u8"], med["torch_rrc_flip"], ">= 3x")
line("center float16 CHW normalized / center uint8", med["rf_center_f16"], med["rf_center_u8"], ">= 0.9x")
print("\nper-stage profile of each ringfeed case (its median run), share of compute threads' time:")
for k in ("rf_center_u8", "rf_rrc_flip_u8", "rf_center_f16"):
    v = sorted(by[k], key=lambda x: x["samples_per_s"])[len(by[k]) // 2]
    s = v["stages"]
    print("  %-15s read wait %4.1f%%  decode %4.1f%% (%.3f ms)  transform %4.1f%% (%.3f ms)  "
          "collate %4.1f%%  other %4.1f%%  | %.0f%% of pixels decoded, %d scaled; "
          "consumer wait %4.1f%%; ring %.1f us/sample" % (
          k, s["read_wait_pct"], s["decode_pct"], s["decode_ms_per_sample"], s["transform_pct"],
          s["transform_ms_per_sample"], s["collate_pct"], s["other_pct"], s["decoded_pixels_pct"],
          s["scaled_decodes"], s["consumer_wait_pct"], s["ring_cpu_us_per_sample"]))
print("\nraw runs: %s" % sys.argv[1])
PY
