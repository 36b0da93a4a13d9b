"""eintune from Python: tune, look up, run and export einsum kernels.

A thin layer over libeintune (include/eintune.h) through ctypes; there is
no compiled extension. The library is found as eintune._lib.find_library
says: $EINTUNE_LIBRARY, else the checkout's build/libeintune.so, else an
installed libeintune.so.1.

    import numpy as np, eintune
    A = np.random.rand(64, 16, 16); B = np.random.rand(16, 16)
    C = eintune.einsum("xik,kj->xij", A, B)        # like numpy.einsum

    with eintune.Session(db="tune.db") as s:
        p = eintune.Problem("xik,kj->xij", "x=64,i=16,k=16,j=16", "f32")
        report = s.tune(p, budget=20, progress=print)
        C = s.run(p, A, B)                          # the best kernel

Every failure raises eintune.Error (eintune.NotFound when no verified
kernel is known), carrying the library's status, the input at fault, the
position in it and the caret line the eintune command prints.
"""

import atexit
import ctypes
import json
import threading

try:
    import numpy as _np
except ImportError:  # the package imports; array calls say numpy is needed
    _np = None

from . import _lib
from ._lib import lib as _L

__all__ = ["Error", "NotFound", "Problem", "Session", "TuneReport",
           "Candidate", "Progress", "Best", "RunResult", "ExportResult",
           "LoadedKernel", "session", "tune", "best", "run", "export",
           "load", "load_cuda", "einsum", "library_path", "__version__"]

__version__ = "1.2.0"

#: The path of the libeintune the package loaded.
library_path = _L._name

_INPUT_TEXT_KEYS = {
    _lib.ET_INPUT_EINSUM: "einsum", _lib.ET_INPUT_SHAPE: "shape",
    _lib.ET_INPUT_DTYPE: "dtype", _lib.ET_INPUT_OPTS: "opts",
    _lib.ET_INPUT_OPTION: "option", _lib.ET_INPUT_DEVICE: "device",
    _lib.ET_INPUT_BATCH: "batch",
}
_LOG_LEVELS = ("debug", "info", "warn")


def _s(b):
    """bytes (or None) from the library to str."""
    if b is None:
        return ""
    if isinstance(b, bytes):
        return b.decode("utf-8", "replace")
    return b


def _b(s):
    """str (or None) to bytes for the library."""
    if s is None:
        return None
    return s.encode("utf-8") if isinstance(s, str) else s


def _need_numpy():
    if _np is None:
        raise ImportError("eintune: this call needs numpy")


# --- errors -------------------------------------------------------------


class Error(Exception):
    """A failed eintune call.

    Attributes: status (the et_status number), status_name ("bad input",
    "not found", ...), input (which input the error is about: "einsum",
    "shape", "dtype", "opts", "space", "file", "option", "device", or ""),
    position (0-based offset into that input's text, or -1), line and col
    (1-based, for YAML; 0 otherwise), file (the file read, or ""),
    message (the library's message), text (the input's text when known)
    and caret (the two lines the eintune command prints under an error:
    the text, then a caret under the position; "" when there is none).
    str(error) is the message followed by the caret lines.
    """

    def __init__(self, status, message, input="", position=-1, text=None,
                 line=0, col=0, file=""):
        self.status = int(status)
        self.status_name = _s(_L.et_status_str(self.status))
        self.input = input
        self.position = position
        self.message = message
        self.text = text
        self.line = line
        self.col = col
        self.file = file
        self.caret = ""
        if text is not None and 0 <= position <= len(text.encode()):
            # the offset is in bytes; tabs are kept so the caret lines up
            head = text.encode()[:position].decode("utf-8", "replace")
            pad = "".join("\t" if c == "\t" else " " for c in head)
            self.caret = "  %s\n  %s^" % (text, pad)
        super().__init__(self.__str__())

    def __str__(self):
        if self.caret:
            return "%s\n%s" % (self.message, self.caret)
        return self.message


class NotFound(Error):
    """No verified kernel is known for the problem on the device
    (ET_ERR_NOT_FOUND): tune it on this device first."""


def _raise(status, diag, texts=None):
    """Raises the Error of a failed call from its et_diag."""
    texts = texts or {}
    key = _INPUT_TEXT_KEYS.get(diag.input)
    text = texts.get(key) if key else None
    cls = NotFound if status == _lib.ET_ERR_NOT_FOUND else Error
    raise cls(status, _s(diag.msg) or _s(_L.et_status_str(status)),
              _s(_L.et_input_name(diag.input)), diag.pos,
              text if isinstance(text, str) else None,
              diag.line, diag.col, _s(diag.file))


def _check(status, diag, texts=None):
    if status != _lib.ET_OK:
        _raise(status, diag, texts)


def _fields(struct, skip=()):
    """A ctypes struct's fields as a dict of Python values."""
    d = {}
    for name, _t in struct._fields_:
        if name in skip:
            continue
        v = getattr(struct, name)
        if isinstance(v, bytes) or v is None and _t is ctypes.c_char_p:
            v = _s(v)
        elif isinstance(v, ctypes.Array):
            v = tuple(v)
        d[name] = v
    return d


class _Record:
    """A plain record: its fields are attributes; repr lists them."""

    _show = ()

    def __init__(self, **kw):
        self.__dict__.update(kw)

    def as_dict(self):
        """The record's fields as a dict."""
        return dict(self.__dict__)

    def __repr__(self):
        keys = self._show or sorted(self.__dict__)
        return "%s(%s)" % (type(self).__name__, ", ".join(
            "%s=%r" % (k, self.__dict__.get(k)) for k in keys))


# --- dtypes ---------------------------------------------------------------

_NP_NAMES = {"f16": "float16", "f32": "float32", "f64": "float64"}


