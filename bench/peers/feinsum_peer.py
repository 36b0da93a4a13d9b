"""feinsum as a peer: its own autotuning (feinsum.autotune: OpenTuner's
default search over a transform space, every candidate validated and timed
by feinsum) on the OpenCL device, then its best kernel timed with the
bench's protocol.

  feinsum_peer.py --mode tune --einsum E --shape S --dtype f32 --limit SEC
                  --db FILE --workdir DIR [--long x]
  feinsum_peer.py --mode time --einsum E --shape S --dtype f32
                  --space FILE --params JSON [--long x] INPUT.npy...

Transform spaces: for xik,kj->xij, feinsum's tutorial space (the shipped
demo_transform_space.py, through feinsum_tutorial_space.py); for the DG
operators xre,rij,xej->xei and xre,rij,ej->xei (the latter feinsum's
own gradient with geometric factors), every DG space feinsum ships
(feinsum/tuning/impls/*xre_rij*), each tried on the problem first: a space
whose reference einsum feinsum cannot match to the problem is reported
with feinsum's own error, and when none matches the peer is "not run".

The long axis (--long, default x: the batch of elements) is feinsum's
open axis, a size parameter, set to the bench's size through
long_dim_length. The limit is OpenTuner's stop_after
and a stop of the search at the limit, unless no candidate has been
measured by then (one of feinsum's candidates takes minutes here: three of
its timings, each at least 500 launches and 2 s, in batches of up to 4
candidates): then the search stops once one has been measured, or 10
minutes after the limit. "wall_s" says how long the search took.

tune prints: feinsum's best (its runtime_in_sec: host clock over batches
of launches, with loopy's per-call overhead inside), the wall time, the
candidates it recorded, when it found its best, and feinsum's roofline
figure or why it has none. time prints the best kernel's median by the
bench's protocol (OpenCL profiling events of each launch, through a
loopy executor), its output checked against NumPy.
"""
import argparse
import glob
import json
import os
import signal
import sqlite3
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def make_einsum(fnsm, eq, shape, dtype, long):
    ins, _ = eq.split("->")
    arrs = []
    for n, sub in enumerate(ins.split(",")):
        dims = tuple("N_%s" % long if c == long else shape[c] for c in sub)
        arrs.append(fnsm.array("in%d" % n, dims,
                               "float32" if dtype == "f32" else "float64"))
    return fnsm.einsum(eq, *arrs)


def spaces_for(eq):
    from feinsum.tuning import _get_impls_path
    if eq == "xik,kj->xij":
        return [os.path.join(HERE, "feinsum_tutorial_space.py")]
    if eq in ("xre,rij,xej->xei", "xre,rij,ej->xei"):
        return sorted(glob.glob(os.path.join(_get_impls_path(),
                                             "*xre_rij*.py")))
    return []


def space_einsum(path):
    """The einsum a shipped space is written for, from its file name
    (xre_rij_ej_to_xei.py: xre,rij,ej->xei; batched_*: the same einsum
    over several operands u, a batched einsum)."""
    name = os.path.basename(path)[:-3]
    batched = name.startswith("batched_")
    name = name[len("batched_"):] if batched else name
    if "_to_" not in name:
        return None, batched
    ins, out = name.split("_to_")
    return "%s->%s" % (",".join(ins.split("_")), out), batched


def same_einsum(a, b):
    """Whether einsum b is einsum a under some renaming of its indices and
    order of its operands."""
    import itertools
    ai, ao = a.split("->")
    bi, bo = b.split("->")
    ai, bi = ai.split(","), bi.split(",")
    la = sorted(set(a) - set(",->"))
    lb = sorted(set(b) - set(",->"))
    if len(ai) != len(bi) or len(la) != len(lb):
        return False
    for perm in itertools.permutations(lb):
        m = dict(zip(la, perm))
        if "".join(m[c] for c in ao) != bo:
            continue
        if sorted("".join(m[c] for c in op) for op in ai) == sorted(bi):
            return True
    return False


def first_point(ptf, einsum):
    """The lowest value of every parameter of a space."""
    from feinsum.tuning import (BoolParameter, IntParameter, TupleParameter,
                                _convert_to_tuning_param)

    def low(p):
        if isinstance(p, IntParameter):
            return p.low
        if isinstance(p, BoolParameter):
            return False
        if isinstance(p, TupleParameter):
            return tuple(low(q) for q in p._data)
        raise TypeError(type(p))
    return {p.var_name: low(_convert_to_tuning_param(p.func(einsum)))
            for p in ptf.transform_params}


