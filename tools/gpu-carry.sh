#!/bin/sh
# gpu-carry.sh - eintune on a GPU machine that has the NVIDIA driver and
# the CUDA toolkit but nothing else of ours (no compiler we can rely on,
# no libyaml, GSL, SQLite, cJSON, cairo, cmocka, Open MPI, no package
# registry): everything is built here, carried there in one git-ignored
# folder, and run there in one go (docs/measurement.md, "On a GPU
# machine").
#
#   sh tools/gpu-carry.sh build          here: build, fill build-gpu/
#   sh tools/gpu-carry.sh check          here: the carried tree runs
#   sh tools/gpu-carry.sh run [STAGE..]  there, in the repository root:
#                                        the stages, results under $OUT
#
# build: compiles eintune, its worker, libeintune.so, the test programs,
# the fake libcuda of the tests, the benchmark's CUDA programs
# (bench/peer_cublas.c, bench/make_inputs.c) and tools/cu_context_check.c
# in build-gpu-obj/ (plain `make` flags), then copies the binaries,
# without their debugging sections, into build-gpu/ as a build directory
# of their own (eintune and eintune-worker side by side, tests/, bench/),
# with lib/: every shared library `ldd` lists for them that is not part
# of a base system (glibc's libraries, the dynamic loader, libgcc_s) nor
# of the NVIDIA driver or the CUDA toolkit (libcuda, libnvrtc, libcublas
# are the GPU machine's own and are opened at run time). The OpenCL ICD
# loader (libOpenCL.so.1) is carried, as every program links it, but no
# OpenCL driver: there the OpenCL devices are whatever ICDs the machine
# registers (none, or NVIDIA's). build-gpu/env.sh sets the environment;
# build-gpu/MANIFEST lists what is carried, its size and the newest glibc
# symbol version the carry needs. Fails when the folder is not below
# 64 MiB.
#
# check: in an environment holding only PATH, sources build-gpu/env.sh
# and runs `eintune devices` (here: PoCL's device, through the carried
# ICD loader), the peer and the context check (both must say "no GPU"
# and exit 3), and checks with ldd that every carried program finds all
# its libraries and takes each carried one from build-gpu/lib.
#
# run: the stages, each with a time limit, all within GPU_DEADLINE
# seconds (default 560: a command there may run 600 s); every stage
# writes $OUT/STAGE.log (OUT defaults to build-gpu/out) and a line to
# $OUT/summary.txt:
#   devices    eintune devices, nvidia-smi, the toolkit's versions, ldd
#   suite      the test suite on cuda:0 (tests/run.sh; test_install and
#              test_kernel_matrix excepted; test_cli_run too when
#              /usr/bin/python3 has no NumPy); TESTS="test_a test_b"
#              runs those programs only
#   matrix     test_kernel_matrix on cuda:0
#   sanitizer  compute-sanitizer memcheck on a small `eintune tune` (the
#              worker followed: --target-processes all) and on
#              tools/cu_context_check (the library's launches in the
#              caller's context), then racecheck on the latter; skipped,
#              saying so, without compute-sanitizer
#   peaks      eintune peaks on cuda:0
#   bench      bench/cuda_cases.sh: cases 1, 2, 5 against cuBLAS
# Default: all of them, in this order. DEVICE (default cuda:0) picks the
# device. Exit status: the number of stages that failed.
set -u
cd "$(dirname "$0")/.."
CARRY=build-gpu
OBJ=build-gpu-obj
LIMIT_MB=64

say() { echo "gpu-carry: $*" >&2; }

# Libraries a base system has: glibc's, the loader, libgcc_s; and those
# of the NVIDIA driver and the CUDA toolkit.
is_base() {
    case $1 in
        linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|\
        libpthread.so*|librt.so*|libresolv.so*|libutil.so*|libanl.so*|\
        libgcc_s.so*|libcuda.so*|libnvrtc*|libcublas*|libcudart*|\
        libnvidia-*) return 0 ;;
    esac
    return 1
}

