#!/usr/bin/env bash
# cli_pack.sh - `ringfeed pack`: the shards it writes read back as their
# source, with GNU tar (list, extract, cmp; zstd -d for compressed members)
# and Python's tarfile (tests/pack_check.py: names in id order, bytes, labels,
# --align offsets, shard sizes), and webdataset when it is installed; shards
# rotate at --shard-size; the same source packs to the same bytes; no
# temporary file is left; failures (an unreadable file, an output folder that
# cannot be written, a full disk, a signal, a member past the 4096 distinct
# extensions an index keeps) name their cause, exit non-zero and remove what
# was written.
# usage: cli_pack.sh RINGFEED
set -uo pipefail
RF=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
T=$(mktemp -d "${TMPDIR:-/tmp}/rf-pack.XXXXXX")
trap 'chmod -R u+rwx "$T" 2>/dev/null; rm -rf "$T"' EXIT
pass=0 fail=0 skip=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL: $1"; fail=$((fail + 1)); }
skipped() { echo "SKIP: $1"; skip=$((skip + 1)); }
# check "what" command...: passes when the command succeeds
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
# no temporary shard, dictionary or index anywhere below $1
no_temps() { [ -z "$(find "$1" -name '.*.tmp' 2>/dev/null)" ]; }

"$RF" gen --out "$T/jpg" --count 200 --classes 4 --threads 2 > /dev/null || { echo "gen failed"; exit 1; }
"$RF" gen --raw --out "$T/raw" --count 60 --classes 3 --min-size 0 --max-size 20000 > /dev/null
head -c 777 /dev/urandom > "$T/raw/beside-the-classes.bin" # raw mode: label -1, no .cls

have_wds=0
if "$PY" -c "import webdataset" 2> /dev/null; then have_wds=1; fi
have_zstd=0
command -v zstd > /dev/null && have_zstd=1

# pack SOURCE OUT [options]: runs the pack, fails the test with its stderr
pack() {
	local src=$1 out=$2
	shift 2
	"$RF" pack "$src" -o "$out" "$@" > "$T/pack.out" 2> "$T/pack.err" ||
		{ bad "pack $src -o $out $*: $(cat "$T/pack.err")"; return 1; }
	ok
}
# pycheck OUT SOURCE [options]: reads it back with tarfile
pycheck() {
	local what="pack_check $*"
	"$PY" "$HERE/pack_check.py" "$@" > "$T/check.out" 2>&1 && ok || bad "$what: $(cat "$T/check.out")"
}

# ---- the layouts, read back by Python's tarfile (and webdataset) ----------
pack "$T/jpg" "$T/plain" && pycheck "$T/plain" "$T/jpg"
grep -q "^packed 200 samples into 1 shard in $T/plain: .* MB -> .* MB, .* s (" "$T/pack.out" && ok ||
	bad "summary line: $(cat "$T/pack.out")"
pack "$T/jpg" "$T/align" --align 4096 && pycheck "$T/align" "$T/jpg" --align 4096
pack "$T/jpg" "$T/align64k" --align 64K --shard-size 1M &&
	pycheck "$T/align64k" "$T/jpg" --align 65536 --shard-size 1048576
pack "$T/raw" "$T/rawpack" --raw --align 512 && pycheck "$T/rawpack" "$T/raw" --raw
if [ $have_wds = 1 ]; then
	pycheck "$T/align" "$T/jpg" --align 4096 --webdataset
	pycheck "$T/plain" "$T/jpg" --webdataset
else
	skipped "webdataset: not importable by $PY (pip install webdataset)"
fi

# a manifest: its labels, absolute and relative paths, in its line order
{
	printf '%s\t7\n' "$T/jpg/class_002/img_00000006.jpg"
	printf 'jpg/class_000/img_00000000.jpg\t0\n'
	printf '# a comment\n'
	printf '%s\t12\n' "$T/jpg/class_001/img_00000001.jpg"
} > "$T/list.tsv"
pack "$T/list.tsv" "$T/manifest" && pycheck "$T/manifest" "$T/list.tsv"

