#!/bin/sh
# cli_resume.sh - the command line's ranks, ids and resume, end to end:
# `bench --ids` of a whole run equals the ids of a run stopped by
# `--save-state --after K` followed by one started with `--resume` (other
# threads and io-depth); two ranks' ids are disjoint and cover each epoch;
# their state resumed on one rank delivers the rest of the epoch (elastic);
# `ringfeed state` describes the state, written 0600 (over a stale
# PATH.tmp too); mismatches and usage errors fail with a message.
# Usage (meson does this): cli_resume.sh PATH_TO_ringfeed
set -eu
rf=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

"$rf" gen --out "$tmp/data" --count 30 --classes 3 --threads 2 >/dev/null
common="--source $tmp/data --batch 4 --resize 64 --crop 56 --epochs 2 --seed 3"

# a whole run, and the same run cut after 3 batches and resumed
"$rf" bench $common --rank 1 --world 2 --threads 2 --ids "$tmp/full.ids" >/dev/null
"$rf" bench $common --rank 1 --world 2 --threads 1 --ids "$tmp/a.ids" \
	--save-state "$tmp/s.state" --after 3 >/dev/null 2>"$tmp/save.err"
grep -q "resumes at batch 3" "$tmp/save.err" || fail "no save message: $(cat "$tmp/save.err")"
[ "$(wc -l <"$tmp/a.ids")" -eq 3 ] || fail "--after 3 delivered $(wc -l <"$tmp/a.ids") batches"
"$rf" bench $common --rank 1 --world 2 --threads 2 --io-depth 3 --prefetch 2 \
	--ids "$tmp/b.ids" --resume "$tmp/s.state" >/dev/null
cat "$tmp/a.ids" "$tmp/b.ids" | cmp -s - "$tmp/full.ids" || fail "cut + resume != whole run"
[ "$(wc -l <"$tmp/full.ids")" -eq 8 ] || fail "rank 1 of 2: 15 samples an epoch, 4 batches of 4"

# a state is the user's alone (0600) whatever the umask, even where a run
# killed while saving (or another user) left PATH.tmp of another mode
: >"$tmp/m.state.tmp"
chmod 644 "$tmp/m.state.tmp"
(umask 0 && "$rf" bench $common --threads 1 --save-state "$tmp/m.state" --after 1 \
	>/dev/null 2>&1) || fail "--save-state over a stale m.state.tmp"
[ "$(stat -c %a "$tmp/m.state")" = 600 ] || fail "state mode $(stat -c %a "$tmp/m.state"), not 600"
[ ! -e "$tmp/m.state.tmp" ] || fail "m.state.tmp left behind"

# rank 0 and rank 1 split each epoch: 4 lines an epoch, 15 ids each
"$rf" bench $common --rank 0 --world 2 --ids "$tmp/r0.ids" >/dev/null
for e in 0 1; do
	from=$((e * 4 + 1))
	to=$((e * 4 + 4))
	ids=$( (sed -n "${from},${to}p" "$tmp/r0.ids"; sed -n "${from},${to}p" "$tmp/full.ids") |
		tr ' ' '\n' | sort -n)
	[ "$(echo "$ids" | wc -l)" -eq 30 ] || fail "epoch $e: $(echo "$ids" | wc -l) ids"
	[ "$(echo "$ids" | uniq | wc -l)" -eq 30 ] || fail "epoch $e: ranks overlap"
	[ "$(echo "$ids" | head -1)" -eq 0 ] && [ "$(echo "$ids" | tail -1)" -eq 29 ] ||
		fail "epoch $e: ids out of range"
done

# the state in words
"$rf" state "$tmp/s.state" >"$tmp/state.txt"
for want in "format version 1" "resumes at batch 3: epoch 0" "shuffle sampler, seed 3" \
	"rank 1 of 2" "30 samples"; do
	grep -q "$want" "$tmp/state.txt" || fail "state: no '$want' in: $(cat "$tmp/state.txt")"
