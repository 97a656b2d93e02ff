#!/bin/sh
# cli_names.sh - the help texts list the names the command takes: for each
# enum option, the "a|b|c" of `ringfeed CMD --help` is the "a, b or c" that
# `ringfeed CMD OPT bogus` answers with, which comes from the library's one
# table of names (src/util/names.c); and each listed name is taken (it gets
# past the option parser to the next complaint). A name added to the table
# and not to the help text, or the other way round, fails here.
# Usage (meson does this): cli_names.sh PATH_TO_ringfeed
set -eu
rf=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0

# CMD OPTION: the help text's list against the parser's
check() {
	help=$("$rf" "$1" --help)
	listed=$(printf '%s\n' "$help" |
		sed -n "s/^.*[[ ]$2 \([a-z0-9]*\(|[a-z0-9]*\)\{1,\}\).*/\1/p" | head -n 1)
	[ -n "$listed" ] || fail "$1 --help: no '$2 a|b|c' line"
	rc=0
	answer=$("$rf" "$1" "$2" '?' 2>&1 >/dev/null) || rc=$?
	[ "$rc" -eq 2 ] || fail "$1 $2 ?: exit $rc, not 2 (usage)"
	expected=$(printf '%s\n' "$answer" | sed -n "s/.*$2: expected \(.*\), not '?'$/\1/p" |
		sed 's/ or /|/; s/, /|/g')
	[ "$listed" = "$expected" ] || fail "$1 $2: help lists '$listed', the parser takes '$expected'"
	for name in $(echo "$listed" | tr '|' ' '); do
		out=$("$rf" "$1" "$2" "$name" 2>&1 >/dev/null) || true
		case $out in *"$2:"*) fail "$1 $2 $name: refused: $out" ;; esac
	done
	passed=$((passed + 1))
}

for opt in --source-kind --shard-access --on-error --dtype --layout --token-dtype --decode \
	--io-path --rank-tail; do
	check bench "$opt"
done
check index --source-kind
echo "$passed passed, 0 failed"