# --include-hidden takes a hidden file the default skips
cp "$T/jpg/class_000/img_00000000.jpg" "$T/jpg/class_003/.hidden.jpg"
pack "$T/jpg" "$T/hidden" --include-hidden && pycheck "$T/hidden" "$T/jpg" --hidden
check "--include-hidden: 201 samples" grep -q "^packed 201 samples" "$T/pack.out"
pack "$T/jpg" "$T/nohidden" && check "hidden file skipped by default" cmp -s "$T/plain/shard-000000.tar" "$T/nohidden/shard-000000.tar"
rm "$T/jpg/class_003/.hidden.jpg"

# ---- GNU tar lists and extracts the same files, with and without --align ---
tar -tvf "$T/plain/shard-000000.tar" > "$T/plain.tv" 2>&1 && ok || bad "tar -tvf plain"
tar -tvf "$T/align/shard-000000.tar" > "$T/align.tv" 2>&1 && ok || bad "tar -tvf aligned"
check "tar -tvf: aligned and plain list the same members" cmp -s "$T/plain.tv" "$T/align.tv"
check "tar -tvf: no PaxHeaders member listed" eval '! grep -q PaxHeaders "$T/align.tv"'
mkdir "$T/x1" "$T/x2"
tar -xf "$T/plain/shard-000000.tar" -C "$T/x1" 2> "$T/x.err" && tar -xf "$T/align/shard-000000.tar" -C "$T/x2" 2>> "$T/x.err" &&
	[ ! -s "$T/x.err" ] && ok || bad "tar -xf: $(cat "$T/x.err")"
check "tar -xf: aligned and plain extract the same files" diff -r "$T/x1" "$T/x2"
check "tar -xf: 400 files" [ "$(ls "$T/x2" | wc -l)" = 400 ]
# sample 5 is class_000's sixth file (image 20: image i is in class i % 4)
check "tar -xf: 000000005.jpg is class_000/img_00000020.jpg" cmp -s "$T/x2/000000005.jpg" "$T/jpg/class_000/img_00000020.jpg"
check "tar -xf: 000000005.cls is 0" [ "$(cat "$T/x2/000000005.cls")" = 0 ]
check "tar -xf: 000000199.jpg is class_003/img_00000199.jpg" cmp -s "$T/x2/000000199.jpg" "$T/jpg/class_003/img_00000199.jpg"
check "tar -xf: 000000199.cls is 3" [ "$(cat "$T/x2/000000199.cls")" = 3 ]

# ---- zstd, with and without a dictionary ------------------------------------
if [ $have_zstd = 1 ]; then
	pack "$T/jpg" "$T/z" --compress zstd && pycheck "$T/z" "$T/jpg" --zstd
	grep -q "(zstd level 3, compression ratio" "$T/pack.out" && ok || bad "zstd summary: $(cat "$T/pack.out")"
	pack "$T/jpg" "$T/zd" --compress zstd:5 --dict-size 32K --align 4096 &&
		pycheck "$T/zd" "$T/jpg" --zstd --align 4096
	grep -q "32.0 KiB dictionary from 200 samples" "$T/pack.out" && ok || bad "dictionary summary: $(cat "$T/pack.out")"
	check "zstd.dict written" [ -s "$T/zd/zstd.dict" ]
	pack "$T/raw" "$T/rawz" --raw --compress zstd:-3 && pycheck "$T/rawz" "$T/raw" --raw --zstd
	# the GNU tar route: extract, zstd -d -D DICT, cmp
	mkdir "$T/xz"
	tar -xf "$T/zd/shard-000000.tar" -C "$T/xz" &&
		zstd -q -d -D "$T/zd/zstd.dict" "$T/xz/000000005.jpg.zst" "$T/xz/000000150.jpg.zst" && ok || bad "tar -xf + zstd -d -D"
	check "zstd -d: 000000005.jpg is its source" cmp -s "$T/xz/000000005.jpg" "$T/jpg/class_000/img_00000020.jpg"
	check "zstd -d: 000000150.jpg is its source" cmp -s "$T/xz/000000150.jpg" "$T/jpg/class_003/img_00000003.jpg"
	check "zstd -l: content size in the frame" eval 'zstd -lv "$T/xz/000000150.jpg.zst" 2>&1 | grep -q "Decompressed Size"'
	zstd -q -d "$T/xz/000000006.jpg.zst" -o "$T/xz/nodict.jpg" 2> /dev/null &&
		bad "a dictionary frame decompressed without its dictionary" || ok
	# too few samples for the dictionary: a clear failure, nothing left
	mkdir -p "$T/few/c"
	cp "$T/jpg/class_000/img_00000000.jpg" "$T/jpg/class_000/img_00000004.jpg" "$T/few/c/"
	"$RF" pack "$T/few" -o "$T/fewpack" --compress zstd --dict-size 112K > /dev/null 2> "$T/few.err" &&
		bad "dictionary trained on 2 samples" ||
		{ grep -q "dictionary training failed on 2 non-empty samples (.*): Src size is incorrect; too few files to train on (zstd needs 7 at least, .*): a smaller --dict-size does not help; pack without --dict-size" "$T/few.err" && ok || bad "few samples: $(cat "$T/few.err")"; }
	check "failed dictionary: no output folder left" [ ! -e "$T/fewpack" ]
