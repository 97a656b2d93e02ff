#!/bin/sh
# consume.sh - the ways a C project takes the library: a tiny program built
# against an installed prefix with pkg-config, shared and static (only
# Libs.private / Requires.private to go on), and as a meson subproject
# (dependency('ringfeed', fallback: 'ringfeed')); each runs an epoch.
# Usage (meson does this): consume.sh SOURCE_ROOT BUILD_DIR RINGFEED
set -eu
src=$1
build=$2
rf=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-consume-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }
passed=0
ok() { passed=$((passed + 1)); }

"$rf" gen --out "$tmp/data" --count 10 --classes 2 --threads 1 >/dev/null
cat >"$tmp/consumer.c" <<'C'
#include <ringfeed.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	rf_config cfg;
	rf_config_default(&cfg);
	cfg.source = argv[1];
	cfg.batch_size = 4;
	cfg.threads = 1;
	rf_loader *l;
	char err[256];
	int r = rf_loader_create(&l, &cfg, err, sizeof(err));
	if (r) {
		fprintf(stderr, "consumer: %s\n", err);
		return 1;
	}
	rf_batch *b;
	unsigned n = 0;
	while ((r = rf_loader_next(l, &b)) == 0) {
		n += b->count;
		rf_batch_release(l, b);
	}
	rf_loader_destroy(l);
	printf("%u samples\n", n);
	return r == RF_EOF && argc == 2 ? 0 : 1;
}
C

# an installed prefix (the build's own files, installed elsewhere; a test
# build on purpose, hence RINGFEED_INSTALL_TEST_HOOKS)
RINGFEED_INSTALL_TEST_HOOKS=1 meson install -C "$build" --no-rebuild --destdir "$tmp/root" >/dev/null
pc=$(find "$tmp/root" -name ringfeed.pc | head -1)
[ -n "$pc" ] || fail "no ringfeed.pc installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH="$(dirname "$pc")"
pkc="pkg-config --define-variable=prefix=$tmp/root$prefix"
libdir=$($pkc --variable=libdir ringfeed)
[ -e "$libdir/libringfeed.a" ] || fail "no static library beside the shared one in $libdir"
ok
cc -o "$tmp/shared" "$tmp/consumer.c" $($pkc --cflags --libs ringfeed) || fail "shared link"
LD_LIBRARY_PATH="$libdir" "$tmp/shared" "$tmp/data" | grep -q "^10 samples" || fail "shared run"
ok
libs=$($pkc --static --libs ringfeed | sed 's/-lringfeed/-l:libringfeed.a/')
cc -o "$tmp/static" "$tmp/consumer.c" $($pkc --cflags ringfeed) $libs || fail "static link with: $libs"
readelf -d "$tmp/static" | grep -q "libringfeed" && fail "the static program still needs libringfeed.so"
"$tmp/static" "$tmp/data" | grep -q "^10 samples" || fail "static run"
ok
bindir=$(dirname "$(find "$tmp/root" -path '*/bin/ringfeed' | head -1)")
env -u LD_LIBRARY_PATH "$bindir/ringfeed" --version >/dev/null || fail "the installed CLI finds its library"
ok

# a meson subproject
mkdir -p "$tmp/parent/subprojects"
ln -s "$src" "$tmp/parent/subprojects/ringfeed"
cp "$tmp/consumer.c" "$tmp/parent/"
cat >"$tmp/parent/meson.build" <<'M'
project('parent', 'c')
executable('consumer', 'consumer.c', dependencies: dependency('ringfeed', fallback: 'ringfeed'))
M
(cd "$tmp/parent" && env -u PKG_CONFIG_PATH meson setup build --force-fallback-for=ringfeed \
	-Dringfeed:tests=false -Dringfeed:cuda=disabled >/dev/null &&
	ninja -C build consumer >"$tmp/sub.log" 2>&1) || fail "the subproject build: $(tail -5 "$tmp/sub.log")"
LD_LIBRARY_PATH="$tmp/parent/build/subprojects/ringfeed" "$tmp/parent/build/consumer" "$tmp/data" |
	grep -q "^10 samples" || fail "subproject run"
ok
echo "$passed passed, 0 failed"
