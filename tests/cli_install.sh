#!/bin/sh
# cli_install.sh - the README's C install recipe from this source tree, as a
# newcomer types it: a release build in a folder of its own, installed to a
# prefix (a temporary one here), a program built with pkg-config alone
# (examples/epoch_loop.c) and run, and the installed `ringfeed` run, both
# with no LD_LIBRARY_PATH; and installing a test build (-Dtest_hooks=true)
# fails saying so. Slow: it builds the library once more.
# Usage (meson does this): cli_install.sh SOURCE_ROOT TEST_BUILD_DIR
# (RF_TEST_HOOKS=1 when TEST_BUILD_DIR has the test hooks)
set -eu
src=$1
test_build=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-install-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); }
unset LD_LIBRARY_PATH PKG_CONFIG_PATH
prefix=$tmp/prefix
# where the loader finds libringfeed.so.0 for the program $1 (its real path)
found_lib() {
	readlink -f "$(ldd "$1" | sed -n 's/.*libringfeed\.so\.0 => \(.*\) (0x.*/\1/p')"
}

# the recipe (README.md, "Your first hour"; docs/C_API.md), from the source root
(cd "$src" && meson setup "$tmp/build-release" --buildtype=release -Dtests=false \
	--prefix="$prefix" --libdir=lib) >"$tmp/setup.log" 2>&1 ||
	fail "meson setup: $(tail -5 "$tmp/setup.log")"
meson install -C "$tmp/build-release" >"$tmp/install.log" 2>&1 ||
	fail "meson install: $(tail -15 "$tmp/install.log")"
grep -q "^#define RF_TEST_HOOKS 0" "$tmp/build-release/rf_config.h" ||
	fail "the release build has the test hooks"
targets=$(ninja -C "$tmp/build-release" -t targets all)
echo "$targets" | grep -E "^(bench|examples|tests)/[^:]*: (c|cuda)_LINKER" &&
	fail "-Dtests=false built test, bench or example programs"
for f in include/ringfeed.h lib/libringfeed.so.0 lib/libringfeed.a lib/pkgconfig/ringfeed.pc \
	bin/ringfeed; do
	[ -e "$prefix/$f" ] || fail "not installed: $f"
done
ok

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -O2 "$src/examples/epoch_loop.c" -o "$tmp/epoch_loop" $(pkg-config --cflags --libs ringfeed) \
	2>"$tmp/cc.log" || fail "cc with pkg-config's flags: $(cat "$tmp/cc.log")"
# found through the rpath ringfeed.pc gives, not some other copy
[ "$(found_lib "$tmp/epoch_loop")" = "$(readlink -f "$prefix/lib/libringfeed.so.0")" ] ||
	fail "the program does not find the installed library: $(ldd "$tmp/epoch_loop" | grep ringfeed)"
ok
"$prefix/bin/ringfeed" gen --out "$tmp/data" --count 40 --classes 4 --threads 1 >/dev/null ||
	fail "the installed ringfeed gen"
"$tmp/epoch_loop" "$tmp/data" >"$tmp/run.log" 2>&1 || fail "the program: $(tail -3 "$tmp/run.log")"
grep -q "^80 samples, 0 bad" "$tmp/run.log" || fail "not 2 epochs of 40: $(tail -1 "$tmp/run.log")"
ok
v=$("$prefix/bin/ringfeed" --version) || fail "the installed ringfeed --version"
case $v in "ringfeed "[0-9]*) ;; *) fail "ringfeed --version: $v" ;; esac
[ "$(found_lib "$prefix/bin/ringfeed")" = "$(readlink -f "$prefix/lib/libringfeed.so.0")" ] ||
	fail "the installed CLI does not find the installed library: $(ldd "$prefix/bin/ringfeed" | grep ringfeed)"
ok

# a test build is no release: its install fails, saying so
if [ "${RF_TEST_HOOKS:-0}" = 1 ]; then
	if meson install -C "$test_build" --no-rebuild --destdir "$tmp/dest" >"$tmp/hooks.log" 2>&1; then
		fail "a test build (-Dtest_hooks=true) installed without an error"
	fi
	grep -q "THIS IS A TEST BUILD" "$tmp/hooks.log" || fail "no word of the test build: $(tail -5 "$tmp/hooks.log")"
	ok
	echo "$passed passed, 0 failed"
else
	echo "SKIP: $test_build has no test hooks: their install's refusal is not tried" >&2
	echo "$passed passed, 0 failed, 1 skipped"
fi