build() {
    JOBS=${JOBS:-2}
    say "building in $OBJ/ (make -j$JOBS)"
    tests=$(ls tests/test_*.c | sed "s|tests/\(.*\)\.c|$OBJ/tests/\1|")
    sos=$(ls tests/so/*.c | sed "s|tests/so/\(.*\)\.c|$OBJ/tests/\1.so|")
    # shellcheck disable=SC2086
    make --no-print-directory -s -j"$JOBS" BUILD="$OBJ" all $tests $sos \
        >&2 || { say "make failed"; return 1; }
    CC=${CC:-cc}
    FLAGS="-O2 -g -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow
 -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter"
    mkdir -p "$OBJ/bench"
    # shellcheck disable=SC2086
    $CC $FLAGS bench/peer_cublas.c -o "$OBJ/bench/peer_cublas" -ldl -lm &&
    $CC $FLAGS -Iinclude bench/make_inputs.c -o "$OBJ/bench/make_inputs" \
        -L"$OBJ" -leintune -Wl,-rpath,'$ORIGIN/..' &&
    $CC $FLAGS -Iinclude -I. tools/cu_context_check.c \
        -o "$OBJ/cu_context_check" -L"$OBJ" -leintune -ldl -lm \
        -Wl,-rpath,'$ORIGIN' || { say "the CUDA programs failed"; return 1; }

    rm -rf "$CARRY"
    mkdir -p "$CARRY/lib" "$CARRY/tests" "$CARRY/bench"
    # the programs, without debugging sections
    for f in "$OBJ/eintune" "$OBJ/eintune-worker" "$OBJ/cu_context_check" \
             "$OBJ"/libeintune.so.*.*.*; do
        strip --strip-debug -o "$CARRY/${f##*/}" "$f" || return 1
    done
    for l in "$OBJ"/libeintune.so "$OBJ"/libeintune.so.[0-9]*; do
        [ -L "$l" ] && cp -P "$l" "$CARRY/"
    done
    for f in $tests $sos; do
        [ -f "$f" ] || { say "missing $f"; return 1; }
        strip --strip-debug -o "$CARRY/tests/${f##*/}" "$f" || return 1
    done
    for f in peer_cublas make_inputs; do
        strip --strip-debug -o "$CARRY/bench/$f" "$OBJ/bench/$f" || return 1
    done

    # every library ldd finds for them, but the base system's
    progs=$(find "$CARRY" -type f -perm -u+x ! -path "$CARRY/lib/*")
    libs=$(for p in $progs; do LD_LIBRARY_PATH="$CARRY" ldd "$p"; done |
           awk '$2 == "=>" && $3 ~ /^\// {print $1 " " $3}' | sort -u)
    missing=$(for p in $progs; do LD_LIBRARY_PATH="$CARRY" ldd "$p"; done |
              grep "not found" | sort -u)
    [ -z "$missing" ] || { say "libraries not found: $missing"; return 1; }
    echo "$libs" | while read -r name path; do
        [ -n "$name" ] || continue
        is_base "$name" && continue
        case $path in "$PWD/$CARRY"/*|"$CARRY"/*) continue ;; esac
        # the file under the name the programs ask for
        cp -L "$path" "$CARRY/lib/$name"
    done
    write_env
    manifest
}

write_env() {
    cat > "$CARRY/env.sh" <<'EOF'
# env.sh - the environment of the carried build (tools/gpu-carry.sh):
# source it in the repository root, `. build-gpu/env.sh` (ET_CARRY: the
# folder, if it is elsewhere). The carried libraries come first on the
# loader's path, then the CUDA toolkit's (libnvrtc and libcublas are
# opened at run time by their names); the worker is found next to
# eintune and libeintune.so, and ET_WORKER names it for any other
# program. tests/run.sh then takes BUILD=build-gpu.
ET_CARRY=${ET_CARRY:-$(pwd)/build-gpu}
ET_CUDA_LIBS=
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         /usr/local/cuda/extras/CUPTI/lib64; do
    [ -d "$d" ] && ET_CUDA_LIBS="$ET_CUDA_LIBS:$d"
done
LD_LIBRARY_PATH="$ET_CARRY/lib:$ET_CARRY$ET_CUDA_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/bin /usr/local/cuda/compute-sanitizer; do
    [ -d "$d" ] && PATH="$PATH:$d"
done
PATH="$ET_CARRY:$PATH"
ET_BUILD_DIR=$ET_CARRY
ET_WORKER=$ET_CARRY/eintune-worker
export LD_LIBRARY_PATH PATH ET_BUILD_DIR ET_WORKER
unset ET_CUDA_LIBS
EOF
}

manifest() {
    bytes=$(du -sb "$CARRY" | cut -f1)
    glibc=$(find "$CARRY" -type f -perm -u+x -o -type f -name '*.so*' |
            xargs objdump -T 2>/dev/null | grep -o 'GLIBC_[0-9.]*' |
            sort -uV | tail -n 1)
    {
        echo "# build-gpu: carried by tools/gpu-carry.sh on $(date -u '+%Y-%m-%d %H:%M UTC')"
        commit=$(git rev-parse --short HEAD 2>/dev/null)
        git diff --quiet 2>/dev/null || commit="$commit (with changes)"
        os=$(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}")
        echo "# commit $commit, built on $os"
        echo "# $bytes bytes; needs glibc with $glibc (ldd --version there)"
        (cd "$CARRY" && find . -type f -o -type l | sort | while read -r f; do
            if [ -L "$f" ]; then echo "$f -> $(readlink "$f")"
            else echo "$f $(stat -c %s "$f")"; fi
        done)
    } > "$CARRY/MANIFEST"
    mb=$(( (bytes + 1048575) / 1048576 ))
    say "$CARRY/: $mb MiB ($bytes bytes), $(ls "$CARRY/lib" | wc -l) libraries carried, needs $glibc"
    if [ "$bytes" -ge $((LIMIT_MB * 1048576)) ]; then
        say "$CARRY/ is over $LIMIT_MB MiB: too large to carry"
        return 1
    fi
}

check() {
    [ -f "$CARRY/env.sh" ] || { say "no $CARRY/env.sh: build first"; return 1; }
    bad=0
    # nothing from this shell but PATH
    out=$(env -i PATH="$PATH" HOME="${HOME:-/tmp}" sh -c '
        . build-gpu/env.sh
        echo "== eintune devices"; eintune devices 2>&1; echo "exit $?"
        echo "== peer_cublas"; build-gpu/bench/peer_cublas f32 gemm 8 8 8 2>&1
        echo "exit $?"
        echo "== cu_context_check"; build-gpu/cu_context_check 2>&1
        echo "exit $?"
        echo "== ldd"
        for p in $(find build-gpu -type f -perm -u+x ! -path "build-gpu/lib/*"); do
            ldd "$p" | sed "s|^|$p: |"
        done')
    printf '%s\n' "$out" | sed -n '/^== ldd/q;p'
    lddout=$(printf '%s\n' "$out" | sed -n '/^== ldd/,$p')
    if printf '%s\n' "$lddout" | grep -q "not found"; then
        printf '%s\n' "$lddout" | grep "not found" >&2
        bad=1
    fi
    for l in $(ls "$CARRY/lib"); do
        if printf '%s\n' "$lddout" | grep " $l => " | grep -vq "$CARRY/lib/$l"; then
            say "$l is not taken from $CARRY/lib"
            bad=1
        fi
    done
    printf '%s\n' "$out" | grep -q '^opencl:' ||
        { say "eintune devices lists no OpenCL device"; bad=1; }
    [ "$(printf '%s\n' "$out" | grep -c '^exit 3$')" = 2 ] ||
        { say "the peer and the context check did not both say 'not run' (3)"; bad=1; }
    n=$(printf '%s\n' "$lddout" | grep -c '=>')
    [ "$bad" = 0 ] && say "check passed: $n library references resolved, every carried library from $CARRY/lib"
    return "$bad"
}

# ---- on the GPU machine ----------------------------------------------------

T0=$(date +%s)
DEADLINE=${GPU_DEADLINE:-560}

# seconds left, at most $1
budget() {
    left=$((DEADLINE - ($(date +%s) - T0) - 10))
    [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}

# stage NAME CAP: runs st_NAME in a shell of its own with a time limit,
# its output into $OUT/NAME.log
stage() {
    name=$1 cap=$2
    lim=$(budget "$cap")
    if [ "$lim" -le 5 ]; then
        echo "$name: not run: no time left (GPU_DEADLINE=$DEADLINE)" |
            tee -a "$OUT/summary.txt"
        fails=$((fails + 1))
        return
    fi
    s=$(date +%s)
    timeout -k 5 "$lim" sh tools/gpu-carry.sh "st_${name}_sh" \
        > "$OUT/$name.log" 2>&1
    rc=$?
    e=$(($(date +%s) - s))
    what="exit $rc"
    [ "$rc" = 124 ] && what="timed out after $lim s"
    pat="passed, [0-9]+ failed|^kernel matrix:|ERROR SUMMARY|FAILED"
    pat="$pat|all launches right|not run|^no device"
    tail_line=$(grep -E "$pat" "$OUT/$name.log" | tail -n 1)
    echo "$name: $what, $e s${tail_line:+: $tail_line}" | tee -a "$OUT/summary.txt"
    [ "$rc" = 0 ] || fails=$((fails + 1))
}

st_devices() {
    echo "== eintune devices"; eintune devices; echo "exit $?"
    eintune devices --json "$OUT/devices.json" > /dev/null 2>&1
    echo "== nvidia-smi"; nvidia-smi 2>&1 | head -20
    echo "== nvcc"; nvcc --version 2>&1 | tail -2
    echo "== compute-sanitizer"; compute-sanitizer --version 2>&1 | head -2
    echo "== glibc"; ldd --version 2>&1 | head -1; grep -m1 glibc build-gpu/MANIFEST
    echo "== python3"; /usr/bin/python3 -c 'import numpy; print("numpy", numpy.__version__)' 2>&1
    echo "== ldd eintune"; ldd build-gpu/eintune
    eintune devices --json - 2>/dev/null | grep -q "\"$DEVICE\"" ||
        { echo "no device $DEVICE"; return 1; }
}

st_suite() {
    list=
    for t in ${TESTS:-build-gpu/tests/test_*}; do
        case $t in */*) ;; *) t=build-gpu/tests/$t ;; esac
        case ${t##*/} in
            test_install|test_kernel_matrix|*.so) continue ;;
            test_cli_run)
                if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
                    echo "test_cli_run left out: /usr/bin/python3 has no NumPy"
                    continue
                fi ;;
        esac
        list="$list $t"
    done
    echo "test_install left out: it runs make install with this machine's compiler and packages"
    # shellcheck disable=SC2086
    ET_TEST_DEVICE=$DEVICE BUILD=build-gpu sh tests/run.sh $list
}

