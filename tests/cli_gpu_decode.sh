#!/bin/sh
# cli_gpu_decode.sh - GPU JPEG decode from the command line where there is
# no nvJPEG: libringfeed does not link libnvjpeg (it is loaded at run time),
# so the library loads and runs with nothing of nvJPEG on the search path;
# `bench --decode auto` then decodes on the CPU and says so once; `--decode
# gpu` without a device, or without the engines, fails naming the setting.
# Skips (77) where libnvjpeg.so.13 can be found: that machine tests the
# engines themselves (tests/test_gpu_decode.c).
# Usage (meson does this): cli_gpu_decode.sh PATH_TO_ringfeed PATH_TO_libringfeed.so
set -eu
rf=$1
lib=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-cli-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); }

if readelf -d "$lib" | grep -q "libnvjpeg"; then
	fail "libringfeed lists libnvjpeg as NEEDED: $(readelf -d "$lib" | grep nvjpeg)"
fi
ok
findable() { # libnvjpeg.so.13 where the dynamic loader would look
	/sbin/ldconfig -p 2>/dev/null | grep -q "libnvjpeg.so.13" && return 0
	for d in $(echo "${LD_LIBRARY_PATH:-}" | tr : ' '); do
		[ -e "$d/libnvjpeg.so.13" ] && return 0
	done
	return 1
}
if findable; then
	echo "cli_gpu_decode: libnvjpeg.so.13 is on this machine's search path; the absent case is not what happens here"
	exit 77
fi

"$rf" gen --out "$tmp/data" --count 24 --classes 2 --threads 2 >/dev/null
common="--source $tmp/data --batch 8 --resize 64 --crop 56 --epochs 1 --threads 2"
"$rf" bench $common --ids "$tmp/cpu.ids" >/dev/null
"$rf" bench $common --decode auto --ids "$tmp/auto.ids" >/dev/null 2>"$tmp/auto.err" ||
	fail "--decode auto without nvJPEG: $(cat "$tmp/auto.err")"
[ "$(grep -c "decoding on the CPU" "$tmp/auto.err")" -eq 1 ] || fail "auto says so once: $(cat "$tmp/auto.err")"
cmp -s "$tmp/cpu.ids" "$tmp/auto.ids" || fail "auto on the CPU delivers the CPU's batches"
ok
"$rf" bench $common --decode auto --verbose >/dev/null 2>"$tmp/why.err"
grep -q "decode = auto" "$tmp/why.err" || fail "--verbose says why: $(cat "$tmp/why.err")"
ok

set +e
"$rf" bench $common --decode gpu >/dev/null 2>"$tmp/gpu.err"
[ $? -eq 1 ] || fail "--decode gpu without a device must fail"
grep -q "decode = gpu" "$tmp/gpu.err" || fail "the message names the setting: $(cat "$tmp/gpu.err")"
ok
"$rf" bench $common --decode gpu --device 0 >/dev/null 2>"$tmp/gpu0.err"
[ $? -eq 1 ] || fail "--decode gpu without the engines must fail"
grep -q "device = 0\|decode = gpu" "$tmp/gpu0.err" || fail "the message says why: $(cat "$tmp/gpu0.err")"
ok
"$rf" bench $common --decode fpga >/dev/null 2>&1
[ $? -eq 2 ] || fail "--decode fpga is a usage error"
ok
set -e
echo "$passed passed, 0 failed"
