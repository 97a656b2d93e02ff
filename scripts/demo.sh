#!/usr/bin/env bash
# demo.sh - the whole set-up and the main job, on a fresh Debian 12 machine:
# installs what is missing, builds, generates a small synthetic ImageFolder
# dataset with `ringfeed gen`, and runs `ringfeed bench` over it.
#   COUNT=2000 scripts/demo.sh      # dataset size (default 1000 images)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --demo # the build and the demo's packages only; test.sh installs the rest
# A first build is configured without the tests (whose Criterion, examples and
# benchmark programs the demo does not need); a build/ configured before
# (by test.sh, or by hand) is built as it is.
if [ -f build/build.ninja ]; then
	scripts/build.sh build
else
	echo "demo.sh: building ringfeed in build/ (a minute or two the first time)" >&2
	scripts/build.sh build -Dtests=false
fi
data=${DATA:-build/demo-data}
count=${COUNT:-1000}
if [ ! -f "$data/.complete-$count" ]; then
	rm -rf "$data"
	build/ringfeed gen --out "$data" --count "$count" --classes 10
	touch "$data/.complete-$count"
fi
echo
echo "$ build/ringfeed bench --source $data --batch 64 --resize 256 --crop 224 --epochs 2"
build/ringfeed bench --source "$data" --batch 64 --resize 256 --crop 224 --epochs 2