def matches(fnsm, einsum, path):
    """None when feinsum can apply the space at path to einsum, else its
    error: the space's lowest point applied to the problem's loopy kernel
    (the space's own reference einsum matched against it)."""
    from feinsum.canonicalization import canonicalize_einsum
    from feinsum.tuning import get_transform_func_from_module_path
    try:
        ptf = get_transform_func_from_module_path(path)
        ce = canonicalize_einsum(einsum)
        bound = ptf.bind_args(ce, **first_point(ptf, ce))
        t_unit = fnsm.generate_loopy(einsum)
        bound(t_unit, insn_match=None, kernel_name=None)
    except fnsm.InvalidParameterError:
        return None  # matched; that point is refused by the space's rules
    except Exception as e:  # noqa: BLE001 - the reason is the answer
        msg = str(e).strip().splitlines()
        return "%s%s" % (type(e).__name__, (": " + msg[0][:200]) if msg
                         else "")
    return None


def roofline(fnsm, einsum, dev_name, x):
    from feinsum.diagnostics import NoDevicePeaksInfoError
    try:
        r = fnsm.get_roofline_flop_rate(einsum, dev_name, long_dim_length=x)
        return {str(k): v for k, v in r.items()}, None
    except NoDevicePeaksInfoError:
        return None, ("feinsum reports none for this device: %r is not in "
                      "its peak table (feinsum.data.device_info)" % dev_name)


def tune(a):
    import pyopencl as cl

    import feinsum as fnsm
    shape = common.parse_shape(a.shape)
    os.environ["FEINSUM_PEER_DTYPE"] = ("float32" if a.dtype == "f32"
                                        else "float64")
    einsum = make_einsum(fnsm, a.einsum, shape, a.dtype, a.long)
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    dev_name = ctx.devices[0].name
    spaces = spaces_for(a.einsum)
    if not spaces:
        common.not_run("feinsum ships no transform space for %s" % a.einsum)
    tried = {}
    ok = []
    for p in spaces:
        se, batched = space_einsum(p)
        if p.startswith(HERE):
            why = matches(fnsm, einsum, p)
        elif se is None or batched or not same_einsum(a.einsum, se):
            why = "written for %s%s, not this einsum" % (
                se or "another einsum", " batched over several operands"
                if batched else "")
        else:
            why = matches(fnsm, einsum, p)
        tried[os.path.basename(p)] = why or "matches"
        if why is None:
            ok.append(p)
    if not ok:
        common.not_run("feinsum ships no transform space that applies to "
                       "%s: " % a.einsum + "; ".join(
                           "%s: %s" % kv for kv in tried.items()))
    x = shape[a.long]
    os.makedirs(a.workdir, exist_ok=True)
    os.chdir(a.workdir)  # OpenTuner keeps its own database in the cwd
    per_space = a.limit / len(ok)
    t0 = time.time()
    stopped = []

    def recorded():
        try:
            con = sqlite3.connect(a.db)
            n = con.execute("SELECT COUNT(*) FROM FEINSUM_TIMING_FACTS "
                            "WHERE runtime_in_sec IS NOT NULL").fetchone()[0]
            con.close()
            return n
        except sqlite3.Error:
            return 0

    def at_limit(signum, frame):
        # the limit: stop, unless no candidate has been measured yet (one
        # of feinsum's candidates takes minutes here); then stop once one
        # has, or 10 minutes after the limit
        if recorded() or time.time() - t0 > a.limit + 600:
            stopped.append(time.time() - t0)
            raise KeyboardInterrupt
        signal.alarm(5)

    signal.signal(signal.SIGALRM, at_limit)
    for p in ok:
        if stopped:
            break
        signal.alarm(max(1, int(round(per_space))))
        try:
            fnsm.autotune(einsum, os.path.abspath(p), ctx, db_path=a.db,
                          long_dim_length=x, stop_after=per_space)
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            signal.alarm(0)
    wall = time.time() - t0
    rows = []
    if os.path.exists(a.db):
        con = sqlite3.connect(a.db)
        rows = con.execute("SELECT transform_id, transform_params, "
                           "runtime_in_sec, timestamp FROM FEINSUM_TIMING_FACTS "
                           "ORDER BY ID").fetchall()
        con.close()
    rf, rf_why = roofline(fnsm, einsum, dev_name, x)
    doc = dict(peer="feinsum", version=common.version("feinsum"),
               loopy=common.version("loopy"), device=dev_name,
               spaces=tried, limit_s=a.limit, wall_s=wall,
               hard_stopped_at_s=stopped[0] if stopped else None,
               candidates=len(rows), roofline_gops=rf,
               roofline_note=rf_why, search="OpenTuner (feinsum.autotune "
               "default: AUCBanditMetaTechnique)")
    good = [r for r in rows if r[2] is not None and r[2] < float("inf")]
    if not good:
        doc["error"] = (
            "no candidate measured: the search was stopped after %.0f s "
            "(%g s limit, then up to 10 min for a first candidate) with "
            "%d recorded; feinsum times each candidate three times, each "
            "at least 500 launches and 2 s, in batches of up to 4 "
            "candidates" % (wall, a.limit, len(rows)))
        common.emit(doc, 1)
    best = min(good, key=lambda r: r[2])
    space = best[0]
    if not os.path.isabs(space):
        from feinsum.tuning import _get_impls_path
        space = os.path.join(_get_impls_path(), space)
    doc.update(space=space, params=json.loads(best[1]),
               feinsum_time_s=best[2])
    # feinsum stamps each record with the second it was made, in
    # America/Chicago time (%Y_%m_%d_%H%M%S)
    try:
        from datetime import datetime
        from zoneinfo import ZoneInfo

        def stamp(text):
            return datetime.strptime(text, "%Y_%m_%d_%H%M%S").replace(
                tzinfo=ZoneInfo("America/Chicago")).timestamp()
        doc["best_found_after_s"] = stamp(best[3]) - t0
        doc["first_recorded_after_s"] = stamp(rows[0][3]) - t0
    except (TypeError, ValueError, KeyError):
        pass
    common.emit(doc)


