"""Low-level ctypes view of libeintune: the structs and prototypes of
include/eintune.h that the package uses, and the search for the library.

Nothing here is public; the package's public names are in eintune."""

import ctypes
import ctypes.util
import os

# --- where the library is -------------------------------------------------


def _candidates():
    """The library paths tried, in order (see find_library)."""
    env = os.environ.get("EINTUNE_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    names = [
        # a checkout: python/eintune -> ../../build
        os.path.join(here, "..", "..", "build", "libeintune.so"),
        # make install: PREFIX/lib/python3/dist-packages/eintune -> PREFIX/lib
        os.path.join(here, "..", "..", "..", "libeintune.so.1"),
    ]
    found = ctypes.util.find_library("eintune")
    if found:
        names.append(found)
    names.append("libeintune.so.1")
    return names, False


def find_library():
    """Loads libeintune and returns the ctypes.CDLL.

    Tried in order: $EINTUNE_LIBRARY (alone, when set), the checkout's
    build/libeintune.so two directories above the package, the
    installation's PREFIX/lib/libeintune.so.1 (for a package installed
    under PREFIX/lib/python3/dist-packages), then the library the dynamic
    linker finds (ctypes.util.find_library, then "libeintune.so.1").
    """
    names, explicit = _candidates()
    errors = []
    for name in names:
        if os.sep in name and not os.path.exists(name):
            errors.append("%s: no such file" % name)
            continue
        try:
            return ctypes.CDLL(os.path.normpath(name) if os.sep in name
                               else name)
        except OSError as e:
            errors.append(str(e))
            if explicit:
                break
    raise ImportError("eintune: libeintune not found (set EINTUNE_LIBRARY "
                      "to its path): " + "; ".join(errors))


# --- types ----------------------------------------------------------------

c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_int = ctypes.c_int
c_double = ctypes.c_double
c_int64 = ctypes.c_int64
c_size_t = ctypes.c_size_t
c_ulonglong = ctypes.c_ulonglong

ET_OK = 0
ET_ERR_INPUT = 1
ET_ERR_NOT_FOUND = 12

ET_INPUT_NONE = 0
ET_INPUT_EINSUM = 1
ET_INPUT_SHAPE = 2
ET_INPUT_DTYPE = 3
ET_INPUT_OPTS = 4
ET_INPUT_SPACE = 5
ET_INPUT_FILE = 6
ET_INPUT_OPTION = 7
ET_INPUT_DEVICE = 8
ET_INPUT_BATCH = 9

ET_F16, ET_F32, ET_F64 = 0, 1, 2
ET_OUTCOME_COUNT = 8


class Diag(ctypes.Structure):
    _fields_ = [("line", c_int), ("col", c_int), ("pos", c_int),
                ("msg", ctypes.c_char * 1024), ("status", c_int),
                ("input", c_int), ("file", ctypes.c_char * 512)]


class Progress(ctypes.Structure):
    _fields_ = [("candidate", c_int), ("budget", c_int),
                ("elapsed_s", c_double), ("time_limit_s", c_double),
                ("opts", c_char_p), ("params", c_char_p),
                ("outcome", c_int), ("reason", c_char_p),
                ("time_s", c_double), ("cached", c_int),
                ("have_best", c_int), ("best_opts", c_char_p),
                ("best_time_s", c_double), ("new_best", c_int),
                ("best_roofline", c_char_p), ("best_gops", c_double),
                ("best_roofline_pct", c_double)]


PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, ctypes.POINTER(Progress))
LOG_FN = ctypes.CFUNCTYPE(None, c_void_p, c_int, c_char_p)


class TuneOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("device", c_char_p), ("db", c_char_p),
                ("space", c_char_p), ("start_opts", c_char_p),
                ("search", c_char_p), ("budget", c_int),
                ("time_limit_s", c_double), ("beam_width", c_int),
                ("seed", ctypes.c_uint64), ("retime", c_int),
                ("space_obj", c_void_p), ("bound", c_double),
                ("progress", PROGRESS_FN), ("progress_arg", c_void_p),
                ("log", LOG_FN), ("log_arg", c_void_p),
                ("cancel", ctypes.POINTER(c_int)), ("race", c_int),
                ("comm", c_void_p), ("no_seeding", c_int),
                ("n_seeds", c_int), ("model", c_int)]


class TuneSummary(ctypes.Structure):
    _fields_ = [("found", c_int), ("opts", ctypes.c_char * 1024),
                ("kernel", ctypes.c_char * 160), ("time_s", c_double),
                ("ci95_s", c_double * 2), ("gops", c_double),
                ("baseline_s", c_double), ("evaluations", c_int),
                ("cached", c_int), ("failures", c_int),
                ("cancelled", c_int), ("stop_reason", ctypes.c_char * 64),
                ("elapsed_s", c_double), ("raced", c_int),
                ("speedup", c_double), ("speedup_ci95", c_double * 2),
                ("duplicates", c_int), ("model_used", c_int),
                ("model_samples", c_int), ("model_skipped", c_int),
                ("cut_at_bound", c_int), ("time_source", ctypes.c_char * 16),
                ("search_time_s", c_double),
                ("search_ci95_s", c_double * 2)]


