#!/bin/sh
# cuda_cases.sh - the benchmark's cases 1, 2 and 5 (bench/README.md) on a
# CUDA device: eintune's tuned kernel against cuBLAS (bench/peer_cublas.c)
# and the untransformed kernel, back to back on the same device, with no
# Python, NumPy, CLBlast or OpenBLAS needed (the GPU machine has none of
# them; bench/bench.py is the OpenCL benchmark).
#
#   BUILD=build sh bench/cuda_cases.sh [OUTDIR]
#
# For each case and dtype: random inputs (build/bench/make_inputs), a
# tune on a scratch database (`eintune tune --budget BENCH_TUNE_BUDGET
# --time-limit BENCH_TUNE_TIME`), then BENCH_ROUNDS rounds of, back to
# back, `eintune run --best --time`, every cuBLAS variant (case 1 and 2:
# GEMM over the collapsed batch and the strided-batched GEMM with B shared;
# case 5: one GEMM and E strided-batched GEMMs, the way a BLAS user writes
# the DG operator) and `eintune run --time` of the untransformed kernel;
# each keeps its fastest round. GOps/s are the einsum's op count (`eintune
# check`) over the median time, for everyone.
#
# Writes OUTDIR (default $BUILD/bench/cuda): every command's JSON and log,
# summary.tsv and summary.md (the table, also on stdout). Exit status 0
# when every eintune step ran (a cuBLAS peer that cannot run is reported
# as not run, with why), 1 when one failed, 3 when there is no such device
# here (nothing run).
#
# Knobs: BENCH_DEVICE_SPEC (default cuda:0; another backend's device runs
# the eintune side alone), BENCH_CASES (default 1,2,5), BENCH_DTYPES
# (default "f32 f64"), BENCH_TUNE_BUDGET (60), BENCH_TUNE_TIME (20 s),
# BENCH_ROUNDS (3).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=${1:-$BUILD/bench/cuda}
DEV=${BENCH_DEVICE_SPEC:-cuda:0}
CASES=$(echo "${BENCH_CASES:-1,2,5}" | tr ',' ' ')
DTYPES=${BENCH_DTYPES:-f32 f64}
BUDGET=${BENCH_TUNE_BUDGET:-60}
TLIM=${BENCH_TUNE_TIME:-20}
ROUNDS=${BENCH_ROUNDS:-3}
BIN=$BUILD/eintune
BB=$BUILD/bench
mkdir -p "$OUT"
DB=$OUT/bench.db
rm -f "$DB" "$DB-wal" "$DB-shm"

log() { echo "[cuda_cases] $*" >&2; }

# the JSON number or string of a top-level key of eintune's output
top() { awk -F'\t' -v k="\"$2\":" '$2 == k {sub(/,$/, "", $3);
        gsub(/"/, "", $3); print $3; exit}' "$1" 2>/dev/null; }
# a key of a one-line JSON object (the peers')
flat() { sed -n "s/.*\"$2\": \"*\([^\",}]*\).*/\1/p" "$1" 2>/dev/null; }
# the smaller of two numbers, either may be empty
min() { awk -v a="$1" -v b="$2" 'BEGIN {if (a == "") print b;
        else if (b == "" || a + 0 <= b + 0) print a; else print b}'; }

case $DEV in
    cuda:*) ORD=${DEV#cuda:} ;;
    *) ORD= ;;
esac

# Is the device there? eintune says, and the peer's probe says why not.
if ! "$BIN" devices --json "$OUT/devices.json" > /dev/null \
        2> "$OUT/devices.err" ||
        ! grep -q "\"spec\":[[:space:]]*\"$DEV\"" "$OUT/devices.json"; then
    log "no device $DEV here: nothing run"
    [ -n "$ORD" ] && "$BB/peer_cublas" --device "$ORD" f32 gemm 8 8 8 \
        > /dev/null 2>> "$OUT/devices.err"
    cat "$OUT/devices.err" >&2
    exit 3
fi

einsum_of() {
    case $1 in
        1|2) echo "xik,kj->xij" ;;
        5) echo "xre,rij,xej->xei" ;;
    esac
}
shape_of() {
    case $1 in
        1) echo "x=4096,i=35,k=35,j=35" ;;
        2) echo "x=8,i=512,k=512,j=512" ;;
        5) echo "x=8192,r=3,i=20,j=20,e=4" ;;
    esac
}
# the cuBLAS variants: "label|arguments"
peers_of() {
    case $1 in
        1) echo "gemm|gemm 143360 35 35"
           echo "gemm_strided|gemm_strided 4096 35 35 35 1" ;;
        2) echo "gemm|gemm 4096 512 512"
           echo "gemm_strided|gemm_strided 8 512 512 512 1" ;;
        5) echo "gemm+batched|dg 8192 3 20 20 4" ;;
    esac
}

failed=0
printf 'case\tdtype\ttuned_s\ttuned_gops\tcublas_s\tcublas_gops\tcublas_variant\ttuned_over_cublas\tuntransformed_s\topts\tnote\n' \
    > "$OUT/summary.tsv"
