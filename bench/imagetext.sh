#!/usr/bin/env bash
# imagetext.sh - image-caption shards against their peers, side by side in
# one run (issue 27's image-text target).
#   data   COUNT (20,000) LAION-like samples as img2dataset writes them, under
#          DATA_DIR/laion-COUNT/ (made once; .done holds its summary):
#          1,000 a shard (00000.tar, ...), keys of 9 digits, members as
#          webdataset's TarWriter writes them (sorted by extension, a PAX
#          header each, 0444 bigdata:bigdata): KEY.jpg|.webp|.png (85/10/5%,
#          JPEG quality 90, WebP lossy 80, PNG 8-bit RGB with some RGBA and
#          palette ones), KEY.json (img2dataset's metadata: url, key, status,
#          width, height, original size, caption, exif, sha256) and KEY.txt
#          (a caption of 5-40 words, some multi-byte UTF-8, 1% empty). The
#          photos: crops of BASES (120) photo-like images of about 1200x900
#          (bench/gpu/photos.py --size 1200 --grain 2), resized to a shorter
#          side of 256-640 at aspect ratios 3:4-16:9.
#   runs   ROUNDS (3) rounds, data warm, each running in turn (RRC 224 + flip
#          0.5, uint8, 2 epochs, CORES threads or workers, batches of 64):
#            c          `ringfeed bench` without and with --fields txt (the
#                       two in turn, which first alternating by round)
#            python     bench/peers/ringfeed_py.py --fields txt (captions as
#                       str, every one touched)
#            webdataset bench/peers/webdataset_loader.py: the PyPI package,
#                       DataLoader(num_workers = cores), captions decoded
#            dali       bench/peers/dali_webdataset.py: PyPI nvidia-dali,
#                       readers.webdataset on the CPU (device_id=None),
#                       captions decoded in Python (uint8 HWC out)
#          The C runs load an index cache written by `ringfeed index` first
#          (untimed, as shards.sh); DALI's index files (wds2idx) are made once
#          beside the shards, in laion-COUNT.dali-idx/.
#   out    every run, medians per loader (steady rate: the epochs after the
#          first where the loader reports it), then the ratios the issue
#          sets: ringfeed (fields, C and Python) / webdataset (>= 3x), /
#          DALI (>= 1.5x), and with / without fields (within 3%). A run that
#          fails (as `--fields` does on a ringfeed without it) is printed with
#          its error and makes the script exit 1 after the summary; loaders
#          that hand out captions are checked to hand out the same ones.
# Usage: bench/imagetext.sh [--help]; settings by environment: COUNT (20000),
#   ROUNDS (3), RINGFEED (build/ringfeed, built by scripts/build.sh when it
#   is that one), PARTS ("c python webdataset dali"), DATA_DIR (bench/data),
#   BASES (120), OUT_JSON (one JSON line per run; a temp file by default).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
COUNT=${COUNT:-20000}
ROUNDS=${ROUNDS:-3}
RF=${RINGFEED:-$ROOT/build/ringfeed}
PARTS=${PARTS:-c python webdataset dali}
DATA_DIR=${DATA_DIR:-$ROOT/bench/data}
BASES=${BASES:-120}
SHARDS=$DATA_DIR/laion-$COUNT
BASE=$DATA_DIR/laion-base-$BASES
DALI_IDX=$SHARDS.dali-idx
PY=/usr/bin/python3
CORES=$(nproc)
OUT_JSON=${OUT_JSON:-$(mktemp "${TMPDIR:-/tmp}/ringfeed-imagetext.XXXXXX")}
DALI_WHEEL=nvidia-dali-cuda120
has() { [[ " $PARTS " == *" $1 "* ]]; }

"$ROOT/scripts/deps.sh" python3-pil python3-skimage python3-numpy python3-torch python3-torchvision
[ "$RF" != "$ROOT/build/ringfeed" ] || "$ROOT/scripts/build.sh" build
if has webdataset && ! "$PY" -c 'import webdataset' 2>/dev/null; then
	"$PY" -m pip install --quiet --break-system-packages webdataset