def _dtype_name(d):
    """'f16'/'f32'/'f64' from a str the library parses or a numpy dtype."""
    if isinstance(d, str):
        out = ctypes.c_int()
        if _L.et_dtype_parse(_b(d), ctypes.byref(out)) == 0:
            return _s(_L.et_dtype_name(out.value))
        return d  # the library says what is wrong with it, with a caret
    _need_numpy()
    dt = _np.dtype(d)
    for k, v in _NP_NAMES.items():
        if dt == _np.dtype(v):
            return k
    raise TypeError("eintune: dtype %s is not supported (float16, float32 "
                    "or float64)" % dt)


def _np_dtype(name):
    _need_numpy()
    return _np.dtype(_NP_NAMES[name])


def _spec(spec):
    """A shape or tune-at spec as text: a str as given, or a dict whose
    values are sizes, "*" / None / float('inf') for an open axis, or a
    tuple for an ellipsis ("...": (3, 2))."""
    if spec is None or isinstance(spec, str):
        return spec
    parts = []
    for k, v in dict(spec).items():
        if v is None or v == "*" or (isinstance(v, float) and v == float("inf")):
            v = "*"
        elif isinstance(v, (tuple, list)):
            v = "x".join(str(int(x)) for x in v)
        else:
            v = str(int(v))
        parts.append("%s=%s" % (k, v))
    return ",".join(parts)


# --- problems -------------------------------------------------------------


class Problem:
    """An einsum with its sizes and dtypes (et_problem).

    Problem("xik,kj->xij", "x=64,i=16,k=16,j=16", "f32") from a shape
    spec (a str, or a dict {"x": 64, ...}); Problem("xik,kj->xij",
    arrays=(A, B)) from NumPy arrays' shapes and dtypes, as numpy.einsum
    takes them. dtype: one dtype for every operand or one per operand, as
    "f32,f64", a list, or NumPy dtypes; None is f64 (or, with arrays,
    theirs). An open axis is a size "*" ("x=*", or {"x": "*"}): the
    kernels take its size at launch; tune_at ("x=4096" or a dict) sets the
    size it is tuned at (1024 when not set). batch ("u,Dr; u,Ds; u,Dt")
    makes it a batched einsum: every row's operands named, one kernel for
    every row's output (docs/einsum.md); Session.run then takes the arrays
    by name and returns one output per row. Raises Error (with the caret
    under the fault) for a bad einsum, shape, dtype or batch.
    """

    def __init__(self, einsum, shape=None, dtype=None, *, arrays=None,
                 tune_at=None, batch=None):
        self._p = None
        self._shapes = None
        self.source = einsum
        diag = _lib.Diag()
        p = ctypes.c_void_p()
        if arrays is not None:
            _need_numpy()
            arrays = [_np.asarray(a) for a in arrays]
            n = len(arrays)
            if dtype is None:
                names = [_dtype_name(a.dtype) for a in arrays]
            elif isinstance(dtype, (list, tuple)):
                names = [_dtype_name(d) for d in dtype]
            else:
                names = [_dtype_name(d) for d in
                         (dtype.split(",") if isinstance(dtype, str)
                          else [dtype])]
                if len(names) == 1:
                    names = names * n
            codes = []
            for nm in names:
                c = ctypes.c_int()
                if _L.et_dtype_parse(_b(nm), ctypes.byref(c)) != 0:
                    raise Error(_lib.ET_ERR_INPUT,
                                "unknown dtype '%s'" % nm, "dtype")
                codes.append(c.value)
            if len(codes) != n:
                raise Error(_lib.ET_ERR_INPUT, "%d dtypes for %d operands"
                            % (len(codes), n), "dtype")
            ndim = (ctypes.c_int * max(n, 1))(*[a.ndim for a in arrays])
            dims_keep = [(ctypes.c_int64 * max(a.ndim, 1))(*a.shape)
                         for a in arrays]
            dims = (ctypes.POINTER(ctypes.c_int64) * max(n, 1))(
                *[ctypes.cast(d, ctypes.POINTER(ctypes.c_int64))
                  for d in dims_keep])
            dts = (ctypes.c_int * max(n, 1))(*codes)
            st = _L.et_problem_init_arrays(_b(einsum), n, ndim, dims, dts,
                                           ctypes.byref(p),
                                           ctypes.byref(diag))
            _check(st, diag, {"einsum": einsum})
            self._shapes = [tuple(a.shape) for a in arrays]
            self.shape = None
        else:
            if isinstance(dtype, (list, tuple)):
                dtype = ",".join(_dtype_name(d) for d in dtype)
            elif dtype is not None and not isinstance(dtype, str):
                dtype = _dtype_name(dtype)
            self.shape = _spec(shape)
            st = _L.et_problem_init(_b(einsum), _b(self.shape), _b(dtype),
                                    ctypes.byref(p), ctypes.byref(diag))
            _check(st, diag, {"einsum": einsum, "shape": self.shape,
                              "dtype": dtype})
        self._p = p
        if tune_at is not None:
            self.set_tune_at(tune_at)
        if batch is not None:
            diag = _lib.Diag()
            _check(_L.et_problem_set_batch(self._p, _b(batch),
                                           ctypes.byref(diag)),
                   diag, {"batch": batch, "einsum": einsum})
            self._shapes = None

    @classmethod
    def from_arrays(cls, einsum, *arrays, tune_at=None):
        """The problem of numpy.einsum(einsum, *arrays)."""
        return cls(einsum, arrays=arrays, tune_at=tune_at)

    def set_tune_at(self, spec):
        """Sets the size an open axis is tuned at ("x=4096" or a dict)."""
        spec = _spec(spec)
        diag = _lib.Diag()
        _check(_L.et_problem_set_tune_at(self._p, _b(spec),
                                         ctypes.byref(diag)),
               diag, {"shape": spec})

    def close(self):
        """Frees the library's problem (done by the garbage collector)."""
        if self._p:
            _L.et_problem_free(self._p)
            self._p = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    @property
    def einsum(self):
        """The normalized explicit form, e.g. "xik,kj->xij"."""
        return _s(_L.et_problem_einsum(self._p))

    @property
    def rows(self):
        """A batched problem's rows: per row its operands' array names
        ([["u", "Dr"], ["u", "Ds"], ...]); [] when not batched."""
        return [[_s(_L.et_problem_row_name(self._p, r, k))
                 for k in range(self.n_operands)]
                for r in range(_L.et_problem_n_rows(self._p))]

    @property
    def n_outputs(self):
        """The outputs a run writes: a batched problem's rows when each
        row has its own output (rows separated by ';'), else 1 (rows
        summed with '+', or not batched)."""
        return _L.et_problem_n_outputs(self._p)

    @property
    def n_operands(self):
        """The number of input operands."""
        return _L.et_problem_n_operands(self._p)

    @property
    def dtypes(self):
        """The input operands' dtypes, e.g. ["f32", "f32"]."""
        return [_s(_L.et_dtype_name(_L.et_problem_dtype(self._p, k)))
                for k in range(self.n_operands)]

    @property
    def out_dtype(self):
        """The output's dtype ("f32" for f16 inputs: f16 is storage)."""
        return _s(_L.et_dtype_name(_L.et_problem_dtype(self._p, -1)))

    @property
    def sizes(self):
        """{index: size}: the output's indices first, then the summed ones
        ("_0", "_1" for an ellipsis); an open axis at its tune-at size."""
        return {_s(_L.et_problem_index_name(self._p, i)):
                _L.et_problem_index_size(self._p, i)
                for i in range(_L.et_problem_n_indices(self._p))}

    @property
    def open_axes(self):
        """The names of the open axes ([] or one)."""
        return [_s(_L.et_problem_index_name(self._p, i))
                for i in range(_L.et_problem_n_indices(self._p))
                if _L.et_problem_index_open(self._p, i)]

    def ops(self, dtype=None):
        """Operations booked to dtype (None: summed over every dtype)."""
        if dtype is None:
            return sum(_L.et_problem_ops(self._p, t) for t in range(3))
        c = ctypes.c_int()
        _L.et_dtype_parse(_b(_dtype_name(dtype)), ctypes.byref(c))
        return _L.et_problem_ops(self._p, c.value)

    @property
    def bytes(self):
        """Compulsory bytes: each input read once, the output written once."""
        return _L.et_problem_bytes(self._p)

    def elems(self, k):
        """Elements of input operand k (k = -1: the output)."""
        return _L.et_problem_elems(self._p, k)

    def _subscripts(self):
        lhs, _, rhs = self.einsum.partition("->")
        return lhs.split(","), rhs

    def _dims(self, subs):
        sizes = self.sizes
        ell = [sizes[k] for k in sorted((k for k in sizes if k.startswith("_")),
                                        key=lambda k: int(k[1:]))]
        out = []
        i = 0
        while i < len(subs):
            if subs.startswith("...", i):
                out.extend(ell)
                i += 3
            else:
                out.append(sizes[subs[i]])
                i += 1
        return tuple(out)

    def operand_shape(self, k):
        """The shape of input operand k (k = -1: the output)."""
        if k == -1:
            return self._dims(self._subscripts()[1])
        if self._shapes is not None:
            return self._shapes[k]
        return self._dims(self._subscripts()[0][k])

    @property
    def out_shape(self):
        """The output's shape."""
        return self.operand_shape(-1)

    def __repr__(self):
        return "Problem(%r, sizes=%r, dtypes=%r)" % (
            self.einsum, self.sizes, self.dtypes)