st_matrix() {
    ET_TEST_DEVICE=$DEVICE build-gpu/tests/test_kernel_matrix
}

st_sanitizer() {
    cs=$(command -v compute-sanitizer)
    if [ -z "$cs" ]; then
        echo "compute-sanitizer: not run: not found (PATH, /usr/local/cuda/bin)"
        return 0
    fi
    ord=${DEVICE#cuda:}
    rc=0
    # the tune's peaks, measured under the sanitizer (far slower memory),
    # go to a cache of their own, never the one the peaks and bench read
    XDG_CACHE_HOME=$OUT/xdg-sanitizer
    export XDG_CACHE_HOME
    echo "== memcheck: eintune tune (the worker followed)"
    "$cs" --tool memcheck --target-processes all --error-exitcode 9 \
        build-gpu/eintune tune "xik,kj->xij" --shape x=64,i=16,k=16,j=16 \
        --dtype f32 --budget 6 --device "$DEVICE" --db "$OUT/sanitizer.db" \
        --json "$OUT/sanitizer_tune.json" || rc=1
    echo "== memcheck: tools/cu_context_check (launches in the caller's context)"
    "$cs" --tool memcheck --leak-check full --error-exitcode 9 \
        build-gpu/cu_context_check --device "$ord" || rc=1
    echo "== racecheck: tools/cu_context_check"
    "$cs" --tool racecheck --error-exitcode 9 \
        build-gpu/cu_context_check --device "$ord" || rc=1
    return "$rc"
}

st_peaks() {
    eintune peaks --device "$DEVICE" --db "$OUT/peaks.db" \
        --json "$OUT/peaks.json"
}

st_bench() {
    BUILD=build-gpu BENCH_DEVICE_SPEC=$DEVICE sh bench/cuda_cases.sh \
        "$OUT/bench"
}

run() {
    [ -f build-gpu/env.sh ] || { say "no build-gpu/env.sh: carry it first"; exit 99; }
    . build-gpu/env.sh
    DEVICE=${DEVICE:-cuda:0}
    OUT=${OUT:-build-gpu/out}
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    # caches and databases of this run, under $OUT
    XDG_CACHE_HOME=$OUT/xdg
    POCL_CACHE_DIR=$OUT/pocl-cache
    export XDG_CACHE_HOME POCL_CACHE_DIR
    export DEVICE OUT
    # the carry's libraries need this glibc (MANIFEST); an older one makes
    # every program fail to start: say so before anything runs
    need=$(sed -n 's/.*needs glibc with GLIBC_\([0-9.]*\).*/\1/p' \
               build-gpu/MANIFEST)
    have=$(ldd --version 2>/dev/null | sed -n '1s/.* \([0-9][0-9.]*\)$/\1/p')
    if [ -n "$need" ] && [ -n "$have" ] &&
       [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -n 1)" != "$need" ]; then
        echo "gpu-carry: this machine's glibc $have is older than the" \
             "$need the carried libraries need (build-gpu/MANIFEST):" \
             "nothing run" |
            tee -a "$OUT/summary.txt"
        exit 98
    fi
    fails=0
    stages=${*:-devices suite matrix sanitizer peaks bench}
    echo "gpu-carry run on $(uname -n) $(date -u '+%Y-%m-%d %H:%M UTC'): $stages on $DEVICE" |
        tee -a "$OUT/summary.txt"
    for s in $stages; do
        case $s in
            devices) stage devices 60 ;;
            suite) stage suite 330 ;;
            matrix) stage matrix 300 ;;
            sanitizer) stage sanitizer 300 ;;
            peaks) stage peaks 120 ;;
            bench) stage bench 420 ;;
            *) echo "$s: no such stage" | tee -a "$OUT/summary.txt"
               fails=$((fails + 1)) ;;
        esac
    done
    exit "$fails"
}

case ${1:-build} in
    build) build ;;
    check) check ;;
    run) shift; run "$@" ;;
    # a stage in a shell of its own (stage runs it under timeout)
    st_*_sh) f=${1%_sh}; "$f" ;;
    *) echo "usage: sh tools/gpu-carry.sh build | check | run [STAGE ...]" >&2
       exit 2 ;;
esac
