#!/bin/sh
# cli_library.sh - what libringfeed.so asks of the machine that loads it:
# no CUDA library is NEEDED (the CUDA runtime is linked in statically, and
# libnvjpeg is loaded at run time), so it loads and runs a CPU epoch where
# none can be found (LD_DEBUG shows none opened); and it exports exactly the
# header's RF_API functions, nothing of its own insides; --version says why
# a CUDA build has no device.
# Usage (meson does this): cli_library.sh RINGFEED LIBRINGFEED_SO HEADER
set -eu
rf=$1
lib=$2
header=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-lib-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); }

needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
echo "$needed" | grep -E "cuda|nvjpeg|nvrtc" && fail "a CUDA library is NEEDED: $needed"
ok

# exported functions = the header's RF_API declarations
sed -n 's/^RF_API .*[ *]\(rf_[a-z0-9_]*\)(.*/\1/p' "$header" | sort -u >"$tmp/header"
nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRV]$/ { print $3 }' | sort -u >"$tmp/exported"
[ -s "$tmp/header" ] || fail "no RF_API function found in $header"
diff -u "$tmp/header" "$tmp/exported" >"$tmp/diff" || fail "exports differ from the header: $(cat "$tmp/diff")"
ok

# a CPU epoch with no CUDA library on the search path
"$rf" gen --out "$tmp/data" --count 12 --classes 2 --threads 1 >/dev/null
env -u LD_LIBRARY_PATH LD_DEBUG=libs "$rf" bench --source "$tmp/data" --batch 4 --resize 64 \
	--crop 56 --threads 1 >"$tmp/out" 2>"$tmp/ld" || fail "a CPU epoch failed: $(tail -3 "$tmp/ld")"
grep -q "12 samples" "$tmp/out" || fail "not 12 samples: $(cat "$tmp/out")"
grep -E "calling init: .*(libcudart|libnvjpeg)" "$tmp/ld" && fail "a CUDA library was loaded for a CPU epoch"
ok
v=$("$rf" --version) || fail "ringfeed --version"
ok
# A CUDA build with no device says why in words a user can act on: on a
# machine without the NVIDIA driver (no libcuda.so.1), "no NVIDIA driver",
# not the runtime's "driver version is insufficient", which reads as an old
# driver. (A build with a device says "cuda: built in, N device(s)".)
case $v in
*"cuda: built in, "[0-9]*" device"*) ;;
*"cuda: built in"*)
	case $v in
	*"insufficient for CUDA runtime"*) fail "--version reads as an old driver: $v" ;;
	*"device batches unavailable"*) ;;
	*) fail "--version does not say that device batches are unavailable: $v" ;;
	esac
	if [ -z "${LD_LIBRARY_PATH:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
		case $v in
		*"no NVIDIA driver on this machine"*) ;;
		*) fail "no libcuda.so.1 here, yet --version does not say 'no NVIDIA driver': $v" ;;
		esac
	fi
	ok
	;;
esac
echo "$passed passed, 0 failed"
