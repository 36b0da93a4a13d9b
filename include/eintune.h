/*
 * eintune.h - public API of eintune, an einsum-driven autotuner.
 *
 * Ownership rule (stated once, as cJSON does): every object returned by an
 * et_*_init / et_*_parse / et_*_open function belongs to the caller and is
 * released with the matching et_*_free / et_*_close. Strings returned by
 * et_*_name / et_*_str functions are static and must not be freed.
 * Functions that can fail return et_status; input errors additionally fill
 * an et_diag with a position and a message.
 */
#ifndef EINTUNE_H
#define EINTUNE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ET_VERSION "0.1.0"

/* Status of any call that can fail. */
typedef enum et_status {
    ET_OK = 0,
    ET_ERR_INPUT,       /* bad user input (einsum, shape, opts, file) */
    ET_ERR_REFUSED,     /* an opt refused by a validity rule */
    ET_ERR_UNSUPPORTED, /* valid input the device or build cannot do */
    ET_ERR_NOMEM,       /* host allocation failed */
    ET_ERR_IO,          /* file system error */
    ET_ERR_DEVICE,      /* device unavailable or a device call failed */
    ET_ERR_BUILD,       /* kernel compilation failed */
    ET_ERR_LAUNCH,      /* kernel launch failed */
    ET_ERR_INTERNAL,    /* broken invariant reported instead of aborting */
    ET_ERR_TIMEOUT,     /* device call exceeded its time limit (worker killed) */
    ET_ERR_CRASH,       /* the device worker process died during a call */
    ET_STATUS_COUNT
} et_status;

/* Static string naming a status, e.g. "bad input". */
const char *et_status_str(et_status s);

/* Element types. f16 is a storage type: computed in f32. */
typedef enum et_dtype {
    ET_F16 = 0,
    ET_F32,
    ET_F64,
    ET_DTYPE_COUNT
} et_dtype;

/* "f16", "f32", "f64". */
const char *et_dtype_name(et_dtype t);
/* Size of one element in bytes. */
size_t et_dtype_size(et_dtype t);
/* Parses "f16"/"f32"/"f64" (also "float32", "float64", "float16", "half",
 * "float", "double"); returns 0 on success, -1 if unknown. */
int et_dtype_parse(const char *s, et_dtype *out);

/*
 * Diagnostic for input errors: where (1-based line and column, 0 when not
 * applicable; pos is the 0-based byte offset into the einsum text or -1)
 * and what. The CLI echoes the input with a caret under pos.
 */
typedef struct et_diag {
    int line;
    int col;
    int pos;
    char msg[512];
} et_diag;

/* Device backends. */
typedef enum et_backend_kind {
    ET_BACKEND_OPENCL = 0,
    ET_BACKEND_CUDA,
    ET_BACKEND_COUNT
} et_backend_kind;

/* "opencl", "cuda". */
const char *et_backend_name(et_backend_kind k);

/* ---- problems: an einsum with its sizes and dtypes ----------------------- */

typedef struct et_problem et_problem; /* opaque */

/*
 * Parses and resolves an einsum ("xik,kj->xij"), its sizes
 * ("x=4096,i=35,k=35,j=35", "...=3x2" for an ellipsis) and dtypes ("f64",
 * or one per operand "f32,f64"; NULL = f64). On ET_ERR_INPUT, diag (may be
 * NULL) says what and where: diag->pos is a byte offset into the einsum,
 * or into the shape or dtype text when the message names --shape/--dtype.
 * *out is freed with et_problem_free.
 */
et_status et_problem_init(const char *einsum, const char *shape,
                          const char *dtypes, et_problem **out,
                          et_diag *diag);
void et_problem_free(et_problem *p);

/* The normalized explicit form, e.g. "xik,kj->xij"; owned by p. */
const char *et_problem_einsum(const et_problem *p);
/* Operations booked to dtype t (DESIGN.md's count) and compulsory bytes. */
int64_t et_problem_ops(const et_problem *p, et_dtype t);
int64_t et_problem_bytes(const et_problem *p);

/* ---- kernels -------------------------------------------------------------- */

/* A generated kernel with its launch geometry. Kernel arguments are the
 * output, then the inputs in operand order, each a dense C-ordered array. */
typedef struct et_kernel_source {
    char *source;          /* OpenCL C 1.2 or CUDA C; owned */
    char name[160];        /* the kernel's function name */
    int ndim;              /* 1..3 */
    int64_t global[3];     /* work-items per dimension (grid*block) */
    int64_t local[3];      /* work-group (block) size per dimension */
    int has_local;         /* 0: let the runtime choose (NOLOCALS) */
} et_kernel_source;

/*
 * Renders the kernel of p with opts ("LOCAL(i,8) UPCAST(j,4)"; NULL or ""
 * for the untransformed kernel) for backend b, for a generic device
 * profile (1024 work-items, 48 KiB local memory). ET_ERR_INPUT for a
 * malformed opt list, ET_ERR_REFUSED for an opt that breaks a rule (diag
 * says which). *out is freed with et_kernel_source_free.
 */
et_status et_codegen(const et_problem *p, const char *opts,
                     et_backend_kind b, et_kernel_source **out,
                     et_diag *diag);
void et_kernel_source_free(et_kernel_source *k);

/* ---- tuning --------------------------------------------------------------- */

/* Options of et_tune; the zero value means the defaults. */
typedef struct et_tune_options {
    const char *device;     /* "opencl:0", "cuda:0", ...; NULL: first OpenCL */
    const char *db;         /* database path; NULL: the default path */
    const char *space;      /* YAML space file; NULL: built-in action pool */
    const char *start_opts; /* fixed opts the search builds on; NULL none */
    const char *search;     /* "beam" (NULL), "random", "grid" */
    int budget;             /* candidates answered; 0: 100 */
    double time_limit_s;    /* 0: none */
    int beam_width;         /* 0: 4 */
    uint64_t seed;
    int retime;             /* re-measure points the database knows */
} et_tune_options;

/* The outcome of a tuning run. Plain value. */
typedef struct et_tune_summary {
    int found;              /* a verified candidate was found */
    char opts[1024];        /* its opts */
    char kernel[160];       /* its kernel name */
    double time_s;          /* median device time */
    double ci95_s[2];       /* 95 % interval of the median */
    double gops;            /* measured GOps/s over all dtypes */
    double baseline_s;      /* the untransformed kernel's median */
    int evaluations;        /* candidates timed in this run */
    int cached;             /* candidates answered from the database */
    int failures;           /* candidates refused or failed */
} et_tune_summary;

/*
 * Tunes p on a device (through an isolated worker process) and records
 * every trial in the database. Returns ET_OK when the search ran (see
 * out->found), ET_ERR_INPUT for a bad option or space (diag says why),
 * ET_ERR_DEVICE and others when the device cannot be used (diag->msg).
 */
et_status et_tune(const et_problem *p, const et_tune_options *o,
                  et_tune_summary *out, et_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* EINTUNE_H */