else
	skipped "zstd members: no zstd command to check them with"
fi

# ---- shards ------------------------------------------------------------------
pack "$T/jpg" "$T/rot" --shard-size 1M --align 4096 && pycheck "$T/rot" "$T/jpg" --align 4096 --shard-size 1048576
n=$(ls "$T/rot" | grep -c '^shard-[0-9]\{6\}\.tar$')
check "--shard-size 1M: $n shards for 12 MB" [ "$n" -ge 12 ]
grep -q "into $n shards" "$T/pack.out" && ok || bad "summary shard count: $(cat "$T/pack.out")"
# samples larger than the shard size: one shard each
pack "$T/jpg" "$T/tiny" --shard-size 8K && pycheck "$T/tiny" "$T/jpg" --shard-size 8192
check "--shard-size 8K: 200 shards" [ "$(ls "$T/tiny" | grep -c '\.tar$')" = 200 ]
check "--shard-size 8K: the index object beside them, and nothing else" \
	[ "$(ls "$T/tiny" | grep -vc '\.tar$')" = 1 ] && [ -s "$T/tiny/ringfeed.index" ]
# the default: one shard (12 MB < 256M), already checked above; bad sizes refused
"$RF" pack "$T/jpg" -o "$T/bad" --shard-size 12Q > /dev/null 2>&1; check "--shard-size 12Q refused" [ $? = 2 ]
"$RF" pack "$T/jpg" -o "$T/bad" --align 3000 > /dev/null 2>&1; check "--align 3000 refused" [ $? = 2 ]
"$RF" pack "$T/jpg" -o "$T/bad" --compress lz4 > /dev/null 2>&1; check "--compress lz4 refused" [ $? = 2 ]
"$RF" pack "$T/jpg" -o "$T/bad" --dict-size 1K > /dev/null 2>&1; check "--dict-size without --compress refused" [ $? = 2 ]
# below zstd's least dictionary (256 bytes): refused with the range, not
# sent to the trainer (which said "Destination buffer is too small" and the
# pack then asked for a smaller size)
for size in 1 255; do
	"$RF" pack "$T/jpg" -o "$T/bad" --compress zstd --dict-size $size > /dev/null 2> "$T/dict.err"; rc=$?
	check "--dict-size $size: exit $rc, want 2" [ $rc = 2 ]
	check "--dict-size $size: says the range: $(cat "$T/dict.err")" \
		grep -q "^ringfeed pack: --dict-size $size: a zstd dictionary is 256 bytes to 16M; 16K to 112K suit most sources" "$T/dict.err"
done
check "--dict-size 1: nothing written" [ ! -e "$T/bad" ]

# ---- reproducible, and nothing temporary left ---------------------------------
pack "$T/jpg" "$T/rot2" --shard-size 1M --align 4096
check "two packs of one source: same shards" diff -r "$T/rot" "$T/rot2"
if [ $have_zstd = 1 ]; then
	pack "$T/jpg" "$T/zd2" --compress zstd:5 --dict-size 32K --align 4096
	check "two packs with a dictionary: same shards and dictionary" diff -r "$T/zd" "$T/zd2"
fi
check "no temporary file left by any pack" no_temps "$T"

