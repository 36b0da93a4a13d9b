"""eintune benchmark suite: tuned kernels against CLBlast (same OpenCL device)
and OpenBLAS (host), and search efficiency against a stored reference best.

Run through `make bench` (bench/run.sh builds the drivers, then runs this
with Debian's /usr/bin/python3, which has NumPy). See bench/README.md for
what every number means. Environment knobs:

  QUICK=1            smoke test (<= 3 min): cases 1 and 4a in f32, tiny
                     budgets, the beam curve of case 1 only
  BENCH_OUT=FILE     JSON result (default bench/results/latest.json,
                     QUICK: bench/results/quick/latest.json); the report
                     (.md), curves and plots go beside it (prefixed
                     with its name when that is not latest: fifth.json,
                     fifth_curve_case1_f64.png)
  BENCH_DB=FILE      reuse this tuning database instead of a scratch one
                     (tuned kernels then may come from earlier runs: cached)
  BENCH_DEVICE=N     OpenCL device index (eintune's opencl:N), default 0
  BENCH_TUNE_BUDGET, BENCH_TUNE_TIME   per case/dtype tuning budget
  BENCH_CURVE_TIME1, BENCH_CURVE_TIME2 search-efficiency time limits (s)
  BENCH_MODEL_DB=F   the database the search-efficiency runs with the cost
                     model start from (default: the previous run's)
  BENCH_CASES=1,2,.. only these cases (ids 1 2 3 4a 4b 5 6)
  BENCH_ROUNDS=N     back-to-back rounds (default 3; QUICK 1)
  BENCH_OPEN=0       skip the open-axis row (case 1 f64 tuned with x=*,
                     timed at x=4096 against the concrete x=4096 best)
  BENCH_PEERS=LIST   the peer tuners (default feinsum,kerneltuner,tinygrad;
                     "none" for none): bench/peers/, their own virtual
                     environment under build/bench/peers-venv
  BENCH_PEER_TIME=S  the peer tuners' time limit (default: eintune's
                     tuning limit of the same case and dtype)
  BENCH_OPENBLAS_CORETYPE=NAME   OpenBLAS's kernels for the peer (its
                     OPENBLAS_CORETYPE; default: the CPU's own, or, where
                     OpenBLAS does not know the CPU and falls back to
                     kernels older than its vector units, SkylakeX with
                     avx512f, Haswell with avx2; the report says which):
                     with PoCL's POCL_KERNELLIB_NAME=avx2 and
                     POCL_LLVM_CPU_NAME=haswell, Haswell gives an AVX2 host
                     on an AVX-512 one (bench/README.md, "An AVX2 host")

cuBLAS (bench/peer_cublas.c) is the peer on a CUDA device: this run
probes it once and reports whether it could run here and why not;
bench/cuda_cases.sh runs cases 1, 2 and 5 against it on that device.
"""
import datetime
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import peers as peer_env  # noqa: E402  (bench/peers/peers.py)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import round_roof  # noqa: E402  (bench/round_roof.py)
BIN = os.path.join(ROOT, "build", "eintune")
BB = os.path.join(ROOT, "build", "bench")
QUICK = os.environ.get("QUICK", "") not in ("", "0")
DEVICE = os.environ.get("BENCH_DEVICE", "0")
# QUICK writes under bench/results/quick/ so a smoke run never replaces the
# last full run's report, curves and plots.
OUT = os.environ.get("BENCH_OUT") or os.path.join(
    ROOT, "bench", "results", *(("quick", "latest.json") if QUICK
                                else ("latest.json",)))
RESDIR = os.path.dirname(os.path.abspath(OUT))
# the curves and plots go beside the report; a report not named latest
# prefixes them with its name (BENCH_OUT=results/full/fifth.json:
# fifth_curve_case1_f64.png), so two runs into one folder keep both
_STEM = os.path.splitext(os.path.basename(OUT))[0]
CURVE_PREFIX = "" if _STEM == "latest" else _STEM + "_"
TUNE_BUDGET = int(os.environ.get("BENCH_TUNE_BUDGET", 8 if QUICK else 100))
TUNE_TIME = float(os.environ.get("BENCH_TUNE_TIME", 10 if QUICK else 30))
# the tuning limit of the large case (case 2), unless BENCH_TUNE_TIME is set
BIG_TUNE_TIME = (TUNE_TIME if QUICK or "BENCH_TUNE_TIME" in os.environ
                 else 240.0)
# the DG operator's (case 5) limit: its target is stated after a 120 s tune
DG_TUNE_TIME = (TUNE_TIME if QUICK or "BENCH_TUNE_TIME" in os.environ
                else 120.0)
# the DG operator's (case 5) budget: its 100 candidates took 32-43 s of
# the 120 s on a Zen 3 host; the limit, not the budget, ends its tune
DG_TUNE_BUDGET = (TUNE_BUDGET if QUICK or "BENCH_TUNE_BUDGET" in os.environ
                  else 1000)
# back-to-back rounds per case and dtype; every kernel keeps its fastest
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 1 if QUICK else 3))
CURVE_TIME = {
    "1": float(os.environ.get("BENCH_CURVE_TIME1", 15 if QUICK else 75)),
    # the target's own limit: case 2 within 10 % of the reference in 5 min
    "2": float(os.environ.get("BENCH_CURVE_TIME2", 120 if QUICK else 300)),
}
# The search-efficiency series: (label, search, cost model on). The
# default beam runs with and without the cost model (docs/model.md); QUICK
# runs only those two.
CURVE_SEARCHES = ((("beam", "beam", True), ("beam, no model", "beam", False))
                  + ((("random", "random", True),) if not QUICK else ()))
# A database the runs with the model start from (trials of other problems
# on this device); default: a copy of the search-efficiency run finished
# last (another case or dtype, so no answer comes from it as a cache hit)
MODEL_DB = os.environ.get("BENCH_MODEL_DB")
CURVE_DBS = []
# The peer tuners (bench/peers/): which run, on which cases, and the
# (case, dtype) pairs of a full run they run on (QUICK: whatever runs):
# the dtypes of the reference bests for cases 1 and 2, both for case 5
PEERS = [p for p in os.environ.get("BENCH_PEERS",
                                   "feinsum,kerneltuner,tinygrad")
         .replace(" ", "").split(",") if p and p != "none"]
PEER_TIME = os.environ.get("BENCH_PEER_TIME")
# OpenBLAS's kernels for its peer rows (its OPENBLAS_CORETYPE): set, e.g.
# for an AVX2 host emulated on an AVX-512 one; empty: openblas_kernels
OPENBLAS_CORETYPE = os.environ.get("BENCH_OPENBLAS_CORETYPE", "")
# what openblas_kernels chose at the start of the run: (coretype, why)
OPENBLAS_PICK = [None, None]
PEER_CASES = {"feinsum": ("1", "2", "5", "6"), "kerneltuner": ("1", "2"),
              "tinygrad": ("1", "2")}
PEER_PAIRS = (("1", "f64"), ("2", "f32"), ("5", "f32"), ("5", "f64"),
              ("6", "f64"))
# the eintune space Kernel Tuner searches (its params as tune_params)
KT_SPACE = os.path.join(ROOT, "examples", "batched_tiled_matmul.yaml")
KT_STRATEGIES = ("brute_force", "bayes_opt")
# tinygrad's BEAM search has no time limit of its own: a bound on the wait
TINYGRAD_TIMEOUT = 1800
# the reference bests re-timed in this run, by (case, dtype)
REF_TIMES = {}
PEER_VENV = {}
CURVE_BUDGET = 1000

T0 = time.time()


def log(msg):
    sys.stderr.write("[bench %4.0fs] %s\n" % (time.time() - T0, msg))
    sys.stderr.flush()


def shape_str(shape):
    return ",".join("%s=%d" % kv for kv in shape.items())


