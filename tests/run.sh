#!/bin/sh
# Runs every test program given, shows its output, and ends with one total
# line "N passed, N failed" summed from the cmocka summaries.
BUILD=${BUILD:-build}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$(pwd)/$BUILD/pocl-cache}
export POCL_CACHE_DIR
mkdir -p "$POCL_CACHE_DIR"
ET_BUILD_DIR=$(pwd)/$BUILD
export ET_BUILD_DIR
passed=0; failed=0; broken=""
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    # LeakSanitizer's own tracer sometimes crashes at exit while the OpenCL
    # driver's threads wind down ("LeakSanitizer has encountered a fatal
    # error"): a tool failure, not a leak report. Such a program is run
    # once more; a real leak report still fails.
    case "$out" in
        *"LeakSanitizer has encountered a fatal error"*)
            echo "note: $t: LeakSanitizer's tracer crashed; running it again"
            out=$("$t" 2>&1); rc=$? ;;
    esac
    printf '%s\n' "$out"
    p=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    f=$(printf '%s\n' "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | awk '{s+=$1} END {print s+0}')
    passed=$((passed + p)); failed=$((failed + f))
    if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
        failed=$((failed + 1)); broken="$broken $t(rc=$rc)"
    fi
done
[ -n "$broken" ] && echo "programs that failed without a cmocka summary:$broken"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
