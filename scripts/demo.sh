#!/usr/bin/env bash
# demo.sh - the whole set-up and the main job, on a fresh Debian 12 machine:
# installs what is missing, builds, generates a small synthetic ImageFolder
# dataset with `ringfeed gen`, and runs `ringfeed bench` over it.
#   COUNT=2000 scripts/demo.sh      # dataset size (default 1000 images)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
scripts/build.sh build
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
