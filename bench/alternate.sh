#!/usr/bin/env bash
# alternate.sh BEFORE AFTER NAME ROUNDS -- BENCH-OPTIONS... - one `ringfeed
# bench` configuration on two builds, alternating (odd rounds BEFORE first,
# even rounds AFTER first, so that drift hits both alike), and one line:
# the medians of samples/s (bench --json), after/before and each side's
# spread. For a restructure that must keep the speed (issue 37: ratio >= 0.98
# where the spreads say it is not noise). bench/before_after.sh does the
# same for its two fixed workloads with cold reads.
#
#   bench/alternate.sh OLD/ringfeed NEW/ringfeed tar-random 5 -- --source DIR --batch 32 --epochs 6
set -euo pipefail
if [ $# -lt 5 ] || [ "$5" != "--" ]; then
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 2
fi
B=$1 A=$2 name=$3 rounds=$4
shift 5
rate() { # binary, options...: samples/s of one run
	local bin=$1
	shift
	"$bin" bench "$@" --json 2>/dev/null | sed -n 's/.*"samples_per_s":\([0-9.]*\).*/\1/p'
}
bs=() as=()
for r in $(seq "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		b=$(rate "$B" "$@"); a=$(rate "$A" "$@")
	else
		a=$(rate "$A" "$@"); b=$(rate "$B" "$@")
	fi
	[ -n "$a" ] && [ -n "$b" ] || { echo "alternate.sh: a run failed: ringfeed bench $*" >&2; exit 1; }
	bs+=("$b") as+=("$a")
done
python3 - "$name" "${bs[*]}" "${as[*]}" <<'PY'
import statistics as st, sys
name, b, a = sys.argv[1], [float(x) for x in sys.argv[2].split()], [float(x) for x in sys.argv[3].split()]
print(f"{name:18s} before {st.median(b):10.0f}  after {st.median(a):10.0f}  after/before "
      f"{st.median(a) / st.median(b):.3f}  (before {min(b):.0f}-{max(b):.0f}, after {min(a):.0f}-{max(a):.0f})")
PY
