"""Sessions: open, tune with progress, best, run, export, and the module's
shared-session calls."""

import os
import subprocess
import sys

import numpy as np
import pytest

import eintune
from conftest import rel_close

MM = ("ij,jk->ik", "i=32,j=16,k=24", "f32")


@pytest.fixture(scope="module")
def tuned(sess):
    """A small matmul tuned once, with every progress report kept."""
    p = eintune.Problem(*MM)
    seen = []
    rep = sess.tune(p, budget=4, progress=seen.append)
    return p, rep, seen


def test_session_basics(sess, db):
    assert sess.device_name
    assert sess.db_path == db
    assert "Session(" in repr(sess)


def test_session_log_and_close(tmp_path):
    lines = []
    with eintune.Session(db=str(tmp_path / "a.db"),
                         log=lambda lvl, msg: lines.append((lvl, msg))) as s:
        assert s.best(eintune.Problem(*MM)) is None
    assert any("database" in m for _, m in lines)
    assert all(lvl in ("debug", "info", "warn") for lvl, _ in lines)
    assert repr(s) == "Session(closed)"
    with pytest.raises(eintune.Error):
        s.best(eintune.Problem(*MM))


def test_session_bad_device(tmp_path):
    with pytest.raises(eintune.Error) as ei:
        eintune.Session(device="nodevice:7", db=str(tmp_path / "b.db"))
    assert ei.value.input == "device"
    assert "nodevice:7" in ei.value.message


def test_session_bad_db(tmp_path):
    bad = tmp_path / "not.db"
    bad.write_text("this is not a database\n" * 10)
    with pytest.raises(eintune.Error) as ei:
        eintune.Session(db=str(bad))
    assert ei.value.input == "file"


def test_tune_report(tuned):
    p, rep, seen = tuned
    assert rep.found
    assert rep.opts is not None and rep.kernel
    assert rep.time_s > 0 and rep.gops > 0
    assert rep.stop_reason == "budget"
    assert len(rep.candidates) == 4
    c = rep.candidates[0]
    assert isinstance(c, eintune.Candidate)
    assert c.outcome in ("ok", "refused", "build_error", "launch_error",
                         "wrong_result", "timeout", "crash",
                         "slower_than_bound")
    assert any(c.outcome == "ok" and c.gops for c in rep.candidates)
    assert rep.json["einsum"] == "ij,jk->ik"
    assert rep.json["best"]["opts"] == rep.opts
    if rep.has_roofline:
        assert rep.roofline_pct > 0 and rep.roofline_gops
    else:
        assert rep.roofline_pct is None
    assert "ij,jk->ik" in rep.text
    assert "TuneReport(" in repr(rep)


def test_tune_progress(tuned):
    _, rep, seen = tuned
    assert [pr.candidate for pr in seen] == [1, 2, 3, 4]
    assert all(isinstance(pr, eintune.Progress) for pr in seen)
    assert all(pr.budget == 4 for pr in seen)
    assert seen[-1].have_best and seen[-1].best_time_s > 0
    assert any(pr.new_best for pr in seen)


def test_tune_cancel_and_raise(sess):
    p = eintune.Problem("ij,jk->ik", "i=8,j=8,k=12", "f32")
    rep = sess.tune(p, budget=20, race=-1, progress=lambda pr: True)
    assert rep.cancelled and len(rep.candidates) == 1

    def boom(pr):
        raise KeyError("from the callback")
    with pytest.raises(KeyError):
        sess.tune(p, budget=20, race=-1, progress=boom)


def test_tune_bad_start_opts(sess):
    p = eintune.Problem("ij,jk->ik", "i=8,j=8,k=8", "f32")
    with pytest.raises(eintune.Error) as ei:
        sess.tune(p, budget=2, start_opts="LOCAL(i,8")
    assert ei.value.input == "opts"
    assert ei.value.caret.startswith("  LOCAL(i,8\n")


def test_best(sess, tuned):
    p, rep, _ = tuned
    b = sess.best(p)
    assert isinstance(b, eintune.Best)
    assert b.opts == rep.opts and b.kernel
    assert b.source == "exact" and b.backend == "opencl"
    assert b.time_s > 0 and b.gops > 0
    # never tuned, and no other problem of this structure in the database
    assert sess.best(eintune.Problem("ijk->kji", "i=3,j=2,k=5", "f64")) \
        is None


