"""CUDA loads from Python, through the fake driver the C tests use
(tests/so/fake_cuda.c, built as $ET_BUILD_DIR/tests/fake_cuda.so and
named by ET_LIBCUDA): Session.load_cuda compiles with NVRTC into the
calling thread's current context, launch passes device pointers (ints or
arrays with __cuda_array_interface__) and a stream, the checks made
before a launch, and the errors without a context. The fake runs no
kernel: it records each launch's arguments, which these tests read."""

import ctypes
import os

import pytest

import eintune

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
X, I, K, J = 4, 8, 16, 8
U64 = ctypes.c_ulonglong


class FakeLog(ctypes.Structure):
    """The head of fake_cuda_log (tests/so/fake_cuda.h), up to the
    streams of the last launch and memset."""
    _fields_ = [("init_calls", ctypes.c_int), ("ctx_retained", ctypes.c_int),
                ("events_live", ctypes.c_int), ("live_allocs", ctypes.c_int),
                ("nallocs", ctypes.c_int), ("alloc_ptrs", U64 * 64),
                ("module_loads", ctypes.c_int),
                ("modules_live", ctypes.c_int),
                ("module_image", ctypes.c_char * (1 << 16)),
                ("function", ctypes.c_char * 256),
                ("launches", ctypes.c_int), ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3), ("shared_mem", ctypes.c_uint),
                ("nparams", ctypes.c_int), ("params", U64 * 64),
                ("memsets", ctypes.c_int), ("memset_ptr", U64),
                ("memset_bytes", U64), ("memset_value", ctypes.c_uint),
                ("memset_before_launch", ctypes.c_int),
                ("launch_stream", U64), ("memset_stream", U64)]


class DeviceArray:
    """What CuPy, PyTorch and Numba arrays show of their device memory."""

    def __init__(self, ptr, shape):
        self.__cuda_array_interface__ = {"data": (ptr, False),
                                         "shape": shape, "typestr": "<f4",
                                         "version": 3}


class Stream:
    """A CuPy-like stream object: its handle in .ptr."""

    def __init__(self, ptr):
        self.ptr = ptr


@pytest.fixture
def fake():
    bd = os.environ.get("ET_BUILD_DIR") or os.path.join(ROOT, "build")
    path = os.path.join(bd, "tests", "fake_cuda.so")
    if not os.path.exists(path):
        pytest.skip("no %s (make test builds it)" % path)
    lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
    lib.fake_cuda_log_get.restype = ctypes.POINTER(FakeLog)
    old = os.environ.get("ET_LIBCUDA")
    os.environ["ET_LIBCUDA"] = path
    assert lib.cuInit(0) == 0
    yield lib
    lib.cuCtxSetCurrent(None)
    if old is None:
        del os.environ["ET_LIBCUDA"]
    else:
        os.environ["ET_LIBCUDA"] = old


def alloc(lib, nbytes):
    p = U64()
    assert lib.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)) == 0
    return p.value


def load(sess, p, **kw):
    try:
        return sess.load_cuda(p, 0, **kw)
    except eintune.Error as e:
        if "nvrtc" in str(e).lower() and "not" in str(e).lower():
            pytest.skip("no NVRTC: %s" % e)
        raise


def test_load_cuda_and_launch(sess, fake):
    p = eintune.Problem("xik,kj->xij", "x=%d,i=%d,k=%d,j=%d" % (X, I, K, J),
                        "f32")
    # no current context in this thread: a clear error, nothing loaded
    assert fake.cuCtxSetCurrent(None) == 0
    with pytest.raises(eintune.Error, match="no current CUDA context"):
        load(sess, p, opts="SPLIT(k,4)", verify=False)
    ctx = ctypes.c_void_p()
    assert fake.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
    assert fake.cuCtxSetCurrent(ctx) == 0
    stream = ctypes.c_void_p()
    assert fake.cuStreamCreate(ctypes.byref(stream), 0) == 0
    out = alloc(fake, X * I * J * 4)
    a = alloc(fake, X * I * K * 4)
    b = alloc(fake, K * J * 4)
    short = alloc(fake, K * J * 4 - 4)
    # the fake runs nothing, so nothing it builds could pass a check on
    # the device: verify=False
    k = load(sess, p, opts="SPLIT(k,4)", verify=False)
    assert k.backend == "cuda"
    assert "SPLIT(k,4)" in k.opts
    assert k.zero_bytes == X * I * J * 4
    log = fake.fake_cuda_log_get().contents
    fake.fake_cuda_log_reset()
    assert k.launch(stream.value, out, a, b) is None
    assert log.launches == 1 and log.nparams == 3
    assert list(log.params[:3]) == [out, a, b]
    assert log.launch_stream == stream.value
    # SPLIT: the output zeroed on the same stream, before the launch
    assert log.memsets == 1 and log.memset_ptr == out
    assert log.memset_bytes == X * I * J * 4
    assert log.memset_stream == stream.value
    assert log.memset_before_launch == 0
    # arrays that say where their data is, a stream object, and launch_args
    fake.fake_cuda_log_reset()
    k.launch_args(Stream(stream.value), DeviceArray(out, (X, I, J)),
                  DeviceArray(a, (X, I, K)), DeviceArray(b, (K, J)))
    assert log.launches == 1
    assert list(log.params[:3]) == [out, a, b]
    assert log.launch_stream == stream.value
    # the default stream
    fake.fake_cuda_log_reset()
    k.launch(None, out, a, b)
    assert log.launches == 1 and log.launch_stream == 0
    # checked before anything is queued
    fake.fake_cuda_log_reset()
    with pytest.raises(eintune.Error, match="input 1"):
        k.launch(None, out, a, short)
    with pytest.raises(eintune.Error, match="not a CUDA device pointer"):
        k.launch(None, out, a, "b")
    with pytest.raises(eintune.Error, match="not a CUDA stream"):
        k.launch("s", out, a, b)
    assert log.launches == 0 and log.memsets == 0
    k.close()
    assert log.modules_live == 0
    for ptr in (out, a, b, short):
        fake.cuMemFree_v2(U64(ptr))
    fake.cuStreamDestroy_v2(stream)
    fake.cuDevicePrimaryCtxRelease_v2(0)


def test_load_cuda_no_device(sess, fake):
    p = eintune.Problem("xik,kj->xij", "x=4,i=8,k=16,j=8", "f32")
    with pytest.raises(eintune.Error, match="no CUDA device 5") as ei:
        sess.load_cuda(p, 5, opts="", verify=False)
    assert ei.value.status == 6  # ET_ERR_DEVICE
    assert ei.value.status_name == "device error"
