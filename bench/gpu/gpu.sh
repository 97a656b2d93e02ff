#!/usr/bin/env bash
# gpu.sh - issue 5's figures on a machine with a CUDA device (run it there,
# e.g. through the device tool; nothing here runs without one):
#   1. bench/gpu/h2d_peak.cu: pinned cudaMemcpyAsync bandwidth for one batch;
#   2. ringfeed bench --device 0: the loader's copies' achieved bandwidth
#      (device_copy_gb_per_s); target >= 0.9x the peak;
#   3. bench/gpu/step_wait: a spinning training step of 1.1x the loader's
#      batch period; target: the step waits <= 1% of the run;
#   4. torch DataLoader (pin_memory, non_blocking) vs ringfeed --device 0,
#      images/s and cores used, side by side.
# DATA (ImageFolder, generated if missing: COUNT 5000), THREADS (nproc - 1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
DATA=${DATA:-$ROOT/bench/data/imagefolder-5000}
THREADS=${THREADS:-$(( $(nproc) > 1 ? $(nproc) - 1 : 1 ))}
B=64
"$ROOT/scripts/build.sh" build -Dbench=enabled
[ -x "$ROOT/build/bench/h2d_peak" ] || { echo "gpu.sh: built without CUDA" >&2; exit 1; }
[ -d "$DATA" ] || "$ROOT/build/ringfeed" gen --out "$DATA" --count "${COUNT:-5000}" --classes 10
echo "machine: $(nproc) cores; $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
for conv in "" "--device-convert --dtype float16 --layout chw"; do
	# shellcheck disable=SC2086
	rf=$("$ROOT/build/ringfeed" bench --source "$DATA" --threads "$THREADS" --batch $B --epochs 1 --device 0 $conv --json)
	bytes=$(/usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d["device_bytes"] // d["batches"])' "$rf")
	peak=$("$ROOT/build/bench/h2d_peak" "$bytes" --json)
	/usr/bin/python3 - "$rf" "$peak" "$conv" <<'PY'
import json, sys
rf, peak = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print("%-40s %8.0f img/s, copies %.2f GB/s vs peak %.2f GB/s for %d bytes: %.2fx (target >= 0.9x)" % (
    sys.argv[3] or "uint8 HWC", rf["samples_per_s"], rf["device_copy_gb_per_s"], peak["h2d_gb_per_s"],
    peak["bytes"], rf["device_copy_gb_per_s"] / peak["h2d_gb_per_s"]))
PY
done
rate=$("$ROOT/build/ringfeed" bench --source "$DATA" --threads "$THREADS" --batch $B --batches 100 --device 0 --json |
	/usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["steady_samples_per_s"])')
step=$(/usr/bin/python3 -c "print(round(1.1 * $B / $rate * 1e3, 3))")
echo "step_wait (step $step ms = 1.1x the batch period): $("$ROOT/build/bench/step_wait" --source "$DATA" --threads "$THREADS" --batch $B --step-ms "$step" --batches 200)"
echo "torch: $(/usr/bin/python3 "$ROOT/bench/gpu/torch_gpu.py" --source "$DATA" --workers "$THREADS" --batches 78 --json)"
