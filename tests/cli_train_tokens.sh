#!/bin/sh
# cli_train_tokens.sh - examples/train_tokens end to end, on GPT-2-style
# token shards written here in llm.c's layout (a Markov chain: each token
# picks the next among 4, so that a bigram model has something to learn):
# the first loss is ln(vocab) (all logits start at zero); N steps straight
# print the same losses and write the same checkpoint, byte for byte, as
# N/2 steps, a checkpoint and N/2 resumed from it, also with other
# --threads and on the .bin.zst of `ringfeed pack --tokens`; the loss falls;
# tokens outside --vocab, a checkpoint of another model or seed and usage
# errors fail with a message. Nothing depends on timing.
# With --cuda, examples/train_tokens_cuda instead (skipped, exit 77, without
# a device): the same exact resume on the GPU, losses within 0.01 of the
# CPU's, and a GPU checkpoint resumed on the CPU.
# Usage (meson does this): cli_train_tokens.sh PATH_TO_train_tokens PATH_TO_ringfeed
#                          cli_train_tokens.sh --cuda PATH_TO_train_tokens_cuda \
#                              PATH_TO_train_tokens PATH_TO_ringfeed
set -eu
cuda=
if [ "$1" = --cuda ]; then
	cuda=$2
	shift 2
fi
tt=$1
rf=$2
if [ -n "$cuda" ]; then
	v=$("$rf" --version)
	case $v in
	*"cuda: built in, "[0-9]*" device"*) ;;
	*) echo "SKIP: no CUDA device: $v"; exit 77 ;;
	esac
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-train-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: no python3 to write the shards"; exit 77; }

# 3 shards of 20,000 uint16 tokens below 512: header = 256 int32 (magic
# 20240520, version 1, token count), then the tokens; plain struct, as
# numpy may be missing from the python3 on PATH
mkdir "$tmp/data"
python3 - "$tmp/data" <<'EOF'
import struct, sys
s, x = 12345, 0
for i in range(3):
    toks = []
    for _ in range(20000):
        s = (s * 6364136223846793005 + 1442695040888963407) % 2**64  # an LCG
        x = (x * 5 + 1 + (s >> 33) % 4) % 512
        toks.append(x)
    header = [20240520, 1, len(toks)] + [0] * 253
    with open('%s/train_%06d.bin' % (sys.argv[1], i), 'wb') as f:
        f.write(struct.pack('<256i', *header))
        f.write(struct.pack('<%dH' % len(toks), *toks))
EOF
"$rf" pack --tokens "$tmp/data" -o "$tmp/zst" --frame-tokens 1000 >/dev/null

common="--vocab 512 --lr 30 --print-every 5 --seed 7"
# the printed losses without the timing: "step N loss L"
losses() { sed -n 's/^\(step [0-9]* loss [^ ]*\) .*/\1/p' "$1"; }

# run PROGRAM SOURCE THREADS_A THREADS_B NAME: 60 steps straight, then
# 30 + 30 resumed from a checkpoint (written at 20 and 30), the halves with
# the given --threads
run() {
	exe=$1
	shift
	"$exe" --source "$1" $common --steps 60 --threads "$2" --checkpoint "$tmp/$4.full" \
		>"$tmp/$4.full.out" || fail "$4: straight run: $?"
	"$exe" --source "$1" $common --steps 30 --threads "$2" --checkpoint "$tmp/$4.half" \
		--checkpoint-every 20 >"$tmp/$4.a.out" || fail "$4: first half: $?"
	"$exe" --source "$1" $common --steps 60 --threads "$3" --resume "$tmp/$4.half" \
		--checkpoint "$tmp/$4.resumed" >"$tmp/$4.b.out" || fail "$4: resumed half: $?"
	[ ! -e "$tmp/$4.half.tmp" ] && [ ! -e "$tmp/$4.resumed.tmp" ] || fail "$4: a .tmp was left"
	losses "$tmp/$4.full.out" >"$tmp/$4.full.loss"
	[ "$(wc -l <"$tmp/$4.full.loss")" -eq 13 ] ||
		fail "$4: 13 loss lines expected (1, 5, 10, ..., 60): $(cat "$tmp/$4.full.out")"
	(losses "$tmp/$4.a.out"; losses "$tmp/$4.b.out") | cmp -s - "$tmp/$4.full.loss" ||
		fail "$4: the losses of 30 + 30 resumed differ from 60 straight:
$( (losses "$tmp/$4.a.out"; losses "$tmp/$4.b.out") | diff - "$tmp/$4.full.loss")"
	cmp -s "$tmp/$4.resumed" "$tmp/$4.full" ||
		fail "$4: the final checkpoint of 30 + 30 resumed differs from 60 straight"
	grep -q "parameters from $tmp/$4.half; steps 31 to 60" "$tmp/$4.b.out" ||
		fail "$4: the resumed run does not say where it starts: $(head -1 "$tmp/$4.b.out")"
}
# near D1 D2: every loss of file D1 within 0.01 of D2's at the same step
near() {
	[ "$(wc -l <"$1")" -eq "$(wc -l <"$2")" ] &&
		paste -d ' ' "$1" "$2" | awk '$2 != $6 { exit 1 }
			{ d = $4 - $8; if (d < 0) d = -d; if (d > 0.01) exit 1 }'
}

