#!/bin/sh
# tests/valgrind-worker.sh --fd N --parent PID - the device worker under
# valgrind memcheck, for VALGRIND_CHILDREN=worker in tests/valgrind.sh,
# which sets ET_WORKER to this script (measure/remote.c runs $ET_WORKER in
# place of build/eintune-worker).
#
# Why a wrapper and not --trace-children=yes: the library gives a worker
# it asked to close 15 s to exit (2 s one that did not answer) before it
# kills the worker's process group (reap() in measure/remote.c), and a
# worker under memcheck can need longer to close PoCL and check its heap,
# so a traced worker may be killed before it writes its leak summary. Here the worker runs in a session of its own
# (setsid), out of reach of that kill: the wrapper stands in for it in the
# library's process group, and the worker still exits on its own when the
# library closes the socket. The worker is told the wrapper is its parent
# (--parent $$) for its getppid() check. The PR_SET_PDEATHSIG the library
# arms applies to the wrapper only, so a worker that hangs on purpose
# (a test hook) outlives the test until the socket closes; do not use this
# with test programs that hang the worker (test_worker, test_faults).
#
# Environment (set by tests/valgrind.sh): ET_VALGRIND_OPTS the memcheck
# options, ET_VALGRIND_WORKER_LOG the log file pattern (with %p),
# ET_BUILD_DIR the build directory.
fd=3
while [ $# -gt 1 ]; do
    case "$1" in
        --fd) fd=$2 ;;
    esac
    shift 2
done
set -f
# shellcheck disable=SC2086 # ET_VALGRIND_OPTS is a list of options
setsid valgrind $ET_VALGRIND_OPTS --log-file="$ET_VALGRIND_WORKER_LOG" \
    "$ET_BUILD_DIR/eintune-worker" --fd "$fd" --parent $$ &
w=$!
# the socket stays open in the worker only: its end is the library's EOF
eval "exec $fd>&-"
wait $w