# ---- failures -------------------------------------------------------------------
# an output folder that already holds a pack is left alone
cp "$T/plain/shard-000000.tar" "$T/keep.tar"
"$RF" pack "$T/jpg" -o "$T/plain" > /dev/null 2> "$T/again.err"; rc=$?
check "pack into a pack: exit 1" [ $rc = 1 ]
check "pack into a pack: says so" grep -q "already holds a pack ('shard-000000.tar')" "$T/again.err"
check "pack into a pack: the old one is untouched" cmp -s "$T/keep.tar" "$T/plain/shard-000000.tar"

# an output folder that is the source tree or lies inside it: refused before
# anything is written (the shards would mix with the tree, and the next read
# of the tree would find them instead); the source through a link too
ln -s "$T/raw" "$T/rawlink"
for out in "$T/raw" "$T/raw/" "$T/raw/packed" "$T/raw/class_000/packed" "$T/rawlink/packed"; do
	"$RF" pack "$T/rawlink" -o "$out" --raw > /dev/null 2> "$T/in.err"; rc=$?
	check "-o $out inside the source: exit 1 (rc $rc)" [ $rc = 1 ]
	check "-o $out inside the source: says so: $(cat "$T/in.err")" \
		grep -q "output folder '$out' is .*the source '$T/rawlink': the shards would mix" "$T/in.err"
done
check "-o inside the source: nothing written in it" [ -z "$(find "$T/raw" -name '*.tar' -o -name packed)" ]
# the source inside the output folder: harmless (walked before anything is
# written; a folder holding shards is read as its shards), so packed
mkdir "$T/outer" && cp -r "$T/raw" "$T/outer/raw"
pack "$T/outer/raw" "$T/outer" --raw && pycheck "$T/outer" "$T/outer/raw" --raw

# an unreadable source file fails the pack with its path; nothing is left
cp -r "$T/jpg" "$T/broken"
ln -s "$T/nowhere.jpg" "$T/broken/class_002/img_00000002b.jpg" # a dangling link
"$RF" pack "$T/broken" -o "$T/brokenpack" > /dev/null 2> "$T/broken.err"; rc=$?
check "dangling link: exit 1" [ $rc = 1 ]
check "dangling link: path and reason: $(cat "$T/broken.err")" \
	grep -q "'$T/broken/class_002/img_00000002b.jpg': No such file or directory" "$T/broken.err"
check "dangling link: no output folder left" [ ! -e "$T/brokenpack" ]
rm "$T/broken/class_002/img_00000002b.jpg"
mkfifo "$T/broken/fifo.jpg"
printf '%s\t0\n%s\t1\n' "$T/jpg/class_000/img_00000000.jpg" "$T/broken/fifo.jpg" > "$T/fifo.tsv"
timeout 20 "$RF" pack "$T/fifo.tsv" -o "$T/fifopack" > /dev/null 2> "$T/fifo.err"; rc=$?
check "a FIFO in a manifest: exit 1, no hang (rc $rc)" [ $rc = 1 ]
check "a FIFO in a manifest: says so" grep -q "fifo.jpg': a FIFO, not a regular file" "$T/fifo.err"
if [ "$(id -u)" != 0 ]; then
	chmod 000 "$T/broken/class_001/img_00000001.jpg"
	"$RF" pack "$T/broken" -o "$T/brokenpack" > /dev/null 2> "$T/broken.err"
	check "unreadable file: path and reason" grep -q "img_00000001.jpg': Permission denied" "$T/broken.err"
	chmod 644 "$T/broken/class_001/img_00000001.jpg"
else
	skipped "a file without read permission: root reads it anyway (the dangling link stands in)"
fi

# output folders that cannot be made or written
"$RF" pack "$T/jpg" -o "$T/missing/parent" > /dev/null 2> "$T/o.err"; rc=$?
check "-o in a missing folder: exit 1 and why" eval '[ $rc = 1 ] && grep -q "cannot create it: No such file or directory" "$T/o.err"'
"$RF" pack "$T/jpg" -o "$T/keep.tar/out" > /dev/null 2> "$T/o.err"; rc=$?
check "-o below a file: exit 1 and why" eval '[ $rc = 1 ] && grep -q "Not a directory" "$T/o.err"'
if [ "$(id -u)" != 0 ]; then
	mkdir "$T/ro" && chmod 555 "$T/ro"
	"$RF" pack "$T/jpg" -o "$T/ro/out" > /dev/null 2> "$T/o.err"; rc=$?
	check "-o in a read-only folder: exit 1 and why" eval '[ $rc = 1 ] && grep -q "Permission denied" "$T/o.err"'
