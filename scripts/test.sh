#!/usr/bin/env bash
# test.sh - installs what is missing, builds, and runs every test: the fast
# and slow suites in build/, the fast suite again under AddressSanitizer
# + UndefinedBehaviorSanitizer in build-asan/, and a short run of each fuzz
# target (RF_FUZZ_SECONDS, default 30, each; scripts/fuzz.sh) and the
# ThreadSanitizer matrix (scripts/tsan.sh). Ends with one summary line.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
# test builds: with the test-only hooks (never in a release build);
# -Dtests=true as well, since demo.sh configures build/ without the tests
scripts/build.sh build -Dtests=true -Dtest_hooks=true
scripts/build.sh build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug \
	-Dtest_hooks=true

export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# the S3 tests' server (python/tests/test_s3.py): moto, in a venv made once
# from PyPI; where it cannot be had, the tests skip with the reason
if moto_python=$(scripts/moto_venv.sh 2>build/moto_venv.log); then
	export RINGFEED_MOTO_PYTHON=$moto_python
else
	RINGFEED_MOTO_UNAVAILABLE=$(tail -n 1 build/moto_venv.log)
	export RINGFEED_MOTO_UNAVAILABLE=${RINGFEED_MOTO_UNAVAILABLE:-scripts/moto_venv.sh failed}
	echo "$RINGFEED_MOTO_UNAVAILABLE (build/moto_venv.log): the S3 tests skip" >&2
fi
# the Parquet tests' writers (pyarrow), in the venv deps.sh made; where it
# could not be, tests/test_parquet.c skips saying so
if parquet_python=$(scripts/parquet_venv.sh 2>build/parquet_venv.log); then
	export RINGFEED_PARQUET_PYTHON=$parquet_python
fi
status=0
meson test -C build --print-errorlogs --num-processes 1 || status=1
meson test -C build --setup slow --suite slow --print-errorlogs || status=1
meson test -C build-asan --print-errorlogs --num-processes 1 || status=1
scripts/tsan.sh | tee build/tsan.log || status=1
fuzz_rc=0
scripts/fuzz.sh "${RF_FUZZ_SECONDS:-30}" | tee build/fuzz.log || fuzz_rc=$?
[ "$fuzz_rc" -eq 0 ] || [ "$fuzz_rc" -eq 77 ] || status=1

# One line for people and CI: individual test cases, counted from Criterion's
# synthesis lines and the scripts' own "N passed, N failed" lines (other
# test programs count as one each).
python3 - build/fuzz.log build/meson-logs/testlog.json build/meson-logs/testlog-slow.json \
	build-asan/meson-logs/testlog.json <<'PY'
import json, re, sys
passed = failed = skipped = 0
# the fuzz targets' closing line: each target one test
m = re.findall(r"^fuzz: (\d+) passed, (\d+) failed, (\d+) skipped", open(sys.argv[1]).read(), re.M)
if m:
    passed, failed, skipped = map(int, m[-1])
else:
    failed = 1
# the ThreadSanitizer matrix: each configuration one test
m = re.findall(r"^tsan: (\d+) passed, (\d+) failed", open("build/tsan.log").read(), re.M)
if m:
    passed += int(m[-1][0])
    failed += int(m[-1][1])
else:
    failed += 1
for path in sys.argv[2:]:
    for line in open(path):
        t = json.loads(line)
        out = t.get("stdout", "") + t.get("stderr", "")
        m = re.findall(r"Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", out)
        if m:
            tested, ok, bad, crash = map(int, m[-1])
            # a program can fail after its cases passed (a sanitizer at exit)
            extra = 1 if t["result"] not in ("OK", "SKIP") and bad + crash == 0 else 0
            passed += ok - extra
            failed += bad + crash + extra
            skipped += len(re.findall(r"\[SKIP\]", out))
        elif re.search(r"^\d+ passed, \d+ failed", out, re.M):
            # a script's own closing line (tests/cli_*.sh, python/tests/run.sh)
            ok, bad, skip = re.findall(r"^(\d+) passed, (\d+) failed(?:, (\d+) skipped)?",
                                       out, re.M)[-1]
            ok, bad, skip = int(ok), int(bad), int(skip or 0)
            extra = 1 if t["result"] not in ("OK", "SKIP") and bad == 0 else 0
            passed += ok
            failed += bad + extra
            skipped += skip
        elif t["result"] == "OK":
            passed += 1
        elif t["result"] == "SKIP":
            skipped += 1
        else:
            failed += 1
print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
PY
exit $status
