#!/usr/bin/env bash
# run.sh PYTHON TESTDIR - runs the Python package's pytest suite with PYTHON
# and ends with one line "N passed, N failed, N skipped" for scripts/test.sh.
# Without pytest for that interpreter the whole suite is one skip.
set -uo pipefail
py=$1
dir=$2
if ! "$py" -c 'import pytest' 2>/dev/null; then
	echo "SKIP: pytest is not installed for $py (scripts/deps.sh installs python3-pytest)"
	echo "0 passed, 0 failed, 1 skipped"
	exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$py" -m pytest -q -rs -p no:cacheprovider "$dir" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
last=$(tail -n 1 "$out")
count() { echo "$last" | grep -oE "[0-9]+ $1" | grep -oE "[0-9]+" || echo 0; }
passed=$(count passed)
failed=$(( $(count failed) + $(count error) ))
skipped=$(count skipped)
# pytest exits 5 when it collected nothing; anything else non-zero is a failure
if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "$passed passed, $failed failed, $skipped skipped"
exit $(( rc == 0 ? 0 : 1 ))