def _stack_rows(problem, rows, arrays, inputs):
    """A batched problem's operands from its arrays by name: a shared one
    as it is, a rowed one its rows' arrays stacked (the row axis first)."""
    if arrays or not isinstance(inputs, dict):
        raise Error(_lib.ET_ERR_INPUT, "a batched problem takes its arrays "
                    "by name: run(problem, inputs={%s})"
                    % ", ".join('"%s": ...' % n for n in
                                sorted({n for r in rows for n in r})),
                    "option")
    missing = sorted({n for r in rows for n in r} - set(inputs))
    if missing:
        raise Error(_lib.ET_ERR_INPUT, "no array named %s in inputs"
                    % ", ".join(missing), "option")
    dts = problem.dtypes
    ops = []
    for k in range(problem.n_operands):
        names = [r[k] for r in rows]
        conv = [_np.ascontiguousarray(inputs[n], dtype=_np_dtype(dts[k]))
                for n in names]
        if all(n == names[0] for n in names):
            ops.append(conv[0])
            continue
        for n, a in zip(names, conv):
            if a.shape != conv[0].shape:
                raise Error(_lib.ET_ERR_INPUT, "'%s' has shape %s, '%s' %s: "
                            "a position's arrays have one shape"
                            % (n, a.shape, names[0], conv[0].shape),
                            "option")
        ops.append(_np.stack(conv))
    return ops


def _problem(problem, arrays=()):
    """A Problem from a Problem or an einsum text (then from arrays)."""
    if isinstance(problem, Problem):
        return problem
    return Problem(problem, arrays=arrays)


# --- reports ----------------------------------------------------------------


class Progress(_Record):
    """One answered candidate as a tune's progress callback sees it:
    candidate, budget, elapsed_s, time_limit_s, opts, params, outcome
    ("ok", "refused", ...), reason, time_s, cached, have_best, best_opts,
    best_time_s, new_best, best_roofline, best_gops, best_roofline_pct."""

    _show = ("candidate", "budget", "opts", "outcome", "time_s",
             "best_time_s")


