#!/bin/sh
# test-hooks-install.sh - meson runs this at the end of installing a build
# configured with -Dtest_hooks=true (meson.build): such a library reads
# test-only knobs from the environment (RINGFEED_TEST_READ_DELAY_US,
# RINGFEED_RING_SETUP, the read hook) and is never a release. It fails the
# install, saying how to install a release, unless
# RINGFEED_INSTALL_TEST_HOOKS=1 (a test that installs its test build on
# purpose, into a DESTDIR).
[ "${RINGFEED_INSTALL_TEST_HOOKS:-0}" = 1 ] && exit 0
cat >&2 <<MSG

ringfeed: THIS IS A TEST BUILD (-Dtest_hooks=true: scripts/test.sh's build/),
now installed in ${MESON_INSTALL_DESTDIR_PREFIX:-its prefix}. A release has no
test hooks; install one over it from a build folder of its own:

    meson setup build-release --buildtype=release -Dtests=false --prefix=${MESON_INSTALL_PREFIX:-/usr/local} --libdir=lib
    meson install -C build-release

(RINGFEED_INSTALL_TEST_HOOKS=1 installs a test build without this error.)
MSG
exit 1
