#!/usr/bin/env bash
# rename_internal.sh - gives the library's internal functions a prefix apart
# from the public one: every rf_* function that include/ringfeed.h does not
# name becomes rfi_* (rf_source_open -> rfi_source_open), in src/, tests/,
# bench/, examples/, python/ and docs/. The public names (every rf_*
# identifier the header spells: functions, types, callbacks) stay, and so do
# types, macros and RF_* constants. Issue 37 item 4; src/lib.c's entry points
# already call rfi_* functions.
#
# Usage, from a clean tree (no branch open: it touches most files):
#   scripts/build.sh build && scripts/rename_internal.sh build
#   ninja -C build -j2 && meson test -C build --suite fast
# The functions come from the build's objects (nm: every global T/W symbol
# named rf_*) and from src/'s sources (every definition or prototype that
# starts a line, so also static ones and those of files the build left
# out, such as src/gpu/nvjpeg_api.c without the nvJPEG header). It stops, changing nothing, when the
# tree has uncommitted changes or when a new name is taken already.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -d "$build" ] || { echo "rename_internal: no build folder $build (build first)" >&2; exit 1; }
if [ -n "$(git status --porcelain)" ]; then
	echo "rename_internal: commit or stash your changes first" >&2
	exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

grep -ohw 'rf_[A-Za-z0-9_]*' include/ringfeed.h | sort -u >"$tmp/public"
{
	find "$build" -name '*.o' -exec nm --defined-only -g {} + 2>/dev/null |
		awk '$2 == "T" || $2 == "W" { print $3 }'
	# definitions and prototypes start at a line's start (the project's
	# style), static ones and those of files this build left out included
	# (function types, "typedef void rf_split_fn(...)", are types: they stay)
	grep -rhE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]rf_[A-Za-z0-9_]+\(' src \
		--include='*.c' --include='*.h' --include='*.cu' | grep -v '^typedef' |
		grep -oE '^[A-Za-z_][A-Za-z0-9_ *]*[ *]rf_[A-Za-z0-9_]+\(' |
		grep -oE 'rf_[A-Za-z0-9_]+\($' | tr -d '('
} | grep -E '^rf_[A-Za-z0-9_]+$' | sort -u | comm -23 - "$tmp/public" >"$tmp/internal"

n=$(wc -l <"$tmp/internal")
[ "$n" -gt 0 ] || { echo "rename_internal: no internal rf_ function found in $build" >&2; exit 1; }

mapfile -t files < <(git ls-files src tests bench examples python docs |
	grep -E '\.(c|h|cu|cpp|py|pyx|pxd|sh|md)$')

# A new name that exists already would merge two functions: refuse.
taken=0
while read -r name; do
	new="rfi_${name#rf_}"
	if grep -qw -- "$new" "${files[@]}"; then
		echo "rename_internal: $new exists already ($name would become it)" >&2
		taken=1
	fi
done <"$tmp/internal"
[ "$taken" = 0 ] || exit 1

# One perl pass over each file: \brf_(a|b|...)\b -> rfi_$1, longest names first.
sort -r "$tmp/internal" | sed 's/^rf_//' | paste -sd'|' >"$tmp/alternation"
RF_NAMES=$(cat "$tmp/alternation") perl -pi -e 'BEGIN { $re = qr/\brf_($ENV{RF_NAMES})\b/ }
	s/$re/rfi_$1/g' "${files[@]}"

echo "rename_internal: $n functions renamed rf_ -> rfi_ in $(git diff --name-only | wc -l) files"
echo "rename_internal: now rebuild and run the fast suite; nm -D libringfeed.so must list the same names"