done

# refusals
if "$rf" bench $common --rank 1 --world 2 --seed 4 --resume "$tmp/s.state" >/dev/null 2>"$tmp/e"; then
	fail "another seed resumed"
fi
grep -q "seed 3" "$tmp/e" || fail "seed refusal: $(cat "$tmp/e")"

# another world size (elastic resume): both ranks took 3 batches of epoch 0,
# 24 of its 30 samples; one rank delivers the 6 left (2 batches), then
# epoch 1 whole (8 batches)
"$rf" bench $common --resume "$tmp/s.state" --ids "$tmp/w1.ids" >/dev/null 2>"$tmp/e" ||
	fail "one rank did not resume 2 ranks' state: $(cat "$tmp/e")"
[ "$(wc -l <"$tmp/w1.ids")" -eq 10 ] || fail "one rank: $(wc -l <"$tmp/w1.ids") batches, want 2 + 8"
ids=$( (sed -n 1,3p "$tmp/r0.ids"; sed -n 1,3p "$tmp/full.ids"; sed -n 1,2p "$tmp/w1.ids") |
	tr ' ' '\n' | sort -n)
[ "$(echo "$ids" | wc -l)" -eq 30 ] && [ "$(echo "$ids" | uniq | wc -l)" -eq 30 ] ||
	fail "2 ranks then 1: epoch 0 not each sample once: $(echo $ids)"
# a state saved inside that rest carries it (format version 2)
"$rf" bench $common --resume "$tmp/s.state" --save-state "$tmp/w1.state" --after 1 \
	>/dev/null 2>&1 || fail "save inside the rest"
"$rf" state "$tmp/w1.state" >"$tmp/w1.txt"
for want in "format version 2" "6 of its positions were left, in 1 run" \
	"this epoch's first batch is 6"; do
	grep -q "$want" "$tmp/w1.txt" || fail "state: no '$want' in: $(cat "$tmp/w1.txt")"
done
head -c 100 "$tmp/s.state" >"$tmp/short.state"
if "$rf" state "$tmp/short.state" >/dev/null 2>"$tmp/e"; then fail "truncated state described"; fi
grep -q "truncated" "$tmp/e" || fail "truncation: $(cat "$tmp/e")"
# a FIFO where a state belongs is refused, not waited on (timeout: a hang fails)
mkfifo "$tmp/fifo.state"
rc=0; timeout 30 "$rf" state "$tmp/fifo.state" >/dev/null 2>"$tmp/e" || rc=$?
[ $rc = 1 ] && grep -q "not a regular file (a FIFO)" "$tmp/e" || fail "state of a FIFO: rc $rc: $(cat "$tmp/e")"
rc=0; timeout 30 "$rf" bench --source "$tmp/data" --batch 10 --resize 64 --crop 56 \
	--resume "$tmp/fifo.state" >/dev/null 2>"$tmp/e" || rc=$?
[ $rc = 1 ] && grep -q "not a regular file (a FIFO)" "$tmp/e" || fail "--resume FIFO: rc $rc: $(cat "$tmp/e")"
set +e
"$rf" bench $common --after 2 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--after without --save-state is a usage error"
"$rf" bench $common --rank 1 >/dev/null 2>&1
[ $? -eq 2 ] || fail "--rank without --world is a usage error"
"$rf" bench $common --sampler fancy >/dev/null 2>&1
[ $? -eq 2 ] || fail "--sampler fancy is a usage error"
set -e

# a balanced sampler with more draws than samples
"$rf" bench --source "$tmp/data" --batch 10 --resize 64 --crop 56 --sampler balanced \
	--samples-per-epoch 50 --ids "$tmp/bal.ids" >/dev/null
[ "$(wc -l <"$tmp/bal.ids")" -eq 5 ] || fail "balanced: 50 draws in batches of 10"
echo "cli_resume: ok"
