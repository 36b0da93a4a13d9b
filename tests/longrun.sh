#!/bin/sh
# tests/longrun.sh [SECONDS] [SAMPLE_S] - a long tuning run with its memory
# sampled (not part of `make test`). Runs `eintune tune` with random search
# over the built-in action pool for SECONDS (default 1800) on a scratch
# database, and every SAMPLE_S seconds (default 30) records the resident
# set size of eintune and of its device worker in build/longrun/rss.csv.
# At the end it prints the first, last and largest figures and the
# database's trial count; it exits non-zero when the tune failed or when
# eintune's own memory grew by more than 20 % from the first sample after
# warm-up (the fourth) to the last.
#   EINSUM, SHAPE, DTYPE choose the problem (default: the tutorial's
#   batched matmul, x=4096, i=k=j=35, f32).
set -u
SECS=${1:-1800}
STEP=${2:-30}
EINSUM=${EINSUM:-"xik,kj->xij"}
SHAPE=${SHAPE:-"x=4096,i=35,k=35,j=35"}
DTYPE=${DTYPE:-f32}
cd "$(dirname "$0")/.." || exit 2
BUILD=${BUILD:-build}
OUT=$BUILD/longrun
rm -rf "$OUT"
mkdir -p "$OUT"
POCL_CACHE_DIR=${POCL_CACHE_DIR:-$(pwd)/$OUT/pocl-cache}
export POCL_CACHE_DIR

rss_kb() { # pid -> VmRSS in kB, or 0
    sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\) kB/\1/p' "/proc/$1/status" \
        2>/dev/null || echo 0
}

"$BUILD/eintune" tune "$EINSUM" --shape "$SHAPE" --dtype "$DTYPE" \
    --search random --budget 1000000 --time-limit "$SECS" --seed 7 \
    --db "$OUT/tuning.db" --json "$OUT/result.json" \
    >"$OUT/tune.log" 2>&1 &
pid=$!
echo "t_s,eintune_rss_kb,worker_rss_kb,worker_pid" >"$OUT/rss.csv"
t=0
while kill -0 "$pid" 2>/dev/null; do
    w=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}')
    er=$(rss_kb "$pid")
    wr=0
    [ -n "$w" ] && wr=$(rss_kb "$w")
    [ -n "$er" ] && [ "$er" != 0 ] &&
        echo "$t,$er,${wr:-0},${w:-0}" >>"$OUT/rss.csv"
    sleep "$STEP"
    t=$((t + STEP))
done
wait "$pid"
rc=$?
echo "tune exit status $rc; log $OUT/tune.log; samples $OUT/rss.csv"
tail -n 3 "$OUT/tune.log"
awk -F, 'NR == 2 {f = $2; fw = $3}
         NR == 5 {w = $2; ww = $3}
         NR > 1 {l = $2; lw = $3; if ($2 > m) m = $2; if ($3 > mw) mw = $3; n++}
         END {
           if (w == "") {w = f; ww = fw}
           printf "eintune RSS kB: first %d, after warm-up %d, last %d, max %d (%d samples)\n", f, w, l, m, n
           printf "worker  RSS kB: first %d, after warm-up %d, last %d, max %d\n", fw, ww, lw, mw
           if (l > 1.2 * w) { print "eintune memory grew by more than 20 %"; exit 1 }
         }' "$OUT/rss.csv"
grow=$?
if command -v sqlite3 >/dev/null 2>&1; then
    echo "trials in the database: $(sqlite3 "$OUT/tuning.db" \
        'select count(*) from trials' 2>/dev/null)"
fi
[ "$rc" = 0 ] && [ "$grow" = 0 ]
