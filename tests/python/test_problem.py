"""Problems: specs, arrays, dtypes, open axes, and the errors' carets."""

import numpy as np
import pytest

import eintune


def test_problem_from_spec():
    p = eintune.Problem("xik,kj->xij", "x=4,i=3,k=5,j=2", "f32")
    assert p.einsum == "xik,kj->xij"
    assert p.n_operands == 2
    assert p.dtypes == ["f32", "f32"]
    assert p.out_dtype == "f32"
    assert p.sizes == {"x": 4, "i": 3, "j": 2, "k": 5}
    assert p.operand_shape(0) == (4, 3, 5)
    assert p.operand_shape(1) == (5, 2)
    assert p.out_shape == (4, 3, 2)
    assert p.elems(-1) == 24
    assert p.ops() == p.ops("f32") > 0
    assert p.bytes == 4 * (60 + 10 + 24)
    assert p.open_axes == []
    assert "xik,kj->xij" in repr(p)


def test_problem_shape_dict_and_dtypes():
    p = eintune.Problem("ij,jk", {"i": 2, "j": 3, "k": 4},
                        ["f32", np.float64])
    assert p.einsum == "ij,jk->ik"
    assert p.dtypes == ["f32", "f64"]
    assert p.out_dtype == "f64"
    assert p.shape == "i=2,j=3,k=4"


def test_problem_from_arrays():
    a = np.zeros((6, 3, 2), np.float32)
    b = np.zeros((2, 5), np.float32)
    p = eintune.Problem.from_arrays("xik,kj->xij", a, b)
    assert p.dtypes == ["f32", "f32"]
    assert p.out_shape == (6, 3, 5)
    assert p.operand_shape(0) == (6, 3, 2)
    h = eintune.Problem("i,i->", arrays=[np.zeros(7, np.float16)] * 2)
    assert h.dtypes == ["f16", "f16"] and h.out_dtype == "f32"
    assert h.out_shape == ()


def test_problem_ellipsis():
    p = eintune.Problem("...ik,kj->...ij", "...=3x2,i=2,k=3,j=4", "f64")
    assert p.out_shape == (3, 2, 2, 4)
    assert p.operand_shape(0) == (3, 2, 2, 3)


def test_problem_open_axis_and_tune_at():
    p = eintune.Problem("xik,kj->xij", "x=*,i=4,k=4,j=4", "f32")
    assert p.open_axes == ["x"]
    assert p.sizes["x"] == 1024
    p.set_tune_at("x=64")
    assert p.sizes["x"] == 64
    q = eintune.Problem("xik,kj->xij", {"x": "*", "i": 4, "k": 4, "j": 4},
                        "f32", tune_at={"x": 32})
    assert q.sizes["x"] == 32


def test_bad_einsum_has_caret():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("ij,jk->iz", "i=2,j=3,k=4")
    e = ei.value
    assert e.status_name == "bad input"
    assert e.input == "einsum"
    assert e.position == 8
    assert e.text == "ij,jk->iz"
    assert e.caret == "  ij,jk->iz\n          ^"
    assert str(e).endswith("  ij,jk->iz\n          ^")
    assert "z" in e.message


def test_bad_shape_has_caret():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("ij,jk->ik", "i=2,j=3,k=q")
    e = ei.value
    assert e.input == "shape" and e.position == 10
    assert e.caret.splitlines() == ["  i=2,j=3,k=q", "            ^"]


def test_bad_dtype_and_tune_at():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("ij,jk->ik", "i=2,j=3,k=4", "f32,f99")
    assert ei.value.input == "dtype"
    assert "^" in str(ei.value)
    p = eintune.Problem("xik,kj->xij", "x=*,i=4,k=4,j=4", "f32")
    with pytest.raises(eintune.Error) as ei:
        p.set_tune_at("i=8")
    assert ei.value.input == "shape" and ei.value.caret


def test_bad_arrays():
    with pytest.raises(eintune.Error) as ei:
        eintune.Problem("ij,jk->ik", arrays=[np.zeros((2, 3)),
                                             np.zeros((4, 5))])
    assert ei.value.status == 1
    with pytest.raises(TypeError):
        eintune.Problem("ij,jk->ik", arrays=[np.zeros((2, 3), np.int32),
                                             np.zeros((3, 5))])


def test_error_and_not_found_types():
    assert issubclass(eintune.NotFound, eintune.Error)
    e = eintune.Error(1, "boom")
    assert str(e) == "boom" and e.caret == "" and e.position == -1


def test_public_names_have_docstrings():
    import inspect
    missing = []
    for name in eintune.__all__:
        obj = getattr(eintune, name)
        if name.startswith("__") or isinstance(obj, str):
            continue
        if not inspect.getdoc(obj):
            missing.append(name)
        if inspect.isclass(obj):
            for m, v in vars(obj).items():
                if not m.startswith("_") and callable(v) or \
                        isinstance(v, property):
                    if not m.startswith("_") and not inspect.getdoc(v):
                        missing.append("%s.%s" % (name, m))
    assert missing == []
