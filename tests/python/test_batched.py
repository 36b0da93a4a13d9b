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
