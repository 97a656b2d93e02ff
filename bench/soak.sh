#!/usr/bin/env bash
# soak.sh [CYCLES] [EPOCHS] - 1,000 create/destroy cycles and a 50-epoch run
# cut every 37 batches and resumed (bench/soak.c), on a generated dataset of
# 500 JPEGs (bench/data/soak, made once); prints resident memory and open
# descriptors as they go. Growth between the samples is the finding.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh build -Dbench=enabled
data=bench/data/soak
if [ ! -d "$data" ]; then
	mkdir -p bench/data
	build/ringfeed gen --out "$data" --count 500 --classes 5 >/dev/null
fi
build/bench/soak "$data" "${1:-1000}" "${2:-50}" 37