class Candidate(_Record):
    """One candidate of a tuning run, in proposal order: opts, params,
    kernel, outcome ("ok", "refused", "build_error", ...), reason, time_s,
    ci95_s, gops (None when not timed), cached, elapsed_s, duplicate_of
    (-1: none), seed, seed_einsum, seed_sizes, seed_distance,
    seed_structural."""

    _show = ("opts", "outcome", "time_s", "cached")


class Best(_Record):
    """The best verified kernel known for a problem on a device (the
    fields of et_best_info): opts, kernel, tuned_einsum, exact, time_s,
    ci95_s, gops, device, backend ("opencl"/"cuda"), driver, trial_id,
    tuned_opts, tuned_kernel, runs, cv, verify_trials, max_norm_err,
    p_value, source ("exact", "open", "fallback"), open_axis, tuned_at,
    applied_at, raced, race_time_s, race_ci95_s, race_rounds."""

    _show = ("opts", "kernel", "time_s", "gops", "source", "device")


class RunResult(_Record):
    """What a run did: opts, kernel, verify (a dict of et_run_verification:
    output_ok, verified, outcome, summary, ...), timed and timing (a dict:
    time_s, ci95_s, runs, gops, summary)."""

    _show = ("opts", "kernel")


class ExportResult(_Record):
    """What export wrote: kernel, backend, source (the .cl/.cu path),
    header (the .h path), prefix (the header's macro prefix), replaced."""

    _show = ("kernel", "source", "header")


def _memstream_text(fn, *args):
    """Calls fn(*args, FILE *) and returns what it wrote."""
    libc = ctypes.CDLL(None)
    libc.open_memstream.restype = ctypes.c_void_p
    libc.open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                    ctypes.POINTER(ctypes.c_size_t)]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.free.argtypes = [ctypes.c_void_p]
    buf = ctypes.c_void_p()
    n = ctypes.c_size_t()
    f = libc.open_memstream(ctypes.byref(buf), ctypes.byref(n))
    if not f:
        return ""
    fn(*args, f)
    libc.fclose(f)
    text = ctypes.string_at(buf, n.value).decode("utf-8", "replace")
    libc.free(buf)
    return text


def _json_text(ptr):
    if not ptr:
        return None
    try:
        return json.loads(ctypes.string_at(ptr).decode("utf-8", "replace"))
    finally:
        _L.et_free(ptr)


class TuneReport:
    """A finished tuning run (et_tune_report).

    found, opts, kernel, time_s, ci95_s, gops (GOps/s over every dtype),
    baseline_s, speedup, evaluations, cached, failures, cancelled,
    stop_reason, elapsed_s, raced, time_source: the run's summary;
    roofline_gops (a dict per dtype, None without a roofline) and
    roofline_pct (the best as % of its roofline, None without one);
    has_roofline; candidates (a list of Candidate); json (the report's
    JSON document as a dict); text (the eintune command's printed report).
    """

    def __init__(self, handle):
        self._r = handle
        s = _lib.TuneSummary()
        _L.et_tune_report_summary(handle, ctypes.byref(s))
        self.summary = _fields(s)
        self.__dict__.update(self.summary)
        self.has_roofline = bool(_L.et_tune_report_has_roofline(handle))
        self.json = _json_text(_L.et_tune_report_json(handle)) or {}
        jc = self.json.get("candidates") or []
        self.candidates = []
        e = _lib.TuneEntry()
        for i in range(_L.et_tune_report_n_candidates(handle)):
            if _L.et_tune_report_candidate(handle, i, ctypes.byref(e)) != 0:
                break
            d = _fields(e)
            d["outcome"] = _s(_L.et_outcome_name(e.outcome))
            g = jc[i].get("gops") if i < len(jc) else None
            d["gops"] = g
            self.candidates.append(Candidate(**d))
        best = self.json.get("best") or {}
        self.roofline_gops = best.get("roofline_gops") or None
        self.roofline_pct = None
        gops = best.get("gops") or {}
        if self.roofline_gops and isinstance(gops, dict):
            pct = [100.0 * gops[t] / r for t, r in self.roofline_gops.items()
                   if t in gops and r]
            if pct:
                self.roofline_pct = max(pct)

    @property
    def text(self):
        """The report as `eintune tune` prints it."""
        return _memstream_text(_L.et_tune_report_print, self._r)

    def plot(self, path):
        """Draws the run's chart (roofline and convergence) to path, .svg
        or .png; Error when the report has no roofline."""
        diag = _lib.Diag()
        _check(_L.et_tune_report_plot(self._r, _b(str(path)),
                                      ctypes.byref(diag)), diag)

    def close(self):
        """Frees the library's report (done by the garbage collector)."""
        if self._r:
            _L.et_tune_report_free(self._r)
            self._r = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __str__(self):
        return self.text

    def __repr__(self):
        return "TuneReport(found=%r, opts=%r, time_s=%r, candidates=%d)" % (
            self.found, self.opts, self.time_s, len(self.candidates))


# --- sessions -------------------------------------------------------------


def _log_fn(log):
    """A ctypes log callback calling log(level, message), or NULL."""
    if log is None:
        return _lib.LOG_FN()

    def cb(_arg, level, msg):
        try:
            log(_LOG_LEVELS[level] if 0 <= level < 3 else str(level),
                _s(msg))
        except Exception:  # never unwind through C
            pass
    return _lib.LOG_FN(cb)


def _int_ptr(obj):
    """The C handle of a pyopencl object (its int_ptr), or an int."""
    if obj is None:
        return None
    if isinstance(obj, int):
        return obj
    return obj.int_ptr