def test_run_best(sess, tuned):
    p, rep, _ = tuned
    rng = np.random.default_rng(1)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 24)).astype(np.float32)
    c, res = sess.run(p, a, b, details=True, time=True)
    rel_close(c, a @ b, 1e-4)
    assert c.dtype == np.float32
    assert res.opts == rep.opts
    assert res.verify["output_ok"] and res.verify["outcome"] == "ok"
    assert res.timed and res.timing["time_s"] > 0
    # f64 arrays are converted to the problem's f32
    rel_close(sess.run(p, a.astype(np.float64), b, verify=False), a @ b,
              1e-4)


def test_run_untransformed_and_opts(sess):
    p = eintune.Problem("ij->ji", "i=9,j=7", "f64")
    a = np.arange(63.0).reshape(9, 7)
    with pytest.raises(eintune.NotFound) as ei:
        sess.run(p, a)
    assert ei.value.status_name == "not found"
    assert np.array_equal(sess.run(p, a, best=False), a.T)
    with pytest.raises(eintune.Error) as ei:
        sess.run(p, a, best=False, opts="UPCAST(q,4)")
    assert ei.value.input == "opts" and "UPCAST(q,4)" in str(ei.value)


def test_run_shape_mismatch(sess):
    p = eintune.Problem("ij->ji", "i=9,j=7", "f64")
    with pytest.raises(eintune.Error):
        sess.run(p, np.zeros((7, 9)), best=False)
    with pytest.raises(eintune.Error):
        sess.run(p, np.zeros((9, 7)), np.zeros(3), best=False)


def test_run_einsum_text(sess):
    a = np.random.rand(5, 6)
    rel_close(sess.run("ij->i", a, best=False), a.sum(1), 1e-12)


def test_open_axis_run(sess):
    p = eintune.Problem("xik,kj->xij", "x=*,i=4,k=4,j=4", "f32",
                        tune_at="x=64")
    rep = sess.tune(p, budget=3, race=-1)
    assert rep.found
    a = np.random.rand(10, 4, 4).astype(np.float32)
    b = np.random.rand(4, 4).astype(np.float32)
    rel_close(sess.run(p, a, b), a @ b, 1e-4)


def test_export(sess, tuned, tmp_path):
    p, rep, _ = tuned
    r = sess.export(p, str(tmp_path / "k"), name="mm32")
    assert isinstance(r, eintune.ExportResult)
    assert r.kernel == "mm32" and r.backend == "opencl"
    assert os.path.isfile(r.source) and r.source.endswith("mm32.cl")
    assert os.path.isfile(r.header)
    assert "MM32_" in open(r.header).read()
    r2 = sess.export(p, str(tmp_path / "k2"), embed=True)
    assert r2.kernel and "SOURCE" in open(r2.header).read()
    with pytest.raises(eintune.Error) as ei:
        sess.export(p, str(tmp_path / "k3"), name="bad-name")
    assert ei.value.input == "option" and ei.value.caret
    with pytest.raises(eintune.NotFound):
        sess.export(eintune.Problem("ij->ji", "i=3,j=2", "f32"),
                    str(tmp_path / "k4"), exact=True)


def test_module_calls(db, tuned, tmp_path):
    p, rep, _ = tuned
    s = eintune.session(db=db)
    assert s is eintune.session(db=db)
    assert eintune.best(p, db=db).opts == rep.opts
    a = np.random.rand(32, 16).astype(np.float32)
    b = np.random.rand(16, 24).astype(np.float32)
    rel_close(eintune.run(p, a, b, db=db), a @ b, 1e-4)
    assert eintune.export(p, str(tmp_path / "m"), name="mm_mod",
                          db=db).kernel == "mm_mod"
    q = eintune.Problem("i,i->", "i=64", "f32")
    r = eintune.tune(q, db=db, budget=2, race=-1)
    assert r.found and eintune.best(q, db=db) is not None


def _import(env):
    code = "import eintune, sys; sys.stdout.write(eintune.library_path)"
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    e = dict(os.environ, PYTHONPATH=os.path.join(root, "python"))
    e.update(env)
    for k, v in env.items():
        if v is None:
            del e[k]
    return subprocess.run([sys.executable, "-c", code], env=e,
                          capture_output=True, text=True)


def test_library_search():
    lib = eintune.library_path
    r = _import({"EINTUNE_LIBRARY": lib})
    assert r.returncode == 0 and r.stdout == lib
    r = _import({"EINTUNE_LIBRARY": "/nonexistent/libeintune.so"})
    assert r.returncode != 0 and "EINTUNE_LIBRARY" in r.stderr
    build = os.path.join(os.path.dirname(__file__), "..", "..", "build",
                         "libeintune.so")
    if os.path.exists(build):
        r = _import({"EINTUNE_LIBRARY": None})
        assert r.returncode == 0
        assert os.path.samefile(r.stdout, build)
