"""eintune benchmark suite, batched einsums: one fused kernel for several
rows of one subscript against the single einsum of one row launched once
per row (docs/einsum.md, "Batched einsums").

Run by `make bench` after bench/bench.py (bench/run.sh). The cases are the
DG operators on tetrahedra at orders P1 to P4, f64 and f32:

  g  gradient     xj,ij->xi     rows "u,Dr; u,Ds; u,Dt"    (u shared)
  d  divergence   xj,ij->xi     rows "u0,Dr + u1,Ds + u2,Dt" (nothing
                                 shared; the rows summed into one output;
                                 separate: the three rows into one array
                                 of three outputs, then their sum, the
                                 einsum Rxi->xi tuned too)
  f  face mass    xfj,ifj->xi   rows "F0,L; F1,L; F2,L"    (L shared)

See bench/README.md, "Batched einsums", for what every number means.
Environment knobs:

  QUICK=1                   smoke run: order P2, f64, 1 round, 64 MiB
  BENCH_CASES=g,d,f         only these cases (ids of bench.py's cases are
                            ignored here; no batched id: none runs, unless
                            BENCH_CASES is unset)
  BENCH_BATCHED=0           skip the section
  BENCH_BATCHED_ORDERS      orders to run (default 1,2,3,4; QUICK 2)
  BENCH_BATCHED_DTYPES      default f64,f32 (QUICK f64)
  BENCH_BATCHED_MIB         arrays moved by the fused kernel, in MiB
                            (default 256; QUICK 64): sets x
  BENCH_BATCHED_TUNE_MIB    size the kernels are tuned at (default 128:
                            the shared operand, a quarter of it, is then
                            beyond the 32 MiB L3, so the tunes see DRAM
                            as the timed runs do; QUICK 16); equal to
                            BENCH_BATCHED_MIB: tuned at the timed size
                            and run with --best --exact
  BENCH_BATCHED_TUNE_TIME   time limit of every tune, s (default 20;
                            QUICK 8)
  BENCH_ROUNDS              `eintune run --time` rounds of each kernel
                            (default 1): they verify the outputs and
                            give the roofline
  BENCH_BATCHED_TURNS       rounds of the timing in one process (default
                            15; QUICK 5): the fused kernel and the row's
                            kernel launched once per row, in turn, on the
                            same buffers (pyopencl and the Python package;
                            without them the `run --time` rounds decide),
                            and the probe after each turn (PROBE_SRC)
  BENCH_OUT, BENCH_DEVICE   as bench.py: the results go into BENCH_OUT's
                            JSON (key "batched") and .md (a section)
"""
import datetime
import gc
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from peers.common import summarize  # the median's interval (bench/peers)

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import round_roof  # noqa: E402  (bench/round_roof.py)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "eintune")
QUICK = os.environ.get("QUICK", "") not in ("", "0")
DEVICE = os.environ.get("BENCH_DEVICE", "0")
OUT = os.environ.get("BENCH_OUT") or os.path.join(
    ROOT, "bench", "results", *(("quick", "latest.json") if QUICK
                                else ("latest.json",)))
ORDERS = [int(o) for o in os.environ.get(
    "BENCH_BATCHED_ORDERS", "2" if QUICK else "1,2,3,4").split(",") if o]
DTYPES = [d for d in os.environ.get(
    "BENCH_BATCHED_DTYPES", "f64" if QUICK else "f64,f32").split(",") if d]
MIB = float(os.environ.get("BENCH_BATCHED_MIB", 64 if QUICK else 256))
TUNE_MIB = float(os.environ.get("BENCH_BATCHED_TUNE_MIB",
                                16 if QUICK else 128))
TUNE_TIME = float(os.environ.get("BENCH_BATCHED_TUNE_TIME",
                                 8 if QUICK else 20))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 1))
TURNS = int(os.environ.get("BENCH_BATCHED_TURNS", 5 if QUICK else 15))

# nodes per element and per face of a tetrahedron, order 1..4
NP = {1: 4, 2: 10, 3: 20, 4: 35}
NFP = {1: 3, 2: 6, 3: 10, 4: 15}

CASES = (
    dict(id="g", name="gradient", einsum="xj,ij->xi",
         batch="u,Dr; u,Ds; u,Dt"),
    dict(id="d", name="divergence", einsum="xj,ij->xi",
         batch="u0,Dr + u1,Ds + u2,Dt",
         note="rows summed into one output; separate: the three rows, "
              "then the tuned sum Rxi->xi of their outputs"),
    dict(id="f", name="face mass", einsum="xfj,ifj->xi",
         batch="F0,L; F1,L; F2,L"),
)