else
	skipped "-o in a folder without write permission: root writes anyway (the read-only mount stands in)"
fi

# a full disk and a read-only file system: a small tmpfs of our own (a user
# and mount namespace: no root needed where the kernel allows them)
if unshare -rm true 2> /dev/null; then
	mkdir "$T/mnt"
	unshare -rm sh -c 'mount -t tmpfs -o size=2m tmpfs "$1" && "$2" pack "$3" -o "$1/out"; rc=$?; ls -A "$1"; exit $rc' \
		sh "$T/mnt" "$RF" "$T/jpg" > "$T/full.ls" 2> "$T/full.err"; rc=$?
	check "full disk: exit 1 (rc $rc)" [ $rc = 1 ]
	check "full disk: says so: $(cat "$T/full.err")" grep -q "No space left on device (the output disk is full)" "$T/full.err"
	check "full disk: the folder it made is gone: $(cat "$T/full.ls")" [ ! -s "$T/full.ls" ]
	unshare -rm sh -c 'mount -t tmpfs -o size=2m tmpfs "$1" && mkdir "$1/out" && : > "$1/out/other" &&
		"$2" pack "$3" -o "$1/out" --shard-size 1M; rc=$?; ls -A "$1/out"; exit $rc' \
		sh "$T/mnt" "$RF" "$T/jpg" > "$T/full.ls" 2> "$T/full.err"; rc=$?
	check "full disk after whole shards: exit 1" [ $rc = 1 ]
	check "full disk: every shard removed, other files kept: $(cat "$T/full.ls")" [ "$(cat "$T/full.ls")" = other ]
	unshare -rm sh -c 'mount -t tmpfs -o ro,size=1m tmpfs "$1" && exec "$2" pack "$3" -o "$1/out"' \
		sh "$T/mnt" "$RF" "$T/jpg" > /dev/null 2> "$T/ro.err"; rc=$?
	check "read-only file system: exit 1 and why: $(cat "$T/ro.err")" \
		eval '[ $rc = 1 ] && grep -q "Read-only file system" "$T/ro.err"'
else
	skipped "full disk, read-only file system: no user namespaces here (unshare -rm)"
fi

# ---- signals ----------------------------------------------------------------------
# SIGINT / SIGTERM / SIGHUP while writing: exit 128 + signal, nothing
# written left. zstd -19 over 1M shards is slow enough to catch with shards
# already renamed.
for sig in INT TERM HUP; do
	rm -rf "$T/sig"
	"$RF" pack "$T/jpg" -o "$T/sig" --shard-size 1M --compress zstd:19 > /dev/null 2> "$T/sig.err" &
	pid=$!
	for _ in $(seq 2000); do
		[ -e "$T/sig/shard-000001.tar" ] || ! kill -0 $pid 2> /dev/null && break
		sleep 0.01
	done
	kill -$sig $pid 2> /dev/null
	wait $pid; rc=$?
	want=$((128 + $(kill -l $sig)))
	check "SIG$sig: exit $rc, want $want: $(cat "$T/sig.err")" [ $rc = $want ]
	check "SIG$sig: says so" grep -q "stopped by SIG$sig; the shards written so far were removed" "$T/sig.err"
	check "SIG$sig: the folder it made is gone" [ ! -e "$T/sig" ]