for c in $CASES; do
    for dt in $DTYPES; do
        e=$(einsum_of "$c"); s=$(shape_of "$c")
        [ -n "$e" ] || { log "no case $c"; failed=1; continue; }
        d=$OUT/case${c}_$dt
        mkdir -p "$d"
        log "case $c $dt: $e at $s on $DEV"
        ops=$("$BIN" check "$e" --shape "$s" --dtype "$dt" --no-roofline \
                  --json - 2>/dev/null |
              awk -v t="\"$dt\":" '/"ops":/ {o = 1; next}
                                   o && $1 == t {sub(/,$/, "", $2);
                                   print $2; exit}')
        ins=$("$BUILD/bench/make_inputs" "$e" "$s" "$dt" "$d") ||
            { log "  inputs failed"; failed=1; continue; }
        set --
        for p in $ins; do set -- "$@" -i "$p"; done
        "$BIN" tune "$e" --shape "$s" --dtype "$dt" --budget "$BUDGET" \
            --time-limit "$TLIM" --db "$DB" --device "$DEV" \
            --json "$d/tune.json" > "$d/tune.out" 2> "$d/tune.log" ||
            { log "  tune failed: $(tail -n 1 "$d/tune.log")"; failed=1; }
        tuned= untr= opts= note=
        peer_best= peer_var= peers=$(peers_of "$c")
        r=1
        while [ "$r" -le "$ROUNDS" ]; do
            if "$BIN" run "$e" "$@" -o "$d/out.npy" --best --db "$DB" \
                    --time --device "$DEV" --json "$d/tuned_r$r.json" -q \
                    > "$d/tuned_r$r.log" 2>&1; then
                tuned=$(min "$tuned" "$(top "$d/tuned_r$r.json" time_s)")
                opts=$(top "$d/tuned_r$r.json" opts)
            else
                log "  run --best failed: $(tail -n 1 "$d/tuned_r$r.log")"
                failed=1
            fi
            printf '%s\n' "$peers" | while IFS='|' read -r label args; do
                [ -n "$label" ] || continue
                f=$d/cublas_${label}_r$r.json
                if [ -z "$ORD" ]; then
                    echo "{\"peer\": \"cublas\", \"not_run\": \"$DEV is not a CUDA device\"}" > "$f"
                else
                    # shellcheck disable=SC2086
                    "$BB/peer_cublas" --device "$ORD" "$dt" $args > "$f" \
                        2> "$d/cublas_${label}_r$r.log"
                fi
            done
            for f in "$d"/cublas_*_r$r.json; do
                [ -f "$f" ] || continue
                t=$(flat "$f" time_s)
                if [ -n "$t" ]; then
                    best=$(min "$peer_best" "$t")
                    if [ "$best" != "$peer_best" ]; then
                        peer_best=$best
                        peer_var=$(basename "$f" | sed 's/^cublas_//; s/_r[0-9]*\.json$//')
                    fi
                else
                    note="cuBLAS $(flat "$f" not_run)$(flat "$f" error)"
                fi
            done
            if "$BIN" run "$e" "$@" -o "$d/out_untransformed.npy" --time \
                    --device "$DEV" --json "$d/untransformed_r$r.json" -q \
                    > "$d/untransformed_r$r.log" 2>&1; then
                untr=$(min "$untr" "$(top "$d/untransformed_r$r.json" time_s)")
            else
                log "  untransformed run failed"
                failed=1
            fi
            r=$((r + 1))
        done
        [ -n "$peer_best" ] && note=
        row=$(awk -v c="$c" -v dt="$dt" -v ops="$ops" -v t="$tuned" \
                  -v p="$peer_best" -v pv="$peer_var" -v u="$untr" \
                  -v o="$opts" -v n="$note" 'BEGIN {
            g = (t > 0 && ops > 0) ? sprintf("%.1f", ops / t / 1e9) : "";
            pg = (p > 0 && ops > 0) ? sprintf("%.1f", ops / p / 1e9) : "";
            ra = (t > 0 && p > 0) ? sprintf("%.2f", p / t) : "";
            printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", c, dt, t, g,
                   p, pg, pv, ra, u, o, n}')
        printf '%s\n' "$row" >> "$OUT/summary.tsv"
        log "  tuned ${tuned:-(none)} s, cuBLAS ${peer_best:-(none)} s${note:+: $note}"
    done
done

# the table, for people
{
    echo "eintune against cuBLAS on $DEV ($(awk -F'"' -v d="$DEV" '/"spec":/ {s = $4} /"name":/ && s == d {print $4; exit}' "$OUT/devices.json")), $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "tune: budget $BUDGET, time limit $TLIM s; fastest of $ROUNDS back-to-back rounds; GOps/s: the einsum's op count over the median"
    echo
    echo "| case | dtype | tuned ms | tuned GOps/s | cuBLAS ms | cuBLAS GOps/s | variant | tuned/cuBLAS | untransformed ms | tuned opts | note |"
    echo "|---|---|---|---|---|---|---|---|---|---|---|"
    tail -n +2 "$OUT/summary.tsv" | awk -F'\t' '{
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | `%s` | %s |\n",
            $1, $2, ($3 == "" ? "-" : sprintf("%.4g", $3 * 1e3)), $4,
            ($5 == "" ? "-" : sprintf("%.4g", $5 * 1e3)), $6, $7,
            ($8 == "" ? "-" : $8 "x"),
            ($9 == "" ? "-" : sprintf("%.4g", $9 * 1e3)), $10, $11}'
    echo
    echo "tuned/cuBLAS: cuBLAS time over tuned time (above 1: eintune faster)"
} > "$OUT/summary.md"
cat "$OUT/summary.md"
exit "$failed"
