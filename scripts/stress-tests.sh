#!/usr/bin/env bash
# stress-tests.sh [N] - runs the fast suite N times (default 10) in build/
# while two CPU hogs compete for the cores, to show that no test depends on
# timing. The hogs are started here and stopped by their PIDs. Prints one
# line per run and a summary; exits non-zero when any run failed.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-10}
scripts/build.sh build -Dtests=true # a build/ that demo.sh configured has none

hogs=()
stop_hogs() {
	for pid in "${hogs[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
trap stop_hogs EXIT
for _ in 1 2; do
	( while :; do :; done ) &
	hogs+=($!)
done

ok=0
for i in $(seq 1 "$n"); do
	if meson test -C build --num-processes 2 >"build/stress-$i.log" 2>&1; then
		ok=$((ok + 1))
		echo "run $i: ok"
	else
		echo "run $i: FAILED (build/stress-$i.log, build/meson-logs/testlog.txt)"
		cp build/meson-logs/testlog.txt "build/stress-$i-testlog.txt"
	fi
done
echo "stress: $ok of $n runs passed with 2 CPU hogs"
[ "$ok" -eq "$n" ]
