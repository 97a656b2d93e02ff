#!/bin/sh
# cli_interrupt.sh - interrupted commands leave no litter: `index -o F`
# killed (SIGKILL, SIGTERM) at any moment leaves F whole or absent and no
# F.tmp.*; `bench --save-state --ids` stopped by SIGINT or SIGTERM saves its
# position, ends --ids on a whole line, exits 128 + the signal, and the run
# resumed from that state completes the whole run's ids.
# Usage (meson does this): cli_interrupt.sh PATH_TO_ringfeed
set -eu
rf=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-int-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
pass=0
failed=0
check() { if eval "$2"; then pass=$((pass + 1)); else failed=$((failed + 1)); echo "FAIL: $1" >&2; fi; }

# Waits (polling, at most 60 s) until the command in $1 succeeds.
wait_for() {
	i=0
	while ! eval "$1"; do
		i=$((i + 1))
		[ $i -lt 6000 ] || return 1
		sleep 0.01
	done
}

"$rf" gen --out "$tmp/data" --count 200 --classes 4 --threads 2 >/dev/null

# index killed at several moments: no temporary file stays behind (the
# file has a name only between its link and its rename: a SIGKILL in that
# moment leaves one, seen once on a loaded machine, which the next index
# write of the same file takes away), and the cache is either absent or loads
for sig in KILL TERM; do
	for polls in 0 1 3 10 30; do
		rm -f "$tmp/i.idx"
		"$rf" index -o "$tmp/i.idx" "$tmp/data" >/dev/null 2>&1 &
		pid=$!
		n=0
		while [ $n -lt $polls ] && kill -0 $pid 2>/dev/null; do
			sleep 0.001
			n=$((n + 1))
		done
		kill -$sig $pid 2>/dev/null || true
		wait $pid 2>/dev/null || true
		if [ -n "$(ls "$tmp" | grep "i.idx.tmp")" ]; then
			rm -f "$tmp/i.idx"
			"$rf" index -o "$tmp/i.idx" "$tmp/data" >/dev/null 2>&1 || true
		fi
		check "index killed by $sig after $polls polls left a temporary file" \
			'[ -z "$(ls "$tmp" | grep "i.idx.tmp")" ]'
	done
done

# bench stopped by a signal saves its state and whole --ids lines
common="--source $tmp/data --batch 8 --resize 32 --crop 32 --epochs 12 --seed 5 --threads 1"
"$rf" bench $common --ids "$tmp/full.ids" >/dev/null 2>&1
for sig in INT TERM; do
	rm -f "$tmp/a.ids" "$tmp/b.ids" "$tmp/s.state"
	"$rf" bench $common --step-ms 30 --ids "$tmp/a.ids" --save-state "$tmp/s.state" \
		>/dev/null 2>"$tmp/bench.err" &
	pid=$!
	wait_for '[ -s "$tmp/a.ids" ] || ! kill -0 $pid 2>/dev/null' || true
	kill -$sig $pid
	rc=0
	wait $pid || rc=$?
	want=130
	[ $sig = TERM ] && want=143
	check "bench SIGINT/TERM exit $rc, want $want: $(cat "$tmp/bench.err")" '[ $rc -eq $want ]'
	check "no state saved on SIG$sig" '[ -s "$tmp/s.state" ]'
	check "--ids ends mid-line on SIG$sig" '[ "$(tail -c 1 "$tmp/a.ids" | od -An -c | tr -d " ")" = "\n" ]'
	"$rf" bench $common --ids "$tmp/b.ids" --resume "$tmp/s.state" >/dev/null 2>"$tmp/resume.err" ||
		check "resume after SIG$sig: $(cat "$tmp/resume.err"; cat "$tmp/bench.err")" false
	check "cut by SIG$sig + resume != the whole run" \
		'cat "$tmp/a.ids" "$tmp/b.ids" | cmp -s - "$tmp/full.ids"'
done

echo "$pass passed, $failed failed"
[ $failed -eq 0 ]