class Session:
    """A device and a database opened once (et_session_*).

    Session(device=None, db=None, log=None): device is a spec ("opencl:0",
    None: the first OpenCL device), db a database path (None: the
    default, $XDG_CACHE_HOME/eintune/tuning.db), log a callable
    log(level, message) getting the log lines of every call ("debug",
    "info", "warn"). The device runs in its own worker process. A session
    is a context manager; close() ends it. Calls through one session are
    serialized (a session is used by one thread at a time).
    """

    def __init__(self, device=None, db=None, log=None):
        self._s = None
        self._lock = threading.RLock()
        self._log = _log_fn(log)
        self.device = device
        o = _lib.sized(_lib.SessionOptions, device=_b(device), db=_b(db),
                       log=self._log)
        diag = _lib.Diag()
        s = ctypes.c_void_p()
        _check(_L.et_session_open(ctypes.byref(o), ctypes.byref(s),
                                  ctypes.byref(diag)),
               diag, {"device": device})
        self._s = s

    def close(self):
        """Closes the device's worker and the database."""
        with self._lock:
            if self._s:
                _L.et_session_close(self._s)
                self._s = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if not self._s:
            raise Error(_lib.ET_ERR_INPUT, "eintune: the session is closed",
                        "option")
        return self._s

    @property
    def device_name(self):
        """The device's name."""
        return _s(_L.et_session_device_name(self._s))

    @property
    def db_path(self):
        """The database's path."""
        return _s(_L.et_session_db_path(self._s))

    def tune(self, problem, budget=None, search=None, time_limit=None,
             progress=None, space=None, start_opts=None, seed=None,
             beam_width=None, race=None, bound=None, retime=False,
             seeding=True, n_seeds=None, model=True, log=None):
        """Tunes problem on the session's device, recording every trial in
        its database, and returns a TuneReport.

        budget: candidates answered (None: 100); search: "beam" (None),
        "random" or "grid"; time_limit: seconds (None: none); progress: a
        callable progress(p) called with a Progress after each candidate,
        whose true return cancels the run (an exception it raises cancels
        it too and is raised here afterwards); space: a YAML space file
        (None: the built-in action pool); start_opts: opts the search
        builds on; seed, beam_width, bound (early-cut factor), race (the
        final race's finalists, 0: 3, < 0: none), retime (measure again
        what the database knows), seeding/n_seeds (the nearest tuned
        problems' opts tried first), model (the cost model ranks
        candidates); log: a log callable for this run (None: the
        session's). Raises Error when the run cannot be made.
        """
        problem = _problem(problem)
        failure = []

        def on_progress(_arg, pp):
            try:
                d = _fields(pp.contents)
                d["outcome"] = _s(_L.et_outcome_name(pp.contents.outcome))
                return 1 if progress(Progress(**d)) else 0
            except BaseException as e:  # cancel, raise after the run
                failure.append(e)
                return 1
        pfn = _lib.PROGRESS_FN(on_progress) if progress else \
            _lib.PROGRESS_FN()
        lfn = _log_fn(log) if log else _lib.LOG_FN()
        o = _lib.sized(_lib.TuneOptions, space=_b(space),
                       start_opts=_b(start_opts), search=_b(search),
                       budget=int(budget or 0),
                       time_limit_s=float(time_limit or 0),
                       beam_width=int(beam_width or 0),
                       seed=int(seed or 0), retime=int(bool(retime)),
                       bound=float(bound or 0), progress=pfn, log=lfn,
                       race=int(race or 0), no_seeding=int(not seeding),
                       n_seeds=int(n_seeds or 0),
                       model=0 if model else -1)
        diag = _lib.Diag()
        r = ctypes.c_void_p()
        with self._lock:
            st = _L.et_session_tune(self._handle(), problem._p,
                                    ctypes.byref(o), ctypes.byref(r),
                                    ctypes.byref(diag))
        if st != _lib.ET_OK:
            _raise(st, diag, {"opts": start_opts, "space": space})
        report = TuneReport(r)
        if failure:
            raise failure[0]
        return report

    def best(self, problem):
        """The best verified kernel the database knows for problem on the
        session's device, as a Best, or None when there is none."""
        problem = _problem(problem)
        info = _lib.BestInfo()
        found = ctypes.c_int()
        diag = _lib.Diag()
        with self._lock:
            st = _L.et_session_best_lookup(self._handle(), problem._p,
                                           ctypes.byref(info),
                                           ctypes.byref(found),
                                           ctypes.byref(diag))
        if st == _lib.ET_ERR_NOT_FOUND or (st == _lib.ET_OK and
                                           not found.value):
            return None
        _check(st, diag)
        d = _fields(info)
        d["backend"] = _s(_L.et_backend_name(info.backend))
        return Best(**d)

    def run(self, problem, *arrays, best=True, opts=None, verify=True,
            time=False, exact=False, details=False, inputs=None):
        """Runs problem on NumPy arrays (the inputs in operand order) and
        returns the output as a NumPy array. A batched problem (Problem's
        batch) takes its arrays by name, inputs={"u": u, "Dr": Dr, ...},
        and returns a list of outputs, one per row (rows summed into one
        output, batch="u0,Dr + u1,Ds": that one array).

        problem is a Problem or an einsum text (then the problem is made
        from the arrays). Arrays are converted to the problem's dtypes and
        to C order; their shapes must be the problem's (for a problem with
        an open axis, any size there: the run is then of the arrays' own
        sizes). best: the best kernel known (NotFound when there is none);
        best=False runs the kernel of opts (None: the untransformed
        kernel). verify: check the output against the extended-precision
        reference and verify statistically (a failed check raises Error);
        time: time the kernel. details=True returns (output, RunResult).
        """
        _need_numpy()
        problem = _problem(problem, arrays)
        rows = problem.rows
        if rows:
            arrays = _stack_rows(problem, rows, arrays, inputs)
        elif inputs is not None:
            raise Error(_lib.ET_ERR_INPUT, "inputs by name are for a batched "
                        "problem (Problem(..., batch=...))", "option")
        if len(arrays) != problem.n_operands:
            raise Error(_lib.ET_ERR_INPUT, "%s takes %d operands, %d given"
                        % (problem.einsum, problem.n_operands, len(arrays)),
                        "option")
        dts = problem.dtypes
        ins = [_np.ascontiguousarray(a, dtype=_np_dtype(dts[k]))
               for k, a in enumerate(arrays)]
        shapes_ok = all(tuple(a.shape) == problem.operand_shape(k)
                        for k, a in enumerate(ins))
        if not shapes_ok:
            if problem.open_axes:
                problem = Problem(problem.einsum, arrays=ins)
            else:
                raise Error(_lib.ET_ERR_INPUT,
                            "the arrays' shapes %s are not the problem's %s"
                            % ([a.shape for a in ins],
                               [problem.operand_shape(k)
                                for k in range(len(ins))]), "option")
        out = _np.empty(problem.out_shape, dtype=_np_dtype(problem.out_dtype))
        inp = (ctypes.c_void_p * max(len(ins), 1))(
            *[a.ctypes.data for a in ins])
        o = _lib.sized(_lib.RunOptions, opts=_b(opts), best=int(bool(best)),
                       verify=int(bool(verify)), time=int(bool(time)),
                       exact=int(bool(exact)))
        res = _lib.RunResult()
        diag = _lib.Diag()
        with self._lock:
            st = _L.et_session_run(self._handle(), problem._p,
                                   ctypes.byref(o),
                                   ctypes.c_void_p(out.ctypes.data), inp,
                                   ctypes.byref(res), ctypes.byref(diag))
        _check(st, diag, {"opts": opts})
        v = res.verify
        if verify and (not v.output_ok or v.outcome != 0):
            raise Error(_lib.ET_ERR_INTERNAL, "eintune: %s failed "
                        "verification: %s" % (_s(res.kernel),
                                              _s(v.output_reason) or
                                              _s(v.reason) or _s(v.summary)))
        if rows and problem.n_outputs > 1:
            out = [out[r].copy() for r in range(len(rows))]
        if details:
            vd = _fields(v)
            vd["outcome"] = _s(_L.et_outcome_name(v.outcome))
            return out, RunResult(opts=_s(res.opts), kernel=_s(res.kernel),
                                  verify=vd, timed=bool(res.timed),
                                  timing=_fields(res.timing))
        return out

    def export(self, problem, dir, name=None, backend=None, force=False,
               embed=False, verify=True, exact=False):
        """Writes the best kernel known for problem to dir as DIR/NAME.cl
        (or .cu) and DIR/NAME.h (et_best_kernel_export) and returns an
        ExportResult. name: the kernel's name, a C identifier (None: the
        loop sizes and dtypes, "r_16_12_8_f32"); backend: "opencl" or
        "cuda" (None: the device's); force: replace files written for
        another kernel; embed: the source also as a C string in the
        header; verify: check the kernel on the device first. NotFound
        when nothing is tuned."""
        problem = _problem(problem)
        diag = _lib.Diag()
        if name is not None:
            _check(_L.et_export_name_validate(_b(name), ctypes.byref(diag)),
                   diag, {"option": name})
        bo = _lib.sized(_lib.BestOptions, exact=int(bool(exact)))
        bk = ctypes.c_void_p()
        with self._lock:
            _check(_L.et_session_best_kernel_find(
                self._handle(), problem._p, ctypes.byref(bo),
                ctypes.byref(bk), ctypes.byref(diag)), diag)
        try:
            eo = _lib.sized(_lib.ExportOptions, dir=_b(str(dir)),
                            backend=_b(backend), name=_b(name),
                            force=int(bool(force)),
                            no_verify=int(not verify),
                            embed=int(bool(embed)))
            res = _lib.ExportResult()
            with self._lock:
                st = _L.et_best_kernel_export(bk, ctypes.byref(eo),
                                              ctypes.byref(res),
                                              ctypes.byref(diag))
            _check(st, diag, {"option": name})
        finally:
            _L.et_best_kernel_free(bk)
        d = _fields(res)
        d["backend"] = _s(_L.et_backend_name(res.backend))
        d["replaced"] = bool(res.replaced)
        return ExportResult(**d)

    def load(self, problem, context, device=None, opts=None, exact=False,
             verify=True):
        """Builds the best kernel known for problem in the caller's OpenCL
        context (a pyopencl.Context, or a cl_context as an int) for device
        (a pyopencl.Device; None: the context's first) and returns a
        LoadedKernel. opts: these opts instead of the best known (""
        the untransformed kernel); exact: no fallback to other sizes;
        verify: check a kernel the database did not verify as it is
        before returning it. NotFound when nothing is tuned and opts is
        None."""
        problem = _problem(problem)
        if device is None:
            device = context.devices[0]
        o = _lib.sized(_lib.LoadOptions, opts=_b(opts),
                       exact=int(bool(exact)), no_verify=int(not verify))
        k = ctypes.c_void_p()
        diag = _lib.Diag()
        with self._lock:
            st = _L.et_session_cl_kernel_load(
                self._handle(), problem._p,
                ctypes.c_void_p(_int_ptr(context)),
                ctypes.c_void_p(_int_ptr(device)), ctypes.byref(o),
                ctypes.byref(k), ctypes.byref(diag))
        _check(st, diag, {"opts": opts})
        return LoadedKernel(k, problem)

    def load_cuda(self, problem, device=0, opts=None, exact=False,
                  verify=True):
        """Builds the best kernel known for problem for CUDA device
        `device` (an ordinal) in the calling thread's current CUDA
        context (the one CuPy, PyTorch or the caller made current) and
        returns a LoadedKernel whose launch takes device pointers and a
        stream. opts, exact and verify as for load. Error with status
        DEVICE when there is no CUDA driver, no such device or no current
        context on it; the driver is libcuda.so.1, or $ET_LIBCUDA."""
        problem = _problem(problem)
        o = _lib.sized(_lib.LoadOptions, opts=_b(opts),
                       exact=int(bool(exact)), no_verify=int(not verify))
        k = ctypes.c_void_p()
        diag = _lib.Diag()
        with self._lock:
            st = _L.et_session_cu_kernel_load(
                self._handle(), problem._p, int(device), ctypes.byref(o),
                ctypes.byref(k), ctypes.byref(diag))
        _check(st, diag, {"opts": opts})
        return LoadedKernel(k, problem, backend="cuda")

    def einsum(self, subscripts, *operands, budget=None, verify=False):
        """eintune.einsum on this session's device and database."""
        return _einsum(self, subscripts, operands, budget, verify)

    def __repr__(self):
        if not self._s:
            return "Session(closed)"
        return "Session(device=%r, db=%r)" % (self.device_name, self.db_path)


