#!/bin/sh
# Makes bench/reference_best.json: the reference bests of bench cases 1 and 2
# for the search-efficiency part of `make bench`, each found once by a long
# wide-beam run (beam width 16, budget 400 candidates, a time limit) of the
# default space on a scratch database. Takes 30-45 min on the 2-core PoCL
# machine; run it again when the renderer or the default space change a lot.
#
#   sh bench/make_reference.sh [WORKDIR]
#
# WORKDIR keeps the runs' JSON, logs and database (default: a temp dir).
# SKIP_RUN=1 only assembles the file from the JSON already in WORKDIR.
# REF_CASES=2 (or 1) makes only that case's reference again and keeps the
# other case's entry of the file as it is; REF_BUDGET sets the candidates
# (default 400).
set -eu
cd "$(dirname "$0")/.."
W=${1:-$(mktemp -d)}
mkdir -p "$W"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$W/pocl}"
if [ "${SKIP_RUN:-0}" = 0 ]; then
make --no-print-directory -s all >&2
git rev-parse HEAD > "$W/commit"

# case dtype einsum shape time-limit
while read -r c dt es sh lim; do
    [ -n "$c" ] || continue
    case ",${REF_CASES:-1,2}," in *",$c,"*) ;; *) continue ;; esac
    echo "reference: case $c $dt ($lim s at most)" >&2
    build/eintune tune "$es" --shape "$sh" --dtype "$dt" --search beam \
        --beam-width 16 --budget "${REF_BUDGET:-400}" --time-limit "$lim" \
        --db "$W/ref.db" --json "$W/case${c}_$dt.json" \
        2> "$W/case${c}_$dt.err"
done <<EOF
1 f64 xik,kj->xij x=4096,i=35,k=35,j=35 1200
2 f32 xik,kj->xij x=8,i=512,k=512,j=512 1500
EOF
fi

/usr/bin/python3 - "$W" "${REF_CASES:-1,2}" "${REF_BUDGET:-400}" <<'PY'
import datetime, json, os, sys
w = sys.argv[1]
only = sys.argv[2].split(",")
budget = int(sys.argv[3])
commit = open(os.path.join(w, "commit")).read().strip()
with open("bench/reference_best.json") as f:
    prev = json.load(f)
old = {r["case"]: r for r in prev["references"]}
old_date = prev.get("date")
refs = []
for case, dt, lim, shape in (("1", "f64", 1200, "x=4096,i=35,k=35,j=35"),
                             ("2", "f32", 1500, "x=8,i=512,k=512,j=512")):
    if case not in only:
        refs.append(old[case])
        continue
    d = json.load(open(os.path.join(w, "case%s_%s.json" % (case, dt))))
    b = d["best"]
    refs.append(dict(
        case=case, dtype=dt, einsum=d["einsum"], shape=shape,
        opts=b["opts"], kernel=b.get("kernel"), time_s=b["time_s"],
        ci95_s=b["ci95_s"], gops=b["gops"], roofline_gops=b["roofline_gops"],
        device=d["device"], space=d["space"], search="beam",
        beam_width=16, budget=budget, time_limit_s=lim,
        evaluations=d["evaluations"], failures=d["failures"],
        elapsed_s=d["elapsed_s"], stop_reason=d.get("stop_reason"),
        commit=commit, date=datetime.date.today().isoformat(),
        command="eintune tune %s --shape %s --dtype %s --search beam "
                "--beam-width 16 --budget %d --time-limit %d --db SCRATCH"
                % (d["einsum"], shape, dt, budget, lim)))
doc = dict(made_by="sh bench/make_reference.sh",
           date=datetime.date.today().isoformat(), references=refs)
for r in refs:
    r.setdefault("date", old_date)
with open("bench/reference_best.json", "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
PY
echo "wrote bench/reference_best.json" >&2
