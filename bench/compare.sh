#!/usr/bin/env bash
# Compare ringfeed's loader with the PyTorch ImageFolder/DataLoader peer on the same ImageFolder tree.
#
# Runs alternate within one invocation (ringfeed, then torch for each workers
# value, round after round) so that drift in machine state hits both sides
# alike, and prints per-round images/s, medians and ringfeed/torch ratios.
# Run `bench/compare.sh --help` for the settings.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEER="$REPO_ROOT/bench/peers/torch_imagefolder.py"
# python3-torch / python3-torchvision are Debian packages, installed for
# /usr/bin/python3 only; it also parses all JSON here (no jq dependency).
PY="${TORCH_PYTHON:-/usr/bin/python3}"

usage() {
    cat <<EOF
Usage: bench/compare.sh [--data DIR] [--count N] [--ringfeed PATH] [--rounds N]
                        [--threads N] [--workers "W1 W2 ..."] [--out-json FILE]

Compare ringfeed with the PyTorch peer (bench/peers/torch_imagefolder.py:
torchvision ImageFolder + DataLoader, Resize/CenterCrop/PILToTensor) on the
same ImageFolder directory. After one untimed warm-up pass of each loader,
every round runs ringfeed once and then the torch peer once per workers
value; a table of images/s, medians and ratios is printed at the end.

Every setting can be given as an environment variable or as a flag (a flag
wins over the variable):

  DATA      --data DIR      ImageFolder directory
                            (default: bench/data/imagefolder-5000 under the
                            repo root). Created with
                            "\$RINGFEED gen --out DIR --count COUNT --classes 10"
                            if it does not exist.
  COUNT     --count N       images to generate when DATA is created
                            (default: 5000)
  RINGFEED  --ringfeed PATH ringfeed binary (default: build/ringfeed under the
                            repo root)
  ROUNDS    --rounds N      timed rounds; round r uses --seed r (default: 3)
  THREADS   --threads N     ringfeed --threads (default: nproc)
  WORKERS   --workers LIST  space-separated num_workers values for the torch
                            peer (default: "0 \$(nproc)")
  OUT_JSON  --out-json FILE if set, append one JSON line per timed run:
                            {"config": ..., "round": ..., "result": <raw JSON>}
  TORCH_PYTHON              interpreter for the torch peer
                            (default: /usr/bin/python3)

Batch 64, Resize 256, CenterCrop 224 and 1 epoch are fixed for both loaders.

Note: ringfeed reads with O_DIRECT and so does not use the page cache; the
warm-up pass leaves the files in the page cache for the torch side, i.e.
torch is measured with a warm cache and ringfeed always reads from the device.
EOF
}

die() { echo "compare.sh: error: $*" >&2; exit 1; }

# ---- settings: environment first, then flags --------------------------------
DATA="${DATA:-$REPO_ROOT/bench/data/imagefolder-5000}"
COUNT="${COUNT:-5000}"
RINGFEED="${RINGFEED:-$REPO_ROOT/build/ringfeed}"
ROUNDS="${ROUNDS:-3}"
THREADS="${THREADS:-$(nproc)}"
WORKERS="${WORKERS:-0 $(nproc)}"
OUT_JSON="${OUT_JSON:-}"
BATCH=64
RESIZE=256
CROP=224

while [ $# -gt 0 ]; do
    case "$1" in
        -h|--help) usage; exit 0 ;;
        --data|--count|--ringfeed|--rounds|--threads|--workers|--out-json)
            [ $# -ge 2 ] || die "$1 needs a value (see --help)"
            case "$1" in
                --data) DATA="$2" ;;
                --count) COUNT="$2" ;;
                --ringfeed) RINGFEED="$2" ;;
                --rounds) ROUNDS="$2" ;;
                --threads) THREADS="$2" ;;
                --workers) WORKERS="$2" ;;
                --out-json) OUT_JSON="$2" ;;
            esac
            shift 2 ;;
        *) usage >&2; die "unknown argument: $1" ;;
    esac
done

is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }
is_posint() { [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ]; }
is_posint "$COUNT" || die "COUNT must be a positive integer, got '$COUNT'"
is_posint "$ROUNDS" || die "ROUNDS must be a positive integer, got '$ROUNDS'"
is_posint "$THREADS" || die "THREADS must be a positive integer, got '$THREADS'"
read -r -a WORKER_LIST <<< "$WORKERS"
[ "${#WORKER_LIST[@]}" -ge 1 ] || die "WORKERS is empty"
for w in "${WORKER_LIST[@]}"; do
    is_uint "$w" || die "WORKERS must be non-negative integers, got '$w'"