# The bench cases. Peer operations (see peer_clblast.c,
# peer_openblas.c): every variant listed is timed, the fastest counts.
def cases():
    c = []
    s1 = dict(x=4096, i=35, k=35, j=35)
    s2 = dict(x=8, i=512, k=512, j=512)
    for cid, s in (("1", s1), ("2", s2)):
        x, i, k, j = s["x"], s["i"], s["k"], s["j"]
        c.append(dict(
            id=cid, name="batched matmul", einsum="xik,kj->xij", shape=s,
            # case 2's untransformed kernel alone runs 1-2 s a launch: its
            # tuning gets a longer limit (the rows say which)
            tune_time=BIG_TUNE_TIME if cid == "2" else None,
            operands=["xik", "kj"],
            clblast=[("gemm (batch collapsed: %dx%d @ %dx%d)" % (x * i, k, k, j),
                      ["gemm", x * i, j, k]),
                     ("gemm_strided_batched (%d x %dx%dx%d)" % (x, i, j, k),
                      ["gemm_strided", x, i, j, k, 1])],
            openblas=[("gemm (batch collapsed: %dx%d @ %dx%d)" % (x * i, k, k, j),
                       ["gemm", x * i, j, k])]))
    s3 = dict(x=4096, i=128, k=128)
    c.append(dict(
        id="3", name="batched matvec", einsum="xik,xk->xi", shape=s3,
        operands=["xik", "xk"],
        clblast=[("gemm_strided_batched n=1 (%d x %dx1x%d)" % (4096, 128, 128),
                  ["gemm_strided", 4096, 128, 1, 128, 0])],
        openblas=[("gemv loop (%d x %dx%d)" % (4096, 128, 128),
                   ["gemv_loop", 4096, 128, 128])]))
    s4 = dict(x=512, i=256, j=256)
    c.append(dict(
        id="4a", name="row reduction", einsum="xij->xi", shape=s4,
        operands=["xij"],
        clblast=[("gemv with a ones vector (%dx%d)" % (512 * 256, 256),
                  ["gemv", 512 * 256, 256])],
        openblas=[("gemv with a ones vector (%dx%d)" % (512 * 256, 256),
                   ["gemv", 512 * 256, 256])]))
    c.append(dict(
        id="4b", name="full reduction", einsum="xij->", shape=s4,
        operands=["xij"],
        clblast=[("Xsum (%d)" % (512 * 256 * 256), ["sum", 512 * 256 * 256])],
        openblas=[("dot with a ones vector (%d)" % (512 * 256 * 256),
                   ["dot", 512 * 256 * 256])]))
    c.append(dict(
        id="5", name="DG operator", einsum="xre,rij,xej->xei",
        shape=dict(x=8192, r=3, i=20, j=20, e=4),
        # its target holds after a 120 s default tune
        tune_time=DG_TUNE_TIME, tune_budget=DG_TUNE_BUDGET,
        # opts found by hand (not by the search): timed back to back too,
        # to show how far the vocabulary reaches where the search stops
        # short (docs/opts.md, FACTOR, STAGE, LOOP)
        hand=["UPCAST(i,0) UPCAST(e,0) FACTOR STAGE LOOP(x,128)"],
        operands=["xre", "rij", "xej"], clblast=[], openblas=[]))
    # feinsum's own DG gradient with geometric factors (the einsum of its
    # shipped xre_rij_ej_to_xei space): x and r the 3 dimensions, e the
    # elements (feinsum's long axis), i, j 20 nodes (P3 tetrahedra);
    # f64 only, as the space is written
    c.append(dict(
        id="6", name="DG gradient (feinsum's)", einsum="xre,rij,ej->xei",
        shape=dict(x=3, r=3, e=131072, i=20, j=20), long_axis="e",
        dtypes=("f64",), tune_time=DG_TUNE_TIME,
        operands=["xre", "rij", "ej"], clblast=[], openblas=[]))
    return c


# OpenBLAS's kernel sets older than AVX2, which it falls back to on a CPU
# it does not know (0.3.21 on Intel family 6 model 207, an AVX-512 Xeon:
# Prescott's SSE3 kernels)
OPENBLAS_OLD_CORES = ("Prescott", "Core2", "Penryn", "Dunnington", "Nehalem",
                      "Atom", "Katmai", "Coppermine", "Northwood", "Banias",
                      "Opteron", "Athlon", "Barcelona", "Generic")


def openblas_env():
    """The peer's environment: the machine's OPENBLAS_CORETYPE and
    OPENBLAS_L2_SIZE (set here for old builds) unset."""
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    return env


def openblas_kernels():
    """OpenBLAS's kernels for the peer rows, and why: BENCH_OPENBLAS_CORETYPE
    when set; else the CPU's own, unless OpenBLAS picks kernels older than
    the CPU's vector units (the targets compare with its AVX-512 kernels on
    an AVX-512 CPU): then SkylakeX with avx512f, Haswell with avx2 and fma.
    (None, None): its own choice."""
    if OPENBLAS_CORETYPE:
        return OPENBLAS_CORETYPE, "BENCH_OPENBLAS_CORETYPE"
    exe = os.path.join(BB, "peer_openblas")
    if not os.path.exists(exe):
        return None, None
    doc, _ = run_json([exe, "--threads", "1", "f32", "gemm", "64", "64",
                       "64"], env=openblas_env(), timeout=300)
    core = (doc or {}).get("corename", "")
    if core not in OPENBLAS_OLD_CORES:
        return None, None
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((l.split(":", 1)[1].split() for l in f
                              if l.startswith("flags")), []))
    except OSError:
        return None, None
    if "avx512f" in flags:
        pick = "SkylakeX"
    elif "avx2" in flags and "fma" in flags:
        pick = "Haswell"
    else:
        return None, None
    return pick, ("OpenBLAS picked %s, older than this CPU's vector units; "
                  "%s set for the peer" % (core, pick))