def timed(a):
    import numpy as np
    import pyopencl as cl
    import pyopencl.array as cla

    import feinsum as fnsm
    from feinsum.canonicalization import canonicalize_einsum
    from feinsum.tuning import get_transform_func_from_module_path
    shape = common.parse_shape(a.shape)
    os.environ["FEINSUM_PEER_DTYPE"] = ("float32" if a.dtype == "f32"
                                        else "float64")
    einsum = make_einsum(fnsm, a.einsum, shape, a.dtype, a.long)
    ptf = get_transform_func_from_module_path(a.space)
    bound = ptf.bind_args(canonicalize_einsum(einsum), **json.loads(a.params))
    ctx = cl.Context([cl.get_platforms()[0].get_devices()[0]])
    cq = cl.CommandQueue(ctx, properties=cl.command_queue_properties
                         .PROFILING_ENABLE)
    import loopy as lp
    t_unit = fnsm.generate_loopy(einsum)
    t_unit = bound(t_unit, insn_match=None, kernel_name=None)
    t_unit = lp.set_options(t_unit, return_dict=True, no_numpy=True)
    arrs = common.load_inputs(a.inputs)
    args = {"in%d" % n: cla.to_device(cq, np.ascontiguousarray(x))
            for n, x in enumerate(arrs)}
    ex = t_unit.executor(ctx)
    evt, outs = ex(cq, **args)
    cq.finish()
    (out,) = outs.values()
    kw = dict(args)
    kw.update(outs)

    def run_once():
        e, _ = ex(cq, **kw)
        e.wait()
        return 1e-9 * (e.profile.end - e.profile.start)

    st = common.measure(run_once)
    ok, err = common.check_output(a.einsum, arrs, out.get(), a.dtype)
    if not ok:
        common.emit(dict(error="wrong result: max relative error %.3g" % err),
                    1)
    st.update(peer="feinsum", device=ctx.devices[0].name, space=a.space,
              params=json.loads(a.params), max_rel_error=err)
    common.emit(st)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("tune", "time"), required=True)
    ap.add_argument("--einsum", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--dtype", choices=("f32", "f64"), required=True)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--db")
    ap.add_argument("--workdir")
    ap.add_argument("--space")
    ap.add_argument("--params")
    ap.add_argument("--long", default="x")
    ap.add_argument("inputs", nargs="*")
    a = ap.parse_args()
    common.quiet_stdout()
    try:
        import feinsum  # noqa: F401
        import loopy  # noqa: F401
        import pyopencl  # noqa: F401
    except ImportError as e:
        common.not_run("feinsum cannot be imported: %s" % e)
    (tune if a.mode == "tune" else timed)(a)


if __name__ == "__main__":
    common.main_guard(main)
