#!/bin/sh
# tests/valgrind.sh PROGRAM... - runs each test program under valgrind
# memcheck (full leak check; definite and indirect leaks and every memory
# error fail the program), with tests/valgrind.supp for the OpenCL driver's,
# LLVM's, NVRTC's and the font libraries' own leaks only. Device work under
# valgrind is 20-50x slower (PoCL's JIT); the tests reduce their device work
# when ET_UNDER_VALGRIND is set (each says what it leaves out).
#
# Children: forked children are always traced. Programs started by exec
# (the device worker build/eintune-worker, the CLI build/eintune that the
# CLI tests run) are not, unless VALGRIND_CHILDREN says so:
#   VALGRIND_CHILDREN=no      (default) only the test program itself
#   VALGRIND_CHILDREN=cli     exec'd children too, except the device worker
#   VALGRIND_CHILDREN=yes     every exec'd child, the device worker included
#   VALGRIND_CHILDREN=worker  the device worker through tests/valgrind-worker.sh
#                             (ET_WORKER), in a session of its own so that
#                             it lives to write its leak summary; see there
# System programs (/usr/*, /bin/*: the linker PoCL runs for each kernel)
# are never traced: ld's own leaks would fail PoCL's link.
# With children traced each process gets its own log,
# $BUILD/valgrind/<program>.<pid>.log (the worker's, with =worker,
# <program>.worker.<pid>.log), and the program fails if any of them
# reports an error or a definite/indirect leak. A log without an ERROR
# SUMMARY belongs to a forked child that exec'd an untraced program (PoCL
# runs ld for each kernel it compiles) when its parent is traced too, or
# else to a process killed before it could exit (a worker a test crashes
# or times out on purpose, or, with =yes, one the library kills 2 s after
# asking it to close, which a traced worker usually needs longer than):
# both are counted and shown, neither is a failure.
# Without children: $BUILD/valgrind/<program>.log. The program's own output
# goes to $BUILD/valgrind/<program>.log.out. Ends with the total.
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
children=${VALGRIND_CHILDREN:-no}
opts="--tool=memcheck --leak-check=full --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect --error-exitcode=99 --suppressions=$(pwd)/tests/valgrind.supp --num-callers=30"
case "$children" in
    no) trace="--trace-children=no" ;;
    worker)
        trace="--trace-children=no"
        ET_WORKER=$(pwd)/tests/valgrind-worker.sh
        ET_VALGRIND_OPTS=$opts
        export ET_WORKER ET_VALGRIND_OPTS ;;
    cli) trace="--trace-children=yes --trace-children-skip=/usr/*,/bin/*,*/eintune-worker" ;;
    yes) trace="--trace-children=yes --trace-children-skip=/usr/*,/bin/*" ;;
    *) echo "valgrind: VALGRIND_CHILDREN must be no, cli, yes or worker" >&2; exit 2 ;;
esac
ok=0; bad=""
for t in "$@"; do
    name=$(basename "$t")
    out=$BUILD/valgrind/$name.log.out
    rm -f "$BUILD/valgrind/$name.log" "$BUILD/valgrind/$name".[0-9]*.log \
        "$BUILD/valgrind/$name".worker.[0-9]*.log
    if [ "$children" = no ] || [ "$children" = worker ]; then
        log=$BUILD/valgrind/$name.log
    else
        log=$BUILD/valgrind/$name.%p.log
    fi
    ET_VALGRIND_WORKER_LOG=$(pwd)/$BUILD/valgrind/$name.worker.%p.log
    export ET_VALGRIND_WORKER_LOG
    start=$(date +%s)
    set -f # $opts and $trace are split into words, their * left alone
    valgrind $opts $trace --log-file="$log" "$t" >"$out" 2>&1
    rc=$?
    set +f
    # workers in their own session may still be checking their heap
    for l in "$BUILD/valgrind/$name".worker.[0-9]*.log; do
        [ -e "$l" ] || continue
        pid=${l##*.worker.}; pid=${pid%.log}
        i=0
        while kill -0 "$pid" 2>/dev/null && [ $i -lt 300 ]; do
            sleep 1; i=$((i + 1))
        done
    done
    secs=$(( $(date +%s) - start ))
    tests=$(grep -E "^\[  (PASSED|FAILED)  \]" "$out" | tr '\n' ' ')
    if [ "$children" = no ]; then
        summary=$(grep -E "ERROR SUMMARY" "$log" | tail -n 1 | sed 's/^==[0-9]*== //')
    else
        # every process's log: errors in any fail the program. A log
        # without a summary whose parent is traced too is a forked child
        # that exec'd an untraced program (PoCL running ld, the library
        # starting the worker): not counted as killed.
        logs=""
        for l in "$BUILD/valgrind/$name".[0-9]*.log "$log" \
                 "$BUILD/valgrind/$name".worker.[0-9]*.log; do
            [ -e "$l" ] && logs="$logs $l"
        done
        pids=" $(for l in $logs; do sed -n 's/^==\([0-9]*\)==.*/\1/p;q' "$l"; done | tr '\n' ' ')"
        nlogs=0; nerr=0; killed=0; execd=0; dirty=""
        for l in $logs; do
            e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$l" | tail -n 1)
            pp=$(sed -n 's/.*Parent PID: \([0-9]*\).*/\1/p' "$l" | head -n 1)
            if [ -z "$e" ]; then
                case "$pids" in
                    *" $pp "*) execd=$((execd + 1)); continue ;;
                esac
                killed=$((killed + 1))
            elif [ "$e" != 0 ]; then
                nerr=$((nerr + e)); dirty="$dirty $l"
            fi
            nlogs=$((nlogs + 1))
        done
        summary="$nlogs processes, $nerr errors, $killed killed before their summary, $execd forks that exec'd an untraced program"
        [ -n "$dirty" ] && summary="$summary; errors in:$dirty"
        [ "$rc" = 0 ] && [ "$nerr" != 0 ] && rc=99
    fi
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