fi
# DALI's wheels on PyPI are per CUDA major (nvidia-dali-cudaXXX; the bare
# nvidia-dali is a placeholder that fails on purpose); the CPU operators need
# no GPU or driver. Where it cannot be installed, the DALI part is skipped.
if has dali && ! "$PY" -c 'import nvidia.dali' 2>/dev/null; then
	if ! "$PY" -m pip install --quiet --break-system-packages "$DALI_WHEEL"; then
		echo "imagetext.sh: pip could not install $DALI_WHEEL: skipping the DALI part" >&2
		PARTS=${PARTS//dali/}
	fi
fi
mkdir -p "$DATA_DIR"
: > "$OUT_JSON"

# ---- data ------------------------------------------------------------------
if [ ! -f "$SHARDS/.done" ]; then
	t0=$(date +%s)
	if [ ! -f "$BASE/.done" ]; then
		rm -rf "$BASE"
		"$PY" "$ROOT/bench/gpu/photos.py" --out "$BASE" --count "$BASES" --classes 1 --size 1200 \
			--grain 2 --odd 0 >/dev/null
		touch "$BASE/.done"
	fi
	rm -rf "$SHARDS" "$DALI_IDX"
	mkdir -p "$SHARDS"
	"$PY" - "$BASE" "$SHARDS" "$COUNT" <<'PY'
import glob, hashlib, io, itertools, json, os, random, sys, tarfile
from multiprocessing import Pool
base_dir, out, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
PER_SHARD = 1000
BASES = sorted(glob.glob(os.path.join(base_dir, "*", "*.jpg")))
# caption words: common ones (the first drawn more often), some multi-byte
WORDS = ("a the of and in on with for at by from to is an photo image picture stock view "
         "vector illustration white black red blue green yellow old new small large beautiful "
         "modern vintage woman man girl boy child people family dog cat bird horse car bike "
         "house home room kitchen table chair wall door window garden tree flower forest "
         "mountain lake river sea beach sky cloud sunset night city street road bridge "
         "building church tower market food coffee cup plate cake bread fruit apple wine "
         "dress shirt shoes bag hat logo design pattern texture background icon art painting "
         "drawing poster card gift christmas wedding summer winter spring autumn rain snow "
         "light dark wooden stone glass metal paper gold silver pink purple orange brown grey "
         "close up portrait landscape aerial top side front interior exterior isolated "
         "hand face eye hair smile happy young walking sitting standing holding looking "
         "travel holiday vacation sale free download hd 4k 2019 2020 2021 one two three "
         "set collection best top quality cheap price buy online shop").split()
CUM = list(itertools.accumulate(1 / (i + 8) for i in range(len(WORDS))))
UTF8 = ["café", "naïve", "東京", "München", "São", "Zürich", "crème", "brûlée", "jalapeño",
        "Ελλάδα", "Москва", "北京", "ソウル", "서울", "señor", "façade", "日本", "🙂", "📷",
        "🌅", "❤️", "🇫🇷", "über", "déjà", "vu", "Kraków", "Ísland", "رمضان", "עברית"]
SUFFIX = ["", "", "", "", " - Stock Photo", " | Flickr", " stock image", " - Alamy",
          " (2020)", " #travel", " ..."]
RATIOS = [(1.0, 0.22), (4 / 3, 0.26), (3 / 2, 0.20), (16 / 9, 0.12), (3 / 4, 0.14), (5 / 4, 0.06)]

def caption(r):
    if r.random() < 0.01:
        return ""
    n = min(40, 5 + int(r.expovariate(1 / 7)))
    words = [r.choice(UTF8) if r.random() < 0.04 else r.choices(WORDS, cum_weights=CUM)[0]
             for _ in range(n)]
    if r.random() < 0.5:
        words[0] = words[0].capitalize()
    return " ".join(words) + r.choice(SUFFIX)

def plan(count, seed=27):
    """Every sample's draws, made in one place (the shards are the same
    whatever the number of processes)."""
    r = random.Random(seed)
    samples = []
    for i in range(count):
        u = r.random()
        fmt = "jpg" if u < 0.85 else "webp" if u < 0.95 else "png"
        ratio = r.choices([x for x, _ in RATIOS], [w for _, w in RATIOS])[0] * r.uniform(0.98, 1.02)
        ratio = min(16 / 9, max(3 / 4, ratio))
        short = r.randint(256, 640)
        w, h = (round(short * ratio), short) if ratio >= 1 else (short, round(short / ratio))
        mode = r.choices(["RGB", "RGBA", "P"], [0.8, 0.1, 0.1])[0] if fmt == "png" else "RGB"
        cap = caption(r)
        samples.append(dict(key="%09d" % i, fmt=fmt, base=r.randrange(len(BASES)), w=w, h=h,
                            scale=r.uniform(0.5, 1.0), fx=r.random(), fy=r.random(),
                            flip=r.random() < 0.5, mode=mode, caption=cap,
                            orig=r.uniform(1.0, 2.5), host=r.randrange(500),
                            mtime=1700000000 + i * 0.173))
    return samples

def encode(im, s):
    from PIL import Image
    bw, bh = im.size
    ratio = s["w"] / s["h"]
    cw, ch = (bh * ratio, bh) if bw / bh > ratio else (bw, bw / ratio)
    cw, ch = cw * s["scale"], ch * s["scale"]
    x0, y0 = (bw - cw) * s["fx"], (bh - ch) * s["fy"]
    img = im.resize((s["w"], s["h"]), Image.BICUBIC, box=(x0, y0, x0 + cw, y0 + ch))
    if s["flip"]:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    b = io.BytesIO()
    if s["fmt"] == "jpg":
        img.save(b, "JPEG", quality=90)
    elif s["fmt"] == "webp":
        img.save(b, "WEBP", quality=80)
    else:
        if s["mode"] == "RGBA":
            img.putalpha(255)
        elif s["mode"] == "P":
            img = img.quantize(256)
        img.save(b, "PNG")
    return b.getvalue()

def shard(job):
    from PIL import Image
    path, samples = job
    data = {}
    for b in sorted({s["base"] for s in samples}):   # each base photo decoded once a shard
        with Image.open(BASES[b]) as im:
            im = im.convert("RGB")
            for s in samples:
                if s["base"] == b:
                    data[s["key"]] = encode(im, s)
    stats = {}
    with open(path + ".tmp", "wb") as f, tarfile.open(fileobj=f, mode="w|") as tar:
        for s in samples:
            img, key = data[s["key"]], s["key"]
            meta = {"url": "https://img%d.example-cdn.com/photos/%s/%s.%s" % (
                        s["host"], hashlib.md5(key.encode()).hexdigest()[:8], key, s["fmt"]),
                    "key": key, "status": "success", "error_message": None,
                    "width": s["w"], "height": s["h"],
                    "original_width": round(s["w"] * s["orig"]),
                    "original_height": round(s["h"] * s["orig"]),
                    "caption": s["caption"], "exif": "{}",
                    "sha256": hashlib.sha256(img).hexdigest()}
            members = {s["fmt"]: img, "json": json.dumps(meta, indent=4).encode(),
                       "txt": s["caption"].encode()}
            for ext in sorted(members):   # as webdataset's TarWriter
                ti = tarfile.TarInfo(key + "." + ext)
                ti.size, ti.mtime, ti.mode = len(members[ext]), s["mtime"], 0o444
                ti.uname = ti.gname = "bigdata"
                tar.addfile(ti, io.BytesIO(members[ext]))
            st = stats.setdefault(s["fmt"], [0, 0])
            st[0] += 1
            st[1] += len(img)
    os.rename(path + ".tmp", path)
    return stats

samples = plan(count)
jobs = [(os.path.join(out, "%05d.tar" % (i // PER_SHARD)), samples[i:i + PER_SHARD])
        for i in range(0, count, PER_SHARD)]
with Pool(os.cpu_count()) as p:
    res = p.map(shard, jobs, chunksize=1)
tot = {}
for st in res:
    for fmt, (n, b) in st.items():
        tot.setdefault(fmt, [0, 0])
        tot[fmt][0] += n
        tot[fmt][1] += b
size = sum(os.path.getsize(path) for path, _ in jobs)
empty = sum(not s["caption"] for s in samples)
line = "%d samples in %d shards, %.1f MB: %s; %d empty captions, %.1f words a caption" % (
    count, len(jobs), size / 1e6,
    ", ".join("%s %d (%.0f KiB mean)" % (f, n, b / n / 1024) for f, (n, b) in sorted(tot.items())),
    empty, sum(len(s["caption"].split()) for s in samples) / count)
with open(os.path.join(out, ".done"), "w") as f:
    f.write(line + "\n")
PY
	echo "data: made $SHARDS in $(( $(date +%s) - t0 )) s"
fi
echo "data: $SHARDS: $(cat "$SHARDS/.done")"
TARS=("$SHARDS"/*.tar)
if has dali && [ ! -f "$DALI_IDX/.done" ]; then
	rm -rf "$DALI_IDX"
	mkdir -p "$DALI_IDX"
	# wds2idx: the wheel's index maker (a module beside nvidia.dali)
	printf '%s\n' "${TARS[@]}" | xargs -P "$CORES" -I{} sh -c \
		'"$1" -m wds2idx "$2" "$3/$(basename "$2" .tar).idx" >/dev/null' sh "$PY" {} "$DALI_IDX"
	touch "$DALI_IDX/.done"
fi
has c && "$RF" index "$SHARDS" -o "$SHARDS.idx" > /dev/null

record() { printf '{"case":"%s","round":%d,"result":%s}\n' "$1" "$2" "$3" >> "$OUT_JSON"; }
show() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[2]); print("  %-22s %8.0f images/s (steady), %8.0f over the run%s" % (sys.argv[1], d.get("steady_samples_per_s", d["samples_per_s"]), d["samples_per_s"], ("  %d bad samples" % d["bad_samples"]) if d.get("bad_samples") else ""))' "$1" "$2"; }
FAILED=()
# run CASE LABEL ROUND CMD...: records the last line of CMD's stdout (and
# shows its stderr, warnings), or shows why it failed (the end of its stderr)
run() {
	local case=$1 label=$2 round=$3 err x
	shift 3
	err=$(mktemp)
	if x=$("$@" 2>"$err" | tail -1) && [ -n "$x" ]; then
		record "$case" "$round" "$x"
		show "$label" "$x"
		[ ! -s "$err" ] || sed 's/^/    /' "$err" >&2 # warnings
	else
		echo "  $label: FAILED: $*" >&2
		tail -5 "$err" | sed 's/^/    /' >&2
		FAILED+=("$case")
	fi
	rm -f "$err"
}

echo "machine: $CORES cores, $(uname -r), $(findmnt -no SOURCE,FSTYPE -T "$DATA_DIR"), $(date -u '+%Y-%m-%d %H:%M UTC')"
export PYTHONPATH="$ROOT/build/python${PYTHONPATH:+:$PYTHONPATH}"
for r in $(seq 1 "$ROUNDS"); do
	echo "round $r/$ROUNDS"
	cat "${TARS[@]}" > /dev/null # data warm
	if has c; then
		C=("$RF" bench --source "$SHARDS" --index-cache "$SHARDS.idx" --random-resized-crop 224
			--flip 0.5 --threads "$CORES" --epochs 2 --seed "$r" --json)
		# without then with fields in odd rounds, the other way in even ones
		if [ $((r % 2)) -eq 1 ]; then
			run rf_c "ringfeed C" "$r" "${C[@]}"
			run rf_c_fields "ringfeed C, fields txt" "$r" "${C[@]}" --fields txt
		else
			run rf_c_fields "ringfeed C, fields txt" "$r" "${C[@]}" --fields txt
			run rf_c "ringfeed C" "$r" "${C[@]}"
		fi
	fi
	if has python; then
		run rf_py_fields "ringfeed Python, txt" "$r" "$PY" "$ROOT/bench/peers/ringfeed_py.py" \
			--source "$SHARDS" --threads "$CORES" --transform rrc --crop 224 --flip 0.5 \
			--epochs 2 --seed "$r" --fields txt --json
	fi
	if has webdataset; then
		run webdataset "webdataset" "$r" "$PY" "$ROOT/bench/peers/webdataset_loader.py" \
			--shards "$SHARDS" --workers "$CORES" --image "jpg;png;webp" --text txt \
			--transform rrc --crop 224 --flip 0.5 --epochs 2 --json
	fi
	if has dali; then
		run dali "DALI (CPU)" "$r" "$PY" "$ROOT/bench/peers/dali_webdataset.py" \
			--shards "$SHARDS" --index-dir "$DALI_IDX" --threads "$CORES" --crop 224 \
			--flip 0.5 --epochs 2 --seed "$r" --json
	fi
done

"$PY" - "$OUT_JSON" <<'PY'
import json, statistics, sys
by = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    by.setdefault(r["case"], []).append(r["result"])
def rate(x):
    return x.get("steady_samples_per_s", x["samples_per_s"])
def med(case):
    return statistics.median(rate(x) for x in by[case]) if case in by else None
print()
print("medians (images/s, steady)")
for k, v in by.items():
    print("  %-14s %s   median %8.1f" % (k, " ".join("%8.1f" % rate(x) for x in v), med(k)))
print()
def ratio(name, a, b, target):
    if a in by and b in by:
        print("%-44s %6.2fx  (target %s)" % (name, med(a) / med(b), target))
    else:
        print("%-44s    n/a  (no %s runs)" % (name, " or ".join(c for c in (a, b) if c not in by)))
ratio("ringfeed C, fields / webdataset:", "rf_c_fields", "webdataset", ">= 3x")
ratio("ringfeed Python, fields / webdataset:", "rf_py_fields", "webdataset", ">= 3x")
ratio("ringfeed C, fields / DALI (CPU):", "rf_c_fields", "dali", ">= 1.5x")
ratio("ringfeed Python, fields / DALI (CPU):", "rf_py_fields", "dali", ">= 1.5x")
ratio("ringfeed C, with / without fields:", "rf_c_fields", "rf_c", "within 3%: 0.97x-1.03x")
# every loader that hands out captions must have handed out the same ones
chars = {k: {x["field_chars"] for x in v} for k, v in by.items() if "field_chars" in v[0]}
if len({c for v in chars.values() for c in v}) > 1:
    print("captions differ: %s (characters in 2 epochs)" % ", ".join(
        "%s %s" % (k, "/".join(map(str, sorted(v)))) for k, v in chars.items()))
elif chars:
    print("captions: %d characters in 2 epochs, the same for %s" % (
        next(iter(next(iter(chars.values())))), ", ".join(chars)))
print("raw runs: %s" % sys.argv[1])
PY
if [ ${#FAILED[@]} -gt 0 ]; then
	echo "imagetext.sh: failed runs: ${FAILED[*]}" >&2
	exit 1
fi
