#!/bin/sh
# fuzz/run.sh [SECONDS] - builds the libFuzzer drivers in build-fuzz/ with
# clang (ASan + UBSan, the einsum/ sources compiled in directly) and runs
# each for SECONDS (default 30) from a scratch copy of its seed corpus in
# tests/fuzz-corpus/<name>/, so the repository corpus is never modified.
# Crash, leak, timeout and OOM inputs are kept as build-fuzz/<name>-crash-*.
# Exits non-zero if a driver failed to build or any fuzzer found something.
# FUZZERS="einsum npy opts space delivery" chooses which; FUZZ_CC overrides
# clang. Each driver is linked with the layers it exercises: einsum and npy
# with einsum/, opts with transforms/ as well, space with spaces/ and
# libyaml, delivery with measure/ too: it runs kernels on the first OpenCL
# device through the device worker of the plain build ($BUILD, default
# build/; made here when missing), a few inputs a second, and leaves the
# kernels PoCL compiled in build-fuzz/pocl-delivery (removed after).
set -u
SECS=${1:-30}
[ -n "$SECS" ] || SECS=30
CC=${FUZZ_CC:-clang}
OUT=build-fuzz
FUZZERS=${FUZZERS:-"einsum npy opts space delivery"}
BUILD=${BUILD:-build}
CFLAGS="-g -O1 -std=c11 -D_GNU_SOURCE -Iinclude -I. -fno-omit-frame-pointer
        -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"

cd "$(dirname "$0")/.." || exit 2
if ! command -v "$CC" >/dev/null 2>&1; then
    echo "fuzz: $CC not found (install clang and libclang-rt-14-dev)" >&2
    exit 2
fi
mkdir -p "$OUT"
status=0
for name in $FUZZERS; do
    bin=$OUT/fuzz_$name
    extra=""
    case $name in
    opts)  src="einsum/*.c transforms/*.c"; libs="" ;;
    space) src="einsum/*.c transforms/*.c spaces/*.c"
           libs=$(pkg-config --libs yaml-0.1 2>/dev/null || echo -lyaml) ;;
    delivery)
           src="base/*.c einsum/*.c transforms/*.c measure/*.c
                measure/opencl/*.c measure/cuda/*.c"
           libs="$(pkg-config --libs OpenCL gsl 2>/dev/null ||
                   echo -lOpenCL -lgsl -lgslcblas) -ldl"
           # as the Makefile compiles measure/
           extra="-DCL_TARGET_OPENCL_VERSION=120"
           cuda=${CUDA:-/usr/local/cuda}
           [ -f "$cuda/include/cuda.h" ] &&
               extra="$extra -DET_HAVE_CUDA_H -I$cuda/include"
           if [ ! -x "$BUILD/eintune-worker" ] &&
              ! ${MAKE:-make} -s "$BUILD/eintune-worker"; then
               echo "fuzz: building $BUILD/eintune-worker failed" >&2
               status=1
               continue
           fi ;;
    *)     src="einsum/*.c"; libs="" ;;
    esac
    echo "fuzz: building $bin"
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS $extra "fuzz/fuzz_$name.c" $src $libs -lm -lpthread \
        -o "$bin"
    then
        echo "fuzz: building $bin failed" >&2
        status=1
        continue
    fi
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/eintune-fuzz-$name.XXXXXX")
    if [ -d "tests/fuzz-corpus/$name" ]; then
        cp tests/fuzz-corpus/"$name"/* "$scratch"/ 2>/dev/null
    fi
    rm -f "$OUT/$name"-crash-* "$OUT/$name"-leak-* "$OUT/$name"-timeout-* \
          "$OUT/$name"-oom-*
    echo "fuzz: running $name for ${SECS}s"
    timeout=10
    max_len=""
    if [ "$name" = delivery ]; then
        # PoCL compiles each kernel (0.1-1 s); the worker has a private
        # kernel cache
        timeout=120
        max_len="-max_len=64 -len_control=0"
        ET_WORKER=$(pwd)/$BUILD/eintune-worker
        POCL_CACHE_DIR=$(pwd)/$OUT/pocl-delivery
        export ET_WORKER POCL_CACHE_DIR
        mkdir -p "$POCL_CACHE_DIR"
    fi
    # shellcheck disable=SC2086
    "$bin" -max_total_time="$SECS" -timeout=$timeout -rss_limit_mb=2048 \
        $max_len -artifact_prefix="$OUT/$name-" -print_final_stats=1 "$scratch" \
        >"$OUT/$name.log" 2>&1
    rc=$?
    [ "$name" = delivery ] && rm -rf "$OUT/pocl-delivery"
    tail -n 20 "$OUT/$name.log" | grep -E "stat::number_of_executed_units|Done|ERROR|SUMMARY" || true
    found=$(ls "$OUT/$name"-crash-* "$OUT/$name"-leak-* \
               "$OUT/$name"-timeout-* "$OUT/$name"-oom-* 2>/dev/null)
    if [ "$rc" != 0 ] || [ -n "$found" ]; then
        echo "fuzz: $name FAILED (exit $rc); log $OUT/$name.log" >&2
        for f in $found; do echo "  $f" >&2; done
        grep -m 5 -E "ERROR|runtime error|SUMMARY" "$OUT/$name.log" >&2
        status=1
    else
        echo "fuzz: $name ok"
    fi
    rm -rf "$scratch"
done
exit $status
