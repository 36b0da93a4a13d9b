#!/bin/sh
# Runs every test program given, shows its output, and ends with one total
# line "N passed, N failed" summed from the cmocka summaries.
BUILD=${BUILD:-build}
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$(pwd)/$BUILD/pocl-cache}
export POCL_CACHE_DIR
mkdir -p "$POCL_CACHE_DIR"
ET_BUILD_DIR=$(pwd)/$BUILD
export ET_BUILD_DIR

# The suite's device (tests/suite_device.h): ET_TEST_DEVICE, which `make
# test DEVICE=cuda:0` sets; unset or empty, the first OpenCL device. A
# device asked for is looked up in `eintune devices` first, and the suite
# stops at once, saying why, when it is not there (no test would run on
# it). ET_TEST_OPENCL=0 tells the tests that keep OpenCL that there
# is no OpenCL device to keep.
ET_TEST_DEVICE=${ET_TEST_DEVICE:-}
if [ -n "$ET_TEST_DEVICE" ]; then
    export ET_TEST_DEVICE
    notes=$("$BUILD/eintune" devices --json "$BUILD/test-devices.json" \
                2>&1 >/dev/null)
    # one "SPEC<tab>NAME" line per device
    table=$(awk -F'"' '/"spec":/ {s = $4} /"name":/ {print s "\t" $4}' \
                "$BUILD/test-devices.json" 2>/dev/null)
    specs=$(printf '%s\n' "$table" | cut -f1)
    ocl=$(printf '%s\n' "$specs" | grep -c '^opencl:')
    found=no
    case $ET_TEST_DEVICE in
        opencl|cuda)
            printf '%s\n' "$specs" | grep -q "^$ET_TEST_DEVICE:" &&
                found=yes ;;
        cuda:*|opencl:*:*)
            printf '%s\n' "$specs" | grep -qxF "$ET_TEST_DEVICE" &&
                found=yes ;;
        opencl:*)
            sel=${ET_TEST_DEVICE#opencl:}
            case $sel in
                "") ;;
                *[!0-9]*)   # a name: part of an OpenCL device's name
                    printf '%s\n' "$table" | grep '^opencl:' | cut -f2 |
                        grep -qiF -- "$sel" && found=yes ;;
                *) [ "$sel" -lt "$ocl" ] && found=yes ;;
            esac ;;
    esac
    if [ "$found" != yes ]; then
        echo "tests/run.sh: no device $ET_TEST_DEVICE here" \
             "(make test DEVICE=$ET_TEST_DEVICE), so no test runs on it" >&2
        [ -n "$notes" ] && printf '%s\n' "$notes" >&2
        echo "devices here: $(echo $specs)" >&2
        echo "0 passed, 1 failed (no device $ET_TEST_DEVICE)"
        exit 1
    fi
    ET_TEST_OPENCL=$([ "$ocl" -gt 0 ] && echo 1 || echo 0)
    export ET_TEST_OPENCL
    echo "tests on $ET_TEST_DEVICE (OpenCL devices here: $ocl)"
fi
passed=0; failed=0; broken=""
for t in "$@"; do
    out=$("$t" 2>&1); rc=$?
    # LeakSanitizer's own tracer crashing at exit ("LeakSanitizer has
    # encountered a fatal error") is a tool failure, not a leak report.
    # Its known cause, the runtime misreading a dynamic TLS block, is
    # switched off by make asan (intercept_tls_get_addr=0, see the
    # Makefile); should it crash anyway, the program is run once more. A
    # real leak report still fails.
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
