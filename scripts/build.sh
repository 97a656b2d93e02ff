#!/usr/bin/env bash
# build.sh - configures (once) and builds ringfeed in build/ (or the folder
# given as $1, with the meson options that follow). Idempotent. Quiet when
# it works; when meson or ninja fails, what they said is printed (to stderr).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
log=$(mktemp "${TMPDIR:-/tmp}/rf-build.XXXXXX")
trap 'rm -f "$log"' EXIT
quiet() {
	if ! "$@" >"$log" 2>&1; then
		cat "$log" >&2
		echo "build.sh: '$*' failed (above)" >&2
		exit 1
	fi
}
if [ ! -f "$dir/build.ninja" ]; then
	quiet meson setup "$dir" "$@"
elif [ $# -gt 0 ]; then
	quiet meson configure "$dir" "$@" # an existing folder takes the options too
fi
quiet ninja -C "$dir"