if [ -n "$cuda" ]; then
	run "$cuda" "$tmp/data" 1 2 gpu
	run "$tt" "$tmp/data" 1 2 bin
	near "$tmp/gpu.full.loss" "$tmp/bin.full.loss" ||
		fail "GPU and CPU losses differ by more than 0.01:
$(paste "$tmp/gpu.full.loss" "$tmp/bin.full.loss")"
	# one checkpoint format: the GPU's step 30 continues on the CPU
	"$tt" --source "$tmp/data" $common --steps 60 --resume "$tmp/gpu.half" >"$tmp/cross.out" ||
		fail "the CPU did not resume the GPU's checkpoint: $?"
	losses "$tmp/cross.out" >"$tmp/cross.loss"
	tail -n 6 "$tmp/gpu.full.loss" >"$tmp/gpu.tail.loss"
	near "$tmp/cross.loss" "$tmp/gpu.tail.loss" ||
		fail "the GPU's checkpoint resumed on the CPU trained otherwise:
$(paste "$tmp/cross.loss" "$tmp/gpu.tail.loss")"
	echo "cli_train_tokens --cuda: ok"
	exit 0
fi

run "$tt" "$tmp/data" 1 2 bin
run "$tt" "$tmp/zst" 1 3 zst
# the .bin.zst are the same tokens: the same run
cmp -s "$tmp/zst.full.loss" "$tmp/bin.full.loss" || fail ".bin.zst and .bin trained differently"

# all logits start at zero: the first loss is ln(512); training lowers it
head -1 "$tmp/bin.full.loss" | grep -qx "step 1 loss 6.238325" ||
	fail "first loss: $(head -1 "$tmp/bin.full.loss"), expected ln(512) = 6.238325"
awk 'NR == 1 { first = $4 } END { exit !($4 < first - 2) }' "$tmp/bin.full.loss" ||
	fail "the loss did not fall by 2 in 60 steps: $(cat "$tmp/bin.full.loss")"

# a run is a function of its options: again, the same bytes
"$tt" --source "$tmp/data" $common --steps 60 --checkpoint "$tmp/again" >/dev/null
cmp -s "$tmp/again" "$tmp/bin.full" || fail "the same run wrote another checkpoint"
# a checkpoint at or past --steps: nothing to train, not an error
"$tt" --source "$tmp/data" $common --steps 30 --resume "$tmp/bin.half" >"$tmp/done.out" ||
	fail "resuming a finished run: $?"
grep -q "is at step 30: --steps 30 are done" "$tmp/done.out" || fail "finished: $(cat "$tmp/done.out")"

# refusals, each with its message and status
expect() { # STATUS WHAT_THE_MESSAGE_HOLDS ARGS...
	want=$1 msg=$2
	shift 2
	set +e
	"$tt" "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] || fail "$*: status $got, expected $want ($(cat "$tmp/err"))"
	grep -q -- "$msg" "$tmp/err" || fail "$*: no '$msg' in: $(cat "$tmp/err")"
}
expect 1 "token 5[0-9][0-9] (window [0-9]*, token [0-9]* of batch 0) is outside the vocabulary: --vocab 500" \
	--source "$tmp/data" --vocab 500 --steps 1
expect 1 "a model of vocab 512, dim 8; these options ask for --vocab 512 --dim 4" \
	--source "$tmp/data" $common --dim 4 --resume "$tmp/bin.half"
expect 1 "seed" --source "$tmp/data" --vocab 512 --seed 8 --resume "$tmp/bin.half"
expect 1 "not a checkpoint" --source "$tmp/data" --vocab 512 --resume "$tmp/data/train_000000.bin"
head -c 1000 "$tmp/bin.half" >"$tmp/short"
expect 1 "truncated" --source "$tmp/data" $common --resume "$tmp/short"
expect 1 "No such file" --source "$tmp/data" --resume "$tmp/missing"
expect 1 "train_tokens: " --source "$tmp/nothing" --steps 1
expect 1 "diverged" --source "$tmp/data" --vocab 512 --lr 1e30 --steps 5
expect 2 "--source is required" --steps 1
expect 2 "--seq 0: expected an integer from 1" --source "$tmp/data" --seq 0
expect 2 "--lr -1: expected a positive number" --source "$tmp/data" --lr -1
expect 2 "--checkpoint-every needs --checkpoint" --source "$tmp/data" --checkpoint-every 5
expect 2 "unexpected argument" --source "$tmp/data" extra
case "$("$tt" --help)" in *"--resume FILE"*) ;; *) fail "--help: no --resume" ;; esac
echo "cli_train_tokens: ok"
