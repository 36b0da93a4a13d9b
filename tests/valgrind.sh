#!/bin/sh
# tests/valgrind.sh PROGRAM... - runs each test program under valgrind
# memcheck (full leak check; definite and indirect leaks and every memory
# error fail the program), with tests/valgrind.supp for the OpenCL driver's,
# LLVM's and the font libraries' own leaks only. Device work under valgrind
# is 20-50x slower (PoCL's JIT), so `make valgrind` runs a subset. Worker
# processes started by exec are not traced (--trace-children=no); forked
# children are. Logs: $BUILD/valgrind/<program>.log. Ends with the total.
BUILD=${BUILD:-build}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$(pwd)/$BUILD/pocl-cache}
ET_BUILD_DIR=$(pwd)/$BUILD
ET_UNDER_VALGRIND=1
export POCL_CACHE_DIR ET_BUILD_DIR ET_UNDER_VALGRIND
mkdir -p "$POCL_CACHE_DIR" "$BUILD/valgrind"
if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind: not installed (apt-get install valgrind)" >&2
    exit 2
fi
ok=0; bad=""
for t in "$@"; do
    name=$(basename "$t")
    log=$BUILD/valgrind/$name.log
    start=$(date +%s)
    valgrind --tool=memcheck --leak-check=full \
        --errors-for-leak-kinds=definite,indirect \
        --show-leak-kinds=definite,indirect --error-exitcode=99 \
        --suppressions=tests/valgrind.supp --num-callers=30 \
        --log-file="$log" "$t" >"$log.out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    summary=$(grep -E "ERROR SUMMARY" "$log" | tail -n 1 | sed 's/^==[0-9]*== //')
    tests=$(grep -E "^\[  (PASSED|FAILED)  \]" "$log.out" | tr '\n' ' ')
    if [ "$rc" = 0 ]; then
        ok=$((ok + 1))
        echo "valgrind: $name ok (${secs}s) $tests- $summary"
    else
        bad="$bad $name"
        echo "valgrind: $name FAILED (exit $rc, ${secs}s) $tests- $summary; log $log" >&2
    fi
done
echo "valgrind: $ok clean${bad:+, failed:$bad}"
[ -z "$bad" ]
