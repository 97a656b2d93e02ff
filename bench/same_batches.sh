#!/usr/bin/env bash
# same_batches.sh - do two builds deliver the same batches? Runs `ringfeed
# bench --json` of each build over one matrix of sources, options and read
# paths and compares the "checksum" (a hash of every delivered byte, label
# and id, in delivery order: src/cli/run.c) of each run. For refactors that
# must not change behaviour (issue 24).
#
#   bench/same_batches.sh BEFORE AFTER
#
# BEFORE and AFTER are each a ringfeed executable or a git revision (built
# with scripts/build.sh in a temporary worktree). Sources, generated once
# into DATA_DIR (bench/data/same-batches): a JPEG tree with one damaged
# file (replaced: the replacement path), raw files, a manifest of the JPEG
# tree with weights, the tree as tar shards (plain, and zstd members),
# LAION-like shards (JPEGs with a caption and a JSON record each, read with
# --fields), the raw files as zstd tar shards, token shards (.bin and
# .bin.zst). Runs: each
# source with its options (random and sequential shard access, random
# resized crop with flips, float32, float16 and uint8 CHW, the weighted sampler, two epochs, in
# and out of order) on each read path (--io-path fixed, plain, pread).
# Over http too: the tar shards (with and without their index object), the
# LAION-like shards and the token shards, served by tests/fault_server.py (faults off) on
# 127.0.0.1 (HTTP=0: not). Prints one line per run and exits 1 when any
# checksum differs, 2 on a run that fails. Environment: DATA_DIR, IO_PATHS
# ("fixed plain pread"), THREADS (2), HTTP (1).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -ne 2 ] || [ "$1" = "--help" ] || [ "$1" = "-h" ]; then
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	[ $# -eq 2 ] || [ "${1:-}" = "--help" ] || [ "${1:-}" = "-h" ]
	exit $?
fi
DATA_DIR=${DATA_DIR:-$ROOT/bench/data/same-batches}
IO_PATHS=${IO_PATHS:-fixed plain pread}
THREADS=${THREADS:-2}
WORK=$(mktemp -d)
trap 'for w in "$WORK"/wt-*; do [ -d "$w" ] && git -C "$ROOT" worktree remove --force "$w"; done; rm -rf "$WORK"' EXIT

# A ringfeed executable for $1: itself, or the build of a revision.
binary() {
	if [ -x "$1" ] && [ -f "$1" ]; then
		realpath "$1"
		return
	fi
	local rev wt
	rev=$(git -C "$ROOT" rev-parse --verify "$1^{commit}")
	wt="$WORK/wt-$rev"
	git -C "$ROOT" worktree add --detach "$wt" "$rev" >&2
	(cd "$wt" && scripts/build.sh build >&2)
	echo "$wt/build/ringfeed"
}
BEFORE=$(binary "$1")
AFTER=$(binary "$2")
GEN=$AFTER

mkdir -p "$DATA_DIR"
D=$DATA_DIR
if [ ! -e "$D/.done" ]; then
	rm -rf "$D" && mkdir -p "$D"
	"$GEN" gen --out "$D/jpeg" --count 400 --classes 4 --seed 3 >/dev/null
	head -c 3000 "$D/jpeg/class_001/img_00000001.jpg" > "$D/jpeg/class_001/img_cut.jpg"
	"$GEN" gen --raw --out "$D/raw" --count 1500 --min-size 1 --max-size 20000 --seed 4 >/dev/null
	(cd "$D/jpeg" && find . -name '*.jpg' | sort | awk '{ printf "%s/jpeg/%s\t%d\t%d\n", D, substr($0, 3), NR % 4, 1 + NR % 3 }' D="$D") > "$D/manifest.txt"
	"$GEN" pack "$D/jpeg" -o "$D/jpeg.pack" --shard-size 2M >/dev/null
	"$GEN" pack "$D/jpeg" -o "$D/jpeg.zpack" --shard-size 2M --compress zstd:3 >/dev/null
	"$GEN" pack --raw "$D/raw" -o "$D/raw.zpack" --shard-size 4M --compress zstd:3 >/dev/null
	"$GEN" gen --tokens --out "$D/tokens" --shards 3 --shard-tokens 200000 --seed 5 >/dev/null
	"$GEN" pack --tokens "$D/tokens" -o "$D/tokens.zst" --frame-tokens 4096 --compress zstd:3 >/dev/null
	touch "$D/.done"
fi
# LAION-like shards: 300 of the JPEGs with a caption (KEY.txt, some
# multi-byte UTF-8) and a JSON record (KEY.json) each, in 3 class folders,
# packed into 1 MB shards; read with --fields txt,json (the checksum
# hashes each field's bytes and presence). Its own marker: older DATA_DIRs
# get it added.
if [ ! -e "$D/.laion-done" ]; then
	rm -rf "$D/laion" "$D/laion.pack" && mkdir -p "$D/laion/0" "$D/laion/1" "$D/laion/2"
	i=0
	for f in $(find "$D/jpeg" -name '*.jpg' | sort | head -n 300); do
		k=$(printf 's%05d' $i) c=$((i % 3))
		cp "$f" "$D/laion/$c/$k.jpg"
		printf 'a caption %d, caf\303\251 %d' $i $((i * 7 % 13)) > "$D/laion/$c/$k.txt"
		printf '{"key":"%s","w":%d}' "$k" $((i % 5)) > "$D/laion/$c/$k.json"
		i=$((i + 1))
	done
	"$GEN" pack "$D/laion" -o "$D/laion.pack" --shard-size 1M >/dev/null
	touch "$D/.laion-done"
fi

# name | options (the source included)
RUNS=(
	"jpeg-center|--source $D/jpeg --batch 32 --epochs 2"
	"jpeg-rrc-flip|--source $D/jpeg --batch 32 --random-resized-crop 160 --flip 0.5 --seed 7"
	"jpeg-float-chw|--source $D/jpeg --batch 16 --crop 96 --resize 112 --dtype float32 --layout chw --mean 0.5,0.4,0.3 --std 0.2,0.2,0.2 --out-of-order"
	"jpeg-uint8-chw|--source $D/jpeg --batch 16 --crop 96 --resize 112 --layout chw"
	"jpeg-half-chw|--source $D/jpeg --batch 16 --crop 90 --resize 100 --dtype float16 --layout chw --mean 0.5,0.4,0.3 --std 0.2,0.2,0.2"
	"raw|--source $D/raw --raw --batch 64 --epochs 2"
	"raw-in-order|--source $D/raw --raw --batch 50 --no-shuffle"
	"manifest|--source $D/manifest.txt --batch 32"
	"manifest-weighted|--source $D/manifest.txt --batch 32 --sampler weighted --samples-per-epoch 500"
	"tar-random|--source $D/jpeg.pack --batch 32 --epochs 2"
	"tar-sequential|--source $D/jpeg.pack --batch 32 --shard-access sequential --shuffle-block 64"
	"tar-zstd-jpeg|--source $D/jpeg.zpack --batch 32"
	"tar-zstd-raw|--source $D/raw.zpack --raw --batch 64"
	"tar-zstd-raw-sequential|--source $D/raw.zpack --raw --batch 64 --shard-access sequential"
	"tar-fields|--source $D/laion.pack --batch 32 --fields txt,json --epochs 2"
	"tar-fields-sequential|--source $D/laion.pack --batch 32 --fields txt,json --shard-access sequential --shuffle-block 16"
	"tokens-random|--source $D/tokens --seq 128 --batch 16 --epochs 2"
	"tokens-sequential|--source $D/tokens --seq 128 --batch 16 --no-shuffle"
	"tokens-stride|--source $D/tokens --seq 100 --stride 37 --batch 8 --token-dtype int32 --batches 200"
	"tokens-zstd-random|--source $D/tokens.zst --seq 128 --batch 16"
	"tokens-zstd-sequential|--source $D/tokens.zst --seq 128 --batch 16 --no-shuffle"
)

# The same sources over http (issue 37: the transports are rows of one
# table): tests/fault_server.py with no faults serves DATA_DIR on 127.0.0.1
# (a free port; stopped when the script ends); the shards with their index
# object (random and sequential access), a copy without it (scanned through
# the ring), token shards. HTTP=0 leaves these runs out.
if [ "${HTTP:-1}" = 1 ]; then
	if [ ! -e "$D/jpeg.unindexed/.done" ]; then
		rm -rf "$D/jpeg.unindexed" && mkdir -p "$D/jpeg.unindexed"
		cp "$D"/jpeg.pack/*.tar "$D/jpeg.unindexed/" && touch "$D/jpeg.unindexed/.done"
	fi
	python3 "$ROOT/tests/fault_server.py" "$D" --p503 0 --p429 0 --preset 0 --pshort 0 \
		--lifetime 7200 > "$WORK/server.out" 2> "$WORK/server.err" &
	SERVER_PID=$!
	trap 'kill $SERVER_PID 2>/dev/null; for w in "$WORK"/wt-*; do [ -d "$w" ] && git -C "$ROOT" worktree remove --force "$w"; done; rm -rf "$WORK"' EXIT
	for _ in $(seq 100); do # 10 s at most for its first line
		grep -q '^port ' "$WORK/server.out" 2>/dev/null && break
		sleep 0.1
	done
	port=$(sed -n 's/^port //p' "$WORK/server.out")
	[ -n "$port" ] || { echo "same_batches.sh: the http server did not start:" >&2; cat "$WORK/server.err" >&2; exit 2; }
	U=http://127.0.0.1:$port
	last() { basename "$(ls "$D/$1"/*."$2" | tail -n 1)" ".$2" | sed 's/.*-//; s/.*_//'; }
	nj=$(last jpeg.pack tar)
	RUNS+=(
		"http-tar-random|--source $U/jpeg.pack/shard-{000000..$nj}.tar --batch 32 --epochs 2"
		"http-tar-sequential|--source $U/jpeg.pack/shard-{000000..$nj}.tar --batch 32 --shard-access sequential --shuffle-block 64"
		"http-tar-scanned|--source $U/jpeg.unindexed/shard-{000000..$nj}.tar --batch 32"
		"http-tar-fields|--source $U/laion.pack/shard-{000000..$(last laion.pack tar)}.tar --batch 32 --fields txt,json"
		"http-tokens|--source $U/tokens/tokens_{000000..$(last tokens bin)}.bin --seq 128 --batch 16"
	)
fi

checksum() { # binary, options...
	local bin=$1 out
	shift
	# shellcheck disable=SC2068
	if ! out=$("$bin" bench $@ --threads "$THREADS" --json 2>"$WORK/err"); then
		echo "FAILED: $bin bench $* --threads $THREADS --json" >&2
		cat "$WORK/err" >&2
		return 2
	fi
	printf '%s\n' "$out" | sed -n 's/.*"samples":\([0-9]*\).*"checksum":\([0-9]*\).*/\2 \1/p'
}

differ=0
failed=0
printf '%-26s %-6s %-22s %-22s %s\n' run path before after samples
for run in "${RUNS[@]}"; do
	name=${run%%|*}
	opts=${run#*|}
	for path in $IO_PATHS; do
		# the pread path reads local files only (no URL reads): an http
		# run there fails in both builds, by design
		[ "$path" = pread ] && [ "${name#http-}" != "$name" ] && continue
		b=$(checksum "$BEFORE" $opts --io-path "$path") || { failed=1; continue; }
		a=$(checksum "$AFTER" $opts --io-path "$path") || { failed=1; continue; }
		mark=same
		[ "${b% *}" = "${a% *}" ] || { mark=DIFFERENT; differ=1; }
		printf '%-26s %-6s %-22s %-22s %-7s %s\n' "$name" "$path" "${b% *}" "${a% *}" "${a#* }" "$mark"
	done
done
[ $failed = 0 ] || exit 2
[ $differ = 0 ] || { echo "checksums differ" >&2; exit 1; }
echo "every run delivered the same batches"
