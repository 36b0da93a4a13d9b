#!/bin/sh
# `make bench`: builds the benchmark drivers into build/bench/ and runs the
# suite (bench/bench.py): the cases against CLBlast and OpenBLAS, search
# efficiency, and the cost of an open axis (case 1 tuned with x=*, timed
# at x=4096 against the concrete best; BENCH_OPEN=0 skips it). See
# bench/README.md. QUICK=1 for a smoke run.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUTDIR="$BUILD/bench"
mkdir -p "$OUTDIR"
# the packages (CLBlast, OpenBLAS, ...) on a fresh machine, and the worker
# program eintune starts (the Makefile's bench target builds only the
# command)
sh tools/deps.sh
${MAKE:-make} --no-print-directory -s BUILD="$BUILD" all >&2
CC=${CC:-cc}
PKGS="yaml-0.1 gsl OpenCL sqlite3 libcjson cairo"
FLAGS="-O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow
 -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
 ${EXTRA_CFLAGS:-}"

# shellcheck disable=SC2086
{
$CC $FLAGS -DCL_TARGET_OPENCL_VERSION=120 bench/peer_clblast.c \
    -o "$OUTDIR/peer_clblast" -lclblast -lOpenCL -lm
$CC $FLAGS $(pkg-config --cflags openblas) bench/peer_openblas.c \
    -o "$OUTDIR/peer_openblas" $(pkg-config --libs openblas) -lm
$CC $FLAGS $(pkg-config --cflags cairo) bench/plot_curve.c \
    -o "$OUTDIR/plot_curve" $(pkg-config --libs cairo) -lm
$CC $FLAGS -Iinclude -I. -DCL_TARGET_OPENCL_VERSION=120 \
    $(pkg-config --cflags $PKGS) bench/search_curve.c "$BUILD/libeintune.a" \
    $(pkg-config --libs $PKGS) -ldl -lm -lpthread -o "$OUTDIR/search_curve"
# the CUDA side (bench/cuda_cases.sh): nothing linked but libc, libdl and
# libeintune.so; libcuda and libcublas are opened at run time
$CC $FLAGS bench/peer_cublas.c -o "$OUTDIR/peer_cublas" -ldl -lm
$CC $FLAGS -Iinclude bench/make_inputs.c -o "$OUTDIR/make_inputs" \
    -L"$BUILD" -leintune -Wl,-rpath,'$ORIGIN/..'
}

# Debian's python3 has NumPy (python3-numpy); a python3 earlier on PATH
# may not.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" bench/bench.py

# ---- batched einsums (bench/batched.py): the DG gradient, divergence and
# face mass, one fused kernel against the single einsum launched per row;
# ids g d f in BENCH_CASES, BENCH_BATCHED=0 skips; its results go into the
# same JSON (key "batched") and report (a section)
exec "$PY" bench/batched.py