def _ptrs(buffers):
    """The buffers' handles as a C array (one element when empty)."""
    return (ctypes.c_void_p * max(len(buffers), 1))(
        *[_int_ptr(b) for b in buffers])


def _dev_ptr(a):
    """A CUDA device pointer: an int, or an array that says where its
    data is (__cuda_array_interface__: CuPy, PyTorch, Numba; CuPy's
    .data.ptr; PyTorch's .data_ptr())."""
    if isinstance(a, int):
        return a
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return int(cai["data"][0])
    data = getattr(a, "data", None)
    if data is not None and hasattr(data, "ptr"):
        return int(data.ptr)
    if hasattr(a, "data_ptr"):
        return int(a.data_ptr())
    raise Error(_lib.ET_ERR_INPUT, "eintune: %r is not a CUDA device "
                "pointer (an int, or an array with "
                "__cuda_array_interface__)" % (type(a).__name__,), "option")


def _dev_ptrs(arrays):
    return (ctypes.c_ulonglong * max(len(arrays), 1))(
        *[_dev_ptr(a) for a in arrays])


def _stream(stream):
    """A CUstream: None (the default stream), an int, or a stream object
    (CuPy's .ptr, PyTorch's .cuda_stream)."""
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream", "handle"):
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v
    raise Error(_lib.ET_ERR_INPUT, "eintune: %r is not a CUDA stream (an "
                "int, or an object with .ptr or .cuda_stream)"
                % (type(stream).__name__,), "option")


