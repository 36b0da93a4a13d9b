"""eintune.einsum against numpy.einsum."""

import numpy as np
import pytest

import eintune
from conftest import rel_close

CASES = [
    ("ij,jk->ik", [(8, 5), (5, 6)]),          # matmul
    ("xik,kj->xij", [(4, 3, 5), (5, 2)]),     # batched by a shared matrix
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),  # batched matmul
    ("ij->i", [(7, 9)]),                      # row reduce
    ("ij->j", [(7, 9)]),                      # column reduce
    ("i,i->", [(33,), (33,)]),                # dot
    ("i,j->ij", [(6,), (4,)]),                # outer
    ("ij->ji", [(5, 3)]),                     # transpose
    ("ijk->kij", [(2, 3, 4)]),                # permutation
    ("ij,ij->ij", [(4, 6), (4, 6)]),          # elementwise product
    ("ii->i", [(5, 5)]),                      # diagonal
    ("ii", [(6, 6)]),                         # trace (implicit form)
    ("ij,jk", [(3, 4), (4, 2)]),              # implicit output
    ("...ij,jk->...ik", [(2, 3, 4, 5), (5, 2)]),  # ellipsis
    ("ij,jk,kl->il", [(3, 4), (4, 5), (5, 2)]),   # chain
    ("i->", [(100,)]),                        # sum
]


@pytest.mark.parametrize("expr,shapes", CASES,
                         ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_einsum_matches_numpy(expr, shapes, dtype, db):
    rng = np.random.default_rng(len(expr))
    ops = [rng.standard_normal(s).astype(dtype) for s in shapes]
    got = eintune.einsum(expr, *ops, db=db)
    want = np.einsum(expr, *ops)
    assert got.dtype == want.dtype
    rel_close(got, want, 1e-10 if dtype == np.float64 else 1e-4)


def test_einsum_f16(db):
    a = np.random.rand(6, 5).astype(np.float16)
    b = np.random.rand(5, 4).astype(np.float16)
    got = eintune.einsum("ij,jk->ik", a, b, db=db)
    assert got.dtype == np.float16
    rel_close(got, a.astype(np.float32) @ b.astype(np.float32), 2e-3)


def test_einsum_mixed(db):
    a = np.random.rand(4, 3).astype(np.float32)
    b = np.random.rand(3, 2)
    got = eintune.einsum("ij,jk->ik", a, b, db=db)
    assert got.dtype == np.float64
    rel_close(got, a.astype(np.float64) @ b, 1e-6)


def test_einsum_tunes_with_budget(db):
    a = np.random.rand(16, 8, 8)
    b = np.random.rand(8, 8)
    p = eintune.Problem.from_arrays("xik,kj->xij", a, b)
    assert eintune.best(p, db=db) is None
    got = eintune.einsum("xik,kj->xij", a, b, budget=3, db=db)
    rel_close(got, a @ b, 1e-10)
    assert eintune.best(p, db=db) is not None
    rel_close(eintune.einsum("xik,kj->xij", a, b, db=db, verify=True),
              a @ b, 1e-10)


def test_einsum_session_method(sess):
    a = np.random.rand(4, 4)
    rel_close(sess.einsum("ij,jk->ik", a, a), a @ a, 1e-10)


def test_einsum_errors(db):
    with pytest.raises(eintune.Error) as ei:
        eintune.einsum("ij,jk->iq", np.zeros((2, 2)), np.zeros((2, 2)),
                       db=db)
    assert ei.value.input == "einsum"
    assert str(ei.value).endswith("  ij,jk->iq\n          ^")
    with pytest.raises(TypeError):
        eintune.einsum("ij->ji", np.zeros((2, 2), np.int64), db=db)
    with pytest.raises(eintune.Error):
        eintune.einsum("ij,jk->ik", np.zeros((2, 3)), np.zeros((4, 2)),
                       db=db)
