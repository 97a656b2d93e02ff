#!/usr/bin/env bash
# cli_tokens.sh - `ringfeed gen --tokens` and `ringfeed pack --tokens` as
# commands. gen: N files of exactly the expected size in llm.c's layout, read
# back by a Python reader written after llm.c's (dev/data/data_common.py:
# struct '<256i' header, magic, version, count, then the tokens), GPT-2's
# and Llama-3's; the same seed gives the same bytes; Zipf makes token 0 the
# most frequent; bad options exit 2 naming the problem. pack: one NAME.bin.zst
# per NAME.bin whose header and frame table say what token_shard.h says,
# ceil(count / F) frames for F = 1, 7, 4096 and counts that are and are not
# multiples of F, frames that zstd -d turns back into the .bin's tokens; the
# same bytes from a folder, a glob, a brace pattern, a list or one file;
# interrupted (SIGINT, SIGTERM, SIGHUP once its progress line is out) it
# leaves no file; a non-token, cut-short or .bin.zst source is refused
# naming the file.
# tests/test_token_pack.c checks the frames and windows in C.
# usage: cli_tokens.sh RINGFEED
set -uo pipefail
RF=$1
PY=${PYTHON:-python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-tokens.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
skipped() { echo "SKIP: $1"; skip=$((skip + 1)); }
# check "what" command...: passes when the command succeeds
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
no_temps() { [ -z "$(find "$1" -name '.*.tmp' 2> /dev/null)" ]; }

# usage_error "what" 'message' ringfeed-args...: exit 2, the message on stderr
usage_error() {
	local what=$1 msg=$2
	shift 2
	"$RF" "$@" > /dev/null 2> "$T/usage.err"
	local rc=$?
	check "$what: exit $rc, want 2" [ $rc = 2 ]
	check "$what: says '$msg': $(cat "$T/usage.err")" grep -qF -- "$msg" "$T/usage.err"
}

# plain FILE: what llm.c's reader sees, one line: magic version count
# file-size header-rest-zero max-token most-frequent-token ids-0..3-in-
# decreasing-frequency (a bool) count-of-ids-above-65535
plain() {
	"$PY" - "$1" << 'EOF'
import collections, os, struct, sys
path = sys.argv[1]
with open(path, 'rb') as f:
    header = struct.unpack('<256i', f.read(256 * 4))
    magic, version, count = header[0], header[1], header[2]
    fmt = {20240520: 'H', 20240801: 'I'}[magic]
    toks = struct.unpack('<%d%s' % (count, fmt), f.read())
c = collections.Counter(toks)
print(magic, version, count, os.path.getsize(path), int(not any(header[3:])), max(toks),
      c.most_common(1)[0][0], int(c[0] > c[1] > c[2] > c[3]), sum(t > 65535 for t in toks))
EOF
}

# zst FILE: the .bin.zst's header words and frame table, one line: magic
# version width source-magic F NF count table-ok (offsets start after the
# table, never decrease, end at the file's size) header-rest-zero
zst() {
	"$PY" - "$1" << 'EOF'
import os, struct, sys
path = sys.argv[1]
size = os.path.getsize(path)
with open(path, 'rb') as f:
    h = struct.unpack('<256I', f.read(1024))
    nf = h[5]
    off = struct.unpack('<%dQ' % (nf + 1), f.read(8 * (nf + 1)))
good = off[0] == 1024 + 8 * (nf + 1) and off[-1] == size and \
    all(a < b for a, b in zip(off, off[1:]))
print(h[0], h[1], h[2], h[3], h[4], nf, h[6] | h[7] << 32, int(good), int(not any(h[8:])))
EOF
}

# frames_are_tokens ZST BIN: the frames (after the header and the table),
# decompressed by zstd -d, are the .bin's tokens
frames_are_tokens() {
	local nf
	nf=$("$PY" -c "import struct,sys; print(struct.unpack('<256I', open(sys.argv[1],'rb').read(1024))[5])" "$1")
	cmp -s <(tail -c +$((1024 + 8 * (nf + 1) + 1)) "$1" | zstd -q -d -c) <(tail -c +1025 "$2")
}

# ---- gen --tokens -------------------------------------------------------------
"$RF" gen --tokens --out "$T/g" --shards 3 --shard-tokens 10007 > "$T/gen.out" 2> "$T/gen.err" ||
	{ echo "gen --tokens failed: $(cat "$T/gen.err")"; exit 1; }
check "gen: the summary: $(cat "$T/gen.out")" grep -q "^wrote 3 token shards of 10007 uint16 tokens (zipf, vocab 50257) to $T/g$" "$T/gen.out"
check "gen: no progress without a terminal: $(cat "$T/gen.err")" [ ! -s "$T/gen.err" ]
check "gen: 3 files, llm.c's names: $(ls -A "$T/g" | tr '\n' ' ')" \
	[ "$(ls -A "$T/g" | tr '\n' ' ')" = "tokens_000000.bin tokens_000001.bin tokens_000002.bin " ]
for i in 0 1 2; do
	read -r magic version count size zero max top _ <<< "$(plain "$T/g/tokens_00000$i.bin")"
	check "gen: shard $i: magic $magic version $version count $count" \
		[ "$magic $version $count" = "20240520 1 10007" ]
	check "gen: shard $i: $size bytes, want 1024 + 2 * 10007" [ "$size" = $((1024 + 2 * 10007)) ]
	check "gen: shard $i: header words 3..255 zero" [ "$zero" = 1 ]
	check "gen: shard $i: ids below the vocabulary (max $max)" [ "$max" -lt 50257 ]
	check "gen: shard $i: token 0 the most frequent (Zipf, id = rank), not $top" [ "$top" = 0 ]
done

"$RF" gen --tokens --llama3 --out "$T/l" --shards 2 --shard-tokens 5000 > /dev/null 2>&1
read -r magic version count size zero max _ _ big <<< "$(plain "$T/l/tokens_000001.bin")"
check "gen --llama3: magic $magic version $version count $count" [ "$magic $version $count" = "20240801 7 5000" ]
check "gen --llama3: $size bytes, want 1024 + 4 * 5000" [ "$size" = $((1024 + 4 * 5000)) ]
check "gen --llama3: header words 3..255 zero" [ "$zero" = 1 ]
check "gen --llama3: ids below 128256 (max $max), some above uint16 ($big)" \
	eval '[ "$max" -lt 128256 ] && [ "$big" -gt 0 ]'

# the same seed, the same bytes; another seed, other bytes
"$RF" gen --tokens --out "$T/g2" --shards 3 --shard-tokens 10007 --seed 0 > /dev/null 2>&1
check "gen: the same seed (0, the default) gives the same bytes" diff -r "$T/g" "$T/g2"
"$RF" gen --tokens --out "$T/g3" --shards 3 --shard-tokens 10007 --seed 1 > /dev/null 2>&1
check "gen: another seed gives other bytes" eval '! cmp -s "$T/g/tokens_000000.bin" "$T/g3/tokens_000000.bin"'

# the distribution: Zipf's head in order; uniform over a small vocabulary
"$RF" gen --tokens --out "$T/zipf" --shards 1 --shard-tokens 200000 > /dev/null 2>&1
read -r _ _ _ _ _ _ top order _ <<< "$(plain "$T/zipf/tokens_000000.bin")"
check "gen zipf: ids 0 > 1 > 2 > 3 in frequency" [ "$top $order" = "0 1" ]
"$RF" gen --tokens --out "$T/uni" --shards 1 --shard-tokens 100000 --dist uniform --vocab 100 > /dev/null 2>&1
"$PY" - "$T/uni/tokens_000000.bin" << 'EOF' && ok || bad "gen uniform --vocab 100: every id 0..99, none above, each about 1000 times"
import collections, struct, sys
data = open(sys.argv[1], 'rb').read()
c = collections.Counter(struct.unpack('<%dH' % ((len(data) - 1024) // 2), data[1024:]))
sys.exit(not (sorted(c) == list(range(100)) and max(c.values()) < 1.3 * min(c.values())))
EOF

# a token state in words: no image settings; another token_dtype on resume
# is refused as that, not as image settings
"$RF" gen --tokens --out "$T/st" --shards 2 --shard-tokens 5000 > /dev/null 2>&1
"$RF" bench --tokens --source "$T/st" --seq 64 --batch 4 --after 3 --save-state "$T/tok.state" \
	> /dev/null 2>&1
"$RF" state "$T/tok.state" > "$T/state.out" 2>&1
check "state of tokens: token rows, no resize or crop: $(cat "$T/state.out")" \
	eval 'grep -q "output: token rows" "$T/state.out" && ! grep -q "resize" "$T/state.out"'
"$RF" bench --tokens --source "$T/st" --seq 64 --batch 4 --token-dtype int32 \
	--resume "$T/tok.state" > /dev/null 2> "$T/res.err"
check "resume with another token_dtype: refused as that: $(cat "$T/res.err")" \
	grep -q "another token_dtype" "$T/res.err"
"$RF" bench --tokens --source "$T/st" --seq 64 --batch 4 --resume "$T/tok.state" \
	> /dev/null 2> "$T/res2.err"
rc=$?
check "resume with the same settings: $(cat "$T/res2.err")" [ $rc = 0 ]
rm -rf "$T/st"

# bad options: exit 2, the reason, nothing written
usage_error "gen --tokens --count" "--count makes JPEG or raw trees: not with --tokens" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 10 --count 5
usage_error "gen --tokens --raw" "--raw makes JPEG or raw trees: not with --tokens" \
	gen --tokens --raw --out "$T/x" --shards 1 --shard-tokens 10
usage_error "gen --shards without --tokens" "--shards goes with --tokens" gen --out "$T/x" --count 5 --shards 2
usage_error "gen --tokens without --shard-tokens" "--tokens needs --out DIR, --shards N and --shard-tokens M" \
	gen --tokens --out "$T/x" --shards 1
usage_error "gen --tokens --dist" "--dist: expected zipf or uniform, not 'pareto'" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 10 --dist pareto
usage_error "gen --tokens --vocab 70000" "--vocab 70000 does not fit uint16 tokens" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 10 --vocab 70000
usage_error "gen --tokens --shard-tokens 2^31" "--shard-tokens: '2147483648' is not an integer in [1, 2147483647]" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 2147483648
usage_error "gen --tokens --zipf-s 0" "--zipf-s: expected a number in (0, 100), not '0'" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 10 --zipf-s 0
usage_error "gen --tokens --zipf-s with uniform" "--zipf-s goes with --dist zipf" \
	gen --tokens --out "$T/x" --shards 1 --shard-tokens 10 --dist uniform --zipf-s 2
check "gen: no output folder after usage errors" [ ! -e "$T/x" ]
# a folder that holds token shards already is left alone
"$RF" gen --tokens --out "$T/g" --shards 1 --shard-tokens 10 --seed 5 > /dev/null 2> "$T/again.err"; rc=$?
check "gen into shards: exit 1 (rc $rc)" [ $rc = 1 ]
check "gen into shards: says so: $(cat "$T/again.err")" grep -q "already holds token shards ('tokens_00000" "$T/again.err"
check "gen into shards: the old ones untouched" diff -r "$T/g" "$T/g2"
grep -q "id 0 is the most frequent" <<< "$("$RF" gen --help)" && ok || bad "gen --help: the Zipf ids"

# ---- pack --tokens ------------------------------------------------------------
"$RF" pack --tokens "$T/g" -o "$T/gz" > "$T/pack.out" 2> "$T/pack.err"; rc=$?
check "pack --tokens: exit $rc: $(cat "$T/pack.err")" [ $rc = 0 ]
check "pack --tokens: the summary: $(cat "$T/pack.out")" \
	grep -q "^packed 3 token shards (30021 tokens) into $T/gz: .* MB -> .* MB (frames of 4096 tokens, zstd level 3, compression ratio " "$T/pack.out"
check "pack --tokens: no progress without a terminal" [ ! -s "$T/pack.err" ]
check "pack --tokens: NAME.bin -> NAME.bin.zst: $(ls -A "$T/gz" | tr '\n' ' ')" \
	[ "$(ls -A "$T/gz" | tr '\n' ' ')" = "tokens_000000.bin.zst tokens_000001.bin.zst tokens_000002.bin.zst " ]
check "pack --tokens: the header and table of token_shard.h: $(zst "$T/gz/tokens_000001.bin.zst")" \
	[ "$(zst "$T/gz/tokens_000001.bin.zst")" = "20261124 1 2 20240520 4096 3 10007 1 1" ]
"$RF" pack --tokens "$T/l" -o "$T/lz" --compress zstd:19 > "$T/pack.out" 2>&1
check "pack --tokens --compress zstd:19: $(cat "$T/pack.out")" grep -q "zstd level 19," "$T/pack.out"
check "pack --tokens of Llama-3 shards: $(zst "$T/lz/tokens_000000.bin.zst")" \
	[ "$(zst "$T/lz/tokens_000000.bin.zst")" = "20261124 1 4 20240801 4096 2 5000 1 1" ]
"$RF" pack --tokens "$T/g" -o "$T/gz2" > /dev/null 2>&1
check "pack --tokens: the same shards, the same bytes" diff -r "$T/gz" "$T/gz2"

# frames of 1, 7 and 4096 over counts that are and are not their multiples
"$RF" gen --tokens --out "$T/c8192" --shards 1 --shard-tokens 8192 > /dev/null 2>&1
"$RF" gen --tokens --out "$T/c14" --shards 1 --shard-tokens 14 > /dev/null 2>&1
have_zstd=0
command -v zstd > /dev/null && have_zstd=1
[ $have_zstd = 1 ] || skipped "the frames through zstd -d: no zstd command (tests/test_token_pack.c decompresses them)"
for F in 1 7 4096; do
	for src in c8192 c14 g; do
		out="$T/f$F-$src"
		"$RF" pack --tokens "$T/$src" -o "$out" --frame-tokens $F > /dev/null 2> "$T/pack.err" ||
			{ bad "pack --tokens $src --frame-tokens $F: $(cat "$T/pack.err")"; continue; }
		n=$(ls "$T/$src" | head -1)
		read -r _ _ _ _ f nf count good _ <<< "$(zst "$out/$n.zst")"
		check "$src, F $F: $nf frames of $f for $count tokens, want ceil($count / $F)" \
			[ "$f $nf" = "$F $(((count + F - 1) / F))" ]
		check "$src, F $F: the frame table" [ "$good" = 1 ]
		if [ $have_zstd = 1 ]; then
			check "$src, F $F: zstd -d of the frames gives the .bin's tokens" \
				frames_are_tokens "$out/$n.zst" "$T/$src/$n"
		fi
	done
done

# the source's forms: a glob, a brace pattern, a list, one file: the same bytes
"$RF" pack --tokens "$T/g/tokens_00000[12].bin" -o "$T/glob" > /dev/null 2>&1
check "a glob: its 2 shards" [ "$(ls "$T/glob" | wc -l)" = 2 ]
check "a glob: the folder's bytes" cmp -s "$T/glob/tokens_000002.bin.zst" "$T/gz/tokens_000002.bin.zst"
"$RF" pack --tokens "$T/g/tokens_{000000..000001}.bin" -o "$T/brace" > /dev/null 2>&1
check "a brace pattern: its 2 shards" [ "$(ls "$T/brace" | tr '\n' ' ')" = "tokens_000000.bin.zst tokens_000001.bin.zst " ]
check "a brace pattern: the folder's bytes" cmp -s "$T/brace/tokens_000000.bin.zst" "$T/gz/tokens_000000.bin.zst"
printf '%s\n' "$T/g/tokens_000001.bin" > "$T/list.txt"
"$RF" pack --tokens "$T/list.txt" -o "$T/list" > /dev/null 2>&1
check "a list: the folder's bytes" cmp -s "$T/list/tokens_000001.bin.zst" "$T/gz/tokens_000001.bin.zst"
"$RF" pack --tokens "$T/g/tokens_000001.bin" -o "$T/one" > /dev/null 2>&1
check "one file: the folder's bytes" cmp -s "$T/one/tokens_000001.bin.zst" "$T/gz/tokens_000001.bin.zst"
check "no temporary file left by any gen or pack" no_temps "$T"

# ---- refusals -----------------------------------------------------------------
# refused naming the file, exit 1, nothing written
refused() {
	local what=$1 src=$2 msg=$3
	"$RF" pack --tokens "$src" -o "$T/no" > /dev/null 2> "$T/refused.err"; rc=$?
	check "$what: exit $rc, want 1" [ $rc = 1 ]
	check "$what: says '$msg': $(cat "$T/refused.err")" grep -qF -- "$msg" "$T/refused.err"
	check "$what: no output folder" [ ! -e "$T/no" ]
}
refused "a .bin.zst source" "$T/gz" "shard $T/gz/tokens_000000.bin.zst is already a .bin.zst"
mkdir "$T/bad"
cp "$T/g/tokens_000000.bin" "$T/bad/"
head -c 5000 /dev/zero | tr '\0' 'x' > "$T/bad/words.bin"
refused "a file that is no token shard" "$T/bad" "shard $T/bad/words.bin: bad magic"
rm "$T/bad/words.bin"
head -c 9000 "$T/g/tokens_000001.bin" > "$T/bad/cut.bin"
refused "a shard cut short" "$T/bad" "shard $T/bad/cut.bin: truncated: the header says 10007 tokens"
# an output folder that holds source shards: refused, whatever names the
# source (its folder through a link, a glob with a wildcard in its folders)
mkdir -p "$T/gg/d1" "$T/gg/d2"
cp "$T/g/tokens_000000.bin" "$T/gg/d1/a.bin"
cp "$T/g/tokens_000001.bin" "$T/gg/d2/b.bin"
ln -s "$T/gg/d1" "$T/gg/link"
for args in "$T/gg/d1|$T/gg/link" "$T/gg/link|$T/gg/d1/" "$T/gg/d*/?.bin|$T/gg/d2"; do
	src=${args%|*} out=${args#*|}
	"$RF" pack --tokens "$src" -o "$out" > /dev/null 2> "$T/same.err"; rc=$?
	check "pack --tokens $src -o $out: exit $rc, want 1" [ $rc = 1 ]
	check "pack --tokens $src -o $out: says so: $(cat "$T/same.err")" \
		grep -q "output folder '$out' is the source's (it holds shard " "$T/same.err"
done
check "an output folder of the source's: nothing written" [ -z "$(find "$T/gg" -name '*.zst')" ]
# below the source's folder: harmless (a folder of token shards is read
# without its subfolders), so packed
"$RF" pack --tokens "$T/gg/d1" -o "$T/gg/d1/zst" > /dev/null 2> "$T/below.err"
check "an output folder below the source's: packed: $(cat "$T/below.err")" [ -s "$T/gg/d1/zst/a.bin.zst" ]
"$RF" pack --tokens "$T/g" -o "$T/gz" > /dev/null 2> "$T/again.err"; rc=$?
check "pack into .bin.zst shards: exit 1 (rc $rc)" [ $rc = 1 ]
check "pack into .bin.zst shards: says so: $(cat "$T/again.err")" grep -q "already holds token shards" "$T/again.err"
check "pack into .bin.zst shards: the old ones untouched" diff -r "$T/gz" "$T/gz2"

usage_error "pack --tokens --align" "--tokens writes .bin.zst token shards: not with" pack --tokens "$T/g" -o "$T/x" --align 4096
usage_error "pack --tokens --dict-size" "--tokens writes .bin.zst token shards: not with" pack --tokens "$T/g" -o "$T/x" --compress zstd --dict-size 4K
usage_error "pack --frame-tokens without --tokens" "--frame-tokens goes with --tokens" pack "$T/g" -o "$T/x" --frame-tokens 7
usage_error "pack --tokens --frame-tokens 0" "--frame-tokens: '0' is not an integer in [1, 4194304]" pack --tokens "$T/g" -o "$T/x" --frame-tokens 0
check "pack: no output folder after usage errors" [ ! -e "$T/x" ]
grep -q -- "--frame-tokens F" <<< "$("$RF" pack --help)" && ok || bad "pack --help: --frame-tokens"

# ---- signals ------------------------------------------------------------------
# SIGKILL once the first .bin.zst is whole: the marker the pack made before
# it stays; every reader refuses the folder, naming it, whatever names its
# shards (the folder, a list, a brace pattern, a glob, one file), and a new
# pack into it too.
if [ "${RF_TEST_HOOKS:-0}" = 1 ]; then
	"$RF" gen --tokens --out "$T/k" --shards 4 --shard-tokens 500000 > /dev/null 2>&1
	# (the test hook makes the pack wait, after its first shard, to be killed)
	RINGFEED_TEST_PACK_HANG_AFTER=1 "$RF" pack --tokens "$T/k" -o "$T/kz" > /dev/null 2>&1 &
	pid=$!
	for _ in $(seq 6000); do
		[ -e "$T/kz/tokens_000000.bin.zst" ] || ! kill -0 $pid 2> /dev/null && break
		sleep 0.01
	done
	kill -KILL $pid; wait $pid 2> /dev/null
	check "SIGKILL: the marker is left: $(ls -A "$T/kz" | tr '\n' ' ')" [ -e "$T/kz/.ringfeed-pack-incomplete" ]
	printf '%s\n' "$T/kz/tokens_000000.bin.zst" > "$T/kz.list"
	for src in "$T/kz" "$T/kz.list" "$T/kz/tokens_{000000..000000}.bin.zst" "$T/kz/*.bin.zst" \
		"$T/kz/tokens_000000.bin.zst"; do
		"$RF" bench --tokens --seq 64 --source "$src" > /dev/null 2> "$T/killed.err"; rc=$?
		check "after SIGKILL: bench --tokens --source $src: exit $rc, want 1" [ $rc = 1 ]
		check "after SIGKILL: bench --tokens --source $src: names the pack and why: $(cat "$T/killed.err")" \
			grep -q "$T/kz: an incomplete ringfeed pack (it holds .ringfeed-pack-incomplete: the pack that wrote it was interrupted" "$T/killed.err"
	done
	"$RF" pack --tokens "$T/k" -o "$T/kz" > /dev/null 2> "$T/killed.err"; rc=$?
	check "after SIGKILL: a new pack in the folder: exit $rc, want 1" [ $rc = 1 ]
	check "after SIGKILL: a new pack in the folder is refused: $(cat "$T/killed.err")" \
		grep -q "output folder '$T/kz' holds an interrupted pack (.ringfeed-pack-incomplete is there" "$T/killed.err"
	rm -rf "$T/k" "$T/kz" "$T/kz.list"
else
	skipped "SIGKILL mid-pack: needs the test hooks (-Dtest_hooks=true) to stop the pack at a known point"
fi
check "a whole pack holds no marker" [ -z "$(find "$T" -name .ringfeed-pack-incomplete)" ]

# SIGINT / SIGTERM / SIGHUP once the pack's progress line is out (on a
# terminal: script(1)): exit 128 + the signal, no file, no folder. zstd -19 over 48 MB
# takes seconds after the first line.
if command -v script > /dev/null && script -qec true /dev/null < /dev/null > /dev/null 2>&1; then
	"$RF" gen --tokens --out "$T/big" --shards 1 --shard-tokens 24000000 > /dev/null 2>&1
	for sig in INT TERM HUP; do
		rm -rf "$T/sig" "$T/tty.out" "$T/pid"
		# the shell that script(1) starts writes its pid, then becomes ringfeed
		script -qefc "echo \$\$ > '$T/pid'; exec '$RF' pack --tokens '$T/big' -o '$T/sig' --compress zstd:19" \
			/dev/null > "$T/tty.out" 2>&1 < /dev/null &
		spid=$!
		for _ in $(seq 6000); do
			grep -q "pack: [0-9]* / 24000000 tokens" "$T/tty.out" 2> /dev/null && break
			kill -0 $spid 2> /dev/null || break
			sleep 0.01
		done
		kill -$sig "$(cat "$T/pid")" 2> /dev/null
		wait $spid; rc=$?
		want=$((128 + $(kill -l $sig)))
		check "SIG$sig: exit $rc, want $want: $(tr '\r' '\n' < "$T/tty.out" | tail -3)" [ $rc = $want ]
		check "SIG$sig: says so" grep -q "stopped by SIG$sig; the shards written so far were removed" "$T/tty.out"
		check "SIG$sig: the folder it made is gone: $(ls -A "$T/sig" 2>&1)" [ ! -e "$T/sig" ]
	done
	rm -rf "$T/big"
	check "no temporary file left after the signals" no_temps "$T"
else
	skipped "SIGINT / SIGTERM once the progress line is out: no script(1), or no terminal it can open"
fi

echo "$pass passed, $fail failed, $skip skipped"
exit $((fail > 0))
