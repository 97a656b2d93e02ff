#!/usr/bin/env bash
# fuzz.sh [SECONDS] - builds the libFuzzer targets (build-fuzz/, clang,
# -Dfuzzing=true), writes their seed corpora, and runs each target for
# SECONDS (default 30) on its corpus (build-fuzz/corpus/TARGET, kept between
# runs, plus the regression inputs in tests/fuzz/regress/TARGET, which must
# never crash again). A crash leaves its input in build-fuzz/crashes/.
# Prints one line per target with its executions, and a closing
# "fuzz: N passed, N failed, N skipped" line. Exits 77 (skip) with the reason
# when clang or its fuzzer runtime is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
targets=(state cache manifest jpeg)

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
ninja -C build-fuzz >/dev/null

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
rm -rf build-fuzz/seeds
build-fuzz/tests/fuzz/make_seeds build-fuzz/seeds >/dev/null
mkdir -p build-fuzz/crashes
passed=0
failed=0
for t in "${targets[@]}"; do
	corpus=build-fuzz/corpus/$t
	mkdir -p "$corpus"
	regress=tests/fuzz/regress/$t
	dirs=("$corpus" "build-fuzz/seeds/$t")
	[ -d "$regress" ] && dirs+=("$regress")
	log=build-fuzz/fuzz-$t.log
	# -malloc_limit_mb: an allocation larger than any input justifies is a defect
	if build-fuzz/tests/fuzz/fuzz_$t "${dirs[@]}" -max_total_time="$secs" -max_len=65536 \
		-rss_limit_mb=2048 -malloc_limit_mb=512 -timeout=10 -print_final_stats=1 \
		-artifact_prefix=build-fuzz/crashes/$t- >"$log" 2>&1; then
		passed=$((passed + 1))
		result=ok
	else
		failed=$((failed + 1))
		result="FAILED (see $log, build-fuzz/crashes/)"
	fi
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
	echo "fuzz_$t: $secs s, $execs executions, corpus $(ls "$corpus" | wc -l) inputs: $result"
done
echo "fuzz: $passed passed, $failed failed, 0 skipped"
[ "$failed" -eq 0 ]