done
# SIGKILL (or the OOM killer, a crash): nothing can clean up, but no shard is
# cut short under its name, and the marker the pack made before its first
# shard stays: every reader refuses the folder, naming it, whatever names its
# shards (the folder, a list, a brace pattern), and a new pack into it too
if [ "${RF_TEST_HOOKS:-0}" = 1 ]; then
	rm -rf "$T/sig"
	# (the test hook makes the pack wait, after its second shard, to be killed)
	RINGFEED_TEST_PACK_HANG_AFTER=2 "$RF" pack "$T/jpg" -o "$T/sig" --shard-size 1M \
		> /dev/null 2>&1 &
	pid=$!
	for _ in $(seq 6000); do
		[ -e "$T/sig/shard-000001.tar" ] || ! kill -0 $pid 2> /dev/null && break
		sleep 0.01
	done
	kill -KILL $pid; wait $pid 2> /dev/null
	for s in "$T"/sig/shard-*.tar; do
		check "SIGKILL: $s whole" eval 'tar -tf "$s" > /dev/null 2>&1'
	done
	check "SIGKILL: the marker is left: $(ls -A "$T/sig" | tr '\n' ' ')" [ -e "$T/sig/.ringfeed-pack-incomplete" ]
	printf '%s\n' "$T/sig/shard-000001.tar" "$T/sig/shard-000000.tar" > "$T/sig.list"
	for src in "$T/sig" "$T/sig.list" "$T/sig/shard-{000000..000001}.tar" "$T/sig/shard-00000[01].tar"; do
		"$RF" bench --source "$src" --batch 8 --threads 1 > /dev/null 2> "$T/killed.err"; rc=$?
		check "after SIGKILL: bench --source $src: exit $rc, want 1" [ $rc = 1 ]
		check "after SIGKILL: bench --source $src: names the pack and why: $(cat "$T/killed.err")" \
			grep -q "$T/sig: an incomplete ringfeed pack (it holds .ringfeed-pack-incomplete: the pack that wrote it was interrupted" "$T/killed.err"
	done
	"$RF" index "$T/sig" -o "$T/sig.idx" > /dev/null 2> "$T/killed.err"
	check "after SIGKILL: ringfeed index refuses it: $(cat "$T/killed.err")" grep -q "incomplete ringfeed pack" "$T/killed.err"
	"$RF" pack "$T/sig" -o "$T/sigagain" > /dev/null 2> "$T/killed.err"
	check "after SIGKILL: packing it refuses it: $(cat "$T/killed.err")" grep -q "$T/sig: an incomplete ringfeed pack" "$T/killed.err"
	"$RF" pack "$T/jpg" -o "$T/sig" > /dev/null 2> "$T/sig.err"; rc=$?
	check "after SIGKILL: a new pack in the folder: exit $rc, want 1" [ $rc = 1 ]
	check "after SIGKILL: a new pack in the folder is refused: $(cat "$T/sig.err")" \
		grep -q "output folder '$T/sig' holds an interrupted pack (.ringfeed-pack-incomplete is there" "$T/sig.err"
else
	skipped "SIGKILL mid-pack: needs the test hooks (-Dtest_hooks=true) to stop the pack at a known point"
fi
check "a whole pack holds no marker" [ -z "$(find "$T" -path "$T/sig" -prune -o -name .ringfeed-pack-incomplete -print)" ]

# ---- progress on a terminal only -------------------------------------------------
pack "$T/jpg" "$T/quiet"
check "no progress without a terminal" [ ! -s "$T/pack.err" ]
if command -v script > /dev/null; then
	script -qc "$RF pack $T/jpg -o $T/tty --shard-size 4M" /dev/null | tr '\r' '\n' > "$T/tty.out"
	check "progress on a terminal: $(tail -c 300 "$T/tty.out")" grep -q "^pack: 200 / 200 samples, .* MB -> .* MB, [0-9]* shards, " "$T/tty.out"
else
	skipped "progress on a terminal: no script(1)"
fi
# ---- a damaged pack: nothing lost in silence ---------------------------------
# one header byte flipped: the rest is delivered, and bench says what was
# lost, one line a kind, with no log level asked for; --json counts it
cp -r "$T/plain" "$T/damaged"
"$PY" - "$T/damaged/shard-000000.tar" << 'EOF'
import sys, tarfile
p = sys.argv[1]
with tarfile.open(p) as t:
    at = t.getmembers()[20].offset
with open(p, "r+b") as f:
    f.seek(at + 5); c = f.read(1); f.seek(at + 5); f.write(bytes([c[0] ^ 1]))
EOF
"$RF" bench --source "$T/damaged" --batch 50 --resize 48 --crop 40 --threads 1 --no-shuffle \
	> "$T/damaged.out" 2> "$T/damaged.err"; rc=$?
check "damaged pack: exit $rc, want 0 (skip mode)" [ $rc = 0 ]
check "damaged pack: a lost: line for the span: $(cat "$T/damaged.err")" \
	grep -q "^ringfeed bench: lost: damaged or cut spans of shards (the samples in them): 1, each replaced; the first: $T/damaged/shard-000000.tar:bytes " "$T/damaged.err"