done

# ---- prerequisites -----------------------------------------------------------
# The peer's packages (and the build's), installed if missing; the default
# binary is built if it is not there yet.
"$REPO_ROOT/scripts/deps.sh" python3-torch python3-torchvision python3-pil
if [ "$RINGFEED" = "$REPO_ROOT/build/ringfeed" ]; then
    "$REPO_ROOT/scripts/build.sh" build
fi
[ -x "$RINGFEED" ] || die "ringfeed binary not found or not executable: $RINGFEED
  build it first: run scripts/demo.sh, or: meson setup build && ninja -C build"
[ -x "$PY" ] || die "python interpreter not found: $PY"
"$PY" -c 'import torch, torchvision, PIL' 2>/dev/null ||
    die "$PY cannot import torch/torchvision/PIL
  install them: apt-get install python3-torch python3-torchvision python3-pil"
[ -f "$PEER" ] || die "torch peer not found: $PEER"

if [ ! -d "$DATA" ]; then
    echo "DATA $DATA does not exist: generating $COUNT images in 10 classes..."
    mkdir -p "$(dirname "$DATA")"
    "$RINGFEED" gen --out "$DATA" --count "$COUNT" --classes 10 ||
        die "'$RINGFEED gen' failed to create $DATA"
fi
[ -d "$DATA" ] || die "DATA is not a directory: $DATA"

if [ -n "$OUT_JSON" ]; then
    : > "$OUT_JSON" || die "cannot write OUT_JSON: $OUT_JSON"
fi

# ---- helpers -----------------------------------------------------------------
# Runs are recorded here as "config<TAB>round<TAB>compact JSON" lines.
RESULTS="$(mktemp "${TMPDIR:-/tmp}/ringfeed-compare.XXXXXX")"
trap 'rm -f "$RESULTS"' EXIT

# Print a loader's stdout as one compact JSON object, checking that it is an
# object with a numeric samples_per_s. Accepts the whole stdout as one JSON
# value, or else the JSON object that ends it (one or more lines starting at a
# line that begins with "{"), in case something was printed before it.
normalize_json() {
    "$PY" -c '
import json, sys
text = sys.stdin.read().strip()
lines = text.splitlines()
starts = [0] + [i for i in range(len(lines) - 1, 0, -1) if lines[i].lstrip().startswith("{")]
obj = None
for i in starts:
    try:
        obj = json.loads("\n".join(lines[i:]))
        break
    except ValueError:
        pass
if not isinstance(obj, dict) or not isinstance(obj.get("samples_per_s"), (int, float)):
    sys.exit("no JSON object with a numeric samples_per_s in: %r" % text[-300:])
print(json.dumps(obj, separators=(",", ":")))
'
}

# One-line summary of a compact JSON result, for progress output.
summary() {
    "$PY" -c '
import json, sys
d = json.loads(sys.argv[1])
print("%8.1f images/s  (%s images, %.3f s)" % (d["samples_per_s"], d.get("samples", "?"), d.get("seconds", float("nan"))))
' "$1"
}

run_ringfeed() {  # run_ringfeed SEED -> compact JSON on stdout
    local out
    out="$("$RINGFEED" bench --source "$DATA" --batch "$BATCH" --resize "$RESIZE" \
        --crop "$CROP" --threads "$THREADS" --epochs 1 --seed "$1" --json)" ||
        die "ringfeed bench failed (seed $1)"
    printf '%s\n' "$out" | normalize_json || die "ringfeed bench printed no usable JSON (seed $1)"
}

run_torch() {  # run_torch WORKERS SEED -> compact JSON on stdout
    local out
    out="$("$PY" "$PEER" --source "$DATA" --workers "$1" --batch "$BATCH" \
        --resize "$RESIZE" --crop "$CROP" --epochs 1 --seed "$2" --json)" ||
        die "torch peer failed (workers $1, seed $2)"
    printf '%s\n' "$out" | normalize_json || die "torch peer printed no usable JSON (workers $1, seed $2)"
}

