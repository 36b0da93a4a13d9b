"""Loading a tuned kernel into pyopencl's context and launching it on
pyopencl buffers."""

import numpy as np
import pytest

import eintune
from conftest import rel_close

cl = pytest.importorskip("pyopencl")


@pytest.fixture(scope="module")
def clenv():
    for plat in cl.get_platforms():
        devs = plat.get_devices()
        if devs:
            ctx = cl.Context(devs[:1])
            return ctx, cl.CommandQueue(ctx)
    pytest.skip("no OpenCL device")


def _buf(ctx, a):
    mf = cl.mem_flags
    return cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)


def test_tune_then_launch(sess, clenv):
    ctx, q = clenv
    p = eintune.Problem("xik,kj->xij", "x=16,i=8,k=8,j=8", "f32")
    seen = []
    rep = sess.tune(p, budget=3, progress=lambda pr: seen.append(
        (pr.candidate, pr.outcome)))
    assert rep.found and [c for c, _ in seen] == [1, 2, 3]
    k = sess.load(p, ctx)
    assert isinstance(k, eintune.LoadedKernel)
    assert k.name and k.opts == rep.opts and k.zero_bytes >= 0
    a = np.random.rand(16, 8, 8).astype(np.float32)
    b = np.random.rand(8, 8).astype(np.float32)
    c = np.zeros((16, 8, 8), np.float32)
    cb = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=c.nbytes)
    ev = k.launch(q, cb, _buf(ctx, a), _buf(ctx, b))
    assert isinstance(ev, cl.Event)
    ev.wait()
    cl.enqueue_copy(q, c, cb)
    q.finish()
    rel_close(c, a @ b, 1e-4)
    # a buffer one element short is refused before anything is enqueued
    short = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=c.nbytes - 4)
    with pytest.raises(eintune.Error) as ei:
        k.launch(q, short, _buf(ctx, a), _buf(ctx, b))
    assert ei.value.input == "option" and "bytes" in ei.value.message
    with pytest.raises(eintune.Error):
        k.launch(q, cb, _buf(ctx, a))
    k.close()
    assert "LoadedKernel(" in repr(eintune.load(p, ctx, db=sess.db_path))


def test_load_opts_and_open_axis(sess, clenv):
    ctx, q = clenv
    p = eintune.Problem("xi->xi", "x=*,i=8", "f32")
    k = sess.load(p, ctx, opts="")
    assert k.opts == ""
    a = np.random.rand(5, 8).astype(np.float32)
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, size=a.nbytes)
    k.launch(q, out, _buf(ctx, a), sizes={"x": 5}, wait=True)
    c = np.empty_like(a)
    cl.enqueue_copy(q, c, out)
    q.finish()
    assert np.array_equal(c, a)


def test_load_not_found(sess, clenv):
    ctx, _ = clenv
    with pytest.raises(eintune.NotFound):
        sess.load(eintune.Problem("ij->ji", "i=3,j=5", "f32"), ctx,
                  exact=True)
