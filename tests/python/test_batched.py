"""Batched einsums from Python: Problem(batch=...), run with arrays by
name (one output per row, each equal to numpy.einsum of its row), a tuned
entry answering the rows reordered and renamed, and the errors."""

import numpy as np
import pytest

import eintune

ROWS = "u,Dr; u,Ds; u,Dt"


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((48, 6))
    return u, {n: rng.standard_normal((5, 6)) for n in ("Dr", "Ds", "Dt")}


def test_problem_rows():
    p = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64", batch=ROWS)
    assert p.einsum == "xj,Rij->Rxi"
    assert p.rows == [["u", "Dr"], ["u", "Ds"], ["u", "Dt"]]
    assert p.out_shape == (3, 48, 5)
    assert p.sizes["R"] == 3
    # the shared u once, each row's D and output once
    assert p.bytes == 8 * (48 * 6 + 3 * 30 + 3 * 48 * 5)
    assert eintune.Problem("xj,ij->xi", "x=4,i=2,j=2").rows == []


def test_bad_batch_has_caret():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("xj,ij->xi", "x=4,i=2,j=2", batch="u,Dr; u")
    e = ei.value
    assert e.input == "batch"
    assert e.position == 7
    assert "^" in str(e) and "row 1 names 1 operand" in str(e)


def test_run_rows_against_numpy(sess):
    p = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64", batch=ROWS)
    u, D = arrays()
    for opts in (None, "UPCAST(R,0) UPCAST(i,5)"):
        outs = sess.run(p, inputs=dict(u=u, **D), best=False, opts=opts)
        assert len(outs) == 3
        for out, n in zip(outs, ("Dr", "Ds", "Dt")):
            assert np.allclose(out, np.einsum("xj,ij->xi", u, D[n]))
    with pytest.raises(eintune.Error, match="by name"):
        sess.run(p, u, D["Dr"], best=False)
    with pytest.raises(eintune.Error, match="no array named Dt"):
        sess.run(p, inputs=dict(u=u, Dr=D["Dr"], Ds=D["Ds"]), best=False)


def test_tuned_entry_serves_reordered_rows(sess):
    p = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64", batch=ROWS)
    seen = []
    rep = sess.tune(p, budget=3, race=-1, progress=seen.append)
    assert rep.summary["found"] and seen
    q = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64",
                        batch="v,Dt; v,Dr; v,Ds")
    u, D = arrays(1)
    outs = sess.run(q, inputs=dict(v=u, **D), best=True, exact=True)
    for out, n in zip(outs, ("Dt", "Dr", "Ds")):
        assert np.allclose(out, np.einsum("xj,ij->xi", u, D[n]))


def test_open_axis_rows(sess):
    # x=* in a batched problem: tuned at x=32, the entry then runs the
    # rows at other sizes of x, each output equal to numpy.einsum
    p = eintune.Problem("xj,ij->xi", "x=*,i=5,j=6", "f64", batch=ROWS,
                        tune_at="x=32")
    assert p.open_axes == ["x"]
    rep = sess.tune(p, budget=3, race=-1)
    assert rep.summary["found"]
    rng = np.random.default_rng(3)
    D = {n: rng.standard_normal((5, 6)) for n in ("Dr", "Ds", "Dt")}
    for X in (1, 37, 100):
        u = rng.standard_normal((X, 6))
        q = eintune.Problem("xj,ij->xi", "x=%d,i=5,j=6" % X, "f64",
                            batch=ROWS)
        outs = sess.run(q, inputs=dict(u=u, **D), best=True)
        for out, n in zip(outs, ("Dr", "Ds", "Dt")):
            assert out.shape == (X, 5)
            assert np.allclose(out, np.einsum("xj,ij->xi", u, D[n]))