class LoadedKernel:
    """A tuned kernel built in the caller's OpenCL context or current CUDA
    context (et_loaded_kernel): launch it with launch() (OpenCL: pyopencl
    buffers and a queue; CUDA: device pointers and a stream). backend
    ("opencl" or "cuda"), opts, name and zero_bytes (the output bytes a
    SPLIT kernel zeroes) describe it."""

    def __init__(self, handle, problem, backend="opencl"):
        self._k = handle
        self.problem = problem
        self.backend = backend

    @property
    def opts(self):
        """The kernel's opts ("" untransformed)."""
        return _s(_L.et_loaded_kernel_opts(self._k))

    @property
    def name(self):
        """The kernel's function name."""
        return _s(_L.et_loaded_kernel_name(self._k))

    @property
    def zero_bytes(self):
        """Bytes at the start of the output that a launch zeroes first."""
        return _L.et_loaded_kernel_zero_bytes(self._k)

    @property
    def args(self):
        """The buffers launch_args takes, in order: (operand, row) each,
        operand -1 the output, row -1 not a row. A batched einsum's kernel
        takes the output's rows, then each operand (a shared one once, a
        rowed one row by row); any other kernel the output, then the
        inputs."""
        out = []
        for a in range(_L.et_loaded_kernel_n_args(self._k) if self._k else 0):
            op, row = ctypes.c_int(), ctypes.c_int()
            _L.et_loaded_kernel_arg(self._k, a, ctypes.byref(op),
                                    ctypes.byref(row))
            out.append((op.value, row.value))
        return out

    def _live(self):
        if not self._k:
            raise Error(_lib.ET_ERR_INPUT, "eintune: the kernel was freed",
                        "option")

    def _sizes(self, sizes):
        if sizes is None:
            return None
        names = list(self.problem.sizes)
        if isinstance(sizes, dict):
            full = dict(self.problem.sizes)
            full.update(sizes)
            sizes = [full[k] for k in names]
        return (ctypes.c_int64 * len(names))(*[int(x) for x in sizes])

    def _event(self, ev, wait):
        if not ev.value:
            return None
        try:
            import pyopencl
            event = pyopencl.Event.from_int_ptr(ev.value, retain=False)
        except ImportError:
            return ev.value
        if wait:
            event.wait()
        return event

    def launch_args(self, queue, *buffers, sizes=None, wait=False):
        """Enqueues the kernel with one pyopencl.Buffer per entry of args
        (a batched einsum's kernel: each output row and each operand row
        in its own buffer) and returns its pyopencl.Event, as launch. On
        CUDA: queue is the stream and the buffers device pointers, as
        launch; returns None."""
        self._live()
        diag = _lib.Diag()
        if self.backend == "cuda":
            _check(_L.et_cu_kernel_launch_args(
                self._k, ctypes.c_void_p(_stream(queue)), _dev_ptrs(buffers),
                len(buffers), self._sizes(sizes), ctypes.byref(diag)), diag)
            return None
        ev = ctypes.c_void_p()
        _check(_L.et_cl_kernel_launch_args(
            self._k, ctypes.c_void_p(_int_ptr(queue)), _ptrs(buffers),
            len(buffers), self._sizes(sizes), ctypes.byref(ev),
            ctypes.byref(diag)), diag)
        return self._event(ev, wait)

    def launch(self, queue, out, *inputs, sizes=None, wait=False):
        """Enqueues the kernel on queue (a pyopencl.CommandQueue) with out
        and the inputs (pyopencl.Buffer objects, in operand order) and
        returns its pyopencl.Event (None when nothing was enqueued, or an
        int handle without pyopencl). sizes: the indices' sizes (a dict, or
        a list in Problem.sizes order) for a kernel with an open axis;
        None: the problem's. wait=True waits for the launch. Buffers too
        small, of another context, or a wrong count raise Error before
        anything is enqueued. A batched einsum's kernel takes its buffers
        through launch_args.

        A kernel of load_cuda: queue is the CUDA stream (None: the
        default stream; an int, or a CuPy/PyTorch stream), out and the
        inputs device pointers (ints, or CuPy/PyTorch/Numba arrays); the
        launch is queued on the stream and returns None, with the same
        checks first (the current context the kernel was loaded into,
        each pointer's allocation large enough)."""
        self._live()
        diag = _lib.Diag()
        if self.backend == "cuda":
            _check(_L.et_cu_kernel_launch(
                self._k, ctypes.c_void_p(_stream(queue)), _dev_ptr(out),
                _dev_ptrs(inputs), len(inputs), self._sizes(sizes),
                ctypes.byref(diag)), diag)
            return None
        ev = ctypes.c_void_p()
        _check(_L.et_cl_kernel_launch(
            self._k, ctypes.c_void_p(_int_ptr(queue)),
            ctypes.c_void_p(_int_ptr(out)), _ptrs(inputs), len(inputs),
            self._sizes(sizes), ctypes.byref(ev), ctypes.byref(diag)), diag)
        return self._event(ev, wait)

    def close(self):
        """Releases the program (the context and buffers are untouched)."""
        if self._k:
            _L.et_loaded_kernel_free(self._k)
            self._k = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return "LoadedKernel(name=%r, opts=%r)" % (self.name, self.opts)


