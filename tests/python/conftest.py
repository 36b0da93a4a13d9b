"""pytest setup for the eintune package's tests: the package from the
checkout's python/, the library from $EINTUNE_LIBRARY (else the build
directory tests/run.sh names, else the package's own search), PoCL's
cache in a writable directory, and one temporary database per run."""

import os
import sys
import tempfile

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

if "EINTUNE_LIBRARY" not in os.environ and os.environ.get("ET_BUILD_DIR"):
    os.environ["EINTUNE_LIBRARY"] = os.path.join(os.environ["ET_BUILD_DIR"],
                                                 "libeintune.so")
if "POCL_CACHE_DIR" not in os.environ:
    os.environ["POCL_CACHE_DIR"] = tempfile.mkdtemp(prefix="eintune-pocl-")
os.makedirs(os.environ["POCL_CACHE_DIR"], exist_ok=True)
# the default database of calls that name none stays out of the user's
os.environ.setdefault("XDG_CACHE_HOME", tempfile.mkdtemp(prefix="eintune-xdg-"))

import eintune  # noqa: E402


@pytest.fixture(scope="session")
def db(tmp_path_factory):
    """A fresh database for the whole run."""
    return str(tmp_path_factory.mktemp("db") / "tune.db")


@pytest.fixture(scope="session")
def sess(db):
    """One session on the first OpenCL device and the run's database."""
    s = eintune.Session(db=db)
    yield s
    s.close()


def rel_close(got, want, rtol):
    """got is want within rtol of the sum of magnitudes' scale."""
    import numpy as np
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    scale = max(1.0, float(np.max(np.abs(want))) if want.size else 1.0)
    assert np.allclose(got, want, rtol=rtol, atol=rtol * scale), \
        float(np.max(np.abs(got - want)))
