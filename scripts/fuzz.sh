#!/usr/bin/env bash
# fuzz.sh [SECONDS [TARGET...]] - builds the libFuzzer targets (build-fuzz/, clang,
# -Dfuzzing=true), writes their seed corpora, and runs each target for
# SECONDS (default 30) on its corpus (build-fuzz/corpus/TARGET, kept between
# runs, plus the regression inputs in tests/fuzz/regress/TARGET, which must
# never crash again). A crash leaves its input in build-fuzz/crashes/.
# TARGETs (default: all of them: state cache manifest jpeg png webp tar tokens http
# credentials listing hf_tree parquet;
# png and webp only where the build found libspng and libwebp) are
# run one after the other; start two fuzz.sh with different targets to use
# two cores. Targets that parse a file write their inputs under $TMPDIR
# (/dev/shm when unset: tmpfs is several times faster than a disk).
# Prints one line per target with its executions and the CPU seconds it
# used (user + system: on a busy machine less than SECONDS), and a closing
# "fuzz: N passed, N failed, N skipped" line. Exits 77 (skip) with the reason
# when clang or its fuzzer runtime is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
all_targets=(state cache manifest jpeg png webp tar tokens http credentials listing hf_tree parquet)
targets=("${@:2}")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
	case " ${all_targets[*]} " in
	*" $t "*) ;;
	*) echo "fuzz.sh: no target '$t' (targets: ${all_targets[*]})" >&2; exit 2 ;;
	esac
done

if ! command -v clang >/dev/null || ! echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
	clang -fsanitize=fuzzer -x c - -o /dev/null 2>/dev/null; then
	echo "fuzz: skipped: clang with the libFuzzer runtime is missing (apt-get install clang libclang-rt-14-dev)"
	echo "fuzz: 0 passed, 0 failed, ${#targets[@]} skipped"
	exit 77
fi
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dfuzzing=true -Dtests=false -Dcuda=disabled \
		-Dbuildtype=debugoptimized -Db_lundef=false >/dev/null
fi
# quiet unless it fails: then its errors, and the closing line says failed
if ! ninja -C build-fuzz >build-fuzz/ninja.log 2>&1; then
	grep -B2 -A8 "error" build-fuzz/ninja.log | head -40 >&2
	echo "fuzz: the clang build failed (build-fuzz/ninja.log)"
	echo "fuzz: 0 passed, ${#targets[@]} failed, 0 skipped"
	exit 1
fi

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The cache, manifest and tokens targets write every input to a file under
# $TMPDIR (tests/fuzz/fuzz_file.h). On a disk file system half of each core
# went to I/O wait; on tmpfs they run 2.7 to 9.3 times the inputs a second
# (bench/RESULTS.md, hardening). A TMPDIR the caller set is kept.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
	export TMPDIR=/dev/shm
fi
# CPU seconds (user + system) of this script's finished children, into
# $cpu_now: `times` in this shell (a $(...) subshell has no children yet)
cpu_now=0
cpu_mark() {
	local f
	f=$(mktemp)
	times >"$f"
	cpu_now=$(tail -1 "$f" | awk '{ s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%d\n", s }')
	rm -f "$f"
}
# two fuzz.sh at once: each writes its own copy of the seeds
seeds=$(mktemp -d build-fuzz/seeds.XXXXXX)
trap 'rm -rf "$seeds"' EXIT
build-fuzz/tests/fuzz/make_seeds "$seeds" >/dev/null
# the Parquet target's seeds: files the real pyarrow writes, from the
# writers' venv (scripts/parquet_venv.sh) where it is; without it the
# target starts from its corpus and regression inputs alone
mkdir -p "$seeds/parquet"
if [[ " ${targets[*]} " == *" parquet "* ]] &&
	parquet_python=$(scripts/parquet_venv.sh 2>/dev/null); then
	mkdir -p "$seeds/parquet"
	"$parquet_python" tests/parquet_fixtures.py "$seeds/parquet.all" >/dev/null &&
		cp "$seeds"/parquet.all/*.parquet "$seeds/parquet/"
fi
mkdir -p build-fuzz/crashes
passed=0
failed=0
skipped=0
for t in "${targets[@]}"; do
	if [ ! -x "build-fuzz/tests/fuzz/fuzz_$t" ]; then
		echo "fuzz_$t: skipped: not built (its library is missing: scripts/deps.sh installs libspng-dev and libwebp-dev)"
		skipped=$((skipped + 1))
		continue
	fi
	corpus=build-fuzz/corpus/$t
	mkdir -p "$corpus"
	regress=tests/fuzz/regress/$t
	mkdir -p "$seeds/$t" # a target make_seeds writes none for starts from its corpus
	dirs=("$corpus" "$seeds/$t")
	[ -d "$regress" ] && dirs+=("$regress")
	log=build-fuzz/fuzz-$t.log
	# -malloc_limit_mb: an allocation larger than any input justifies is a defect
	cpu_mark
	cpu0=$cpu_now
	if build-fuzz/tests/fuzz/fuzz_$t "${dirs[@]}" -max_total_time="$secs" -max_len=65536 \
		-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 -print_final_stats=1 \
		-artifact_prefix=build-fuzz/crashes/$t- >"$log" 2>&1; then
		passed=$((passed + 1))
		result=ok
	else
		failed=$((failed + 1))
		result="FAILED (see $log, build-fuzz/crashes/)"
	fi
	cpu_mark
	cpu=$((cpu_now - cpu0))
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
	echo "fuzz_$t: $secs s, $cpu CPU s, $execs executions, corpus $(ls "$corpus" | wc -l) inputs: $result"
done
echo "fuzz: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