record() {  # record CONFIG ROUND JSON
    printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$RESULTS"
    if [ -n "$OUT_JSON" ]; then
        "$PY" -c '
import json, sys
print(json.dumps({"config": sys.argv[1], "round": int(sys.argv[2]), "result": json.loads(sys.argv[3])}))
' "$1" "$2" "$3" >> "$OUT_JSON"
    fi
    printf '  %-22s %s\n' "$1" "$(summary "$3")"
}

# ---- header ------------------------------------------------------------------
FS="$(findmnt -no SOURCE,FSTYPE -T "$DATA" 2>/dev/null | tr -s ' ' | head -n 1 || true)"
MACHINE="$(nproc) cores, kernel $(uname -r), DATA on ${FS:-unknown filesystem}, $(date '+%Y-%m-%d %H:%M:%S %Z')"
NFILES="$(find "$DATA" -type f | wc -l)"

echo "ringfeed vs torch ImageFolder/DataLoader"
echo "machine:  $MACHINE"
echo "data:     $DATA ($NFILES files)"
echo "loaders:  ringfeed $RINGFEED (--threads $THREADS)"
echo "          torch    $PEER (workers: ${WORKER_LIST[*]}) via $PY"
echo "settings: batch $BATCH, resize $RESIZE, crop $CROP, 1 epoch, $ROUNDS rounds (round r uses seed r)"
echo "note:     ringfeed reads with O_DIRECT and bypasses the page cache; the warm-up"
echo "          pass leaves DATA in the page cache, so torch runs with a warm cache"
echo "          while ringfeed always reads from the device."
echo

# ---- warm-up (untimed) -------------------------------------------------------
# One pass of each loader, results discarded. The torch pass pulls every file
# into the page cache (and warms Python's imports); ringfeed's O_DIRECT reads
# do not fill the page cache, so its pass only warms the binary and allocator.
echo "warm-up (untimed)..."
run_ringfeed 0 > /dev/null
run_torch "${WORKER_LIST[-1]}" 0 > /dev/null

# ---- timed rounds, alternating ----------------------------------------------
for ((round = 1; round <= ROUNDS; round++)); do
    echo "round $round/$ROUNDS"
    # Assign first: set -e does not see a failed $(...) used as an argument.
    result="$(run_ringfeed "$round")"
    record "ringfeed" "$round" "$result"
    for w in "${WORKER_LIST[@]}"; do
        result="$(run_torch "$w" "$round")"
        record "torch(workers=$w)" "$round" "$result"
    done
done
echo

# ---- table -------------------------------------------------------------------
"$PY" - "$RESULTS" "$ROUNDS" "$MACHINE" <<'EOF'
import json, statistics, sys

path, rounds, machine = sys.argv[1], int(sys.argv[2]), sys.argv[3]
runs = {}      # config -> {round: result}
order = []     # configs in first-seen order (ringfeed first)
with open(path) as f:
    for line in f:
        config, rnd, text = line.rstrip("\n").split("\t", 2)
        if config not in runs:
            runs[config] = {}
            order.append(config)
        runs[config][int(rnd)] = json.loads(text)

medians = {c: statistics.median(r["samples_per_s"] for r in runs[c].values())
           for c in order}
width = max(len(c) for c in order)
round_cols = "".join("%10s" % ("round %d" % r) for r in range(1, rounds + 1))
print("images/s".ljust(width) + round_cols + "%10s%10s" % ("median", "images"))
for c in order:
    cells = "".join("%10.1f" % runs[c][r]["samples_per_s"] if r in runs[c] else "%10s" % "-"
                    for r in range(1, rounds + 1))
    counts = sorted({r.get("samples") for r in runs[c].values()}, key=str)
    print(c.ljust(width) + cells + "%10.1f%10s" % (medians[c], "/".join(map(str, counts))))
print()

base = "ringfeed"
for c in order:
    if c == base:
        continue
    if medians[c] > 0:
        print("%s / %s: %.2fx" % (base, c, medians[base] / medians[c]))
    else:
        print("%s / %s: n/a (torch median is 0)" % (base, c))

counts = {c: {r.get("samples") for r in runs[c].values()} for c in order}
if len(set().union(*counts.values())) > 1:
    print()
    print("warning: the loaders did not all deliver the same number of images: "
          + ", ".join("%s %s" % (c, "/".join(map(str, sorted(v, key=str)))) for c, v in counts.items()))
print()
print("machine: " + machine)
EOF

if [ -n "$OUT_JSON" ]; then
    echo "raw per-run JSON lines written to $OUT_JSON"
fi
