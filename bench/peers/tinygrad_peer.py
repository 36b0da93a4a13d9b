"""tinygrad as a peer: Tensor.einsum with BEAM=2 on tinygrad's OpenCL
backend (device "CL"), the same device eintune tunes on.

  tinygrad_peer.py --mode tune|time --einsum E --shape x=..,.. --dtype f32
                   --cache FILE INPUT.npy...

tune: the beam search runs afresh (IGNORE_BEAM_CACHE=1, its results
written to the scratch cache FILE): "time_to_result_s" is the wall time
from the first realize (scheduling, BEAM=2 search, compilation, the run)
to the result on the host. Then the kernels it chose are timed. time: the
cache FILE answers the search (the kernels the tune run chose), and they
are timed. Timing: the bench's protocol (common.measure), one sample is
the device time of every kernel of one realize (tinygrad's own OpenCL
profiling events, DEBUG=2, GlobalCounters.time_sum_s); the output is
checked against NumPy's einsum.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("tune", "time"), required=True)
    ap.add_argument("--einsum", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--dtype", choices=("f32", "f64"), required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--beam", default="2")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    os.environ["BEAM"] = a.beam
    os.environ["CACHEDB"] = os.path.abspath(a.cache)
    os.environ["DEBUG"] = "2"
    os.environ["DEV"] = "CL"
    if a.mode == "tune":
        os.environ["IGNORE_BEAM_CACHE"] = "1"
        for suf in ("", "-wal", "-shm"):
            if os.path.exists(a.cache + suf):
                os.remove(a.cache + suf)
    # tinygrad prints its DEBUG lines on stdout: they go to stderr, stdout
    # keeps the one JSON document
    common.quiet_stdout()
    try:
        from tinygrad import Device, Tensor
        from tinygrad.helpers import GlobalCounters
    except ImportError as e:
        common.not_run("tinygrad is not installed: %s" % e)
    try:
        dev = Device["CL"]
    except Exception as e:  # noqa: BLE001 - the reason is the result
        common.not_run("tinygrad's OpenCL backend (CL) cannot open a "
                       "device: %s" % e)
    arrs = common.load_inputs(a.inputs)
    ts = [Tensor(x, device="CL").realize() for x in arrs]
    dev.synchronize()
    eq = a.einsum

    def once():
        return Tensor.einsum(eq, *ts).realize()

    t0 = time.monotonic()
    out = once()
    host = out.numpy()
    t_result = time.monotonic() - t0
    ok, err = common.check_output(eq, arrs, host, a.dtype)
    if not ok:
        common.emit(dict(error="wrong result: max relative error %.3g" % err),
                    1)

    def run_once():
        GlobalCounters.reset()
        once()
        dev.synchronize()
        return GlobalCounters.time_sum_s

    st = common.measure(run_once)
    GlobalCounters.reset()
    once()
    dev.synchronize()
    st.update(peer="tinygrad", version=common.version("tinygrad"),
              backend="CL", beam=int(a.beam), mode=a.mode,
              kernels=GlobalCounters.kernel_count,
              device=common.opencl_device_name(), max_rel_error=err)
    if a.mode == "tune":
        st["time_to_result_s"] = t_result
    common.emit(st)


if __name__ == "__main__":
    common.main_guard(main)