T0 = time.time()


def log(msg):
    sys.stderr.write("[batched %4.0fs] %s\n" % (time.time() - T0, msg))
    sys.stderr.flush()


def sizes(case, order):
    """Index sizes without x."""
    if case["id"] == "f":
        return dict(f=4, j=NFP[order], i=NP[order])
    return dict(i=NP[order], j=NP[order])


def summed(case):
    """Are the case's rows summed into one output ('+' between them)?"""
    return "+" in (case.get("batch") or "")


def sum_einsum(case):
    """The einsum that sums the separate rows' outputs, stacked: Rxi->xi."""
    out = case["einsum"].split("->")[1]
    return "R%s->%s" % (out, out)


def sum_sizes(case, s):
    """sum_einsum's sizes: the output's, and R the rows."""
    subs, out, rows = parse(case)
    return dict({ch: s[ch] for ch in out}, R=len(rows))


def parse(case):
    ins, out = case["einsum"].split("->")
    subs = ins.split(",")
    sep = "+" if summed(case) else ";"
    rows = [[n.strip() for n in r.split(",")] for r in case["batch"].split(sep)]
    return subs, out, rows


def elems(sub, s):
    n = 1
    for ch in sub:
        n *= s[ch]
    return n


def bytes_moved(case, s, itemsize):
    """Bytes the fused kernel moves: every distinct array once, every
    row's output once, or the one output of rows summed (docs/einsum.md:
    op and byte counts)."""
    subs, out, rows = parse(case)
    seen = {}
    for r in rows:
        for pos, name in enumerate(r):
            seen[name] = elems(subs[pos], s)
    n_out = 1 if summed(case) else len(rows)
    return itemsize * (sum(seen.values()) + n_out * elems(out, s))


def small_divisors(n, limit=4096):
    """How many split amounts up to limit divide n."""
    return sum(1 for d in range(1, limit + 1) if n % d == 0)