class TuneEntry(ctypes.Structure):
    _fields_ = [("opts", c_char_p), ("params", c_char_p),
                ("kernel", c_char_p), ("outcome", c_int),
                ("reason", c_char_p), ("time_s", c_double),
                ("ci95_s", c_double * 2), ("cached", c_int),
                ("elapsed_s", c_double), ("duplicate_of", c_int),
                ("seed", c_int), ("seed_einsum", c_char_p),
                ("seed_sizes", c_char_p), ("seed_distance", c_double),
                ("seed_structural", c_int)]


class BestInfo(ctypes.Structure):
    _fields_ = [("opts", ctypes.c_char * 2048), ("kernel", ctypes.c_char * 256),
                ("tuned_einsum", ctypes.c_char * 1024), ("exact", c_int),
                ("time_s", c_double), ("ci95_s", c_double * 2),
                ("gops", c_double), ("device", ctypes.c_char * 256),
                ("backend", c_int), ("driver", ctypes.c_char * 128),
                ("trial_id", c_int64), ("tuned_opts", ctypes.c_char * 2048),
                ("tuned_kernel", ctypes.c_char * 256), ("runs", c_int),
                ("cv", c_double), ("verify_trials", c_int),
                ("max_norm_err", c_double), ("p_value", c_double),
                ("source", ctypes.c_char * 16),
                ("open_axis", ctypes.c_char * 16),
                ("tuned_at", ctypes.c_char * 256),
                ("applied_at", ctypes.c_char * 256), ("raced", c_int),
                ("race_time_s", c_double), ("race_ci95_s", c_double * 2),
                ("race_rounds", c_int)]


class BestOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("device", c_char_p), ("db", c_char_p),
                ("roofline", c_int), ("log", LOG_FN), ("log_arg", c_void_p),
                ("exact", c_int)]


class ExportOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("dir", c_char_p), ("backend", c_char_p),
                ("log", LOG_FN), ("log_arg", c_void_p), ("name", c_char_p),
                ("force", c_int), ("no_verify", c_int), ("embed", c_int)]


class ExportResult(ctypes.Structure):
    _fields_ = [("kernel", ctypes.c_char * 160), ("backend", c_int),
                ("source", ctypes.c_char * 4096),
                ("header", ctypes.c_char * 4096),
                ("prefix", ctypes.c_char * 168), ("replaced", c_int)]


class RunOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("device", c_char_p), ("db", c_char_p),
                ("opts", c_char_p), ("best", c_int), ("verify", c_int),
                ("time", c_int), ("log", LOG_FN), ("log_arg", c_void_p),
                ("exact", c_int)]


class RunVerification(ctypes.Structure):
    _fields_ = [("output_checked", c_int), ("output_ok", c_int),
                ("output_max_norm_err", c_double),
                ("output_reason", ctypes.c_char * 512), ("verified", c_int),
                ("outcome", c_int), ("trials", c_int),
                ("max_norm_err", c_double), ("p_value", c_double),
                ("reason", ctypes.c_char * 1024),
                ("summary", ctypes.c_char * 256)]


class RunTiming(ctypes.Structure):
    _fields_ = [("time_s", c_double), ("ci95_s", c_double * 2),
                ("cv", c_double), ("runs", c_int), ("gops", c_double),
                ("summary", ctypes.c_char * 256)]


class RunResult(ctypes.Structure):
    _fields_ = [("opts", ctypes.c_char * 2048), ("kernel", ctypes.c_char * 160),
                ("verify", RunVerification), ("timed", c_int),
                ("timing", RunTiming)]


class LoadOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("db", c_char_p), ("opts", c_char_p),
                ("exact", c_int), ("no_verify", c_int)]


class SessionOptions(ctypes.Structure):
    _fields_ = [("size", c_size_t), ("device", c_char_p), ("db", c_char_p),
                ("log", LOG_FN), ("log_arg", c_void_p)]


def sized(struct_type, **fields):
    """An options struct with size set to its ctypes sizeof (ET_SIZED)."""
    o = struct_type()
    o.size = ctypes.sizeof(struct_type)
    for k, v in fields.items():
        setattr(o, k, v)
    return o


# --- prototypes -------------------------------------------------------------

