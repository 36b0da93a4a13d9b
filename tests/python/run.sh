#!/bin/sh
# Runs the Python package's tests (tests/python, pytest) and ends with
# cmocka's summary lines, "[  PASSED  ] N test(s)." and, when some failed,
# "[  FAILED  ] M test(s).", which tests/run.sh adds to the suite's total.
# Without a python3 that has numpy and pytest it says so and runs nothing.
# $PYTHON picks the interpreter; else the first python3 on PATH with both,
# else /usr/bin/python3 (the Debian packages').
cd "$(dirname "$0")/../.." || exit 1
py=""
for c in ${PYTHON:-} python3 /usr/bin/python3; do
    if command -v "$c" >/dev/null 2>&1 &&
       "$c" -c 'import numpy, pytest' >/dev/null 2>&1; then
        py=$c; break
    fi
done
if [ -z "$py" ]; then
    echo "tests/python: skipped: no python3 with numpy and pytest" \
         "(python3-numpy, python3-pytest: make deps)"
    exit 0
fi
if [ "${ET_TEST_OPENCL:-1}" = 0 ]; then
    echo "tests/python: skipped: no OpenCL device (the package's tests use one)"
    exit 0
fi
BUILD_DIR=${ET_BUILD_DIR:-$(pwd)/${BUILD:-build}}
EINTUNE_LIBRARY=${EINTUNE_LIBRARY:-$BUILD_DIR/libeintune.so}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$BUILD_DIR/pocl-cache}
mkdir -p "$POCL_CACHE_DIR"
export EINTUNE_LIBRARY POCL_CACHE_DIR
# a library built with AddressSanitizer (make asan) cannot be loaded into
# an interpreter that was not: its runtime must come first
if nm -D "$EINTUNE_LIBRARY" 2>/dev/null | grep -q '__asan_'; then
    echo "tests/python: skipped: $EINTUNE_LIBRARY is built with" \
         "AddressSanitizer; the package's tests run in make test"
    exit 0
fi
out=$("$py" -m pytest -q -p no:cacheprovider tests/python 2>&1); rc=$?
printf '%s\n' "$out"
# pytest's last line: "5 failed, 60 passed, 2 skipped in 12.3s"
last=$(printf '%s\n' "$out" | tail -n 1)
p=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) passed.*/\1/p')
f=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) failed.*/\1/p')
e=$(printf '%s\n' "$last" | sed -n 's/.*\b\([0-9][0-9]*\) errors\{0,1\}\b.*/\1/p')
f=$(( ${f:-0} + ${e:-0} ))
echo "[  PASSED  ] ${p:-0} test(s)."
[ "$f" -gt 0 ] && echo "[  FAILED  ] $f test(s)."
exit $rc
