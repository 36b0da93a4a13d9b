#!/bin/sh
# fuzz/run.sh [SECONDS] - builds the libFuzzer drivers in build-fuzz/ with
# clang (ASan + UBSan, the einsum/ sources compiled in directly) and runs
# each for SECONDS (default 30) from a scratch copy of its seed corpus in
# tests/fuzz-corpus/<name>/, so the repository corpus is never modified.
# Crash, leak, timeout and OOM inputs are kept as build-fuzz/<name>-crash-*.
# Exits non-zero if a driver failed to build or any fuzzer found something.
# FUZZERS="einsum npy opts space" chooses which; FUZZ_CC overrides clang.
# Each driver is linked with the layers it exercises: einsum and npy with
# einsum/, opts with transforms/ as well, space with spaces/ and libyaml.
set -u
SECS=${1:-30}
[ -n "$SECS" ] || SECS=30
CC=${FUZZ_CC:-clang}
OUT=build-fuzz
FUZZERS=${FUZZERS:-"einsum npy opts space"}
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
    case $name in
    opts)  src="einsum/*.c transforms/*.c"; libs="" ;;
    space) src="einsum/*.c transforms/*.c spaces/*.c"
           libs=$(pkg-config --libs yaml-0.1 2>/dev/null || echo -lyaml) ;;
    *)     src="einsum/*.c"; libs="" ;;
    esac
    echo "fuzz: building $bin"
    # shellcheck disable=SC2086
    if ! $CC $CFLAGS "fuzz/fuzz_$name.c" $src $libs -lm -lpthread -o "$bin"
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
    "$bin" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$OUT/$name-" -print_final_stats=1 "$scratch" \
        >"$OUT/$name.log" 2>&1
    rc=$?
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