def pick_x(case, order, itemsize, mib):
    """x such that the fused kernel's arrays total about mib MiB: of the
    multiples of 256 from 97 % of the x that fills mib up to that x, the
    one that the most amounts up to 4096 divide. The tuned opts split x
    by amounts that must divide it: an x of 2^7 times a prime (838784,
    what rounding to a multiple of 64 gave at P3 f32) leaves the search
    splits by powers of two up to 128, where P3 f64's best splits x by
    64 * 4 * 9."""
    s = dict(sizes(case, order), x=1)
    b1 = bytes_moved(case, s, itemsize)
    s["x"] = 2
    per_x = bytes_moved(case, s, itemsize) - b1
    fixed = b1 - per_x
    top = max(256, int((mib * 2 ** 20 - fixed) / per_x) // 256 * 256)
    cands = range(top, max(256, int(top * 0.97)) - 1, -256)
    return max(cands, key=lambda m: (small_divisors(m), m))


def shape_str(s):
    return ",".join("%s=%d" % (k, s[k]) for k in ["x"] + sorted(
        k for k in s if k != "x"))


def run(cmd, timeout=None):
    p = subprocess.run([str(a) for a in cmd], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_json(cmd, timeout=None):
    rc, out, err = run(cmd, timeout)
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if rc != 0 or doc is None or (isinstance(doc, dict) and doc.get("error")):
        tail = (err.strip().splitlines() or [""])[-1]
        why = doc.get("error") if isinstance(doc, dict) else None
        return None, err, "exit %d: %s" % (rc, why or tail)
    return doc, err, None


def tune(case, s, dtype, db, batched):
    cmd = [BIN, "tune", case["einsum"], "--shape", shape_str(s), "--dtype",
           dtype, "--time-limit", TUNE_TIME, "--db", db, "--json", "-",
           "--device", "opencl:" + DEVICE]
    if batched:
        cmd += ["--batch", case["batch"]]
    t = time.time()
    doc, _, err = run_json(cmd, timeout=TUNE_TIME * 6 + 600)
    wall = time.time() - t
    if doc is None:
        raise SystemExit("batched: tune failed (%s): %s" % (
            " ".join(str(c) for c in cmd), err))
    b = doc.get("best") or {}
    if not b.get("opts") and b.get("opts") != "":
        raise SystemExit("batched: tune found no kernel: %s" % " ".join(
            str(c) for c in cmd))
    race = doc.get("race") or {}
    return dict(shape=dict(s), time_limit_s=TUNE_TIME, wall_s=wall,
                elapsed_s=doc.get("elapsed_s"),
                evaluations=doc.get("evaluations"), opts=b.get("opts"),
                time_s=b.get("time_s"), race_ran=race.get("ran"),
                race_verdict=race.get("verdict"))


def bound_of(stderr):
    m = re.search(r"\b(memory|compute)-bound\b", stderr)
    return m.group(1) if m else None


def time_run(case, files, outs, dtype, db, opts, exact, batched):
    """One `eintune run --time`: the tuned kernel (--best --exact from db
    when it was tuned at these sizes, else its opts)."""
    cmd = [BIN, "run", case["einsum"]]
    if batched:
        cmd += ["--batch", case["batch"]]
        for name, path in files.items():
            cmd += ["-i", "%s=%s" % (name, path)]
    else:
        for path in files:
            cmd += ["-i", path]
    for o in outs:
        cmd += ["-o", o]
    if exact:
        cmd += ["--best", "--exact"]
    elif opts:
        cmd += ["--opts", opts]
    # the database of round_roof.measure: the tuned kernels and the peaks
    cmd += ["--db", db, "--time", "--json", "-", "--device",
            "opencl:" + DEVICE]
    doc, err, why = run_json(cmd, timeout=900)
    if doc is None:
        raise SystemExit("batched: run failed (%s): %s" % (
            " ".join(str(c) for c in cmd), why))
    return dict(opts=doc.get("opts"), kernel=doc.get("kernel"),
                time_s=doc["time_s"], ci95_s=doc["ci95_s"],
                runs=doc.get("runs"), gops=doc["gops"].get(dtype),
                roofline_gops=doc["roofline_gops"].get(dtype),
                roofline_fraction=doc.get("roofline_fraction"),
                roofline_memory=(doc.get("roofline_memory") or {}).get("label"),
                bound=bound_of(err), device=(doc.get("device") or {}).get("name"))


def verify(case, arrays, outs_fused, out_single, dtype):
    """Every row's fused output (rows summed: the one output, the rows'
    sum) and the single kernel's output (row 0), .npy paths or arrays,
    against numpy.einsum in f64, with a bound eps * 4K * einsum(|a|, |b|),
    K the summed length (times the rows when summed). Exits on a
    mismatch."""
    subs, out, rows = parse(case)
    eps = np.finfo(np.float32 if dtype == "f32" else np.float64).eps
    s = {}
    for pos, sub in enumerate(subs):
        s.update(zip(sub, arrays[rows[0][pos]].shape))
    K = 1
    for ch in set("".join(subs)) - set(out):
        K *= s[ch]
    worst = 0.0
    every = list(range(len(rows)))
    fused_rows = ([every] * len(outs_fused) if summed(case)
                  else [[k] for k in every])
    checks = list(zip(fused_rows, outs_fused)) + [([0], out_single)]
    for ks, path in checks:
        k = ks[0] if len(ks) == 1 else "sum"
        ref = mag = 0.0
        for kr in ks:
            ops = [arrays[n].astype(np.float64) for n in rows[kr]]
            ref = ref + np.einsum(case["einsum"], *ops, optimize=True)
            mag = mag + np.einsum(case["einsum"], *[np.abs(o) for o in ops],
                                  optimize=True)
        got = (np.load(path) if isinstance(path, str) else path).astype(
            np.float64)
        if got.shape != ref.shape:
            raise SystemExit("batched: %s row %s: output shape %s, numpy %s"
                             % (case["name"], k, got.shape, ref.shape))
        bound = 4.0 * K * len(ks) * eps * mag + np.finfo(np.float64).tiny
        ratio = float(np.max(np.abs(got - ref) / bound))
        worst = max(worst, ratio)
        if not ratio <= 1.0:
            raise SystemExit(
                "batched: MISMATCH %s %s row %s (%s): max |err|/bound %.3g"
                % (case["name"], dtype, k, path, ratio))
    return worst


# The probe timed in turn with the kernels: every input array read once
# (summed, a partial sum per work-item) and every output of the fused
# kernel written once (filled with non-temporal stores where the compiler
# has them, as NTSTORE's), as plain kernels over the same buffers:
# the fused kernel's bytes without its flops, at the moment the kernels
# run. Its time follows the host's memory from one turn to the next, which
# a roof measured before the turns does not (bench/README.md, "The
# gradient with the baseline's estimate from 0.1 s").
PROBE_SRC = """
__kernel void probe_read(__global const T4 *restrict a, long n4,
                         __global T *restrict part)
{
    long g = get_global_id(0), ng = get_global_size(0);
    long per = (n4 + ng - 1) / ng, lo = g * per, hi = min(lo + per, n4);
    T4 acc = (T4)(0);
    for (long k = lo; k < hi; k++)
        acc += a[k];
    part[g] = acc.x + acc.y + acc.z + acc.w;
}
#if __has_builtin(__builtin_nontemporal_store)
#define STORE(v, p) __builtin_nontemporal_store((v), (p))
#else
#define STORE(v, p) (*(p) = (v))
#endif
__kernel void probe_fill(__global T4 *restrict o, long n4, T v)
{
    long g = get_global_id(0), ng = get_global_size(0);
    long per = (n4 + ng - 1) / ng, lo = g * per, hi = min(lo + per, n4);
    for (long k = lo; k < hi; k++)
        STORE((T4)(v), o + k);
}
"""
PROBE_ITEMS = 64


def probe_build(cl, ctx, q, npdt, ins, outs):
    """The probe over buffers ins (read) and outs (written) of elements
    npdt: a function that enqueues it. It moves each buffer's elements in
    vectors of 4, the last 1 to 3 left out (a 35 x 35 operator's 3 of
    1225)."""
    item = np.dtype(npdt).itemsize
    ins = [b for b in ins if b.size >= 4 * item]
    t = "float" if item == 4 else "double"
    prg = cl.Program(ctx, PROBE_SRC).build(
        options="-DT=%s -DT4=%s4" % (t, t))
    part = cl.Buffer(ctx, cl.mem_flags.READ_WRITE,
                     size=PROBE_ITEMS * item)
    rd, fill = prg.probe_read, prg.probe_fill

    def run():
        for b in ins:
            rd(q, (PROBE_ITEMS,), (1,), b, np.int64(b.size // (4 * item)),
               part)
        for b in outs:
            fill(q, (PROBE_ITEMS,), (1,), b, np.int64(b.size // (4 * item)),
                 npdt(0.5))
    return run


def in_turn(case, s, dtype, arrays, db, fused_opts, single_opts, dev_name,
            sum_opts=None):
    """The fused kernel and the row's kernel launched once per row (each
    row on its own buffers, as a program would run the rows separately;
    rows summed: into one array of the rows' outputs, then the sum kernel,
    sum_einsum(case) with sum_opts, over it), built with eintune.load in
    one pyopencl context on the same device and timed in turn TURNS times
    on the same buffers: wall time from the first enqueue to the finish.
    Every kernel's output is checked against numpy afterwards. Returns
    (result, None) or (None, why)."""
    try:
        import pyopencl as cl
        sys.path.insert(0, os.path.join(ROOT, "python"))
        os.environ.setdefault("EINTUNE_LIBRARY",
                              os.path.join(ROOT, "build", "libeintune.so"))
        import eintune
    except ImportError as e:
        return None, "no pyopencl or eintune package: %s" % e
    devs = [d for p in cl.get_platforms() for d in p.get_devices()]
    dev = next((d for d in devs if d.name == dev_name), None)
    if dev is None:
        return None, "no pyopencl device named %r" % dev_name
    ctx = cl.Context([dev])
    q = cl.CommandQueue(ctx)
    subs, out, rows = parse(case)
    shp = shape_str(s)
    sess = eintune.Session(device="opencl:" + DEVICE, db=db)
    try:
        kf = sess.load(eintune.Problem(case["einsum"], shp, dtype,
                                       batch=case["batch"]), ctx,
                       opts=fused_opts or "", verify=False)
        ks = sess.load(eintune.Problem(case["einsum"], shp, dtype), ctx,
                       opts=single_opts or "", verify=False)
        ksum = None
        if summed(case):
            ksum = sess.load(eintune.Problem(
                sum_einsum(case), shape_str(sum_sizes(case, s)), dtype),
                ctx, opts=sum_opts or "", verify=False)
    except eintune.Error as e:
        sess.close()
        return None, "load: %s" % e
    mf = cl.mem_flags
    bufs = {n: cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            for n, a in arrays.items()}
    oshape = tuple(s[ch] for ch in out)
    nbytes = int(np.prod(oshape)) * (4 if dtype == "f32" else 8)
    if ksum:
        # the rows' outputs one after another in one array, the sum's
        # input; the fused kernel and the sum write one more
        stk = cl.Buffer(ctx, mf.READ_WRITE, size=nbytes * len(rows))
        try:
            outs = [stk.get_sub_region(r * nbytes, nbytes)
                    for r in range(len(rows))]
        except cl.Error as e:
            sess.close()
            return None, "a row's part of the stacked outputs: %s" % e
        fouts = [cl.Buffer(ctx, mf.READ_WRITE, size=nbytes)]
        souts = [cl.Buffer(ctx, mf.READ_WRITE, size=nbytes)]
    else:
        stk = None
        outs = [cl.Buffer(ctx, mf.READ_WRITE, size=nbytes) for _ in rows]
        fouts = outs
    fargs = [fouts[max(row, 0)] if op < 0 else bufs[rows[max(row, 0)][op]]
             for op, row in kf.args]

    def fused():
        kf.launch_args(q, *fargs)

    def separate():
        for r, row in enumerate(rows):
            ks.launch(q, outs[r], *[bufs[n] for n in row])
        if ksum:
            ksum.launch(q, souts[0], stk)

    def timed(fn):
        q.finish()
        t = time.perf_counter()
        fn()
        q.finish()
        return time.perf_counter() - t

    npdt = np.float32 if dtype == "f32" else np.float64
    # the probe reads each input array the fused kernel reads and writes
    # its outputs (fouts: the stacked array's parts are not its outputs)
    try:
        probe = probe_build(cl, ctx, q, npdt, list(bufs.values()), fouts)
    except cl.Error as e:
        log("  probe not built (%s): no probe column" % e)
        probe = None
    timed(fused)
    timed(separate)
    if probe:
        timed(probe)
    tf, ts, tp = [], [], []
    for rnd in range(TURNS):
        for which in ((0, 1) if rnd % 2 == 0 else (1, 0)):
            if which == 0:
                tf.append(timed(fused))
            else:
                ts.append(timed(separate))
        if probe:
            tp.append(timed(probe))

    def read(b):
        h = np.empty(oshape, npdt)
        cl.enqueue_copy(q, h, b)
        q.finish()
        return h

    fused()
    got_f = [read(b) for b in fouts]
    separate()
    got_s = read(outs[0])
    if ksum:
        got_f.append(read(souts[0]))
    worst = verify(case, arrays, got_f, got_s, dtype)
    kf.close()
    ks.close()
    if ksum:
        ksum.close()
    sess.close()
    # the next case's buffers are not to find these still held
    for b in list(bufs.values()) + outs + ([stk] + fouts + souts
                                             if ksum else []):
        b.release()
    del ctx, q
    gc.collect()
    return dict(fused_s=tf, separate_s=ts, probe_s=tp,
                fused_median_s=float(np.median(tf)),
                separate_median_s=float(np.median(ts)),
                probe_median_s=float(np.median(tp)) if tp else None,
                verify_max_err_over_bound=worst), None


def bench_one(case, order, dtype, db, tmp):
    subs, out, rows = parse(case)
    itemsize = 4 if dtype == "f32" else 8
    base = sizes(case, order)
    # x is a multiple of the tuned x, so every split the tuned opts make
    # (LOOP, UPCAST, LOCAL amounts must divide) divides x too
    xt = pick_x(case, order, itemsize, min(TUNE_MIB, MIB))
    x = xt * max(1, int(round(MIB / min(TUNE_MIB, MIB))))
    s = dict(base, x=x)
    st = dict(base, x=xt)
    exact = xt == x
    r = dict(case=case["id"], name=case["name"], order=order, dtype=dtype,
             einsum=case["einsum"], batch=case["batch"], rows=len(rows),
             shape=s, bytes=bytes_moved(case, s, itemsize),
             bytes_separate=len(rows) * bytes_moved(
                 dict(case, batch=",".join(rows[0])), s, itemsize))
    if summed(case):
        # the sum reads the rows' outputs and writes one
        r["bytes_separate"] += itemsize * (len(rows) + 1) * elems(out, s)
    if case.get("note"):
        r["note"] = case["note"]
    log("%s P%d %s: %s %s, x=%d (%.0f MiB), tuned at x=%d" % (
        case["name"], order, dtype, case["einsum"], case["batch"], x,
        r["bytes"] / 2 ** 20, xt))
    # the row first: its best seeds the batched search (docs/spaces.md,
    # "Seeds"), which then starts from the rows' separate kernels
    r["tune_single"] = tune(case, st, dtype, db, False)
    r["tune_fused"] = tune(case, st, dtype, db, True)
    if summed(case):
        # the separate rows' sum, a kernel of its own
        r["tune_sum"] = tune(dict(einsum=sum_einsum(case)),
                             sum_sizes(case, st), dtype, db, False)
    for k in ("tune_fused", "tune_single"):
        t = r[k]
        log("  %s: %s evaluations in %.1f s: %s" % (
            k, t["evaluations"], t["elapsed_s"] or 0, t["opts"]))
    # the inputs, once for both kernels
    d = tempfile.mkdtemp(dir=tmp)
    rng = np.random.default_rng(2024 + order)
    npdt = np.float32 if dtype == "f32" else np.float64
    arrays, files = {}, {}
    for row in rows:
        for pos, name in enumerate(row):
            if name in arrays:
                continue
            shp = tuple(s[ch] for ch in subs[pos])
            arrays[name] = rng.uniform(-1.0, 1.0, shp).astype(npdt)
            files[name] = os.path.join(d, name + ".npy")
            np.save(files[name], arrays[name])
    outs_fused = [os.path.join(d, "out%d.npy" % k)
                  for k in range(1 if summed(case) else len(rows))]
    out_single = os.path.join(d, "single.npy")
    single_files = [files[n] for n in rows[0]]
    fused, single = [], []
    rdb, r["round_roof"] = round_roof.measure(BIN, DEVICE, tmp, log, db)
    for rnd in range(ROUNDS):
        # alternate which kernel goes first
        order_ = (0, 1) if rnd % 2 == 0 else (1, 0)
        for which in order_:
            if which == 0:
                fused.append(time_run(case, files, outs_fused, dtype, rdb,
                                      r["tune_fused"]["opts"], exact, True))
            else:
                single.append(time_run(case, single_files, [out_single],
                                       dtype, rdb, r["tune_single"]["opts"],
                                       exact, False))
        if rnd == 0:
            r["verify_max_err_over_bound"] = verify(
                case, arrays, outs_fused, out_single, dtype)
    f = min(fused, key=lambda v: v["time_s"])
    g = min(single, key=lambda v: v["time_s"])
    r["fused"] = f
    r["single"] = g
    r["fused_rounds_s"] = [v["time_s"] for v in fused]
    r["single_rounds_s"] = [v["time_s"] for v in single]
    r["device"] = f.get("device")
    # the roofline's time, from the run that measured the fused kernel
    roof_s = (f["roofline_fraction"] or 0) * f["time_s"]
    turn, why = in_turn(case, s, dtype, arrays, db, f["opts"], g["opts"],
                        r["device"],
                        (r.get("tune_sum") or {}).get("opts"))
    shutil.rmtree(d, ignore_errors=True)
    if turn:
        r["in_turn"] = turn
        r["timing"] = "in turn"
        r["fused_time_s"] = turn["fused_median_s"]
        r["separate_time_s"] = turn["separate_median_s"]
    else:
        log("  in-turn timing not run (%s): the run --time rounds decide"
            % why)
        r["in_turn_error"] = why
        r["timing"] = "run --time"
        r["fused_time_s"] = f["time_s"]
        r["separate_time_s"] = len(rows) * g["time_s"]
    r["ratio"] = r["separate_time_s"] / r["fused_time_s"]
    if turn:
        # each turn's separate/fused, the two timed one after the other:
        # the 95 % interval of their median (order statistics, as the
        # timing protocol's), what "never slower" is judged by
        pr = summarize([b / a for a, b in zip(turn["fused_s"],
                                              turn["separate_s"])])
        r["ratio_paired"] = pr["time_s"]
        r["ratio_ci95"] = pr["ci95_s"]
    r["fused_pct_roofline"] = 100.0 * roof_s / r["fused_time_s"]
    # the probe's time over the fused kernel's, both from the same turns
    pm = (turn or {}).get("probe_median_s")
    r["fused_pct_probe"] = 100.0 * pm / r["fused_time_s"] if pm else None
    if pm:
        log("  probe in turn %.4g ms: the fused kernel at %.1f %% of it" % (
            pm * 1e3, r["fused_pct_probe"]))
    log("  fused %.4g ms (%s, %.1f %% of roofline, %s-bound), separate "
        "%.4g ms (%d rows of %s, %s-bound): %.2fx (%s; run --time: fused "
        "%.4g, row %.4g ms)" % (
            r["fused_time_s"] * 1e3, f["opts"], r["fused_pct_roofline"],
            f["bound"], r["separate_time_s"] * 1e3, len(rows), g["opts"],
            g["bound"], r["ratio"], r["timing"], f["time_s"] * 1e3,
            g["time_s"] * 1e3))
    return r


def targets(results):
    """fused >= 1.2x separate where the rows are memory-bound (the ratio
    of the medians); never slower: the ratio of the medians >= 1, or,
    timed in turn, the 95 % interval of the turns' paired ratios reaching
    1 (not shown slower: a tie, where the fused search kept the rows' own
    code); f64 fused at >= 60 % of roofline."""
    out = []
    for r in results:
        tag = "%s P%d %s" % (r["name"], r["order"], r["dtype"])
        if r["single"].get("bound") == "memory":
            out.append(dict(what=tag + " separate/fused (rows memory-bound)",
                            measured="%.2fx" % r["ratio"], target=">= 1.2x",
                            met=r["ratio"] >= 1.2))
        ci = r.get("ratio_ci95")
        tied = r["ratio"] < 1.0 and ci is not None and ci[1] >= 1.0
        out.append(dict(what=tag + " fused never slower",
                        measured="%.2fx%s" % (
                            r["ratio"], " (tied: the turns' paired ratios "
                            "%s)" % paired(r) if tied else ""),
                        target=">= 1x, or tied", met=r["ratio"] >= 1.0
                        or tied))
        if r["dtype"] == "f64":
            out.append(dict(what=tag + " fused % of roofline",
                            measured="%.1f %%" % r["fused_pct_roofline"],
                            target=">= 60 %",
                            met=r["fused_pct_roofline"] >= 60.0))
    return out


def paired(r):
    """The paired ratios' median and 95 % interval as text, "1.02 [0.88,
    1.10]"; None where the row was not timed in turn."""
    ci = r.get("ratio_ci95")
    return ("%.2f [%.2f, %.2f]" % (r["ratio_paired"], ci[0], ci[1])
            if ci else None)


def ratio_note(r):
    """The timing column: how the times were taken, and in turn the
    paired ratios."""
    t = r.get("timing", "run --time")
    return t + ", paired " + paired(r) if paired(r) else t


def report(doc):
    b = doc["batched"]
    L = ["", "## Batched einsums", ""]
    L.append("%s, device %s, %s; arrays about %g MiB per fused kernel, tuned "
             "at about %g MiB (%s), default search, %g s per tune. fused ms "
             "and separate ms: medians of %d turns in one process (the fused "
             "kernel, then the row's kernel launched once per row on its own "
             "buffers, in alternating order, on the same buffers; pyopencl "
             "and the Python package), where a row says `in turn`; else the "
             "fastest `eintune run --time` of %d, separate = the row's time "
             "x the rows. paired: the median of the turns' separate/fused "
             "ratios (each turn times both) and its 95 %% interval (order "
             "statistics); a ratio under 1 whose interval reaches 1 is a "
             "tie, not slower. %% roofline: the roofline's time (from "
             "`run --time`, against the peaks measured again right before "
             "the row's runs: DRAM read / copy GB/s in the row) over the "
             "fused ms. %% probe: "
             "the probe's median over the fused ms, both from the same turns "
             "(the probe reads every input array once and writes the fused "
             "kernel's outputs once, as plain kernels: its bytes without its "
             "flops, at the moment the kernels run)." % (
                 b["date"], b.get("device"), b["mode"], b["mib"],
                 b["tune_mib"], "the same sizes: --best --exact"
                 if b["mib"] == b["tune_mib"] else
                 "smaller x; run with the tuned opts", b["tune_time_s"],
                 b.get("turns", 0), b["rounds"]))
    for m in b.get("merged", []):
        L.append("")
        L.append("The %s rows are from a run of that case alone (%s, commit "
                 "%s, %.0f s), merged in." % (m["name"], m["date"],
                                             m["commit"], m["wall_s"]))
    L.append("")
    L.append("| case | P | dtype | x | MiB fused / separate | fused ms "
             "| separate ms | separate/fused | timing | fused % roofline "
             "| fused % probe | DRAM GB/s | bound: fused / row | fused opts "
             "| row opts |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in b["results"]:
        f, g = r["fused"], r["single"]
        rr = r.get("round_roof") or {}
        L.append("| %s (%s) | %d | %s | %d | %.0f / %.0f | %.3f | %.3f "
                 "| %.2fx | %s | %.1f %% | %s | %s | %s / %s | `%s` | `%s` |" % (
                     r["name"], r["case"], r["order"], r["dtype"],
                     r["shape"]["x"], r["bytes"] / 2 ** 20,
                     r["bytes_separate"] / 2 ** 20,
                     r["fused_time_s"] * 1e3, r["separate_time_s"] * 1e3,
                     r["ratio"], ratio_note(r),
                     r["fused_pct_roofline"],
                     "%.1f %%" % r["fused_pct_probe"]
                     if r.get("fused_pct_probe") else "-",
                     "%.1f / %.1f" % (rr["read_gbs"], rr["copy_gbs"])
                     if rr.get("read_gbs") and rr.get("copy_gbs") else "-",
                     f["bound"],
                     g["bound"], f["opts"] or "-", g["opts"] or "-"))
    if b.get("error"):
        L.append("")
        L.append("stopped: %s" % b["error"])
    L.append("")
    L.append("The divergence's fused kernel sums its rows into one output "
             "(`u0,Dr + u1,Ds + u2,Dt`); separate is the three rows into one "
             "array of their outputs, then the sum of them (`Rxi->xi`, "
             "tuned like the rest: opts in the JSON's tune_sum).")
    if b.get("targets"):
        L.append("")
        L.append("Batched targets (measured in this run):")
        for t in b["targets"]:
            L.append("- %s: %s (measured %s, target %s)" % (
                t["what"], "met" if t["met"] else "MISSED", t["measured"],
                t["target"]))
    L.append("")
    L.append("batched section wall time %.0f s" % b["wall_s"])
    return "\n".join(L) + "\n"


def main():
    if os.environ.get("BENCH_BATCHED", "1") == "0":
        return
    ids = os.environ.get("BENCH_CASES")
    sel = [c for c in CASES if not ids or c["id"] in ids.split(",")]
    if not sel:
        return
    os.environ.setdefault("POCL_CACHE_DIR",
                          os.path.join(ROOT, "build", "bench", "pocl-cache"))
    # PoCL's workers pinned one per CPU for every process of the run, the
    # peers' as well as eintune's (which sets it itself where it is unset,
    # docs/database.md): unpinned, a short kernel's workers often share a
    # core for a whole process and its time doubles
    os.environ.setdefault("POCL_AFFINITY", "1")
    tmp = tempfile.mkdtemp(prefix="eintune-batched-")
    db = os.path.join(tmp, "batched.db")
    b = dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
             commit=run(["git", "-C", ROOT, "rev-parse", "--short",
                         "HEAD"])[1].strip(),
             mode="QUICK" if QUICK else "full", mib=MIB, tune_mib=TUNE_MIB,
             tune_time_s=TUNE_TIME, rounds=ROUNDS, turns=TURNS,
             orders=ORDERS,
             dtypes=DTYPES, results=[])
    failed = None
    try:
        for case in sel:
            for order in ORDERS:
                for dt in DTYPES:
                    b["results"].append(bench_one(case, order, dt, db, tmp))
    except SystemExit as e:
        failed = str(e)
        b["error"] = failed
        log(failed)
    finally:
        b["device"] = next((r["device"] for r in b["results"]
                            if r.get("device")), None)
        b["targets"] = targets(b["results"])
        b["wall_s"] = time.time() - T0
        os.makedirs(os.path.dirname(os.path.abspath(OUT)), exist_ok=True)
        try:
            with open(OUT) as f:
                doc = json.load(f)
        except (OSError, ValueError):
            doc = {}
        doc["batched"] = b
        with open(OUT, "w") as f:
            json.dump(doc, f, indent=1)
        text = report(doc)
        md = os.path.splitext(OUT)[0] + ".md"
        old = ""
        if os.path.exists(md):
            with open(md) as f:
                old = f.read()
            # a section of an earlier run of this script goes
            old = old.split("\n## Batched einsums\n")[0].rstrip("\n") + "\n"
        with open(md, "w") as f:
            f.write(old + text)
        sys.stdout.write(text)
        shutil.rmtree(tmp, ignore_errors=True)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