check "damaged pack: a lost: line for the sample left without its image: $(cat "$T/damaged.err")" \
	grep -q "^ringfeed bench: lost: samples corrupt or unusable: 1, each replaced; the first: $T/damaged/shard-000000.tar:.*: no image member" "$T/damaged.err"
check "damaged pack: every sample after the damage delivered: $(head -1 "$T/damaged.out")" \
	grep -q "^ringfeed bench: 201 samples in 5 batches" "$T/damaged.out"
"$RF" bench --source "$T/damaged" --batch 50 --resize 48 --crop 40 --threads 1 --json \
	> "$T/damaged.json" 2> /dev/null
check "damaged pack: --json counts the span: $(cat "$T/damaged.json")" \
	grep -q '"bad_samples":2,"replaced":2,"lost_spans":1,"lost_bytes":[1-9]' "$T/damaged.json"
"$RF" bench --source "$T/damaged" --batch 50 --resize 48 --crop 40 --threads 1 --on-error fail \
	> /dev/null 2> "$T/damaged.err"; rc=$?
check "damaged pack: --on-error fail: exit $rc, want 1: $(cat "$T/damaged.err")" [ $rc = 1 ]
rm -rf "$T/damaged"

# ---- every other member is kept, however many a sample has ---------------
# 3 images with 20 files each beside them (KEY.m00 .. KEY.m19): the shard
# holds all 60, each with its bytes
mkdir -p "$T/many/c"
for k in 0 1 2; do
	cp "$T/jpg/class_000/img_0000000$((k * 4)).jpg" "$T/many/c/s$k.jpg"
	for m in $(seq -w 0 19); do printf 'sample %s member m%s' "$k" "$m" > "$T/many/c/s$k.m$m"; done
done
if pack "$T/many" "$T/manypack"; then
	n=$(tar -tf "$T/manypack/shard-000000.tar" | grep -c '\.m[0-9][0-9]$')
	check "pack keeps all 60 other members of 3 samples with 20 each, not $n" [ "$n" = 60 ]
	mkdir -p "$T/manyx" && tar -xf "$T/manypack/shard-000000.tar" -C "$T/manyx"
	check "the 20th member of the last sample keeps its bytes" \
		cmp -s "$T/manyx/000000002.m19" "$T/many/c/s2.m19"
fi
# an extension too long for a tar name is refused, naming it, never cut
long=$(printf 'x%.0s' $(seq 1 120))
printf 'long' > "$T/many/c/s0.$long"
"$RF" pack "$T/many" -o "$T/longpack" > /dev/null 2> "$T/long.err"; rc=$?
check "pack refuses a member name past 100 bytes: exit $rc: $(cat "$T/long.err")" [ $rc != 0 ]
check "... and names the extension and the limit: $(cat "$T/long.err")" \
	grep -q "extension '$long'.*100" "$T/long.err"
rm -rf "$T/many" "$T/manypack" "$T/manyx" "$T/longpack"
# more distinct extensions than an index keeps (4096): refused, naming a
# member it would lose and the limit, never packed without them
mkdir -p "$T/wide/c"
cp "$T/jpg/class_000/img_00000000.jpg" "$T/wide/c/s0.jpg"
(cd "$T/wide/c" && for m in $(seq -w 0 4096); do printf m > "s0.e$m"; done)
"$RF" pack "$T/wide" -o "$T/widepack" > /dev/null 2> "$T/wide.err"; rc=$?
check "pack refuses a sample past 4096 distinct extensions: exit $rc: $(tail -1 "$T/wide.err")" \
	[ $rc = 1 ]
check "... naming the member and the limit: $(tail -1 "$T/wide.err")" \
	grep -q "^ringfeed pack: .*member c/s0\.e[0-9]*: its extension comes after the 4096 distinct ones" "$T/wide.err"
check "... and leaving nothing" [ ! -e "$T/widepack/shard-000000.tar" ]
rm -rf "$T/wide" "$T/widepack"

grep -q "zstd -d -D DIR/zstd.dict" <<< "$("$RF" pack --help)" && ok || bad "pack --help"
grep -q "^  pack " <<< "$("$RF" --help)" && ok || bad "ringfeed --help lists pack"

echo "$pass passed, $fail failed, $skip skipped"
exit $((fail > 0))
