#!/usr/bin/env bash
# decode.sh - GPU JPEG decode, side by side in one run, on a machine with a
# CUDA device that has JPEG engines (an H100 or H200), from a carried build:
#   ../shared/tools/device-bundle.sh here (EXTRA_LIBS=.../libnvjpeg.so.13), then there:
#   export LD_LIBRARY_PATH=$PWD/.device/lib; bash bench/gpu/decode.sh
# Over real photographs (bench/gpu/photos.py: scikit-image's, cut to ~500x375,
# 5% progressive or gray), Resize 256 + CenterCrop 224, float16 CHW normalized:
#   1. nvjpeg_rate: the engines alone (batched hardware decode from pinned host
#      memory, nothing else), batch 64 and 256;
#   2. ringfeed bench --decode gpu (1 CPU thread for what the engines refuse),
#      reading through the page cache as the peers do (--no-direct; the set is warm),
#      --decode auto and --decode cpu (THREADS compute threads), device 0,
#      each ROUNDS times (medians), with the CPU cores each process kept busy;
#   3. torchvision's GPU pipeline (batched decode_jpeg on the GPU + resize +
#      crop + normalize) and the torch DataLoader (THREADS workers, pin_memory).
# Prints a table, the targets' ratios, and one JSON line with everything.
# B (default .device/build), DATA (default /tmp/photos), COUNT (5000),
# THREADS (nproc - 1), ROUNDS (3), EPOCHS of ringfeed runs (20: the steady rate
# leaves out the first batches only); JSON_OUT: a file for
# the JSON line instead of stdout.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
B=${B:-$ROOT/.device/build}
DATA=${DATA:-/tmp/photos}
COUNT=${COUNT:-5000}
THREADS=${THREADS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
ROUNDS=${ROUNDS:-3}
EPOCHS=${EPOCHS:-20}
PY=${PY:-python3}
[ -x "$B/ringfeed" ] && [ -x "$B/bench/nvjpeg_rate" ] || {
	echo "decode.sh: no $B/ringfeed or $B/bench/nvjpeg_rate (a CUDA build with nvjpeg.h)" >&2; exit 1; }
[ -d "$DATA" ] || "$PY" "$ROOT/bench/gpu/photos.py" --out "$DATA" --count "$COUNT" --classes 10
echo "machine: $(nproc) cores, $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), kernel $(uname -r)"
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# The engines alone.
# A failed or stuck run is reported and the rest still measured (its ratios are then left out).
for bt in 64 256; do
	timeout "${NVJPEG_TIMEOUT:-120}" "$B/bench/nvjpeg_rate" "$DATA" --batch "$bt" --passes 5 --json \
		>> "$TMPD/nvjpeg.jsonl" || echo "decode.sh: nvjpeg_rate --batch $bt failed (exit $?)" >&2
done
touch "$TMPD/nvjpeg.jsonl"; cat "$TMPD/nvjpeg.jsonl"

# ringfeed: a run is one process; its CPU time over its wall time is the cores it kept busy.
rf() { # NAME ARGS...: one JSON line with "cores_busy" added
	local name=$1; shift
	"$PY" - "$name" "$@" <<'PY'
import json, resource, subprocess, sys, time
name, cmd = sys.argv[1], sys.argv[2:]
t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
p = subprocess.run(cmd, capture_output=True, text=True)
t1, r1 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
if p.returncode:
    sys.exit("decode.sh: %s failed: %s" % (name, p.stderr[-2000:]))
d = json.loads(p.stdout.strip().splitlines()[-1])
d["run"] = name
d["cores_busy"] = round(((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)) / (t1 - t0), 2)
print(json.dumps(d))
PY
}
C=(--source "$DATA" --batch 256 --resize 256 --crop 224 --dtype float16 --layout chw
   --mean 0.485,0.456,0.406 --std 0.229,0.224,0.225 --device 0 --epochs "$EPOCHS"
   --io-depth 2048 --read-pool 256 --no-direct --json)
for r in $(seq "$ROUNDS"); do
	rf gpu "$B/ringfeed" bench "${C[@]}" --decode gpu --threads 1 >> "$TMPD/rf.jsonl"
	rf auto "$B/ringfeed" bench "${C[@]}" --decode auto --threads "$THREADS" >> "$TMPD/rf.jsonl"
	rf cpu "$B/ringfeed" bench "${C[@]}" --decode cpu --threads "$THREADS" >> "$TMPD/rf.jsonl"
done
# The peers.
for r in $(seq "$ROUNDS"); do
	"$PY" "$ROOT/bench/gpu/torchvision_gpu.py" --source "$DATA" --batch 256 --passes 2 --json >> "$TMPD/peers.jsonl"
done
for r in $(seq "$ROUNDS"); do
	"$PY" "$ROOT/bench/gpu/torch_gpu.py" --source "$DATA" --workers "$THREADS" --batch 256 \
		--warmup 5 --batches $(( COUNT / 256 * 2 )) --f16 --json >> "$TMPD/peers.jsonl"
done

"$PY" - "$TMPD" "$EPOCHS" "${JSON_OUT:-}" <<'PY'
import json, statistics, sys
out, epochs, json_out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda f: [json.loads(l) for l in open(out + "/" + f) if l.strip()]
nv, rf, peers = load("nvjpeg.jsonl"), load("rf.jsonl"), load("peers.jsonl")
med = lambda xs: statistics.median(xs)
def run(name, key="steady_samples_per_s"):
    rs = [d for d in rf if d["run"] == name]
    for d in rs:
        if d["samples"] != d["index_files"] * epochs:
            sys.exit("decode.sh: %s delivered %d samples, not %d" % (name, d["samples"], d["index_files"] * epochs))
    return med([d[key] for d in rs]), med([d["cores_busy"] for d in rs]), rs
engines = max([d["images_per_s"] for d in nv], default=None)
gpu, gpu_cores, gpu_runs = run("gpu")
aut, aut_cores, aut_runs = run("auto")
cpu, cpu_cores, cpu_runs = run("cpu")
tv = med([d["images_per_s"] for d in peers if d["loader"] == "torchvision_gpu"])
tv_cores = med([d["cores_used"] for d in peers if d["loader"] == "torchvision_gpu"])
dls = [d for d in peers if d["loader"] == "torch_gpu"]
dl = {"workers": dls[0]["workers"], "images_per_s": med([d["images_per_s"] for d in dls]),
      "cores_used": med([d["cores_used"] for d in dls])}
share = med([d["gpu_decodes"] / d["samples"] for d in aut_runs])
print()
print("%-44s %10s %8s" % ("", "images/s", "cores"))
for d in nv:
    print("%-44s %10.0f %8s" % ("nvJPEG engines alone, batch %d" % d["batch"], d["images_per_s"], "-"))
print("%-44s %10.0f %8.2f" % ("ringfeed --decode gpu", gpu, gpu_cores))
print("%-44s %10.0f %8.2f   (%.0f%% on the engines)" % ("ringfeed --decode auto", aut, aut_cores, 100 * share))
print("%-44s %10.0f %8.2f" % ("ringfeed --decode cpu", cpu, cpu_cores))
print("%-44s %10.0f %8.2f" % ("torchvision decode_jpeg(cuda) + resize/crop", tv, tv_cores))
print("%-44s %10.0f %8.2f" % ("torch DataLoader, %d workers" % dl["workers"], dl["images_per_s"], dl["cores_used"]))
print()
if engines is None:
    print("nvJPEG engines alone: no figure (nvjpeg_rate failed), the ratios to it left out")
checks = [
    ("gpu / engines alone (the better batch)", gpu / engines if engines else None, 0.8),
    ("gpu: CPU cores busy (at most)", gpu_cores, None),
    ("auto / (engines + cpu)", aut / (engines + cpu) if engines else None, 0.85),
    ("auto / cpu", aut / cpu, 2.5),
    ("auto / torchvision GPU pipeline", aut / tv, 5.0),
    ("auto / torch DataLoader", aut / dl["images_per_s"], 15.0),
]
for name, v, target in checks:
    if v is None:
        continue
    if target is None:
        print("%-44s %8.2f   (target <= 2)" % (name, v))
    else:
        print("%-44s %8.2fx  (target >= %.2fx: %s)" % (name, v, target, "met" if v >= target else "NOT met"))
everything = json.dumps({"nvjpeg": nv, "ringfeed": rf, "peers": peers})
if json_out:
    open(json_out, "w").write(everything + "\n")
else:
    print(everything)
PY