P = ctypes.POINTER
_DIAG = P(Diag)
_VP = c_void_p
_PROTOS = {
    "et_status_str": (c_char_p, [c_int]),
    "et_dtype_name": (c_char_p, [c_int]),
    "et_dtype_size": (c_size_t, [c_int]),
    "et_dtype_parse": (c_int, [c_char_p, P(c_int)]),
    "et_input_name": (c_char_p, [c_int]),
    "et_outcome_name": (c_char_p, [c_int]),
    "et_backend_name": (c_char_p, [c_int]),
    "et_free": (None, [_VP]),
    "et_problem_init": (c_int, [c_char_p, c_char_p, c_char_p, P(_VP),
                                _DIAG]),
    "et_problem_init_arrays": (c_int, [c_char_p, c_int, P(c_int),
                                       P(P(c_int64)), P(c_int), P(_VP),
                                       _DIAG]),
    "et_problem_free": (None, [_VP]),
    "et_problem_einsum": (c_char_p, [_VP]),
    "et_problem_ops": (c_int64, [_VP, c_int]),
    "et_problem_bytes": (c_int64, [_VP]),
    "et_problem_n_operands": (c_int, [_VP]),
    "et_problem_dtype": (c_int, [_VP, c_int]),
    "et_problem_elems": (c_int64, [_VP, c_int]),
    "et_problem_operand_bytes": (c_size_t, [_VP, c_int]),
    "et_problem_n_indices": (c_int, [_VP]),
    "et_problem_index_name": (c_char_p, [_VP, c_int]),
    "et_problem_index_size": (c_int64, [_VP, c_int]),
    "et_problem_index_open": (c_int, [_VP, c_int]),
    "et_problem_set_tune_at": (c_int, [_VP, c_char_p, _DIAG]),
    "et_problem_set_batch": (c_int, [_VP, c_char_p, _DIAG]),
    "et_problem_n_rows": (c_int, [_VP]),
    "et_problem_n_outputs": (c_int, [_VP]),
    "et_problem_row_name": (c_char_p, [_VP, c_int, c_int]),
    "et_codegen": (c_int, [_VP, c_char_p, c_int, P(_VP), _DIAG]),
    "et_kernel_source_free": (None, [_VP]),
    "et_tune_report_free": (None, [_VP]),
    "et_tune_report_summary": (None, [_VP, P(TuneSummary)]),
    "et_tune_report_n_candidates": (c_int, [_VP]),
    "et_tune_report_candidate": (c_int, [_VP, c_int, P(TuneEntry)]),
    "et_tune_report_has_roofline": (c_int, [_VP]),
    "et_tune_report_print": (None, [_VP, _VP]),
    "et_tune_report_json": (_VP, [_VP]),
    "et_tune_report_plot": (c_int, [_VP, c_char_p, _DIAG]),
    "et_best_kernel_free": (None, [_VP]),
    "et_best_kernel_info": (None, [_VP, P(BestInfo)]),
    "et_best_report_json": (_VP, [_VP]),
    "et_best_kernel_export": (c_int, [_VP, P(ExportOptions),
                                      P(ExportResult), _DIAG]),
    "et_export_name_validate": (c_int, [c_char_p, _DIAG]),
    "et_cl_kernel_launch": (c_int, [_VP, _VP, _VP, P(_VP), c_int,
                                    P(c_int64), P(_VP), _DIAG]),
    "et_cl_kernel_launch_args": (c_int, [_VP, _VP, P(_VP), c_int,
                                         P(c_int64), P(_VP), _DIAG]),
    "et_cu_kernel_launch": (c_int, [_VP, _VP, c_ulonglong, P(c_ulonglong),
                                    c_int, P(c_int64), _DIAG]),
    "et_cu_kernel_launch_args": (c_int, [_VP, _VP, P(c_ulonglong), c_int,
                                         P(c_int64), _DIAG]),
    "et_loaded_kernel_n_args": (c_int, [_VP]),
    "et_loaded_kernel_arg": (c_int, [_VP, c_int, P(c_int), P(c_int)]),
    "et_loaded_kernel_opts": (c_char_p, [_VP]),
    "et_loaded_kernel_name": (c_char_p, [_VP]),
    "et_loaded_kernel_zero_bytes": (c_size_t, [_VP]),
    "et_loaded_kernel_free": (None, [_VP]),
    "et_session_open": (c_int, [P(SessionOptions), P(_VP), _DIAG]),
    "et_session_close": (None, [_VP]),
    "et_session_device_name": (c_char_p, [_VP]),
    "et_session_db_path": (c_char_p, [_VP]),
    "et_session_tune": (c_int, [_VP, _VP, P(TuneOptions), P(_VP), _DIAG]),
    "et_session_best_lookup": (c_int, [_VP, _VP, P(BestInfo), P(c_int),
                                       _DIAG]),
    "et_session_best_kernel_find": (c_int, [_VP, _VP, P(BestOptions),
                                            P(_VP), _DIAG]),
    "et_session_run": (c_int, [_VP, _VP, P(RunOptions), _VP, P(_VP),
                               P(RunResult), _DIAG]),
    "et_session_cl_kernel_load": (c_int, [_VP, _VP, _VP, _VP,
                                          P(LoadOptions), P(_VP), _DIAG]),
    "et_session_cu_kernel_load": (c_int, [_VP, _VP, c_int,
                                          P(LoadOptions), P(_VP), _DIAG]),
}


def bind(lib):
    """Sets restype and argtypes of every function the package calls."""
    for name, (res, args) in _PROTOS.items():
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
    return lib


lib = bind(find_library())
