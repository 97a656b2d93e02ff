#!/usr/bin/env bash
# python.sh - the Python package against the C loader and the torch
# DataLoader, side by side in one run.
#
# For each round, each transform (Resize+CenterCrop, RandomResizedCrop) and
# each output (uint8 CHW; float16 CHW normalized with ImageNet's mean and
# std), runs in turn: `ringfeed bench` (C), bench/peers/ringfeed_py.py (the
# package: a Python loop that only touches each batch; with its default
# lifetime, hold="gc", then with hold="next", lending), and
# bench/peers/torch_imagefolder.py (ImageFolder + PIL, num_workers = cores,
# pin_memory). Each run goes through bench/peers/measure.py: images/s from
# the loader itself; CPU cores used (CPU time of the process and its workers
# over its wall time, start-up included) and the peak summed RSS of the
# process tree. Prints every run, then medians and ratios.
#
# Settings (environment): DATA (default bench/data/imagefolder-2000, made
# with `ringfeed gen --count $COUNT` when missing), COUNT (2000), ROUNDS (5),
# THREADS (2), WORKERS (nproc), EPOCHS (1), PY (/usr/bin/python3), TORCH (1;
# 0 = C and Python only, for more rounds of the Python / C ratio), OUTPUTS
# ("uint8 float16").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/deps.sh python3-torchvision
scripts/build.sh build
COUNT=${COUNT:-2000}
DATA=${DATA:-$root/bench/data/imagefolder-$COUNT}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}
WORKERS=${WORKERS:-$(nproc)}
EPOCHS=${EPOCHS:-1}
PY=${PY:-/usr/bin/python3}
TORCH=${TORCH:-1}
OUTPUTS=${OUTPUTS:-uint8 float16}
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	build/ringfeed gen --out "$DATA" --count "$COUNT" --classes 10 >/dev/null
fi
export PYTHONPATH="$root/build/python${PYTHONPATH:+:$PYTHONPATH}"

"$PY" - "$DATA" "$OUTPUTS" "$ROUNDS" "$THREADS" "$WORKERS" "$EPOCHS" "$TORCH" <<'PY'
import json, statistics, subprocess, sys
data, outputs = sys.argv[1], sys.argv[2].split()
rounds, threads, workers, epochs, with_torch = map(int, sys.argv[3:])
# the C bench's flags for each output (ringfeed_py.py and torch_imagefolder.py take --output)
C_OUTPUT = {"uint8": ["--layout", "chw"],
            "float16": ["--dtype", "float16", "--layout", "chw", "--mean", "0.485,0.456,0.406",
                        "--std", "0.229,0.224,0.225"]}
py = sys.executable
measure = ["bench/peers/measure.py"]

def run(cmd):
    r = subprocess.run([py] + measure + cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"python.sh: {' '.join(cmd)} failed:\n{r.stderr}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    m = json.loads([l for l in r.stderr.splitlines() if l.startswith("measure: ")][-1][9:])
    return out["samples_per_s"], m["cores"], m["peak_rss_mib"]

def commands(transform, output, seed):
    c = ["build/ringfeed", "bench", "--source", data, "--threads", str(threads), "--json",
         "--epochs", str(epochs), "--seed", str(seed)] + C_OUTPUT[output]
    o = ["--output", output]
    if transform == "rrc":
        c += ["--random-resized-crop", "224"]
    runs = {
        "C ringfeed bench": c,
        "Python ringfeed": [py, "bench/peers/ringfeed_py.py", "--source", data, "--threads",
                            str(threads), "--transform", transform, "--epochs", str(epochs),
                            "--seed", str(seed), "--json"] + o,
        "Python ringfeed hold=next (lending)": [
            py, "bench/peers/ringfeed_py.py", "--source", data, "--threads", str(threads),
            "--transform", transform, "--epochs", str(epochs), "--seed", str(seed), "--hold",
            "next", "--json"] + o,
        f"torch DataLoader (workers={workers}, pin_memory)": [
            py, "bench/peers/torch_imagefolder.py", "--source", data, "--workers",
            str(workers), "--transform", transform, "--epochs", str(epochs), "--seed",
            str(seed), "--pin-memory", "--json"] + o,
    }
    if not with_torch:
        runs.popitem()
    return runs

results = {}
cases = [(t, o) for o in outputs for t in ("center", "rrc")]
for r in range(rounds):
    for transform, output in cases:
        for name, cmd in commands(transform, output, r).items():
            rate, cores, rss = run(cmd)
            results.setdefault((transform, output, name), []).append((rate, cores, rss))
            print(f"round {r} {transform:6s} {output:7s} {name:42s} {rate:8.1f} img/s  "
                  f"{cores:4.2f} cores  {rss:7.1f} MiB", flush=True)

print(f"\nmedians of {rounds} rounds ({data}, batch 64, 224 px, CHW, {threads} ringfeed threads)")
for transform, output in cases:
    med = {}
    for name in commands(transform, output, 0):
        runs = results[(transform, output, name)]
        med[name] = [statistics.median(x[i] for x in runs) for i in range(3)]
        rate, cores, rss = med[name]
        print(f"  {transform:6s} {output:7s} {name:42s} {rate:8.1f} img/s  {cores:4.2f} cores  "
              f"{rss:7.1f} MiB peak RSS")
    names = list(med)
    # ratio per round (side by side), then the median of the ratios
    for py_name in names[1:3]:
        pc = [p[0] / c[0] for p, c in zip(results[(transform, output, py_name)],
                                          results[(transform, output, names[0])])]
        print(f"  {transform:6s} {output:7s} {py_name} / C rate: {statistics.median(pc):.3f} "
              f"(rounds: {', '.join(f'{x:.3f}' for x in pc)})")
    if not with_torch:
        continue
    pt = [p[0] / t[0] for p, t in zip(results[(transform, output, names[1])],
                                      results[(transform, output, names[3])])]
    print(f"  {transform:6s} {output:7s} Python ringfeed / torch rate: {statistics.median(pt):.2f} "
          f"(rounds: {', '.join(f'{x:.2f}' for x in pt)}); peak RSS torch / Python: "
          f"{med[names[3]][2] / med[names[1]][2]:.2f}")
PY
