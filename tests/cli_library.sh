#!/bin/sh
# cli_library.sh - what libringfeed.so asks of the machine that loads it:
# no CUDA library is NEEDED (the CUDA runtime is linked in statically, and
# libnvjpeg is loaded at run time), so it loads and runs a CPU epoch where
# none can be found (LD_DEBUG shows none opened); and it exports exactly the
# header's RF_API functions, nothing of its own insides.
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
"$rf" --version >/dev/null || fail "ringfeed --version"
ok
echo "$passed passed, 0 failed"