def run(cmd, env=None, timeout=None):
    """Runs cmd; returns (rc, stdout, stderr)."""
    p = subprocess.run([str(a) for a in cmd], capture_output=True, text=True,
                       env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_json(cmd, env=None, timeout=None):
    rc, out, err = run(cmd, env, timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if rc != 0 or doc is None:
        tail = (err.strip().splitlines() or [""])[-1]
        return None, "exit %d: %s" % (rc, tail)
    if isinstance(doc, dict) and doc.get("error"):
        return None, doc["error"]
    return doc, None


def make_inputs(case, dtype, d):
    rng = np.random.default_rng(12345)
    paths = []
    for n, sub in enumerate(case["operands"]):
        shp = tuple(case["shape"][ch] for ch in sub)
        a = rng.uniform(-1.0, 1.0, shp).astype(np.float32 if dtype == "f32"
                                               else np.float64)
        p = os.path.join(d, "in%d.npy" % n)
        np.save(p, a)
        paths.append(p)
    return paths


def fastest(results):
    """The result with the smallest time_s (None entries and errors lose)."""
    ok = [x for x in results if x and "time_s" in x]
    if ok:
        return min(ok, key=lambda x: x["time_s"])
    return next((x for x in results if x), None)


def eintune_run(case, inputs, d, opts, db=None):
    """Times opts with `eintune run --time`; db: a database whose peaks
    give the roofline (default: the default database's, measured at the
    run's start)."""
    cmd = [BIN, "run", case["einsum"]]
    for p in inputs:
        cmd += ["-i", p]
    cmd += ["-o", os.path.join(d, "out.npy"), "--time", "--json", "-",
            "--device", "opencl:" + DEVICE]
    if opts:
        cmd += ["--opts", opts]
    if db:
        cmd += ["--db", db]
    doc, err = run_json(cmd, timeout=600)
    if doc is None:
        return dict(error=err)
    return dict(opts=opts, time_s=doc["time_s"], ci95_s=doc["ci95_s"],
                runs=doc.get("runs"), cv=doc.get("cv"), gops=doc["gops"],
                roofline_gops=doc["roofline_gops"],
                roofline_memory=doc.get("roofline_memory"),
                roofline_note=doc.get("roofline_note"))


def peer(kind, variants, dtype, ops):
    """Times every variant; returns (best, all)."""
    res = []
    env = dict(os.environ)
    if kind == "openblas":
        exe = [os.path.join(BB, "peer_openblas"), "--threads",
               str(os.cpu_count() or 2)]
        # Debian's OpenBLAS 0.3.21 picks a kernel by CPU; this machine sets
        # OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (for old builds): unset both in
        # the peer's own environment only, then the kernels openblas_kernels
        # chose at the start; the JSON names the kernel.
        env = openblas_env()
        if OPENBLAS_PICK[0]:
            env["OPENBLAS_CORETYPE"] = OPENBLAS_PICK[0]
    else:
        exe = [os.path.join(BB, "peer_clblast"), "--device", DEVICE]
    for label, args in variants:
        doc, err = run_json(exe + [dtype] + args, env=env, timeout=900)
        if doc is None:
            res.append(dict(variant=label, error=err))
            log("  %s %s: %s" % (kind, label, err))
            continue
        doc["variant"] = label
        doc["gops"] = ops / doc["time_s"] / 1e9
        res.append(doc)
        log("  %s %s: %.4g ms, %.2f GOps/s" % (kind, label,
                                               doc["time_s"] * 1e3,
                                               doc["gops"]))
    ok = [r for r in res if "time_s" in r]
    best = min(ok, key=lambda r: r["time_s"]) if ok else None
    return best, res


def cublas_probe():
    """cuBLAS (bench/peer_cublas.c) is the peer on a CUDA device, which
    this run (an OpenCL device) is not: bench/cuda_cases.sh compares
    against it there. One small call says whether it could run on this
    machine, and why not; exit status 3 is "not run", never a failure."""
    exe = os.path.join(BB, "peer_cublas")
    if not os.path.exists(exe):
        return dict(run=False, why="%s not built" % exe)
    rc, out, err = run([exe, "f32", "gemm", "64", "64", "64"], timeout=300)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    if rc == 0:
        return dict(run=True, device=doc.get("device"),
                    driver=doc.get("driver"), cublas=doc.get("cublas"),
                    library=doc.get("library"),
                    note="compare on that device: sh bench/cuda_cases.sh")
    if rc == 3:
        return dict(run=False, why=doc.get("not_run") or err.strip())
    return dict(run=False, why="error (exit %d): %s" % (
        rc, doc.get("error") or (err.strip().splitlines() or [""])[-1]))


def tune(case, dtype, db):
    lim = case.get("tune_time") or TUNE_TIME
    budget = case.get("tune_budget") or TUNE_BUDGET
    cmd = [BIN, "tune", case["einsum"], "--shape", shape_str(case["shape"]),
           "--dtype", dtype, "--budget", budget, "--time-limit",
           lim, "--db", db, "--json", "-", "--device",
           "opencl:" + DEVICE]
    if case.get("space"):
        cmd += ["--space", os.path.join(ROOT, case["space"])]
    t = time.time()
    doc, err = run_json(cmd, timeout=lim * 4 + 600)
    wall = time.time() - t
    if doc is None:
        return dict(error=err, wall_s=wall)
    b = doc.get("best") or {}
    return dict(space=doc.get("space"), search=doc.get("search"),
                budget=budget, time_limit_s=lim,
                evaluations=doc.get("evaluations"), cached=doc.get("cached"),
                failures=doc.get("failures"), elapsed_s=doc.get("elapsed_s"),
                wall_s=wall, stop_reason=doc.get("stop_reason"),
                baseline_time_s=(doc.get("baseline") or {}).get("time_s"),
                opts=b.get("opts"), time_s=b.get("time_s"),
                ci95_s=b.get("ci95_s"), gops=b.get("gops"),
                roofline_gops=b.get("roofline_gops"),
                roofline_memory=b.get("roofline_memory"),
                roofline_note=b.get("roofline_note"),
                verified=b.get("verified"), race=doc.get("race"))


def acc(dtype_gops, dtype):
    if not dtype_gops:
        return None
    return dtype_gops.get(dtype) or next(iter(dtype_gops.values()))


def check_ops(case, dtype):
    doc, err = run_json([BIN, "check", case["einsum"], "--shape",
                         shape_str(case["shape"]), "--dtype", dtype,
                         "--json", "-", "--device", "opencl:" + DEVICE])
    if doc is None:
        raise SystemExit("bench: eintune check failed: %s" % err)
    return doc


def bench_case(case, dtype, db, tmp, preset=None):
    log("case %s %s %s %s" % (case["id"], case["einsum"],
                              shape_str(case["shape"]), dtype))
    chk = check_ops(case, dtype)
    ops = sum(chk["ops"].values())
    r = dict(case=case["id"], name=case["name"], einsum=case["einsum"],
             shape=case["shape"], dtype=dtype, ops=ops, bytes=chk["bytes"],
             intensity=chk.get("intensity"))
    # The search-efficiency section's default beam run is a tuning session
    # of this case already (the same loop and space, a longer time limit):
    # its best is the tuned kernel then, not a second, shorter session.
    r["tune"] = preset or tune(case, dtype, db)
    t = r["tune"]
    if "error" in t:
        log("  tune failed: %s" % t["error"])
    else:
        log("  tuned %s in %.1f s, %s evaluations: %s, %.4g ms" % (
            t["space"], t["elapsed_s"], t["evaluations"], t["opts"],
            (t["time_s"] or 0) * 1e3))
    # Back to back, on the same inputs: tuned, peers, untransformed.
    d = tempfile.mkdtemp(dir=tmp)
    inputs = make_inputs(case, dtype, d)
    # ROUNDS rounds of (tuned, peers, untransformed); each kernel keeps its
    # fastest round: this machine's process-to-process noise (a memory-bound
    # kernel's median moves 1.5-2.5 ms from one process to the next) is
    # one-sided, and every kernel gets the same number of tries
    limit = float(PEER_TIME) if PEER_TIME else (
        t.get("time_limit_s") or case.get("tune_time") or TUNE_TIME)
    ptuners = peer_tunes(case, dtype, limit, inputs, d)
    runs = dict(tuned=[], clblast=[], openblas=[], untransformed=[])
    for k, _ in enumerate(case.get("hand") or []):
        runs["hand%d" % k] = []
    variants = dict(clblast=[], openblas=[])
    # a memory-bound problem's roof is measured again in every round
    # (bench/round_roof.py): its tuned, untransformed and by-hand runs
    # take their roofline from it
    mem_bound = (chk.get("roofline") or {}).get("bound") == "memory"
    r["round_roofs"] = []
    for _ in range(ROUNDS):
        rdb = None
        if mem_bound:
            rdb, fig = round_roof.measure(BIN, DEVICE, tmp, log)
            r["round_roofs"].append(fig)
        if t.get("opts") is not None:
            runs["tuned"].append(eintune_run(case, inputs, d, t["opts"],
                                             rdb))
        else:
            runs["tuned"].append(dict(error="no tuned kernel"))
        for kind in ("clblast", "openblas"):
            best, allv = peer(kind, case[kind], dtype, ops)
            runs[kind].append(best)
            variants[kind] += allv
        runs["untransformed"].append(eintune_run(case, inputs, d, "", rdb))
        for k, opts in enumerate(case.get("hand") or []):
            runs["hand%d" % k].append(eintune_run(case, inputs, d, opts,
                                                  rdb))
        peer_round(case, dtype, ptuners, inputs, d)
    for kind, lst in runs.items():
        r[kind] = fastest(lst)
        r[kind + "_rounds_s"] = [(x or {}).get("time_s") for x in lst]
    r["clblast_variants"] = variants["clblast"]
    r["openblas_variants"] = variants["openblas"]
    shutil.rmtree(d, ignore_errors=True)
    tg = acc(r["tuned"].get("gops"), dtype)
    r["roofline_gops"] = acc(r["tuned"].get("roofline_gops") or
                             r["untransformed"].get("roofline_gops"), dtype)
    r["ratios"] = {}
    for peer_name in ("clblast", "openblas", "untransformed"):
        p = r[peer_name]
        pg = (p or {}).get("gops")
        if isinstance(pg, dict):
            pg = acc(pg, dtype)
        if tg and pg:
            r["ratios"]["tuned/" + peer_name] = tg / pg
    if tg and r["roofline_gops"]:
        r["tuned_pct_roofline"] = 100.0 * tg / r["roofline_gops"]
    # the same kernel against the roofline of the peaks measured at the
    # run's start (the only roof before round roofs; a compute-bound
    # problem's two figures are one)
    r["roofline_start_gops"] = acc((chk.get("roofline") or {})
                                   .get("roofline_gops"), dtype)
    if tg and r["roofline_start_gops"]:
        r["tuned_pct_roofline_start"] = 100.0 * tg / r["roofline_start_gops"]
    if ptuners:
        peer_finish(r, ptuners, tg)
    ug = acc(r["untransformed"].get("gops"), dtype)
    if ug and r["roofline_gops"]:
        r["untransformed_pct_roofline"] = 100.0 * ug / r["roofline_gops"]
    for k, opts in enumerate(case.get("hand") or []):
        h = r["hand%d" % k] or {}
        hg = acc(h.get("gops"), dtype)
        rg = acc(h.get("roofline_gops"), dtype)
        if hg and rg:
            h["pct_roofline"] = 100.0 * hg / rg
            log("  by hand %s: %.4g ms, %.1f %% of roofline" % (
                opts, h["time_s"] * 1e3, h["pct_roofline"]))
    log("  ratios %s" % ", ".join("%s %.2f" % kv
                                  for kv in r["ratios"].items()))
    return r


# ---- peer tuners (bench/peers/) ---------------------------------------------

def peers_for(case, dtype):
    if not any(case["id"] in c for c in PEER_CASES.values()):
        return []
    if not QUICK and (case["id"], dtype) not in PEER_PAIRS:
        return []
    return [p for p in PEERS if case["id"] in PEER_CASES.get(p, (case["id"],))]


def peer_python():
    """The peers' environment, made or found once per run."""
    if not PEER_VENV:
        py, why = peer_env.ensure_venv(BB, log)
        PEER_VENV.update(python=py, why=why,
                         requirements="bench/peers/requirements.txt")
        if why:
            log("peers: not run: %s" % why)
    return PEER_VENV["python"], PEER_VENV["why"]


def peer_tunes(case, dtype, limit, inputs, d):
    """Each peer tuner's own search on this case and dtype, within limit
    seconds (tinygrad's BEAM=2 has no limit: the time to its result is the
    figure). Returns {key: entry}; an entry holds the driver's document
    under "tune", or "not_run"/"error" with the reason."""
    out = {}
    names = peers_for(case, dtype)
    if not names:
        return out
    py, why = peer_python()
    shape = shape_str(case["shape"])
    common = ["--einsum", case["einsum"], "--shape", shape, "--dtype", dtype]
    for name in names:
        if name == "kerneltuner":
            keys = [("kerneltuner_" + st, st) for st in KT_STRATEGIES]
        else:
            keys = [(name, None)]
        for key, strat in keys:
            e = dict(peer=name, strategy=strat, limit_s=limit)
            if name == "tinygrad":
                e["limit_s"] = None
            if name not in PEER_CASES:
                e["not_run"] = "unknown peer %r (BENCH_PEERS)" % name
            elif py is None:
                e["not_run"] = why
            if "not_run" in e:
                out[key] = e
                continue
            log("  peer %s%s: tuning%s" % (
                name, " (%s)" % strat if strat else "",
                "" if name == "tinygrad" else ", limit %g s" % limit))
            t = time.time()
            if name == "feinsum":
                doc, bad = peer_env.run_driver(
                    py, "feinsum_peer.py", ["--mode", "tune"] + common + [
                        "--limit", limit, "--db",
                        os.path.join(d, "feinsum.db"), "--workdir",
                        os.path.join(d, "feinsum"), "--long",
                        case.get("long_axis", "x")],
                    timeout=int(limit * 3 + 900))
            elif name == "kerneltuner":
                ref = REF_TIMES.get((case["id"], dtype))
                doc, bad = peer_env.run_driver(
                    py, "kerneltuner_peer.py", common + [
                        "--space", KT_SPACE, "--strategy", strat,
                        "--limit", limit, "--eintune", BIN] +
                    (["--target-time", ref] if ref else []) + inputs,
                    timeout=int(limit * 3 + 900))
                if doc is not None and not ref:
                    doc["reached_note"] = ("no reference best for case %s "
                                           "%s" % (case["id"], dtype))
            else:
                e["cache"] = os.path.join(d, "tinygrad-cache.db")
                doc, bad = peer_env.run_driver(
                    py, "tinygrad_peer.py", ["--mode", "tune"] + common + [
                        "--cache", e["cache"]] + inputs,
                    timeout=TINYGRAD_TIMEOUT)
            e["driver_wall_s"] = time.time() - t
            if bad:
                e.update(bad)
                log("  peer %s: %s: %s" % (key, "not run" if "not_run" in bad
                                           else "failed",
                                           bad.get("not_run") or
                                           bad.get("error")))
            else:
                e["tune"] = doc
            e["rounds"] = []
            out[key] = e
    return out


def peer_round(case, dtype, entries, inputs, d):
    """One back-to-back timing of each peer tuner's best kernel: Kernel
    Tuner's best configuration is an eintune kernel (its opts), run by
    `eintune run --opts`; feinsum's and tinygrad's through their drivers
    (the bench's protocol, OpenCL profiling events)."""
    py = PEER_VENV.get("python")
    common = ["--einsum", case["einsum"], "--shape", shape_str(case["shape"]),
              "--dtype", dtype]
    for key, e in entries.items():
        doc = e.get("tune")
        if not doc:
            continue
        if e["peer"] == "kerneltuner":
            res = eintune_run(case, inputs, d, doc.get("opts") or "")
        elif e["peer"] == "feinsum":
            res, bad = peer_env.run_driver(
                py, "feinsum_peer.py", ["--mode", "time"] + common + [
                    "--space", doc["space"], "--params",
                    json.dumps(doc["params"]), "--long",
                    case.get("long_axis", "x")] + inputs, timeout=900)
            res = res or bad
        else:
            res, bad = peer_env.run_driver(
                py, "tinygrad_peer.py", ["--mode", "time"] + common + [
                    "--cache", e["cache"]] + inputs, timeout=900)
            res = res or bad
        e["rounds"].append(res)


def peer_finish(r, entries, tg):
    """Each peer's fastest round, its GOps/s and the ratio of the tuned
    kernel's GOps/s to it."""
    for key, e in entries.items():
        rounds = e.pop("rounds", [])
        if not e.get("tune"):
            continue
        e["rounds_s"] = [(x or {}).get("time_s") for x in rounds]
        b = fastest(rounds)
        e["timed"] = b
        if b and b.get("time_s"):
            e["gops"] = r["ops"] / b["time_s"] / 1e9
            if tg:
                r["ratios"]["tuned/" + key] = tg / e["gops"]
        elif b:
            e["timed_error"] = b.get("error")
        log("  peer %s: %s" % (key, "%.4g ms back to back, %.2f GOps/s" % (
            b["time_s"] * 1e3, e["gops"]) if e.get("gops") else
            "not timed: %s" % e.get("timed_error")))
    r["peer_tuners"] = entries


# ---- search efficiency ----------------------------------------------------

def load_csv(path):
    rows = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            parts = line.rstrip("\n").split(",", len(head) - 1)
            row = dict(zip(head, parts))
            for k in ("t_s", "cand_time_s", "best_time_s"):
                row[k] = float(row[k])
            row["answered"] = int(row["answered"])
            rows.append(row)
    return rows


def curve_case(case, ref, db_dir, tmp):
    dtype = ref["dtype"]
    log("search efficiency: case %s %s" % (case["id"], dtype))
    out = dict(case=case["id"], einsum=case["einsum"], shape=case["shape"],
               dtype=dtype, reference=dict(ref))
    # Re-time the reference best now, on this run's device: the fastest of
    # ROUNDS runs, as every kernel of the back-to-back table (one run can
    # land in a slow phase of the machine: 3.0 ms for a 2.1 ms kernel)
    d = tempfile.mkdtemp(dir=tmp)
    inputs = make_inputs(case, dtype, d)
    rounds = [eintune_run(case, inputs, d, ref["opts"])
              for _ in range(ROUNDS)]
    timed = [x for x in rounds if x.get("time_s")]
    rt = min(timed, key=lambda x: x["time_s"]) if timed else rounds[0]
    rt["rounds_s"] = [x.get("time_s") for x in rounds]
    shutil.rmtree(d, ignore_errors=True)
    out["reference_retimed"] = rt
    ref_t = rt.get("time_s") or ref["time_s"]
    out["reference_time_s"] = ref_t
    out["target_time_s"] = ref_t / 0.9
    REF_TIMES[(case["id"], dtype)] = ref_t
    limit = CURVE_TIME[case["id"]]
    series = []
    for label, search, model in CURVE_SEARCHES:
        tag = search + ("" if model else "_nomodel")
        csv = os.path.join(RESDIR, CURVE_PREFIX + "curve_case%s_%s_%s.csv"
                           % (case["id"], dtype, tag))
        db = os.path.join(db_dir, "curve_%s_%s_%s.db" % (case["id"], dtype,
                                                         tag))
        seed_db = MODEL_DB or (CURVE_DBS[-1] if CURVE_DBS else None)
        if model and seed_db and os.path.exists(seed_db):
            shutil.copyfile(seed_db, db)
        cmd = [os.path.join(BB, "search_curve"), "--model",
               "on" if model else "off", case["einsum"],
               shape_str(case["shape"]), dtype, search, CURVE_BUDGET, limit,
               db, csv, "-"]
        doc, err = run_json(cmd, timeout=limit * 3 + 600)
        s = dict(search=search, label=label, model=model, time_limit_s=limit,
                 budget=CURVE_BUDGET, csv=os.path.relpath(csv, ROOT),
                 model_db=os.path.basename(seed_db) if model and seed_db
                 else None)
        if doc is None:
            s["error"] = err
            log("  %s: %s" % (label, err))
            series.append(s)
            continue
        if not model:
            CURVE_DBS.append(db)
        s.update(evaluations=doc["evaluations"], cached=doc["cached"],
                 elapsed_s=doc["elapsed_s"], space=doc["space"],
                 best=doc.get("best"), race=doc.get("race"),
                 stop_reason=doc["stop_reason"],
                 model_report=doc.get("model"))
        rows = load_csv(csv)
        s["reached"] = None
        timed = timed_ok = 0
        for row in rows:
            if row["cached"] == "0" and row["status"] != "refused":
                timed += 1
            if not math.isnan(row["cand_time_s"]) and row["status"] == "ok":
                timed_ok += 1
            if row["best_time_s"] <= out["target_time_s"]:
                s["reached"] = dict(t_s=row["t_s"], answered=row["answered"],
                                    timed=timed, timed_ok=timed_ok,
                                    best_time_s=row["best_time_s"])
                break
        if rows and rows[-1]["best_time_s"] == rows[-1]["best_time_s"]:
            s["final_pct_of_reference"] = 100.0 * ref_t / rows[-1]["best_time_s"]
        log("  %s: %s" % (label, "reached 90%% of the reference after "
                          "%.1f s, %d candidates" % (s["reached"]["t_s"],
                                                    s["reached"]["answered"])
                          if s["reached"] else
                          "did not reach 90%% of the reference in %.0f s "
                          "(final %.0f %%)" % (doc["elapsed_s"],
                                               s.get("final_pct_of_reference",
                                                     0))))
        series.append(s)
    out["searches"] = series
    png = os.path.join(RESDIR, CURVE_PREFIX + "curve_case%s_%s.png" % (
        case["id"], dtype))
    args = [os.path.join(BB, "plot_curve"), png,
            "case %s %s %s %s: best so far vs the reference best (%s)" % (
                case["id"], case["einsum"], shape_str(case["shape"]), dtype,
                ref["opts"]), ref_t]
    for s in series:
        if "error" not in s:
            args += ["default %s" % s["label"], os.path.join(ROOT, s["csv"])]
    if len(args) > 4:
        rc, _, err = run(args)
        if rc == 0:
            out["plot"] = os.path.relpath(png, ROOT)
        else:
            log("  plot failed: %s" % err.strip())
    return out


# ---- the cost of an open axis -----------------------------------------------

def run_best(einsum, inputs, d, db):
    """`eintune run --best` from db, timed."""
    cmd = [BIN, "run", einsum]
    for p in inputs:
        cmd += ["-i", p]
    cmd += ["-o", os.path.join(d, "out.npy"), "--best", "--db", db, "--time",
            "--json", "-", "--device", "opencl:" + DEVICE]
    doc, err = run_json(cmd, timeout=600)
    if doc is None:
        return dict(error=err)
    return dict(opts=doc.get("opts"), kernel=doc.get("kernel"),
                time_s=doc["time_s"], ci95_s=doc["ci95_s"],
                runs=doc.get("runs"), cv=doc.get("cv"))


def open_case(doc, tmp):
    """Case 1 in f64 tuned with x open (x=*, tuned at x=4096) in a database
    of its own, then that kernel (run --best, the open entry covering
    x=4096) and the concrete x=4096 best this run tuned, timed back
    to back on the same inputs, fastest of ROUNDS each. The cost of
    openness is open time / concrete time - 1 (the masks on loads and
    stores, 64-bit index arithmetic, no vector loads along rows that hold
    x)."""
    case = cases()[0]
    dtype = "f64"
    conc = next((r for r in doc["cases"] if r["case"] == "1" and
                 r["dtype"] == dtype and "error" not in r.get("tune", {})),
                None)
    if conc is None:
        return dict(error="case 1 f64 was not tuned in this run")
    db_open = os.path.join(tmp, "open.db")
    shape = dict(case["shape"])
    spec = shape_str(shape).replace("x=%d" % shape["x"], "x=*", 1)
    log("open axis: case 1 %s --shape %s --tune-at x=%d" % (dtype, spec,
                                                           shape["x"]))
    cmd = [BIN, "tune", case["einsum"], "--shape", spec, "--tune-at",
           "x=%d" % shape["x"], "--dtype", dtype, "--budget", TUNE_BUDGET,
           "--time-limit", TUNE_TIME, "--db", db_open, "--json", "-",
           "--device", "opencl:" + DEVICE]
    t = time.time()
    tdoc, err = run_json(cmd, timeout=TUNE_TIME * 4 + 600)
    out = dict(einsum=case["einsum"], shape=spec, tune_at=shape["x"],
               dtype=dtype, tuning_wall_s=time.time() - t)
    if tdoc is None:
        out["error"] = err
        return out
    d = os.path.join(tmp, "open")
    os.makedirs(d, exist_ok=True)
    inputs = make_inputs(case, dtype, d)
    runs = dict(open=[], concrete=[])
    for _ in range(ROUNDS):
        runs["open"].append(run_best(case["einsum"], inputs, d, db_open))
        # the concrete best as this run tuned it (case 1 f64 may come from
        # the search-efficiency run, whose database is its own)
        runs["concrete"].append(eintune_run(case, inputs, d,
                                            conc["tune"].get("opts") or ""))
    out["open"] = fastest(runs["open"])
    out["concrete"] = fastest(runs["concrete"])
    o, c = out["open"], out["concrete"]
    if o and c and "time_s" in o and "time_s" in c:
        out["cost"] = o["time_s"] / c["time_s"] - 1
        log("  open %s: %.4g ms; concrete %s: %.4g ms; cost of openness "
            "%+.1f %%" % (o["opts"], o["time_s"] * 1e3, c["opts"],
                          c["time_s"] * 1e3, 100 * out["cost"]))
    return out


# ---- report ---------------------------------------------------------------

def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def peer_lines(doc):
    """The peer tuners' table: one row per peer (and strategy) per case and
    dtype it runs on, or the reason it did not run."""
    rows = [(r, k, e) for r in doc["cases"]
            for k, e in (r.get("peer_tuners") or {}).items()]
    env = doc.get("peer_tuners_env") or {}
    if not rows and not env:
        return []
    L = ["", "Peer tuners (each its own search on the same device and "
         "inputs, then its best kernel timed back to back with the tuned "
         "kernel, fastest of %d rounds; tuned/peer is GOps/s over GOps/s; "
         "environment: %s):" % (doc.get("rounds", 1),
                                 env.get("python") or "none: %s" %
                                 env.get("why")), ""]
    L.append("| case | dtype | peer | search | limit (s) | search wall (s) "
             "| candidates | peer's own best (ms) | back to back (ms) "
             "| GOps/s | tuned/peer | within 10 % of the reference after "
             "| notes |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    names = {"feinsum": "feinsum", "kerneltuner": "Kernel Tuner",
             "tinygrad": "tinygrad"}
    for r, k, e in rows:
        # a failed search's document (its wall time, what it recorded)
        d = e.get("tune") or e.get("partial") or {}
        peer = names.get(e["peer"], e["peer"])
        if e["peer"] == "feinsum":
            search = "OpenTuner (feinsum.autotune)"
            own = d.get("feinsum_time_s")
            wall, cands = d.get("wall_s"), d.get("candidates")
            note = d.get("roofline_note") or (
                "feinsum roofline %s" % d.get("roofline_gops")
                if d.get("roofline_gops") else "")
            if d.get("params"):
                note = "`%s` %s; %s" % (os.path.basename(d.get("space", "")),
                                        json.dumps(d["params"]), note)
        elif e["peer"] == "kerneltuner":
            search = e.get("strategy") + (" (default)" if e.get("strategy")
                                          == "brute_force" else "")
            own = d.get("kt_time_s")
            wall, cands = d.get("wall_s"), d.get("evaluated")
            note = "`%s`" % d["opts"] if d.get("opts") is not None else ""
        else:
            search = "BEAM=2"
            own = d.get("time_s")
            wall, cands = d.get("time_to_result_s"), None
            note = "time to its result (search, compile, run)" if d else ""
        if "not_run" in e:
            note = "NOT RUN: %s" % e["not_run"]
        elif "error" in e:
            note = "FAILED: %s" % e["error"]
        elif e.get("timed_error"):
            note += "; back-to-back timing FAILED: %s" % e["timed_error"]
        rr = d.get("reached", "-") if e["peer"] == "kerneltuner" else "-"
        if isinstance(rr, dict):
            rr = "%.1f s (%d evaluated)" % (rr["t_s"], rr["evaluated"])
        elif rr is None:
            rr = "not reached"
        elif d.get("reached_note"):
            rr = d["reached_note"]
        tb = (e.get("timed") or {}).get("time_s")
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                 "| %s |" % (
                     r["case"], r["dtype"], peer, search,
                     fmt(e.get("limit_s"), "%g"), fmt(wall, "%.0f"),
                     "-" if cands is None else cands,
                     fmt(own and own * 1e3, "%.4g"),
                     fmt(tb and tb * 1e3, "%.4g"), fmt(e.get("gops")),
                     fmt(r["ratios"].get("tuned/" + k)), rr, note))
    return L


def report(doc):
    L = []
    L.append("eintune bench %s, device %s, %s" % (doc["date"], doc["device"],
                                                  doc["mode"]))
    L.append("tuning: built-in action pool, default beam search, budget %d "
             "candidates / %g s per case and dtype, %g s for case 2%s (the "
             "rows marked * are the search-efficiency beam runs, with their "
             "own limits), scratch db: %s" % (
                 doc["tune_budget"], doc["tune_time_limit_s"],
                 doc.get("tune_time_limit_big_s", doc["tune_time_limit_s"]),
                 ", %g s for cases 5 and 6 (case 5: budget %d)" % (
                     doc["tune_time_limit_dg_s"], doc["tune_budget_dg"])
                 if "tune_budget_dg" in doc else "",
                 "no (%s)" % doc["db"] if doc["db_reused"] else "yes"))
    if doc.get("openblas_coretype"):
        L.append("OpenBLAS: %s, %s threads; env OPENBLAS_CORETYPE=%s for the "
                 "peer (%s), OPENBLAS_L2_SIZE unset "
                 "(machine had: %s)" % (doc.get("openblas_config"),
                                        doc.get("openblas_threads"),
                                        doc["openblas_coretype"],
                                        doc.get("openblas_coretype_why") or
                                        "BENCH_OPENBLAS_CORETYPE",
                                        doc["machine_openblas_env"]))
    else:
        L.append("OpenBLAS: %s, %s threads; env OPENBLAS_CORETYPE/L2_SIZE "
                 "unset for the peer (machine had: %s)" % (
                     doc.get("openblas_config"), doc.get("openblas_threads"),
                     doc["machine_openblas_env"]))
    if doc.get("pocl_cpu"):
        L.append("PoCL compiles for %s (POCL_LLVM_CPU_NAME; kernel library "
                 "%s)" % (doc["pocl_cpu"], doc.get("pocl_kernellib")))
    if doc.get("pocl_affinity") is not None:
        L.append("PoCL: POCL_AFFINITY=%s for every process of the run "
                 "(eintune's and the peers')" % doc["pocl_affinity"])
    cb = doc.get("cublas") or {}
    if cb.get("run"):
        L.append("cuBLAS: runs here on %s (cuBLAS %s); the comparison is on "
                 "that CUDA device: sh bench/cuda_cases.sh" % (
                     cb.get("device"), cb.get("cublas")))
    elif cb:
        L.append("cuBLAS peer not run: %s" % cb.get("why"))
    L.append("")
    L.append("Ratios (tuned GOps/s / peer GOps/s, measured back to back; "
             "each kernel's fastest of %d rounds). A memory-bound row's "
             "roofline is from the peaks measured again right before the "
             "round its tuned kernel was fastest in; the start's roofline "
             "from those measured at the run's start:" % doc.get("rounds", 1))
    L.append("")
    L.append("| case | dtype | tuned/CLBlast | tuned/OpenBLAS | tuned/untransformed "
             "| tuned GOps/s | CLBlast | OpenBLAS | untransformed | roofline "
             "| tuned % roofline | % of the start's roofline "
             "| tuned ms: search / back to back "
             "| tuning s | evaluations |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in doc["cases"]:
        def g(x):
            v = (r.get(x) or {}).get("gops")
            if isinstance(v, dict):
                v = acc(v, r["dtype"])
            return v
        t = r.get("tune", {})
        L.append("| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s "
                 "| %s | %s | %s | %s |" % (
                     r["case"], r["einsum"], r["dtype"] +
                     ("*" if t.get("source") else ""),
                     fmt(r["ratios"].get("tuned/clblast")),
                     fmt(r["ratios"].get("tuned/openblas")),
                     fmt(r["ratios"].get("tuned/untransformed")),
                     fmt(g("tuned")), fmt(g("clblast")), fmt(g("openblas")),
                     fmt(g("untransformed")), fmt(r.get("roofline_gops")),
                     fmt(r.get("tuned_pct_roofline"), "%.1f"),
                     fmt(r.get("tuned_pct_roofline_start"), "%.1f"),
                     "%s / %s" % (fmt(t.get("time_s") and t["time_s"] * 1e3,
                                      "%.4g"),
                                  fmt(r["tuned"].get("time_s") and
                                      r["tuned"]["time_s"] * 1e3, "%.4g")),
                     fmt(t.get("elapsed_s"), "%.0f"),
                     "-" if t.get("evaluations") is None else
                     "%d (+%d cached)" % (t["evaluations"], t["cached"] or 0)))
    L.append("")
    L.append("Tuned kernels (opts) and peer variants used:")
    for r in doc["cases"]:
        t = r.get("tune", {})
        L.append("- case %s %s: tuned %s; CLBlast %s; OpenBLAS %s" % (
            r["case"], r["dtype"],
            "FAILED (%s)" % t["error"] if "error" in t else
            "`%s`" % (t.get("opts") or "(no opts)"),
            (r.get("clblast") or {}).get("variant", "none"),
            (r.get("openblas") or {}).get("variant", "none")))
    hands = [(r, r[k]) for r in doc["cases"] for k in sorted(r)
             if k.startswith("hand") and not k.endswith("_rounds_s")
             and isinstance(r[k], dict)]
    if hands:
        L.append("")
        L.append("Opts found by hand, timed back to back with the tuned "
                 "kernel (not a search result):")
        for r, h in hands:
            L.append("- case %s %s: `%s`: %s" % (
                r["case"], r["dtype"], h.get("opts"),
                "%.4g ms, %.1f %% of roofline" % (h["time_s"] * 1e3,
                                                  h.get("pct_roofline", 0))
                if "time_s" in h else "FAILED (%s)" % h.get("error")))
    L += peer_lines(doc)
    rr = [r for r in doc["cases"] if r.get("round_roofs")]
    if rr:
        L.append("")
        L.append("DRAM bandwidth of the peaks measured in each round "
                 "(read / copy GB/s; at the run's start: %s):" % (
                     fmt(((doc.get("peaks") or {}).get("bandwidth") or {})
                         .get("read_gbs"), "%.1f")))
        for r in rr:
            L.append("- case %s %s: %s" % (r["case"], r["dtype"], ", ".join(
                "%s / %s" % (fmt(f and f.get("read_gbs"), "%.1f"),
                             fmt(f and f.get("copy_gbs"), "%.1f"))
                for f in r["round_roofs"])))
    notes = [(r, (r.get("tuned") or {}).get("roofline_note"))
             for r in doc["cases"]]
    notes = [(r, n) for r, n in notes if n]
    if notes:
        L.append("")
        L.append("Peaks measured again (a tuned kernel's interval was above "
                 "the roofline of the stored peaks):")
        for r, n in notes:
            L.append("- case %s %s: %s" % (r["case"], r["dtype"], n))
    if doc.get("search"):
        L.append("")
        L.append("Search efficiency (time and candidates to reach within 10 % "
                 "of the reference best, re-timed in this run):")
        L.append("")
        L.append("| case | dtype | reference (ms) | search | reached after (s) "
                 "| candidates answered | candidates timed | final % of "
                 "reference | timed in all | skipped by the model "
                 "| limit (s) |")
        L.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for c in doc["search"]:
            for s in c["searches"]:
                rr = s.get("reached")
                mr = s.get("model_report") or {}
                L.append("| %s | %s | %.4g | %s | %s | %s | %s | %s | %s | %s "
                         "| %g |" % (
                    c["case"], c["dtype"], c["reference_time_s"] * 1e3,
                    s.get("label", s["search"]),
                    fmt(rr and rr["t_s"], "%.1f") if rr else "not reached",
                    rr["answered"] if rr else "-",
                    rr.get("timed", "-") if rr else "-",
                    fmt(s.get("final_pct_of_reference"), "%.0f"),
                    s.get("evaluations", "-"),
                    ("%d (fitted on %d)" % (mr.get("skipped", 0),
                                            mr.get("samples", 0))
                     if mr.get("used") else "off" if not s.get("model",
                                                              True)
                     else "not used"),
                    s["time_limit_s"]))
    op = doc.get("open_axis")
    if op:
        L.append("")
        L.append("Open axis (case 1 %s, %s tuned at x=%s, then timed at "
                 "x=%s back to back with the concrete x=%s best; fastest "
                 "of %d rounds each):" % (
                     op.get("dtype"), op.get("shape"), op.get("tune_at"),
                     op.get("tune_at"), op.get("tune_at"),
                     doc.get("rounds", 1)))
        L.append("")
        if "error" in op:
            L.append("- FAILED: %s" % op["error"])
        else:
            o, c = op.get("open") or {}, op.get("concrete") or {}
            L.append("| kernel | opts | ms | 95 % interval (ms) |")
            L.append("|---|---|---|---|")
            for label, r in (("open x (x=*)", o), ("concrete x", c)):
                ci = r.get("ci95_s") or [None, None]
                L.append("| %s | `%s` | %s | [%s, %s] |" % (
                    label, r.get("opts") or "-",
                    fmt(r.get("time_s") and r["time_s"] * 1e3, "%.4g"),
                    fmt(ci[0] and ci[0] * 1e3, "%.4g"),
                    fmt(ci[1] and ci[1] * 1e3, "%.4g")))
            L.append("")
            L.append("cost of openness: %s" % (
                "%+.1f %%" % (100 * op["cost"]) if "cost" in op else "-"))
    if doc.get("targets"):
        L.append("")
        L.append("Performance targets (measured in this run):")
        for t in doc["targets"]:
            L.append("- %s: %s (measured %s, target %s)%s" % (
                t["what"], "met" if t["met"] else "MISSED", t["measured"],
                t["target"], "; " + t["note"] if t.get("note") else ""))
    L.append("")
    L.append("total wall time %.0f s" % doc["wall_s"])
    return "\n".join(L) + "\n"


def targets(doc):
    """The performance targets, checked against this run's numbers."""
    out = []

    def case(cid, dt):
        for r in doc["cases"]:
            if r["case"] == cid and r["dtype"] == dt:
                return r
        return None

    # case 2 f32 against OpenBLAS: the goal depends on the vector ISA the
    # device compiles for (PoCL names it: pthread-skylake-avx512 or
    # pthread-haswell)
    avx512 = "avx512" in (doc.get("device") or "")
    for cid, dt, peer_name, goal in (("2", "f32", "clblast", 6.0),
                                     ("2", "f32", "openblas",
                                      1.1 if avx512 else 0.85),
                                     ("2", "f64", "openblas", 0.9),
                                     ("1", "f64", "clblast", 4.0),
                                     ("1", "f64", "openblas", 1.0)):
        r = case(cid, dt)
        v = r and r["ratios"].get("tuned/" + peer_name)
        if v is not None:
            t = dict(what="case %s %s tuned/%s" % (cid, dt, peer_name),
                     measured="%.2fx" % v, target=">= %gx" % goal,
                     met=v >= goal)
            # a goal above the roofline's own ratio to the peer cannot be
            # met on this device: say so beside the figure
            pg = (r.get(peer_name) or {}).get("gops")
            if isinstance(pg, dict):
                pg = acc(pg, dt)
            if not t["met"] and pg and r.get("roofline_gops"):
                ceil = r["roofline_gops"] / pg
                if ceil < goal:
                    t["note"] = ("unreachable here: the roofline itself is "
                                 "%.2fx %s" % (ceil, peer_name))
            out.append(t)
    # case 1 f64 against the device's measured f64 peak
    r = case("1", "f64")
    peak = ((doc.get("peaks") or {}).get("gflops") or {}).get("f64")
    tg = r and acc((r.get("tuned") or {}).get("gops"), "f64")
    if tg and peak:
        out.append(dict(what="case 1 f64 % of the f64 peak",
                        measured="%.1f %%" % (100.0 * tg / peak),
                        target=">= 60 %", met=tg >= 0.6 * peak))
    for cid, goal in (("3", 70), ("4a", 70), ("4b", 70), ("5", 60)):
        for dt in ("f32", "f64"):
            r = case(cid, dt)
            v = r and r.get("tuned_pct_roofline")
            if v is not None:
                out.append(dict(what="case %s %s %% of roofline" % (cid, dt),
                                measured="%.1f %%" % v,
                                target=">= %d %%" % goal, met=v >= goal))
    # every tuned kernel was chosen by the final race, kept in the JSON
    for r in doc["cases"]:
        race = (r.get("tune") or {}).get("race") or {}
        out.append(dict(what="case %s %s final race in the JSON"
                             % (r["case"], r["dtype"]),
                        measured="%d rounds, %s" % (race.get("rounds", 0),
                                                    race.get("verdict"))
                        if race.get("ran") else
                        "not run: %s" % (race.get("note") or "no race key"),
                        target="ran", met=bool(race.get("ran"))))
    # the roofline is a ceiling: no tuned kernel above it beyond its
    # interval (% of roofline at the slow end of the 95 % interval)
    for r in doc["cases"]:
        t = r.get("tuned") or {}
        pct, ci = r.get("tuned_pct_roofline"), t.get("ci95_s")
        if pct and ci and t.get("time_s") and ci[1] > 0:
            hi = pct * t["time_s"] / ci[1]
            out.append(dict(what="case %s %s tuned <= roofline (within its "
                                 "interval)" % (r["case"], r["dtype"]),
                            measured="%.1f %% (median %.1f %%)" % (hi, pct),
                            target="<= 100 %", met=hi <= 100.0))
    op = doc.get("open_axis") or {}
    if "cost" in op:
        out.append(dict(what="case 1 %s open x kernel vs the concrete best "
                             "at x=%s" % (op["dtype"], op["tune_at"]),
                        measured="%+.1f %%" % (100 * op["cost"]),
                        target="<= +10 %", met=op["cost"] <= 0.10))
    for c in doc.get("search") or []:
        goal = 20 if c["case"] == "1" else 90
        for s in c["searches"]:
            # the default search: the beam with the cost model (the row
            # without it is a comparison)
            if s["search"] != "beam" or not s.get("model", True):
                continue
            rr = s.get("reached")
            out.append(dict(
                what="case %s %s default beam within 10 %% of the reference"
                     % (c["case"], c["dtype"]),
                measured="%.1f s" % rr["t_s"] if rr else
                         "not within the %g s limit" % s["time_limit_s"],
                target="<= %d s" % goal, met=bool(rr) and rr["t_s"] <= goal))
            fp = s.get("final_pct_of_reference")
            if fp:
                # ending within 110 % of the reference's time
                out.append(dict(
                    what="case %s %s default beam's final best vs the "
                         "reference (time)" % (c["case"], c["dtype"]),
                    measured="%.0f %% in %g s" % (10000.0 / fp,
                                                  s["time_limit_s"]),
                    target="<= 110 % in 300 s",
                    met=10000.0 / fp <= 110.0 and s["time_limit_s"] <= 300))
    return out


def main():
    os.makedirs(RESDIR, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="eintune-bench-")
    # A private PoCL cache that persists between runs (CLBlast's kernels
    # then compile once), never PoCL's default under ~/.cache.
    os.environ.setdefault("POCL_CACHE_DIR", os.path.join(BB, "pocl-cache"))
    # PoCL's workers pinned one per CPU for every process of the run, the
    # peers' as well as eintune's (which sets it itself where it is unset,
    # docs/database.md): unpinned, a short kernel's workers often share a
    # core for a whole process and its time doubles
    os.environ.setdefault("POCL_AFFINITY", "1")
    db_env = os.environ.get("BENCH_DB")
    db = db_env or os.path.join(tmp, "bench.db")
    OPENBLAS_PICK[:] = openblas_kernels()
    if OPENBLAS_PICK[1] and not OPENBLAS_CORETYPE:
        log(OPENBLAS_PICK[1])
    # measured afresh at the start, before anything else loads the machine
    # (figures cached while it was busy make the roofline too low)
    peaks, err = run_json([BIN, "peaks", "--remeasure", "--json", "-", "--device",
                           "opencl:" + DEVICE])
    if peaks is None:
        raise SystemExit("bench: eintune peaks failed: %s" % err)
    ids = os.environ.get("BENCH_CASES")
    sel = ids.split(",") if ids else (["1", "4a"] if QUICK else None)
    dtypes = ["f32"] if QUICK else ["f32", "f64"]
    doc = dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
               commit=run(["git", "-C", ROOT, "rev-parse", "--short",
                           "HEAD"])[1].strip(),
               mode="QUICK" if QUICK else "full",
               device=peaks["device"]["name"], driver=peaks["device"]["driver"],
               peaks=dict(gflops=peaks["gflops"],
                          bandwidth_gbs=peaks["bandwidth_gbs"],
                          bandwidth=dict(
                              read_gbs=((peaks.get("bandwidth") or {})
                                        .get("read") or {}).get("gbs"),
                              copy_gbs=((peaks.get("bandwidth") or {})
                                        .get("copy") or {}).get("gbs"))),
               tune_budget=TUNE_BUDGET, tune_time_limit_s=TUNE_TIME,
               tune_time_limit_big_s=BIG_TUNE_TIME,
               tune_time_limit_dg_s=DG_TUNE_TIME, tune_budget_dg=DG_TUNE_BUDGET,
               rounds=ROUNDS,
               db=db, db_reused=bool(db_env),
               pocl_affinity=os.environ.get("POCL_AFFINITY"),
               machine_openblas_env={k: os.environ[k] for k in
                                     ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
                                     if k in os.environ},
               openblas_coretype=OPENBLAS_PICK[0],
               openblas_coretype_why=OPENBLAS_PICK[1],
               pocl_cpu=os.environ.get("POCL_LLVM_CPU_NAME"),
               pocl_kernellib=os.environ.get("POCL_KERNELLIB_NAME"),
               cublas=cublas_probe(),
               cases=[])
    try:
        # Search efficiency first (cases 1 and 2, against
        # bench/reference_best.json); its beam runs then give the tuned
        # kernel of their case and dtype, unless a database is reused.
        with open(os.path.join(ROOT, "bench", "reference_best.json")) as f:
            refs = json.load(f)["references"]
        doc["search"] = []
        presets = {}
        for case in cases():
            if case["id"] not in ("1", "2") or (sel and case["id"] not in sel):
                continue
            for ref in refs:
                if ref["case"] != case["id"]:
                    continue
                c = curve_case(case, ref, tmp, tmp)
                doc["search"].append(c)
                beam = [x for x in c["searches"]
                        if x["search"] == "beam" and x.get("best")]
                if beam and not db_env:
                    b = beam[0]
                    presets[(case["id"], ref["dtype"])] = dict(
                        space=b["space"], search="beam", budget=b["budget"],
                        time_limit_s=b["time_limit_s"],
                        evaluations=b["evaluations"], cached=b["cached"],
                        elapsed_s=b["elapsed_s"], stop_reason=b["stop_reason"],
                        opts=b["best"]["opts"], time_s=b["best"]["time_s"],
                        race=b.get("race"),
                        source="search-efficiency beam run")
        for case in cases():
            if sel and case["id"] not in sel:
                continue
            for dt in dtypes:
                if dt not in case.get("dtypes", dtypes):
                    continue
                doc["cases"].append(bench_case(case, dt, db, tmp,
                                               presets.get((case["id"], dt))))
        if os.environ.get("BENCH_OPEN", "1") != "0" and (
                not sel or "1" in sel) and "f64" in dtypes:
            doc["open_axis"] = open_case(doc, tmp)
        for r in doc["cases"]:
            ob = r.get("openblas")
            if ob:
                doc["openblas_config"] = ob.get("config")
                doc["openblas_threads"] = ob.get("threads")
                break
    finally:
        if PEER_VENV:
            doc["peer_tuners_env"] = dict(PEER_VENV, peers=PEERS)
        doc["targets"] = targets(doc)
        doc["wall_s"] = time.time() - T0
        with open(OUT, "w") as f:
            json.dump(doc, f, indent=1)
        text = report(doc)
        with open(os.path.splitext(OUT)[0] + ".md", "w") as f:
            f.write(text)
        sys.stdout.write(text)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
