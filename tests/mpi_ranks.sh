#!/bin/sh
# mpi_ranks.sh - runs tests/mpi_ranks.c as 4 processes under Open MPI's
# mpirun on a small generated dataset (39 JPEGs: not a multiple of 4, so the
# padding and the dropped tail both show). Usage (meson does this):
#   mpi_ranks.sh PATH_TO_mpi_ranks PATH_TO_ringfeed
# Exits 77 (meson's skip) with the reason when it cannot run: no MPI at
# build time, or no mpirun now. Never passes without running.
set -eu
prog=$1
ringfeed=$2
if [ -z "$prog" ]; then
	echo "SKIP: built without MPI (meson found no 'mpi' dependency: install libopenmpi-dev and reconfigure)"
	exit 77
fi
if ! command -v mpirun >/dev/null 2>&1; then
	echo "SKIP: mpirun not found (install openmpi-bin)"
	exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-mpi-XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
"$ringfeed" gen --out "$tmp/data" --count 39 --classes 3 --threads 2 >/dev/null
# The ranks must come from Open MPI's variables; a launcher around this
# test (torchrun, mpiexec) must not decide them.
unset RANK WORLD_SIZE PMI_RANK PMI_SIZE
# CI runs as root; Open MPI refuses that unless told twice.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's own allocations outlive MPI_Finalize: not ours to report.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# Not exec: the trap must still remove the dataset afterwards.
status=0
mpirun --oversubscribe -np 4 "$prog" "$tmp/data" || status=$?
exit $status