def test_load_and_launch_rows(sess):
    """A batched kernel loaded into pyopencl's context: args names each
    buffer (the output's rows, the shared u once, each rowed D), and
    launch_args with one buffer each gives numpy.einsum per row; launch,
    which takes one output, refuses it."""
    cl = pytest.importorskip("pyopencl")
    devs = [d for p in cl.get_platforms() for d in p.get_devices()]
    if not devs:
        pytest.skip("no OpenCL device")
    ctx = cl.Context(devs[:1])
    q = cl.CommandQueue(ctx)
    p = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64", batch=ROWS)
    k = sess.load(p, ctx, opts="UPCAST(R,0) UPCAST(i,5) NTSTORE")
    assert k.args == [(-1, 0), (-1, 1), (-1, 2), (0, -1), (1, 0), (1, 1),
                      (1, 2)]
    u, D = arrays(2)
    mf = cl.mem_flags

    def buf(a):
        return cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)

    outs = [cl.Buffer(ctx, mf.READ_WRITE, size=48 * 5 * 8) for _ in range(3)]
    ev = k.launch_args(q, *outs, buf(u), buf(D["Dr"]), buf(D["Ds"]),
                       buf(D["Dt"]))
    assert isinstance(ev, cl.Event)
    ev.wait()
    for ob, n in zip(outs, ("Dr", "Ds", "Dt")):
        got = np.empty((48, 5))
        cl.enqueue_copy(q, got, ob)
        q.finish()
        assert np.allclose(got, np.einsum("xj,ij->xi", u, D[n]))
    with pytest.raises(eintune.Error):
        k.launch(q, outs[0], buf(u), buf(D["Dr"]))
    with pytest.raises(eintune.Error):
        k.launch_args(q, *outs, buf(u), buf(D["Dr"]))
    k.close()


SUMMED = "u0,Dr + u1,Ds + u2,Dt"


def summed_arrays(seed=3):
    rng = np.random.default_rng(seed)
    return {**{n: rng.standard_normal((48, 6)) for n in ("u0", "u1", "u2")},
            **{n: rng.standard_normal((5, 6)) for n in ("Dr", "Ds", "Dt")}}


def summed_ref(a):
    return sum(np.einsum("xj,ij->xi", a[u], a[D])
               for u, D in (("u0", "Dr"), ("u1", "Ds"), ("u2", "Dt")))


def test_rows_summed_run_against_numpy(sess):
    """Rows summed into one output ('+'): one array, the sum of the rows'
    numpy.einsum, untransformed and with opts; a tuned entry answers the
    rows reordered and renamed."""
    p = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64", batch=SUMMED)
    assert p.einsum == "Rxj,Rij->xi"
    assert p.n_outputs == 1 and len(p.rows) == 3
    assert p.out_shape == (48, 5)
    assert eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64",
                           batch=ROWS).n_outputs == 3
    a = summed_arrays()
    for opts in (None, "UPCAST(i,5) SPLIT(j,2)", "UPCAST(x,4) STAGE NTSTORE",
                 "UNROLL(R,0) UPCAST(i,5) STAGE"):
        out = sess.run(p, inputs=a, best=False, opts=opts, verify=True)
        assert isinstance(out, np.ndarray) and out.shape == (48, 5)
        assert np.allclose(out, summed_ref(a))
    with pytest.raises(eintune.Error, match="a loop or UNROLLed whole"):
        sess.run(p, inputs=a, best=False, opts="GROUP(R,3)")
    rep = sess.tune(p, budget=3, race=-1)
    assert rep.summary["found"]
    q = eintune.Problem("xj,ij->xi", "x=48,i=5,j=6", "f64",
                        batch="w2,Dt + w0,Dr + w1,Ds")
    out = sess.run(q, inputs=dict(w0=a["u0"], w1=a["u1"], w2=a["u2"],
                                  Dr=a["Dr"], Ds=a["Ds"], Dt=a["Dt"]),
                   best=True, exact=True)
    assert np.allclose(out, summed_ref(a))


def test_rows_summed_mixed_separators():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("xj,ij->xi", "x=4,i=2,j=2", batch="u,A; u,B + u,C")
    assert ei.value.input == "batch" and "not both" in str(ei.value)
