#!/usr/bin/env bash
# pack.sh - how fast `ringfeed pack` writes a dataset, by layout, side by
# side in one run: stored (no options), --align 4096, --compress zstd (level
# 3), --compress zstd --dict-size 112K (dictionary training included), round
# after round in that order. The source is read from a warm page cache (one
# untimed read first); the shards go to OUT on the same disk, flushed
# (fsync) before each rename as always, and are removed after each run.
# Prints samples/s and MB/s (source bytes) per round and their medians: the
# writing's (ringfeed pack's summary), dictionary training apart (its
# seconds in the last row).
# Settings by environment: DATA (default bench/data/imagefolder-5000, made
# with `ringfeed gen --count 5000 --classes 10` when missing, as
# bench/compare.sh does), ROUNDS (3), OUT (default DATA.pack).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]; then
	sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
	exit 0
fi
RF=$ROOT/build/ringfeed
DATA=${DATA:-$ROOT/bench/data/imagefolder-5000}
ROUNDS=${ROUNDS:-3}
OUT=${OUT:-$DATA.pack}
[ -x "$RF" ] || { echo "pack.sh: build first (ninja -C build)" >&2; exit 1; }
if [ ! -d "$DATA" ]; then
	mkdir -p "$(dirname "$DATA")"
	"$RF" gen --out "$DATA" --count 5000 --classes 10
fi
find "$DATA" -type f -exec cat {} + > /dev/null # warm: the writer is measured, not the disk's reads

modes=("stored" "align 4096" "zstd 3" "zstd 3 + dict 112K")
args=("" "--align 4096" "--compress zstd" "--compress zstd --dict-size 112K")
declare -A rate mbps train
for r in $(seq "$ROUNDS"); do
	for m in "${!modes[@]}"; do
		rm -rf "$OUT"
		# shellcheck disable=SC2086
		line=$("$RF" pack "$DATA" -o "$OUT" ${args[$m]})
		rm -rf "$OUT"
		# "... , 4.21 s ([dictionary 1.22 s, then ]1188 samples/s, 131.2 MB/s)"
		rate[$m,$r]=$(sed -n 's/.*[( ]\([0-9.]*\) samples\/s, \([0-9.]*\) MB\/s)$/\1/p' <<< "$line")
		mbps[$m,$r]=$(sed -n 's/.*[( ]\([0-9.]*\) samples\/s, \([0-9.]*\) MB\/s)$/\2/p' <<< "$line")
		train[$m,$r]=$(sed -n 's/.*(dictionary \([0-9.]*\) s, then .*/\1/p' <<< "$line")
		echo "round $r, ${modes[$m]}: $line" >&2
	done
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '\n%-20s' "samples/s (MB/s)"
for r in $(seq "$ROUNDS"); do printf ' | %-14s' "r$r"; done
printf ' | %-14s\n' median
for m in "${!modes[@]}"; do
	printf '%-20s' "${modes[$m]}"
	s=() b=()
	for r in $(seq "$ROUNDS"); do
		printf ' | %-14s' "${rate[$m,$r]} (${mbps[$m,$r]})"
		s+=("${rate[$m,$r]}")
		b+=("${mbps[$m,$r]}")
	done
	printf ' | %-14s\n' "$(median "${s[@]}") ($(median "${b[@]}"))"
done
m=$((${#modes[@]} - 1))
printf '%-20s' "dict training, s"
t=()
for r in $(seq "$ROUNDS"); do
	printf ' | %-14s' "${train[$m,$r]}"
	t+=("${train[$m,$r]}")
done
printf ' | %-14s\n' "$(median "${t[@]}")"
