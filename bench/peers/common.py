"""What the peer drivers (feinsum_peer.py, kerneltuner_peer.py,
tinygrad_peer.py) share: the bench's timing protocol (the one of
bench/peer_stats.h and docs/measurement.md), the inputs, the check of an
output against NumPy, and the one JSON document each driver prints.

Every driver prints exactly one JSON object on stdout: the peer's result,
or {"not_run": WHY} (exit status 3) when the peer cannot run here, or
{"error": WHY} (exit status 1) when it ran and failed.
"""
import json
import math
import os
import sys
import time
import traceback

WARMUPS = 2
MIN_RUNS = 6
MAX_RUNS = 50
MAX_SECONDS = 2.0
REL_HALFWIDTH = 0.02


def _binom_cdf_half(k, n):
    return sum(math.exp(math.lgamma(n + 1) - math.lgamma(i + 1)
                        - math.lgamma(n - i + 1) - n * math.log(2.0))
               for i in range(k + 1))


def ci_ranks(n):
    """1-based ranks (lo, hi) of the 95 % interval of the median of n
    sorted samples (order statistics); None below 6 samples."""
    best = None
    for lo in range(1, n // 2 + 1):
        if 1.0 - 2.0 * _binom_cdf_half(lo - 1, n) >= 0.95:
            best = lo
    return None if best is None else (best, n + 1 - best)


def summarize(samples):
    s = sorted(samples)
    n = len(s)
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    r = ci_ranks(n)
    lo, hi = (s[r[0] - 1], s[r[1] - 1]) if r else (s[0], s[-1])
    mean = sum(s) / n
    var = sum((x - mean) ** 2 for x in s) / max(n - 1, 1)
    return dict(time_s=med, ci95_s=[lo, hi], runs=n,
                cv=(math.sqrt(var) / mean) if mean > 0 else None)


def measure(run_once):
    """The protocol: run_once() runs the kernel once and returns its
    duration in seconds. 2 untimed warm-ups, at least 6 timed runs, more
    until the 95 % interval of the median is within +-2 %, or 50 runs, or
    2 s (summed durations or wall time since the first timed run)."""
    for _ in range(WARMUPS):
        run_once()
    samples = []
    t0 = time.monotonic()
    while True:
        samples.append(run_once())
        n = len(samples)
        if n < MIN_RUNS:
            continue
        st = summarize(samples)
        half = max(st["time_s"] - st["ci95_s"][0],
                   st["ci95_s"][1] - st["time_s"])
        if (half <= REL_HALFWIDTH * st["time_s"] or n >= MAX_RUNS
                or max(sum(samples), time.monotonic() - t0) >= MAX_SECONDS):
            st["converged"] = half <= REL_HALFWIDTH * st["time_s"]
            return st


def load_inputs(paths):
    import numpy as np
    return [np.load(p) for p in paths]


def check_output(einsum, inputs, out, dtype):
    """The output against NumPy's einsum in float64: the largest error
    relative to the largest magnitude of the reference must be small
    (1e-4 in f32, 1e-10 in f64). Returns (ok, error)."""
    import numpy as np
    ref = np.einsum(einsum, *[a.astype(np.float64) for a in inputs])
    got = np.asarray(out, dtype=np.float64).reshape(ref.shape)
    scale = float(np.max(np.abs(ref))) or 1.0
    err = float(np.max(np.abs(got - ref))) / scale
    return err <= (1e-4 if dtype == "f32" else 1e-10), err


def version(dist):
    try:
        from importlib.metadata import version as v
        return v(dist)
    except Exception:  # noqa: BLE001 - unknown then
        return None


def opencl_device_name():
    try:
        import pyopencl as cl
        return cl.get_platforms()[0].get_devices()[0].name
    except Exception:  # noqa: BLE001 - reported as unknown
        return None


_OUT_FD = None


def quiet_stdout():
    """Sends what the peer's library prints on stdout to stderr: stdout
    carries the one JSON document (emit)."""
    global _OUT_FD
    if _OUT_FD is None:
        sys.stdout.flush()
        _OUT_FD = os.dup(1)
        os.dup2(2, 1)


def emit(doc, rc=0):
    text = (json.dumps(doc) + "\n").encode()
    sys.stdout.flush()
    os.write(1 if _OUT_FD is None else _OUT_FD, text)
    sys.exit(rc)


def not_run(why):
    emit(dict(not_run=why), 3)


def main_guard(fn):
    """Runs fn(); an exception becomes {"error": ...} with exit status 1."""
    try:
        fn()
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - reported, never raised
        traceback.print_exc(file=sys.stderr)
        emit(dict(error="%s: %s" % (type(e).__name__,
                                    str(e).strip().splitlines()[0]
                                    if str(e).strip() else "")), 1)


def env_dtype(dtype):
    import numpy as np
    return np.float32 if dtype == "f32" else np.float64


def shape_of(sub, shape):
    return tuple(shape[c] for c in sub)


def parse_shape(text):
    return {k: int(v) for k, v in (p.split("=") for p in text.split(","))}


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, path)
