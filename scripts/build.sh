#!/usr/bin/env bash
# build.sh - configures (once) and builds ringfeed in build/ (or the folder
# given as $1, with the meson options that follow). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" "$@" >/dev/null
elif [ $# -gt 0 ]; then
	meson configure "$dir" "$@" >/dev/null # an existing folder takes the options too
fi
ninja -C "$dir" >/dev/null
