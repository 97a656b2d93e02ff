#!/usr/bin/env bash
# formats.sh - PNG and WebP against their libraries' decode limits, side by
# side in one run (issue 27's target for the formats):
#   1. the sets: the first COUNT JPEGs of DATA re-encoded by PIL as PNG
#      (8-bit RGB) and as WebP (lossy, quality 80), kept under
#      bench/data/formats-DATANAME-COUNT/{png,webp}; the JPEGs themselves beside them;
#   2. each set's decode limit: bench/decode_limit.c (single-thread full
#      decode of the files held in memory: libspng to RGB8, libwebp's
#      WebPDecodeRGBInto, TurboJPEG) x THREADS, best of 3 passes;
#   3. ROUNDS rounds, each running in turn, per set:
#        ringfeed bench  Resize 256 + CenterCrop 224, uint8 HWC
#        ringfeed bench  RandomResizedCrop 224, uint8 HWC
#      (THREADS compute threads, data warm: these are decode-bound);
#   4. medians of the rates and of the per-round ratios to the set's limit.
# Usage: bench/formats.sh [--help]; settings by environment:
#   DATA (default bench/data/imagefolder-2000, generated if missing), COUNT
#   (1000), THREADS (2), ROUNDS (5), RINGFEED (build/ringfeed); PHOTOS=SIDE
#   takes as DATA COUNT photo-like images of about SIDE pixels wide
#   (bench/gpu/photos.py --size SIDE --grain 2), large enough for WebP's
#   reduced-scale decode where SIDE is past about 1,000.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
DATA=${DATA:-$ROOT/bench/data/imagefolder-2000}
COUNT=${COUNT:-1000}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-5}
RINGFEED=${RINGFEED:-$ROOT/build/ringfeed}
LIMIT=$ROOT/build/bench/decode_limit
SETS=$ROOT/bench/data/formats-$(basename "$DATA")-$COUNT

"$ROOT/scripts/deps.sh" python3-pil ${PHOTOS:+python3-skimage}
"$ROOT/scripts/build.sh" build -Dbench=enabled
if [ -n "${PHOTOS:-}" ]; then
	DATA=$ROOT/bench/data/photos-$PHOTOS-$COUNT
	SETS=$ROOT/bench/data/formats-$(basename "$DATA")-$COUNT
	[ -d "$DATA" ] || /usr/bin/python3 "$ROOT/bench/gpu/photos.py" --out "$DATA" --count "$COUNT" \
		--size "$PHOTOS" --grain 2 >/dev/null
fi
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$RINGFEED" gen --out "$DATA" --count 2000 --classes 10 >/dev/null
fi
if [ ! -f "$SETS/.done" ]; then
	rm -rf "$SETS"
	/usr/bin/python3 - "$DATA" "$SETS" "$COUNT" <<'PY'
import os, shutil, sys
from PIL import Image
src, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
files = sorted(os.path.join(d, f) for d, _, fs in os.walk(src) for f in fs if f.endswith(".jpg"))
for path in files[:count]:
    cls = os.path.basename(os.path.dirname(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    for fmt in ("jpeg", "png", "webp"):
        os.makedirs(os.path.join(out, fmt, cls), exist_ok=True)
    shutil.copy(path, os.path.join(out, "jpeg", cls, stem + ".jpg"))
    with Image.open(path) as im:
        im = im.convert("RGB")
        im.save(os.path.join(out, "png", cls, stem + ".png"), "PNG")
        im.save(os.path.join(out, "webp", cls, stem + ".webp"), "WEBP", quality=80)
PY
	touch "$SETS/.done"
fi

/usr/bin/python3 - "$RINGFEED" "$LIMIT" "$SETS" "$THREADS" "$ROUNDS" <<'PY'
import json, statistics, subprocess, sys
ringfeed, limit, sets, threads, rounds = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
FORMATS = ("png", "webp", "jpeg")
CASES = {"center": ["--resize", "256", "--crop", "224"], "rrc": ["--random-resized-crop", "224"]}

def du(path):
    return int(subprocess.run(["du", "-sb", path], capture_output=True, text=True).stdout.split()[0])

limits = {}
for fmt in FORMATS:
    out = json.loads(subprocess.run([limit, "%s/%s" % (sets, fmt), "--threads", threads, "--json"],
                                    check=True, capture_output=True, text=True).stdout)
    limits[fmt] = out["decode_limit_per_s"]
    print("%-5s %d files, %.1f MB: decode limit %.1f images/s (%.3f ms an image, x %s threads)"
          % (fmt, out["files"], du("%s/%s" % (sets, fmt)) / 1e6, limits[fmt], out["ms_per_image"],
             threads), flush=True)
rates = {(f, c): [] for f in FORMATS for c in CASES}
for r in range(rounds):
    for fmt in FORMATS:
        for case, flags in CASES.items():
            out = json.loads(subprocess.run(
                [ringfeed, "bench", "--source", "%s/%s" % (sets, fmt), "--threads", threads,
                 "--batch", "64", "--epochs", "1", "--seed", str(r), "--json"] + flags,
                check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
            if out["bad_samples"]:
                sys.exit("formats.sh: %s %s: %d bad samples" % (fmt, case, out["bad_samples"]))
            rates[fmt, case].append(out["samples_per_s"])
            print("round %d %-5s %-6s %8.1f images/s (%.2fx its limit)" % (
                r, fmt, case, out["samples_per_s"], out["samples_per_s"] / limits[fmt]), flush=True)
print("medians of %d rounds (%s threads)" % (rounds, threads))
for fmt in FORMATS:
    for case in CASES:
        v = rates[fmt, case]
        print("  %-5s %-6s %8.1f images/s  / decode limit %.1f: %.2fx (rounds %s)" % (
            fmt, case, statistics.median(v), limits[fmt], statistics.median(v) / limits[fmt],
            ", ".join("%.2f" % (x / limits[fmt]) for x in v)))
PY
