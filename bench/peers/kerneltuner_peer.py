"""Kernel Tuner as a peer: one of eintune's YAML spaces
(examples/batched_tiled_matmul.yaml) as a Kernel Tuner tune_params space
over the same generated kernels, searched by a Kernel Tuner strategy
within a time limit.

  kerneltuner_peer.py --einsum E --shape S --dtype f32 --space YAML
                      --strategy brute_force|bayes_opt --limit SEC
                      --eintune BIN [--target-time S] INPUT.npy...

The space's params become tune_params (pow2: the powers of two in the
range, range: every integer, values: the list), its constraints Kernel
Tuner restrictions (the problem's sizes and the device's
max_work_group_size put in), and a configuration's kernel is the one
eintune renders for the opts the space's transforms give it
(`eintune codegen EINSUM --shape .. --dtype .. --opts OPTS`): Kernel Tuner
gets its source (kernel_source as a function of the configuration) and its
launch size (problem_size as a function of it) from that output. The
kernels of this space use one work-item per work-group (local 1x1x1);
a configuration whose kernel would not is refused.

Kernel Tuner's default strategy (brute_force) takes no time_limit option;
its runner still stops at its budget's time limit, which this driver sets
to the limit (the budget class given the limit as its default; the
configurations skipped at the limit, listed as None, are left out of
the results Kernel Tuner processes). bayes_opt
takes the limit as its time_limit option.

Kernel Tuner compiles and times each configuration itself (OpenCL events,
its default 7 iterations, its "time" objective in ms) and checks the
output against NumPy's einsum (its `answer`). Printed: the best
configuration, its opts and Kernel Tuner's time, the configurations
evaluated, the wall time, and, with --target-time, when a configuration
first came within 10 % of it (time at most target / 0.9).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

KNAME = "eintune_kernel"


def load_space(path):
    import yaml
    with open(path) as f:
        return yaml.safe_load(f)


def param_values(spec):
    if "pow2" in spec:
        lo, hi = spec["pow2"]
        out, v = [], 1
        while v <= hi:
            if v >= lo:
                out.append(v)
            v *= 2
        return out
    if "range" in spec:
        lo, hi = spec["range"]
        return list(range(lo, hi + 1))
    if "values" in spec:
        return list(spec["values"])
    raise ValueError("unknown param kind: %r" % spec)


def substitute(expr, names):
    """expr with every name of names (the problem's sizes, device limits)
    replaced by its value; the params stay names."""
    return re.sub(r"\b([A-Za-z_]\w*)\b",
                  lambda m: str(names[m.group(1)]) if m.group(1) in names
                  else m.group(1), expr)


def opts_of(space, params):
    out = []
    for t in space.get("transforms", []):
        w = t.get("when")
        if w is not None and not eval(w, {}, dict(params)):  # noqa: S307
            continue
        amt = t["amt"]
        amt = params[amt] if isinstance(amt, str) else amt
        out.append("%s(%s,%d)" % (t["op"], t["axis"], amt))
    return " ".join(out)


class Codegen:
    """eintune codegen per configuration, remembered by opts."""

    def __init__(self, eintune, einsum, shape, dtype, space):
        self.bin, self.einsum, self.shape = eintune, einsum, shape
        self.dtype, self.space = dtype, space
        self.memo = {}

    def get(self, params):
        params = {k: v for k, v in params.items() if k in
                  self.space["params"]}
        opts = opts_of(self.space, params)
        if opts not in self.memo:
            p = subprocess.run([self.bin, "codegen", self.einsum, "--shape",
                                self.shape, "--dtype", self.dtype, "--opts",
                                opts], capture_output=True, text=True)
            if p.returncode != 0:
                raise RuntimeError("eintune codegen refused %s: %s" % (
                    opts, p.stderr.strip()))
            src = p.stdout
            m = re.search(r"global: (\d+)x(\d+)x(\d+) local: (\d+)x(\d+)x(\d+)",
                          src)
            glob = tuple(int(v) for v in m.groups()[:3])
            loc = tuple(int(v) for v in m.groups()[3:])
            if loc != (1, 1, 1):
                raise RuntimeError("%s: local size %s, not 1x1x1" % (opts,
                                                                      loc))
            src = re.sub(r"__kernel void (\w+)\(", "__kernel void %s(" % KNAME,
                         src, count=1)
            self.memo[opts] = (src, glob)
        return opts, self.memo[opts]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--einsum", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--dtype", choices=("f32", "f64"), required=True)
    ap.add_argument("--space", required=True)
    ap.add_argument("--strategy", default="brute_force")
    ap.add_argument("--limit", type=float, required=True)
    ap.add_argument("--eintune", required=True)
    ap.add_argument("--target-time", type=float)
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    common.quiet_stdout()
    try:
        import kernel_tuner
        import numpy as np
        import pyopencl as cl
    except ImportError as e:
        common.not_run("Kernel Tuner cannot be imported: %s" % e)
    space = load_space(a.space)
    shape = common.parse_shape(a.shape)
    dev = cl.get_platforms()[0].get_devices()[0]
    names = dict(shape)
    names["max_work_group_size"] = dev.max_work_group_size
    tune_params = {k: param_values(v) for k, v in space["params"].items()}
    # Kernel Tuner launches block_size_{x,y,z} work-items per work-group:
    # one here (the space's kernels have local 1x1x1)
    for b in ("block_size_x", "block_size_y", "block_size_z"):
        tune_params[b] = [1]
    restrictions = [substitute(c, names) for c in space.get("constraints",
                                                            [])]
    cg = Codegen(a.eintune, a.einsum, a.shape, a.dtype, space)
    arrs = common.load_inputs(a.inputs)
    ref = np.einsum(a.einsum, *[x.astype(np.float64) for x in arrs])
    out = np.zeros(ref.shape, dtype=arrs[0].dtype)
    answer = [ref.astype(arrs[0].dtype)] + [None] * len(arrs)
    scale = float(np.max(np.abs(ref))) or 1.0
    atol = scale * (1e-4 if a.dtype == "f32" else 1e-10)

    def source(params):
        return cg.get(params)[1][0]

    def problem_size(params):
        return cg.get(params)[1][1]

    if a.strategy == "brute_force":
        # Kernel Tuner's default strategy takes no time_limit option, but
        # its runner stops at the budget's time limit: the budget of this
        # run gets the limit
        import kernel_tuner.util as ktu

        class Budget(ktu.TuningBudget):
            def __init__(self, time_limit=None, max_fevals=None):
                super().__init__(a.limit if time_limit is None
                                 else time_limit, max_fevals)
        ktu.TuningBudget = Budget
        # the runner lists a configuration it skipped at the limit as
        # None, which the rest of Kernel Tuner does not expect: its list
        # keeps the configurations that ran
        from kernel_tuner.runners.sequential import SequentialRunner
        run_all = SequentialRunner.run

        def run_ran(self, *args, **kwargs):
            return [r for r in run_all(self, *args, **kwargs) if r]
        SequentialRunner.run = run_ran
        opts = dict(strategy=a.strategy)
    else:
        opts = dict(strategy=a.strategy,
                    strategy_options=dict(time_limit=a.limit))
    t0 = time.time()
    results, env = kernel_tuner.tune_kernel(
        KNAME, source, problem_size, [out] + arrs, tune_params,
        restrictions=restrictions, answer=answer, atol=atol, lang="OpenCL",
        compiler_options=["-cl-std=CL1.2"], quiet=True, **opts)
    wall = time.time() - t0
    results = [r for r in results if r]
    from datetime import datetime
    ok = [r for r in results if isinstance(r.get("time"), (int, float))
          and math.isfinite(r["time"])]
    doc = dict(peer="kernel_tuner", version=common.version("kernel_tuner"),
               strategy=a.strategy, space=os.path.basename(a.space),
               tune_params={k: v for k, v in tune_params.items()
                            if not k.startswith("block_size")},
               restrictions=restrictions, limit_s=a.limit, wall_s=wall,
               evaluated=len(results), valid=len(ok),
               device=env.get("device_name") or dev.name)
    if not ok:
        doc["error"] = "no configuration ran within the limit (%d tried)" % (
            len(results))
        common.emit(doc, 1)
    best = min(ok, key=lambda r: r["time"])
    bp = {k: best[k] for k in space["params"]}
    doc.update(params=bp, opts=opts_of(space, bp),
               kt_time_s=best["time"] * 1e-3)

    def stamp(r):
        return datetime.fromisoformat(r["timestamp"]).timestamp()
    if a.target_time:
        goal = a.target_time / 0.9
        doc["target_time_s"] = a.target_time
        doc["reached"] = None
        for n, r in enumerate(results, 1):
            t = r.get("time")
            if isinstance(t, (int, float)) and math.isfinite(t) and \
                    t * 1e-3 <= goal:
                doc["reached"] = dict(t_s=stamp(r) - t0, evaluated=n,
                                      time_s=t * 1e-3,
                                      opts=opts_of(space, {
                                          k: r[k] for k in space["params"]}))
                break
    try:
        doc["best_found_after_s"] = stamp(best) - t0
    except (KeyError, ValueError, TypeError):
        pass
    common.emit(doc)


if __name__ == "__main__":
    common.main_guard(main)