# --- the shared sessions and the module's calls ---------------------------

_sessions = {}
_sessions_lock = threading.Lock()


def session(device=None, db=None):
    """The shared Session of (device, db), opened on first use and closed
    at exit; the module's calls and einsum() use it."""
    key = (device, db)
    with _sessions_lock:
        s = _sessions.get(key)
        if s is None or not s._s:
            s = _sessions[key] = Session(device=device, db=db)
        return s


@atexit.register
def _close_sessions():
    with _sessions_lock:
        for s in _sessions.values():
            s.close()
        _sessions.clear()


def tune(problem, device=None, db=None, **kw):
    """Session.tune on the shared session of (device, db)."""
    return session(device, db).tune(problem, **kw)


def best(problem, device=None, db=None):
    """Session.best on the shared session of (device, db): a Best or
    None."""
    return session(device, db).best(problem)


def run(problem, *arrays, device=None, db=None, **kw):
    """Session.run on the shared session of (device, db)."""
    return session(device, db).run(problem, *arrays, **kw)


def export(problem, dir, name=None, device=None, db=None, **kw):
    """Session.export on the shared session of (device, db)."""
    return session(device, db).export(problem, dir, name=name, **kw)


def load(problem, context, device=None, db=None, **kw):
    """Session.load on the shared session of (None, db): device is the
    pyopencl.Device to build for (None: the context's first)."""
    return session(None, db).load(problem, context, device=device, **kw)


def load_cuda(problem, device=0, db=None, **kw):
    """Session.load_cuda on the shared session of ("cuda:DEVICE", db):
    device is the CUDA device ordinal to build for, in the calling
    thread's current context."""
    return session("cuda:%d" % int(device), db).load_cuda(
        problem, device=device, **kw)


def _einsum(s, subscripts, operands, budget, verify):
    _need_numpy()
    arrays = [_np.asarray(a) for a in operands]
    for a in arrays:
        if a.dtype.kind != "f" or a.dtype.itemsize not in (2, 4, 8):
            raise TypeError("eintune.einsum: operands must be float16, "
                            "float32 or float64, not %s" % a.dtype)
    p = Problem(subscripts, arrays=arrays)
    want = _np.result_type(*arrays) if arrays else _np.float64
    try:
        out = s.run(p, *arrays, best=True, verify=verify)
    except NotFound:
        out = None
        if budget:
            s.tune(p, budget=budget)
            try:
                out = s.run(p, *arrays, best=True, verify=verify)
            except NotFound:
                out = None
        if out is None:
            out = s.run(p, *arrays, best=False, verify=verify)
    return out.astype(want, copy=False)


def einsum(subscripts, *operands, budget=None, db=None, device=None,
           verify=False):
    """numpy.einsum on the device, with the tuned kernel.

    einsum("xik,kj->xij", A, B) evaluates the einsum (explicit "->" form
    or NumPy's implicit one, "..." for broadcast dimensions) on float16,
    float32 or float64 NumPy arrays and returns a new array of NumPy's
    result dtype (float16 inputs are computed in float32).

    The kernel is the best verified one the database db (None: the
    default database) knows for this problem on device (None: the first
    OpenCL device), found through et_run with best. When nothing is tuned
    for it: with budget, the problem is tuned first (budget candidates,
    recorded in the database, so the next call finds it) and the best
    kernel then runs; without budget (or when the tune found nothing),
    the untransformed kernel runs: the plain loop nest that every tuned
    kernel is verified against, correct for every problem though not
    fast. verify=True also checks the output against an
    extended-precision reference (Error when it fails).

    Calls share one Session per (device, db), opened on first use.
    """
    return _einsum(session(device, db), subscripts, operands, budget, verify)
