#!/usr/bin/env bash
# ring_flags.sh - what each io_uring set-up flag set costs on the small-file
# case: SINGLE_ISSUER|DEFER_TASKRUN (the default), SINGLE_ISSUER|COOP_TASKRUN,
# and no flags, alternating, file data dropped before each run (metadata
# warm). Prints files/s (steady) and the ring thread's CPU per 10,000 files.
# Needs root. DATA (default bench/data/raw-200k), ROUNDS (3), IO_DEPTH (512).
# RINGFEED_RING_SETUP is read only by a build with test hooks: meson -Dtest_hooks=true.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DATA=${DATA:-$ROOT/bench/data/raw-200k}
ROUNDS=${ROUNDS:-3}
IO_DEPTH=${IO_DEPTH:-512}
[ -d "$DATA" ] || { echo "ring_flags.sh: $DATA missing (bench/small_files.sh makes it)" >&2; exit 1; }
"$ROOT/scripts/build.sh" build
find "$DATA" -type f -printf '%s\n' > /dev/null
for r in $(seq 1 "$ROUNDS"); do
	for f in defer coop none; do
		sync; echo 1 > /proc/sys/vm/drop_caches
		RINGFEED_RING_SETUP=$f "$ROOT/build/ringfeed" bench --raw --raw-max 16 --source "$DATA" \
			--io-depth "$IO_DEPTH" --seed "$r" --json |
			/usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); print("%s %d %.0f %.1f" % (sys.argv[1], int(sys.argv[2]), d["steady_samples_per_s"], d["stages"]["ring_cpu_ms_per_10k"]))' "$f" "$r"
	done
done | /usr/bin/python3 -c '
import statistics, sys
rows = [l.split() for l in sys.stdin]
print("%-6s %s" % ("flags", "  files/s per round             median   ring CPU ms/10k (median)"))
for f in ("defer", "coop", "none"):
    v = [float(r[2]) for r in rows if r[0] == f]
    c = [float(r[3]) for r in rows if r[0] == f]
    print("%-6s %s   %8.0f   %6.1f" % (f, " ".join("%8.0f" % x for x in v), statistics.median(v), statistics.median(c)))
'
