/*
 * eintune.h - public API of eintune, an einsum-driven autotuner.
 *
 * Ownership rule (stated once, as cJSON does): every object returned by an
 * et_*_init / et_*_parse / et_*_open function belongs to the caller and is
 * released with the matching et_*_free / et_*_close. Strings returned by
 * et_*_name / et_*_str functions are static and must not be freed.
 * Functions that can fail return et_status; input errors additionally fill
 * an et_diag with a position and a message.
 *
 * NULL rule (stated once): a pointer argument may be NULL only where its
 * comment says so (diag everywhere; an options struct, meaning the
 * defaults; an optional result such as found, deleted or event). A NULL
 * anywhere else is refused before anything is done: ET_ERR_INPUT, with
 * diag->input ET_INPUT_OPTION and msg "et_fn: argument 'NAME' is NULL"
 * (NAME as this header names it). Functions that return no et_status
 * given a NULL object (or a NULL output or FILE *) do nothing and return a
 * neutral value: 0 for a count, a size, a flag or a figure, "" for a
 * string, NULL for JSON text, -1 where -1 already means "no such entry",
 * (et_dtype)0 for et_problem_dtype; every *_free and *_close accepts NULL.
 * Every call that takes an et_diag clears it on entry, so a success never
 * leaves an earlier error's message.
 */
#ifndef EINTUNE_H
#define EINTUNE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ET_API marks every function of this header, and only those: libeintune.so
 * is built with -fvisibility=hidden, so it exports the marked functions and
 * nothing else (tests/test_symbols.c checks both ways). */
#if defined(__GNUC__) || defined(__clang__)
#define ET_API __attribute__((visibility("default")))
#else
#define ET_API
#endif

/* ET_DEPRECATED marks the calls that open a device and a database for
 * one call where a session (et_session_*, at the end of this header) keeps
 * them open: they keep working through 1.x. A program compiled with
 * -DET_WARN_DEPRECATED gets a warning where it calls one. */
#if defined(ET_WARN_DEPRECATED) && (defined(__GNUC__) || defined(__clang__))
#define ET_DEPRECATED __attribute__((deprecated))
#else
#define ET_DEPRECATED
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define ET_VERSION "1.2.0"
/* The shared library's major version (its soname: libeintune.so.N). */
#define ET_VERSION_MAJOR 1

/*
 * Growing the ABI (docs/api.md, "Versions and the shared library"): the
 * layout of every struct below is fixed for soname 1, with two
 * exceptions that may gain fields at their end:
 *  - the options structs (et_*_options, et_database_filter), which begin
 *    with `size`: the caller's sizeof, so that a library newer than the
 *    caller's header reads only what the caller has (the fields added
 *    since are zero: their defaults) and an older library refuses fields
 *    it does not know when they are set. size 0 means the 1.0 layout, so
 *    {0} and {.db = "x"} keep working; set it (ET_SIZED) to use a field
 *    the header marks "since 1.N" (the library takes a size 0 as the
 *    1.0 layout's size, never reading a field added since);
 *  - the structs the library hands to a callback (et_progress,
 *    et_database_row), which a program only reads.
 * A result the caller provides (et_best_info, et_tune_summary, et_diag...)
 * never grows: what a later version adds comes through an accessor or a
 * new function. An enum gains values just before its _COUNT sentinel,
 * which counts the values of this header and is no value a call takes or
 * returns. abi/ holds the recorded ABI; .ci/run checks it.
 */
#define ET_SIZED(type) .size = sizeof(type)

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
    ET_ERR_NOT_FOUND,   /* no verified kernel known for the problem on the
                         * device (et_best_lookup, et_best_kernel_find,
                         * et_runner_find_best, et_run with best, the
                         * loaders): one message shape, "no verified
                         * kernel known for E at SIZES on DEVICE ..." */
    ET_STATUS_COUNT
} et_status;

/* Static string naming a status, e.g. "bad input". */
ET_API const char *et_status_str(et_status s);

/* Element types. f16 is a storage type: computed in f32. */
typedef enum et_dtype {
    ET_F16 = 0,
    ET_F32,
    ET_F64,
    ET_DTYPE_COUNT
} et_dtype;

/* "f16", "f32", "f64". */
ET_API const char *et_dtype_name(et_dtype t);
/* Size of one element in bytes. */
ET_API size_t et_dtype_size(et_dtype t);
/* Parses "f16"/"f32"/"f64" (also "float32", "float64", "float16", "half",
 * "float", "double"); returns 0 on success, -1 if unknown. */
ET_API int et_dtype_parse(const char *s, et_dtype *out);

/* Which input a diagnostic is about, so that a front end can echo that
 * text with a caret under et_diag.pos. */
typedef enum et_input {
    ET_INPUT_NONE = 0,  /* not about one input (a device, a run) */
    ET_INPUT_EINSUM,    /* the einsum text */
    ET_INPUT_SHAPE,     /* the shape spec ("x=4096,i=35") */
    ET_INPUT_DTYPE,     /* the dtype spec ("f32" or "f32,f64") */
    ET_INPUT_OPTS,      /* an opt list ("LOCAL(i,8) UPCAST(j,4)") */
    ET_INPUT_SPACE,     /* a transform space (YAML file or string) */
    ET_INPUT_FILE,      /* another file (a .npy array, a database) */
    ET_INPUT_OPTION,    /* a field of an options struct, or an argument of
                         * the call (a NULL, a buffer too short) */
    ET_INPUT_DEVICE,    /* a device spec ("opencl:0") */
    ET_INPUT_BATCH,     /* a batch spec ("u,Dr; u,Ds; u,Dt") */
    ET_INPUT_COUNT
} et_input;

/* "einsum", "shape", "dtype", "opts", "space", "file", "option",
 * "device", "batch", or "" for ET_INPUT_NONE. */
ET_API const char *et_input_name(et_input in);

/*
 * The one error type of the API: every function that can fail fills an
 * et_diag (when the caller passes one; NULL is allowed everywhere) and
 * returns the same status; it is cleared on entry (msg "", status ET_OK,
 * input ET_INPUT_NONE, pos -1), so after a success it holds nothing of an
 * earlier call. For input errors it says which input (input),
 * where (1-based line and column for YAML, 0 when not applicable; pos is
 * the 0-based byte offset into that input's text, or -1) and what (msg);
 * for any other failure msg says what failed and why (the driver call and
 * its error name, the worker's signal, the SQLite message). file names the
 * file for ET_INPUT_SPACE / ET_INPUT_FILE when one was read.
 */
typedef struct et_diag {
    int line;
    int col;
    int pos;
    char msg[1024];
    et_status status;   /* the status the call returned */
    et_input input;     /* ET_INPUT_NONE when not an input error */
    char file[512];     /* the file read, "" when none */
} et_diag;

/* Device backends. */
typedef enum et_backend_kind {
    ET_BACKEND_OPENCL = 0,
    ET_BACKEND_CUDA,
    ET_BACKEND_COUNT
} et_backend_kind;

/* "opencl", "cuda". */
ET_API const char *et_backend_name(et_backend_kind k);

/* ---- problems: an einsum with its sizes and dtypes ----------------------- */

typedef struct et_problem et_problem; /* opaque */

/*
 * Parses and resolves an einsum ("xik,kj->xij"), its sizes
 * ("x=4096,i=35,k=35,j=35", "...=3x2" for an ellipsis) and dtypes ("f64",
 * or one per operand "f32,f64"; NULL = f64). On ET_ERR_INPUT, diag (may be
 * NULL) says what and where: diag->pos is a byte offset into the einsum,
 * or into the shape or dtype text when the message names --shape/--dtype.
 * An empty einsum ("" or blanks) is refused (ET_INPUT_EINSUM, pos 0), and
 * so is an empty shape unless the einsum has no index (",->"). *out is
 * freed with et_problem_free.
 */
ET_API et_status et_problem_init(const char *einsum, const char *shape,
                                 const char *dtypes, et_problem **out,
                                 et_diag *diag);
ET_API void et_problem_free(et_problem *p);

/* The normalized explicit form, e.g. "xik,kj->xij"; owned by p. */
ET_API const char *et_problem_einsum(const et_problem *p);
/* Operations booked to dtype t (docs/roofline.md: the cheapest contraction
 * order's count where it is below the loop nest's) and compulsory bytes. */
ET_API int64_t et_problem_ops(const et_problem *p, et_dtype t);
ET_API int64_t et_problem_bytes(const et_problem *p);

/* Builds a problem from arrays' shapes, as NumPy's einsum takes them:
 * operand k has ndim[k] dimensions dims[k][0..ndim[k]-1] and dtype
 * dtypes[k] (NULL: all f64). Errors name the operand in diag->msg. */
ET_API et_status et_problem_init_arrays(const char *einsum, int n_operands,
                                        const int *ndim,
                                        const int64_t *const *dims,
                                        const et_dtype *dtypes,
                                        et_problem **out, et_diag *diag);

/* Number of input operands. */
ET_API int et_problem_n_operands(const et_problem *p);
/* Dtype and element count of input operand k, or of the output for k = -1
 * (0 for an index out of range). */
ET_API et_dtype et_problem_dtype(const et_problem *p, int k);
ET_API int64_t et_problem_elems(const et_problem *p, int k);
/* Bytes of operand k's dense array (k = -1: the output). */
ET_API size_t et_problem_operand_bytes(const et_problem *p, int k);
/* Indices: the output's first, then the summed ones ("i", or "_0" for an
 * ellipsis dimension); i from 0 to et_problem_n_indices - 1. */
ET_API int et_problem_n_indices(const et_problem *p);
ET_API const char *et_problem_index_name(const et_problem *p, int i);
ET_API int64_t et_problem_index_size(const et_problem *p, int i);

/*
 * Open axes. A size given as "*" or "inf" ("x=*", as feinsum's np.inf)
 * makes that output index open: kernels take its size at launch and are
 * correct for every size >= 1, and the database keys what is tuned by the
 * open einsum. At most one open axis; it must be the first dimension of
 * the output and of every operand that has it (docs/einsum.md). The
 * problem is still worked at one size (ops, bytes, tuning): the tune-at
 * size, 1024 unless set here.
 */
/* 1 when index i is open, else 0. */
ET_API int et_problem_index_open(const et_problem *p, int i);
/* Sets the tune-at sizes of p's open axes from spec ("x=4096").
 * ET_ERR_INPUT (ET_INPUT_SHAPE, diag->pos into spec) for a malformed spec
 * or a letter that is not an open axis. */
ET_API et_status et_problem_set_tune_at(et_problem *p, const char *spec,
                                        et_diag *diag);

/*
 * Batched einsums (docs/einsum.md): several rows of p's subscript, each
 * with its own operands and output, tuned and run as one kernel. rows
 * names every row's operands: "u,Dr; u,Ds; u,Dt" (rows separated by ';',
 * names by ','; 2 to 16 rows). A name is one array, at one operand
 * position; a position where every row names the same array is shared
 * (read once for all rows), any other is rowed; every row has its own
 * output. The problem becomes the einsum with a row axis, a capital
 * letter from R on that p does not use, in front of the output and of
 * the rowed operands ("xj,ij->xi" with the rows above: "xj,Rij->Rxi");
 * a rowed operand's or the output's host array holds the rows one after
 * another. With '+' between rows ("u0,Dr + u1,Ds + u2,Dt", since 1.2)
 * the rows are summed into one output: the row axis is a summed index,
 * in front of the rowed operands only ("Rxj,Rij->xi"). ';' and '+' do
 * not mix. ET_ERR_INPUT (ET_INPUT_BATCH, diag->pos into rows) for a
 * malformed spec; ET_INPUT_EINSUM for an einsum that cannot be batched
 * ('...', batched already). An open axis (x=*) stays open.
 */
ET_API et_status et_problem_set_batch(et_problem *p, const char *rows,
                                      et_diag *diag);
/* Rows of a batched problem (0 when not batched); the array name of
 * operand k in row r (k = -1: "" for the output), "" out of range. */
ET_API int et_problem_n_rows(const et_problem *p);
/* The outputs a run of p writes (since 1.2): a batched problem's rows
 * when each row has its own output, else 1 (rows summed, not batched);
 * 0 for NULL. */
ET_API int et_problem_n_outputs(const et_problem *p);
ET_API const char *et_problem_row_name(const et_problem *p, int r, int k);

/*
 * Several problems in one shape spec: an index's size may be a list
 * "8/16/24/32", a range "8:64:8" (start:stop:step, stop included; step 1
 * when left out: "8:12"), or another index's letter ("k=i": the same size
 * in every problem). Writes the concrete specs, one a line (the last
 * varying entry fastest), into *out (freed with et_free) and their number
 * into *n (at most 4096). ET_ERR_INPUT (ET_INPUT_SHAPE, diag->pos) for a malformed spec.
 */
ET_API et_status et_shape_expand(const char *spec, char **out, int *n,
                                 et_diag *diag);

/* Frees memory the API returned as a plain pointer (JSON text, ...). */
ET_API void et_free(void *ptr);

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
ET_API et_status et_codegen(const et_problem *p, const char *opts,
                            et_backend_kind b, et_kernel_source **out,
                            et_diag *diag);
ET_API void et_kernel_source_free(et_kernel_source *k);

/* ---- transform spaces ----------------------------------------------------- */

/* A transform space (opaque): parameters, constraints, transforms and/or an
 * action pool, loaded from YAML. Freed with et_space_free. */
typedef struct et_space et_space;

/* Loads a YAML space file. ET_ERR_INPUT for a malformed space: diag->input
 * ET_INPUT_SPACE, diag->file the path, diag->line and diag->col 1-based
 * (msg "FILE:LINE:COL: why"); ET_ERR_IO when the file cannot be read
 * (diag->file the path). */
ET_API et_status et_space_load(const char *path, et_space **out, et_diag *diag);
/* Loads a space from YAML text of n bytes; name (NULL: "<space>") labels
 * it in messages and in the database, and is diag->file in the
 * diagnostics of et_space_load. */
ET_API et_status et_space_load_text(const char *text, size_t n,
                                    const char *name, et_space **out,
                                    et_diag *diag);
/* The built-in action pool that fits any einsum (tinygrad-style). */
ET_API et_status et_space_builtin(et_space **out, et_diag *diag);
/* The space's name (its `name:` or the file's). */
ET_API const char *et_space_name(const et_space *s);
ET_API void et_space_free(et_space *s);

/* ---- tuning --------------------------------------------------------------- */

/* What became of a candidate. */
typedef enum et_outcome {
    ET_OUTCOME_OK = 0,            /* "ok": verified and timed */
    ET_OUTCOME_REFUSED,           /* "refused": an opt broke a validity rule */
    ET_OUTCOME_BUILD_ERROR,       /* "build_error": compilation failed */
    ET_OUTCOME_LAUNCH_ERROR,      /* "launch_error": launch/transfer failed */
    ET_OUTCOME_WRONG_RESULT,      /* "wrong_result": verification failed */
    ET_OUTCOME_TIMEOUT,           /* "timeout": killed after its time limit */
    ET_OUTCOME_CRASH,             /* "crash": the device worker died */
    ET_OUTCOME_SLOWER_THAN_BOUND, /* "slower_than_bound": early cut */
    ET_OUTCOME_COUNT
} et_outcome;

/* Static name: "ok", "refused", ..., "slower_than_bound"; "?" if invalid. */
ET_API const char *et_outcome_name(et_outcome o);
/* Parses a name as et_outcome_name gives it; 0 on success, -1 if unknown. */
ET_API int et_outcome_parse(const char *name, et_outcome *out);

/* One answered candidate, as the progress callback sees it. The strings
 * live until the callback returns. */
typedef struct et_progress {
    int candidate;          /* 1, 2, ...: candidates answered so far */
    int budget;             /* the run's budget */
    double elapsed_s;       /* since the run started */
    double time_limit_s;    /* the run's limit, 0 when none */
    const char *opts;       /* this candidate's opts ("" untransformed) */
    const char *params;     /* its space point "a=1 b=2" ("" when none) */
    et_outcome outcome;
    const char *reason;     /* why it failed, "" when ok */
    double time_s;          /* its median device time, 0 when not timed */
    int cached;             /* answered from the database */
    int have_best;          /* a verified best exists so far */
    const char *best_opts;  /* the best so far ("" when none) */
    double best_time_s;     /* its median, 0 when none */
    int new_best;           /* this candidate is the new best so far */
    const char *best_roofline; /* with new_best, in et_tune_run_full: the
                             * roofline table of the new best (measured
                             * against roofline GOps/s per dtype, several
                             * lines ending in a newline); "" otherwise */
    double best_gops;       /* the best so far in GOps/s (all dtypes), 0
                             * when none */
    double best_roofline_pct; /* in et_tune_run_full: the best so far as
                             * % of the roofline (its roofline time over
                             * its time); 0 when none or no roofline */
} et_progress;

/* Called after each answered candidate; return nonzero to cancel the run
 * (it stops after this candidate and reports what it found). */
typedef int (*et_progress_fn)(void *arg, const et_progress *p);

/* Log levels of et_tune_options.log. */
typedef enum et_log_level {
    ET_LOG_DEBUG = 0,
    ET_LOG_INFO,
    ET_LOG_WARN,
    ET_LOG_COUNT
} et_log_level;

/* A line of the run's log (no trailing newline). */
typedef void (*et_log_fn)(void *arg, et_log_level level, const char *msg);

/* Options of et_tune; the zero value means the defaults. Fields may be
 * added at the end: initialise with {0} or memset. */
typedef struct et_tune_options {
    size_t size;            /* sizeof(et_tune_options), or 0: the 1.0 layout */
    const char *device;     /* "opencl:0", "cuda:0", ...; NULL: first OpenCL */
    const char *db;         /* database path; NULL: the default path */
    const char *space;      /* YAML space file; NULL: built-in action pool
                             * (or space_obj) */
    const char *start_opts; /* fixed opts the search builds on; NULL none */
    const char *search;     /* "beam" (NULL), "random", "grid" */
    int budget;             /* candidates answered; 0: 100 */
    double time_limit_s;    /* 0: none */
    int beam_width;         /* 0: 4 */
    uint64_t seed;
    int retime;             /* re-measure points the database knows */
    const et_space *space_obj; /* a loaded space (wins over space); not
                                * taken over: the caller frees it */
    double bound;           /* early-cut factor: a candidate slower than
                             * bound x the best so far is cut; 0: 3 */
    et_progress_fn progress; /* after each candidate; NULL: none */
    void *progress_arg;
    et_log_fn log;          /* the run's log lines; NULL: silent */
    void *log_arg;
    /* Cancellation from another thread or a signal handler: the run stops
     * after the candidate in flight once *cancel is nonzero. NULL: none. */
    volatile sig_atomic_t *cancel;
    /* The final race (docs/measurement.md): the `race` fastest distinct
     * verified candidates and the untransformed kernel timed round robin,
     * the choice made with a paired 95 % interval; 0: 3 (at most 8); < 0:
     * no race (the figures are the search's own). */
    int race;
    /* --- scale-out (docs/scale-out.md) --- */
    /* The ranks to spread the run over: a pointer to an MPI_Comm (MPI_Comm
     * is a handle type, so it travels as void *), duplicated for the run.
     * NULL: MPI_COMM_WORLD when the process was started by an MPI
     * launcher with more than one rank, else no scale-out. With more than
     * one rank, every rank calls et_tune_run_full with the same problem
     * and options: rank 0 runs the search and alone writes the database;
     * the others evaluate candidates on their own devices (device: a
     * comma-separated list indexed by the node-local rank) and get back a
     * report without candidates (et_tune_report_rank > 0). MPI_Init is
     * called only when MPI_Initialized says nobody has (then MPI_Finalize
     * runs at exit). Without MPI in the build such a run fails with
     * ET_ERR_UNSUPPORTED ("scale-out is off"). */
    void *comm;
    /* --- seeding (docs/spaces.md, "Seeds") --- */
    /* The search first tries the best opts of the nearest tuned problems
     * in the database on this device (the same einsum at other sizes,
     * einsums of the same structure; not this problem's own), re-applied
     * here; opts the rules refuse here are left out and logged. Seeds are
     * candidates: timed, charged to the budget, de-duplicated, marked in
     * the report (et_tune_entry.seed). no_seeding 1: none. n_seeds: how
     * many at most; 0: 3 (at most 16). */
    int no_seeding;
    int n_seeds;
    /* --- the cost model (docs/model.md) --- */
    /* 0: on: a model fitted on the database's trials of the device (and
     * on this run's candidates as they are timed) ranks each step's new
     * candidates once it is fitted, and only the promising ones are
     * timed; < 0: off (every candidate the search proposes is timed). */
    int model;
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
    int failures;           /* candidates refused or failed (a run-time
                             * failure or a rule's refusal); candidates
                             * cut at the bound are not failures:
                             * cut_at_bound */
    int cancelled;          /* stopped by progress or cancel */
    char stop_reason[64];   /* "budget", "time limit", "cancelled", ... */
    double elapsed_s;
    /* The final race ran: time_s, ci95_s and baseline_s are its figures
     * (medians over its rounds), speedup the untransformed kernel's time
     * over the best's with its 95 % interval (0, 0 when the untransformed
     * kernel did not fit the time limit and did not race: baseline_s is
     * then the search's). Without a race, speedup is
     * baseline_s / time_s when both were timed in this run, else 0. */
    int raced;
    double speedup;
    double speedup_ci95[2];
    int duplicates;         /* proposals answered from an earlier one */
    /* --- the cost model (docs/model.md) --- */
    int model_used;         /* it was fitted and ranked candidates */
    int model_samples;      /* samples of its last fit (0: never fitted) */
    int model_skipped;      /* candidates it kept from being timed */
    int cut_at_bound;       /* candidates cut at the bound (slower than
                             * bound x the best so far: a search cut, not
                             * a failure; not in failures) */
    char time_source[16];   /* what time_s is: "race" (the final race's
                             * median), "this run" (the search's median,
                             * timed in this run), "database" (the
                             * search's median recorded by an earlier
                             * run); "" when nothing was found */
    double search_time_s;   /* the best's median as the search timed it
                             * (time_s too when no race ran) */
    double search_ci95_s[2];
} et_tune_summary;

/*
 * Tunes p on a device (through an isolated worker process) and records
 * every trial in the database. Returns ET_OK when the search ran (see
 * out->found; a cancelled run is ET_OK with out->cancelled set),
 * ET_ERR_INPUT for a bad option or space (diag says which input and why),
 * ET_ERR_DEVICE and others when the device cannot be used (diag->msg).
 * The summary of et_tune_run_full (below), without the roofline: the
 * device's peaks are not looked up. Reentrant: runs in different threads
 * use different workers.
 */
ET_API ET_DEPRECATED et_status et_tune(const et_problem *p, const et_tune_options *o,
                         et_tune_summary *out, et_diag *diag);

/* ---- the full result of a run -------------------------------------------- */

/* A finished run with every candidate, the device, the space and, where
 * the device's peaks are known, the roofline (opaque). Freed with
 * et_tune_report_free. */
typedef struct et_tune_report et_tune_report;

/* One candidate of a run in proposal order. The strings are owned by the
 * report and live as long as it. */
typedef struct et_tune_entry {
    const char *opts;       /* its opts ("" untransformed) */
    const char *params;     /* its space point "{'a': 1}" ("{}" when none) */
    const char *kernel;     /* kernel name ("" when refused) */
    et_outcome outcome;
    const char *reason;     /* why it failed, "" when ok */
    double time_s;          /* median device time, 0 when not timed */
    double ci95_s[2];       /* its 95 % interval, 0 when not timed */
    int cached;             /* answered from the database */
    double elapsed_s;       /* since the run started, when it was answered
                             * (the search's convergence against time) */
    int duplicate_of;       /* the candidate (index) whose kernel this is,
                             * answered from it; -1: none */
    /* --- seeding --- */
    int seed;               /* 1: a seed (et_tune_options.n_seeds), the
                             * best opts of a nearby tuned problem or a
                             * structural one */
    const char *seed_einsum; /* a seed: the einsum it was tuned under */
    const char *seed_sizes; /* its sizes, in this problem's names */
    double seed_distance;   /* sum over axes of |log2 size ratio| */
    int seed_structural;    /* 1: a seed the einsum's structure suggests
                             * (docs/spaces.md, "Seeds"), not from the
                             * database: seed_einsum is this problem's,
                             * seed_sizes "", seed_distance 0 */
} et_tune_entry;

/*
 * As et_tune, keeping the whole result: every candidate, the device's
 * description, and the roofline from the device's peaks (the tuning
 * database's, else the peaks cache, else measured and stored; a device
 * whose peaks cannot be had is logged as a warning "no roofline: ..." and
 * the report has no roofline). The device is opened before the database.
 * Logs (o->log) "database PATH" and "device NAME (SPEC), space S, search
 * K" before the search, then the search's own lines. o->progress also sees
 * new_best and best_roofline. Errors as et_tune, with diag->input
 * ET_INPUT_SPACE when the space does not fit the einsum. On ET_OK *out is
 * set (freed with et_tune_report_free); on an error *out is NULL. p need
 * not outlive *out.
 */
ET_API et_status et_tune_run_full(const et_problem *p, const et_tune_options *o,
                                  et_tune_report **out, et_diag *diag);
ET_API void et_tune_report_free(et_tune_report *r);

/* The run's summary, as et_tune gives it. */
ET_API void et_tune_report_summary(const et_tune_report *r,
                                   et_tune_summary *out);
/* Number of candidates answered (in proposal order). */
ET_API int et_tune_report_n_candidates(const et_tune_report *r);
/* Candidate i (0-based) into *out; 0, or -1 when i is out of range. */
ET_API int et_tune_report_candidate(const et_tune_report *r, int i,
                                    et_tune_entry *out);
/* 1 when the report has the roofline (the device's peaks were known). */
ET_API int et_tune_report_has_roofline(const et_tune_report *r);
/* This process's rank in a scaled-out run: 0 for the rank that searched
 * (and for a run without scale-out); > 0 for an evaluating rank, whose
 * report has no candidates and is not to be printed. */
ET_API int et_tune_report_rank(const et_tune_report *r);
/* The number of ranks of the run (1 without scale-out). */
ET_API int et_tune_report_n_ranks(const et_tune_report *r);

/*
 * `eintune tune`'s report to f: einsum, device, space, search and why it
 * stopped, the candidates' counts, where the time went, the untransformed
 * kernel's time, then the best (opts, params, time with its interval, its
 * verification) with the roofline table, or "none: no candidate passed".
 */
ET_API void et_tune_report_print(const et_tune_report *r, FILE *f);

/*
 * The report as a JSON document (cJSON_Print's formatting): einsum,
 * device {name, backend, driver}, space, search, evaluations, cached,
 * failures {outcome: count}, elapsed_s, time_s {baseline, build, verify,
 * timing, other}, stop_reason, duplicates, model {on, used, samples,
 * db_samples, run_samples, ranked, skipped, r2, note}, noise {...},
 * baseline {time_s, source}, best (null or {params, opts, kernel, time_s,
 * ci95_s, source,
 * speedup, speedup_ci95, gops, roofline_gops, roofline_note, verified
 * {trials, max_norm_err, p_value}}), race {ran, note, verdict, kernels
 * [...], ...} (docs/api.md) and candidates [{params, opts, status,
 * reason, time_s, gops, cached, elapsed_s, duplicate_of}]. With the final
 * race, best.time_s, best.ci95_s and baseline.time_s are the race's. A
 * scaled-out run adds "rank" to each candidate (the rank that evaluated
 * it, 0 when none did) and to race (the rank that ran it), best.retimed
 * {rank, status, time_s, ci95_s} when the race was turned off (the winner
 * timed again on one rank), ranks [{rank, host, device, spec, backend,
 * driver, cpus, evaluations, busy_s, idle_s}] and scale {ranks, jobs,
 * rank0_s_per_trial, db_s, submit_s, wait_s, hello_s, cpu_s, wall_s}.
 * Returns text freed with et_free, NULL when out of memory.
 */
ET_API char *et_tune_report_json(const et_tune_report *r);

/*
 * Draws the run's chart to path, ".svg" or ".png": titled with the
 * problem (einsum, sizes, dtypes) and the device; on the left the
 * roofline of the timed candidates with the roofs of the problem's dtypes
 * (the best as a red diamond; the candidates, which share one intensity,
 * spread a few pixels apart), on the right the search's convergence:
 * each candidate's time (log scale) against when in the run it was
 * answered, the best so far as a step line. ET_ERR_UNSUPPORTED when the
 * report has no roofline, ET_ERR_INPUT (ET_INPUT_FILE) for another
 * extension, ET_ERR_IO when the file cannot be written; diag->msg says
 * why.
 */
ET_API et_status et_tune_report_plot(const et_tune_report *r, const char *path,
                                     et_diag *diag);

/* ---- campaigns: many problems tuned in one go ----------------------------- */

typedef struct et_campaign et_campaign; /* opaque */

/*
 * Loads a campaign file (docs/scale-out.md): a YAML list of problems, each
 * a mapping with einsum and shape (required; shape as "x=4,i=8" or a
 * mapping {x: 4, i: 8}), dtype (default f64), space (a space file,
 * relative to the campaign file's directory; default the built-in action
 * pool), budget (default 100), search (beam, random or grid), time-limit
 * (seconds), seed and race (0..8, 0: no final race; default 3). Every
 * problem and space is checked here. Errors: ET_ERR_INPUT with diag->input
 * ET_INPUT_FILE, diag->file, 1-based line and col, and msg
 * "FILE:LINE:COL: why" for a bad campaign file (its YAML, a key, a value,
 * a problem's einsum, shape or dtype); a bad space file is its own
 * diagnostic (ET_INPUT_SPACE); ET_ERR_IO when the campaign file cannot be
 * read. *out is freed with et_campaign_free.
 */
ET_API et_status et_campaign_load(const char *path, et_campaign **out,
                                  et_diag *diag);
ET_API void et_campaign_free(et_campaign *c);
ET_API int et_campaign_n_problems(const et_campaign *c);

/* Where a problem of a campaign run stands. */
typedef enum et_campaign_state {
    ET_CAMPAIGN_NOT_RUN = 0, /* not reached (the run was cancelled) */
    ET_CAMPAIGN_TUNED,       /* tuned in this run */
    ET_CAMPAIGN_FROM_DB,     /* finished by an earlier run: answered from
                              * the database, nothing timed */
    ET_CAMPAIGN_FAILED,      /* its run failed (status, message) */
    ET_CAMPAIGN_STATE_COUNT
} et_campaign_state;

/* "not run", "tuned", "database", "failed". */
ET_API const char *et_campaign_state_name(et_campaign_state s);

/* One problem of a campaign run. Plain value. */
typedef struct et_campaign_entry {
    int index;              /* in the file's order, from 0 */
    int line;               /* of its entry in the file, 1-based */
    char einsum[1024];
    char shape[1024];
    char dtype[64];
    char space[512];        /* as the file gave it, "builtin" when none */
    char search[16];
    int budget;
    et_campaign_state state;
    et_status status;       /* ET_CAMPAIGN_FAILED: why, with message */
    char message[1024];
    int rank;               /* the MPI rank that tuned it (0 without) */
    int64_t finished_at;    /* Unix time its result was recorded, 0 none */
    et_tune_summary summary; /* tuned or from the database: its result */
} et_campaign_entry;

/* Options of et_campaign_run; the zero value means the defaults. */
typedef struct et_campaign_options {
    size_t size;            /* sizeof(et_campaign_options), or 0: the 1.0 layout */
    const char *device;     /* as et_tune_options (under MPI a list) */
    const char *db;         /* database path; NULL: the default path */
    int retime;             /* tune every problem again, the database's
                             * trials measured again too */
    et_log_fn log;          /* the run's log lines; NULL: silent */
    void *log_arg;
    volatile sig_atomic_t *cancel; /* stops after the problems in flight */
    void *comm;             /* as et_tune_options.comm */
    /* After each problem is settled (tuned, failed or answered from the
     * database), on the rank that reports. NULL: none. */
    void (*done)(void *arg, const et_campaign_entry *e);
    void *done_arg;
} et_campaign_options;

typedef struct et_campaign_report et_campaign_report; /* opaque */

/*
 * Tunes every problem of c (docs/scale-out.md) on one device, one after
 * another, recording every trial in the database, and each problem that
 * finishes as finished: a campaign run again answers those from the
 * database without timing anything, and resumes the others (their trials
 * answered as far as they got). Under an MPI launcher with more than one
 * rank (or with o->comm), rank 0 owns the database and hands the problems
 * out one at a time to whichever rank is free; each other rank tunes its
 * problem on its own device (a list in o->device, indexed by its
 * node-local rank), bound to its own cores; every rank calls this with the
 * same campaign and options, and the ranks' devices must be of one kind.
 * A problem whose run fails is reported as failed and the others go on.
 * Returns ET_OK when the campaign ran (see the entries), else the device's
 * or the database's error (ET_ERR_INPUT with ET_INPUT_DEVICE for a device
 * spec that names no device, ET_INPUT_FILE for a database that is not
 * eintune's). *out is freed with et_campaign_report_free.
 */
ET_API et_status et_campaign_run(const et_campaign *c,
                                 const et_campaign_options *o,
                                 et_campaign_report **out, et_diag *diag);
ET_API void et_campaign_report_free(et_campaign_report *r);
/* This process's rank: 0 reports; > 0 a rank that tuned problems for
 * rank 0, whose report is not to be printed. */
ET_API int et_campaign_report_rank(const et_campaign_report *r);
ET_API int et_campaign_report_n(const et_campaign_report *r);
/* Entry i (0 or -1 when out of range). */
ET_API int et_campaign_report_entry(const et_campaign_report *r, int i,
                                    et_campaign_entry *out);
/* `eintune campaign`'s summary table to f. */
ET_API void et_campaign_report_print(const et_campaign_report *r, FILE *f);
/*
 * The report as JSON: campaign, database, device {name, backend, driver},
 * ranks, totals {problems, tuned, from_database, failed, not_run},
 * elapsed_s, problems [{index, line, einsum, shape, dtype, space, search,
 * budget, state, rank (under MPI), finished_at, message (failed), found,
 * best (null or {opts, kernel, time_s, ci95_s, gops, speedup,
 * speedup_ci95, raced}), baseline_s, evaluations, cached, duplicates,
 * failures, stop_reason, elapsed_s}]. Freed with et_free; NULL when out
 * of memory.
 */
ET_API char *et_campaign_report_json(const et_campaign_report *r);

/* ---- devices, peaks and the roofline -------------------------------------- */

/* A device as `eintune devices` lists it, with the limits kernels must
 * respect. Plain value. */
typedef struct et_device_desc {
    char spec[64];          /* how to ask for it: "opencl:0:0", "cuda:0" */
    et_backend_kind backend;
    char name[256];
    char vendor[256];
    char driver[128];       /* driver version */
    char version[128];      /* "OpenCL 3.0 PoCL ...", "CUDA 9.0" */
    int64_t max_work_group_size;
    int64_t max_work_item_sizes[3];
    int64_t local_mem_bytes;
    int compute_units;
    int64_t global_mem_bytes;
    int64_t mem_base_addr_align; /* bytes */
    int fp64;               /* double precision */
    int fp16;               /* native half arithmetic */
    int preferred_vector_width[ET_DTYPE_COUNT];
} et_device_desc;

/*
 * Every OpenCL device (over all platforms) and every CUDA device, in this
 * process (no worker). *out gets an array of *n descriptions (freed with
 * et_free; NULL when n is 0); *notes (may be NULL) gets one line per
 * absent backend ("cuda: no CUDA device: ..."), "" when none, freed with
 * et_free. ET_ERR_DEVICE when listing failed, ET_ERR_NOMEM.
 */
ET_API et_status et_device_desc_list(et_device_desc **out, int *n, char **notes,
                                     et_diag *diag);
/* The table of `eintune devices` (spec, name, vendor, driver and the
 * limits, one row per device) to f. */
ET_API void et_device_desc_print(const et_device_desc *d, int n, FILE *f);
/* The list as a JSON array (cJSON_Print's formatting) of {spec, backend,
 * name, vendor, driver, device_version, max_work_group_size,
 * max_work_item_sizes, local_mem_bytes, compute_units, global_mem_bytes,
 * mem_base_addr_align, fp64, fp16, preferred_vector_width}; freed with
 * et_free, NULL when out of memory. */
ET_API char *et_device_desc_json(const et_device_desc *d, int n);

/* Options of et_peaks_report_init; the zero value means the defaults. */
typedef struct et_peaks_options {
    size_t size;            /* sizeof(et_peaks_options), or 0: the 1.0 layout */
    const char *device;     /* "opencl:0", "cuda:0", ...; NULL: first OpenCL */
    const char *db;         /* the tuning database that keeps peaks; NULL:
                             * the default path (which may be missing:
                             * then a warning, and the cache file alone) */
    int remeasure;          /* measure again and replace what is kept */
    const char *peaks_file; /* vendor figures that replace measured ones;
                             * NULL: $ET_PEAKS_FILE */
    int runs;               /* timed runs per figure; 0: 5 */
    int quick;              /* small buffers, short runs: rough figures
                             * measured now and never kept (no database,
                             * no cache, no peaks file) */
    et_log_fn log;          /* the device used, measurement progress, a
                             * busy device; NULL: silent */
    void *log_arg;
} et_peaks_options;

/* A device's peaks (opaque): FMA GFLOP/s per dtype and streaming GB/s,
 * with the spread of the runs and where they came from. Freed with
 * et_peaks_report_free. */
typedef struct et_peaks_report et_peaks_report;

/*
 * The device's peaks as the roofline uses them: from the tuning database,
 * else the per-device cache file, else measured (and then kept); the
 * peaks file's figures replace the others. The device is opened through a
 * worker (in this process when the worker program is missing). Errors:
 * ET_ERR_INPUT for a bad device spec (ET_INPUT_DEVICE), a database that is
 * not eintune's (ET_INPUT_FILE) or a refused peaks file (ET_INPUT_FILE);
 * ET_ERR_DEVICE and others when the device or a measurement fails. *out
 * is freed with et_peaks_report_free.
 */
ET_API et_status et_peaks_report_init(const et_peaks_options *o,
                                      et_peaks_report **out, et_diag *diag);
ET_API void et_peaks_report_free(et_peaks_report *r);
/* GFLOP/s of dtype t (0 when not known) and the DRAM copy bandwidth in
 * GB/s (the model's fallback figure; every figure is in the JSON). */
ET_API double et_peaks_report_gflops(const et_peaks_report *r, et_dtype t);
ET_API double et_peaks_report_bandwidth(const et_peaks_report *r);
/* "measured", "cached" or "override" (static). */
ET_API const char *et_peaks_report_source(const et_peaks_report *r);
/* `eintune peaks`'s table (the device, then one line per figure with min,
 * median, max and runs) to f. */
ET_API void et_peaks_report_print(const et_peaks_report *r, FILE *f);
/* The peaks as JSON (cJSON_Print's formatting): device {name, backend,
 * driver}, eintune_version, source, gflops {dtype: value},
 * bandwidth_gbs, gflops_spread, bandwidth; freed with et_free, NULL when
 * out of memory. */
ET_API char *et_peaks_report_json(const et_peaks_report *r);

/* What `eintune check` says about a problem (opaque). Freed with
 * et_check_report_free. */
typedef struct et_check_report et_check_report;

/*
 * Describes p: its normalized form, dtypes, every index with its size and
 * role (free, summed, batch), the ops per dtype, the compulsory bytes and
 * the intensity; with roofline nonzero also the roofline from the peaks
 * of device (NULL: the first OpenCL device; peaks from the cache file,
 * measured on a miss). A device that cannot be opened or has no peaks is
 * no error: the report then says why the roofline is missing. ET_OK, or
 * ET_ERR_NOMEM. *out is freed with et_check_report_free; p need not
 * outlive it.
 */
ET_API et_status et_problem_check(const et_problem *p, const char *device,
                                  int roofline, et_check_report **out,
                                  et_diag *diag);
ET_API void et_check_report_free(et_check_report *r);
/* 1 when the report has the roofline. */
ET_API int et_check_report_has_roofline(const et_check_report *r);
/* The roofline time in seconds (0 without a roofline). */
ET_API double et_check_report_roofline_s(const et_check_report *r);
/* `eintune check`'s table to f ("roofline   n/a: why" when it is
 * missing). */
ET_API void et_check_report_print(const et_check_report *r, FILE *f);
/* The report as JSON (cJSON_Print's formatting): einsum, indices [{name,
 * size, role, open}], ops {dtype: count}, bytes, intensity and, with the
 * roofline, roofline {roofline_s, bound, compute_s, memory_s,
 * roofline_gops, peaks}; freed with et_free, NULL when out of memory. */
ET_API char *et_check_report_json(const et_check_report *r);

/* ---- the best known kernel ------------------------------------------------ */

/* The best verified kernel the database knows for a problem on a device. */
typedef struct et_best_info {
    char opts[2048];        /* its opts in the asker's index names */
    char kernel[256];       /* kernel function name */
    char tuned_einsum[1024]; /* the einsum text it was tuned under (may be a
                             * renamed equivalent of the asker's) */
    int exact;              /* the stored kernel was reproduced exactly */
    double time_s;          /* its median device time when tuned: the
                             * search's timing of it (the trial's); the
                             * final race's is race_time_s */
    double ci95_s[2];
    double gops;            /* GOps/s when tuned (of time_s) */
    char device[256];       /* the device's name */
    et_backend_kind backend;
    char driver[128];       /* the device's driver version */
    int64_t trial_id;       /* its row in the database */
    char tuned_opts[2048];  /* its opts as stored (tuned_einsum's names) */
    char tuned_kernel[256]; /* its kernel name as stored */
    int runs;               /* timed runs when tuned */
    double cv;              /* their coefficient of variation */
    int verify_trials;      /* verification trials */
    double max_norm_err;    /* largest normalized error over them */
    double p_value;         /* one-sided test against the untransformed
                             * kernel; NaN without one */
    /* --- open axes and sizes never tuned --- */
    char source[16];        /* "exact": tuned for these sizes (or this
                             * open einsum); "open": tuned with an open
                             * axis that covers them (the kernel takes
                             * that axis' size at launch); "fallback":
                             * tuned at other sizes, its opts re-applied
                             * here (time_s, gops are then 0: nothing was
                             * measured at these sizes) */
    char open_axis[16];     /* the axis the kernel takes at launch, "" */
    char tuned_at[256];     /* the sizes it was measured at where they
                             * differ from the asked ones ("x=512"; an
                             * open axis' tune-at size); "" */
    char applied_at[256];   /* the asked sizes of those axes ("x=1024") */
    /* --- the search's time and the race's --- */
    int raced;              /* the latest final race of this einsum on the
                             * device chose this kernel: race_time_s and
                             * race_ci95_s are that race's median and 95 %
                             * interval over its rounds (timed round robin
                             * with the other finalists and the
                             * untransformed kernel); 0: no race chose it
                             * (or a fallback), race_* are 0 */
    double race_time_s;
    double race_ci95_s[2];
    int race_rounds;
} et_best_info;

/*
 * Looks up the fastest verified kernel for p on device spec `device`
 * (NULL: the first OpenCL device) in database db (NULL: the default path).
 * Renamed and reordered einsums are matched. Sizes never tuned are
 * answered in this order (out->source): the exact entry, then an entry
 * tuned with an open axis that covers the size, then the opts tuned at
 * the nearest other sizes (sum over axes of |log2 ratio|) re-applied
 * where the rules accept them (docs/database.md). ET_OK with *found = 1
 * and out filled; ET_ERR_NOT_FOUND with *found = 0 when nothing applies
 * (found may be NULL: the status says it), diag->msg "no verified kernel
 * known for E at SIZES (DTYPES) on DEVICE (BACKEND, driver D) in DB: tune
 * it on this device first", the words every call gives for it;
 * ET_ERR_DEVICE when the device cannot be opened; ET_ERR_IO/ET_ERR_INPUT
 * for the database.
 */
ET_API ET_DEPRECATED et_status et_best_lookup(const et_problem *p, const char *device,
                                const char *db, et_best_info *out, int *found,
                                et_diag *diag);

/* ---- the best kernel as an object: its report and its export -------------- */

/* Options of et_best_kernel_find; the zero value means the defaults. */
typedef struct et_best_options {
    size_t size;            /* sizeof(et_best_options), or 0: the 1.0 layout */
    const char *device;     /* "opencl:0", "cuda:0", ...; NULL: first OpenCL */
    const char *db;         /* database path; NULL: the default path */
    int roofline;           /* also read the stored peaks (database, then
                             * the peaks cache; nothing is measured) and
                             * compute the roofline for et_best_report_* */
    et_log_fn log;          /* log lines (the database used, a kernel whose
                             * source was not reproduced, no roofline);
                             * NULL: silent */
    void *log_arg;
    int exact;              /* only an entry for exactly these sizes (or
                             * an open axis covering them): no fallback */
} et_best_options;

/* The best verified kernel known for a problem on a device (opaque): the
 * stored trial, its opts in the asker's names, the device, and with
 * et_best_options.roofline the roofline from the stored peaks. Freed with
 * et_best_kernel_free. */
typedef struct et_best_kernel et_best_kernel;

/*
 * As et_best_lookup, keeping the answer as an object for et_best_report_*
 * and et_best_kernel_export. The database is opened before the device (a
 * file that is not eintune's costs no device start); the device is opened
 * through a worker only to learn its name and driver (the database key).
 * Returns ET_OK with *out set, or ET_ERR_NOT_FOUND with *out NULL when
 * the database knows no verified kernel (diag->msg as et_best_lookup's).
 * Errors: the database's
 * (diag->input ET_INPUT_FILE; ET_ERR_INPUT for a file that is not an
 * eintune database), the device's (ET_INPUT_DEVICE for a bad spec),
 * mapping the stored opts (ET_INPUT_NONE), ET_ERR_NOMEM. p need not
 * outlive *out.
 */
ET_API ET_DEPRECATED et_status et_best_kernel_find(const et_problem *p,
                                     const et_best_options *o,
                                     et_best_kernel **out, et_diag *diag);
ET_API void et_best_kernel_free(et_best_kernel *bk);

/* Fills *out with the kernel's public description. */
ET_API void et_best_kernel_info(const et_best_kernel *bk, et_best_info *out);

/*
 * `eintune best`'s report: einsum, device, the einsum it was tuned as,
 * opts, kernel (in the asker's names), time with its 95 % interval,
 * verification figures, then the roofline table (measured against
 * roofline GOps/s per dtype) or, without stored peaks, the measured
 * GOps/s alone. Written to f. Returns 0, or -1 when the kernel cannot be
 * rendered (nothing written).
 */
ET_API int et_best_report_print(const et_best_kernel *bk, FILE *f);

/*
 * The same as a JSON document (cJSON_Print's formatting): einsum, device
 * {name, backend, driver}, opts, kernel, time_s, ci95_s, gops,
 * roofline_gops (null without stored peaks), verified {trials,
 * max_norm_err, p_value}, tuned_as {einsum, opts, kernel,
 * source_reproduced}. Freed with et_free; NULL when out of memory or the
 * kernel cannot be rendered.
 */
ET_API char *et_best_report_json(const et_best_kernel *bk);

/* Options of et_best_kernel_export; the zero value means the defaults but
 * dir is required. */
typedef struct et_export_options {
    size_t size;            /* sizeof(et_export_options), or 0: the 1.0 layout */
    const char *dir;        /* output directory, created with its parents */
    const char *backend;    /* "opencl" or "cuda"; NULL: the device's */
    et_log_fn log;          /* a warning when rendering for another backend
                             * than the one tuned on; NULL: silent */
    void *log_arg;
    const char *name;       /* the kernel's name, which also names the
                             * files and (in upper case) the macros; a C
                             * identifier (et_export_name_validate). NULL:
                             * the loop sizes and the dtypes, e.g.
                             * r_16_12_8_f32 */
    int force;              /* replace files that eintune export wrote for
                             * another kernel (never a file it did not
                             * write) */
    int no_verify;          /* write the kernel without verifying it on the
                             * device first (the header then says so:
                             * NAME_VERIFIED 0); by default it is verified
                             * at the sizes its header serves (with an
                             * open axis at 1, 2, a prime below its tune-at
                             * size, that size and the asked one), and a
                             * kernel that fails is not written
                             * (ET_ERR_BUILD) */
    int embed;              /* also put the source into the header as a C
                             * string, <PREFIX>SOURCE (and its length,
                             * <PREFIX>SOURCE_BYTES), byte for byte the
                             * .cl/.cu file's content: a program built with
                             * the header needs no file at run time */
} et_export_options;

/* What et_best_kernel_export wrote. Plain value. */
typedef struct et_export_result {
    char kernel[160];       /* the kernel's function name */
    et_backend_kind backend; /* rendered for */
    char source[4096];      /* DIR/<kernel>.cl or .cu */
    char header[4096];      /* DIR/<kernel>.h */
    char prefix[168];       /* the header's macro prefix: the name in upper
                             * case and '_' ("R_16_12_8_F32_") */
    int replaced;           /* files of another kernel were replaced
                             * (force) */
} et_export_result;

/*
 * Writes the kernel for a library to embed: DIR/<name>.cl (.cu for CUDA)
 * with its source, its function called <name>, and DIR/<name>.h, a C
 * header with the kernel name, the argument order (output first, then the
 * inputs in operand order; dtypes, shapes, element counts) and the launch
 * geometry (OpenCL global/local sizes, CUDA grid/block, the bytes of
 * output to zero for SPLIT). <name> is o->name, or the loop sizes
 * followed by the dtypes ("r_16_12_8_f32"; "_f16_to_f32" or
 * "_f32_f64_to_f64" when they differ), so the kernels of one shape in two
 * dtypes do not collide. Macros are prefixed with the name in upper case
 * and '_' (out->prefix), the include guard is ET_EXPORT_<PREFIX>H, and
 * each header defines ET_EXPORT(x) -> <PREFIX>x unless already defined:
 * headers of several kernels can be included in one file. With o->embed
 * the header also holds the source as a C string, <PREFIX>SOURCE, so a
 * program needs no .cl/.cu file at run time.
 *
 * Files in the way: the same kernel written before is rewritten; files
 * export wrote for another kernel (another problem, other opts or
 * backend) are replaced only with o->force; a file export did not write is
 * never replaced. Both files are checked before either is written; each
 * appears whole (written under a temporary name and renamed).
 *
 * Errors: ET_ERR_INPUT (ET_INPUT_OPTION) for a bad option or name (also a
 * name the kernel's code uses itself, such as "out" or "fma"),
 * ET_ERR_INPUT (ET_INPUT_FILE, diag->file the file) when a file is in the
 * way, ET_ERR_IO when the directory or a file cannot be made,
 * ET_ERR_REFUSED/ET_ERR_UNSUPPORTED when the kernel cannot be rendered for
 * the backend.
 */
ET_API et_status et_best_kernel_export(const et_best_kernel *bk,
                                       const et_export_options *o,
                                       et_export_result *out, et_diag *diag);

/* Checks an export name: a C identifier of at most 100 characters, not
 * reserved ("__x", "_X"), not a C or OpenCL C keyword or type.
 * ET_ERR_INPUT (ET_INPUT_OPTION, diag->pos at a bad character) otherwise.
 * et_best_kernel_export checks it too; this lets a front end refuse a
 * name before any device or database is opened. */
ET_API et_status et_export_name_validate(const char *name, et_diag *diag);

/* Options of et_dispatch_export; the zero value means the defaults but
 * dir is required. */
typedef struct et_dispatch_options {
    size_t size;            /* sizeof(et_dispatch_options), or 0: the 1.0 layout */
    const char *dir;        /* output directory, created with its parents */
    const char *name;       /* the files' and the C symbols' prefix (a C
                             * identifier, et_export_name_validate); NULL:
                             * "dispatch_" with the einsum's letters and
                             * the dtypes, "dispatch_xik_kj_to_xij_f64"
                             * (an ellipsis is "0") */
    const char *backend;    /* "opencl" or "cuda"; NULL: the device's */
    const char *device;     /* NULL: the first OpenCL device */
    const char *db;         /* NULL: the default path */
    et_log_fn log;          /* a listed size with no kernel; NULL: silent */
    void *log_arg;
    int force;              /* replace files export wrote for another
                             * kernel or table (never a file it did not
                             * write) */
    int no_verify;          /* write the tuned kernels without verifying
                             * them on the device first (the header then
                             * says so: NAME_VERIFIED 0); by default each
                             * is verified at the sizes it serves (an open
                             * one also at 1, 2 and a prime below its
                             * tune-at size), and a failure writes nothing
                             * (ET_ERR_BUILD) */
    int embed;              /* also put every kernel's source into the
                             * header as a C string, <PREFIX>SOURCE (with
                             * <PREFIX>SOURCE_BYTES), byte for byte the
                             * .cl/.cu file's content, as for one kernel */
    const char *batch;      /* since 1.1: a batched einsum's rows
                             * ("u,Dr; u,Ds", et_problem_set_batch); every
                             * kernel of the table, the generic one too,
                             * takes one buffer per row; NULL: none */
} et_dispatch_options;

/* What et_dispatch_export wrote. Plain value. */
typedef struct et_dispatch_result {
    char source[4096];      /* DIR/NAME.cl or .cu: every kernel */
    char header[4096];      /* DIR/NAME.h: NAME_dispatch */
    et_backend_kind backend;
    int n_kernels;          /* tuned ones and the generic one */
    int n_tuned;            /* tuned for one size each */
    int n_open;             /* tuned with an open axis */
    char name[112];         /* the prefix used (o->name or the default) */
    int replaced;           /* files of another kernel or table were
                             * replaced (force) */
    char prefix[120];       /* the header's macro prefix: the name in upper
                             * case and '_' ("DISPATCH_XIK_KJ_TO_XIJ_F64_"),
                             * as a single export's */
} et_dispatch_result;

/*
 * A dispatch table for a kernel library: for the einsum at every size
 * shapes lists (a shape spec as et_shape_expand reads it: lists, ranges,
 * ties, open axes), the kernel the database knows for exactly those sizes
 * or with an open axis covering them (no fallback: only measured kernels),
 * all in one source DIR/NAME.cl (.cu) with NAME_generic, the untransformed
 * kernel with every size an argument, and a header DIR/NAME.h whose
 * static inline NAME_dispatch(sizes, &launch) picks, at run time, the
 * kernel tuned for exactly the sizes asked, else an open-axis kernel that
 * covers them, else NAME_generic, and gives its launch geometry and
 * scalar arguments (the header comment says how to launch). The header's
 * macros take the single export's prefix, NAME in upper case and '_'
 * (out->prefix: DISPATCH_XIK_KJ_TO_XIJ_F64_N_INDICES); its function and
 * type keep NAME (NAME_dispatch, NAME_launch); for a program that
 * includes one table it defines ET_DISPATCH(x) -> <PREFIX>x and
 * ET_DISPATCH_FN(x) -> NAME_x unless already defined. o->embed puts the
 * source into the header as <PREFIX>SOURCE, as for one kernel. Files in
 * the way are treated as et_best_kernel_export treats them (the same
 * table is rewritten, another kernel's or table's files are replaced only
 * with o->force, a file eintune did not write never). Errors as
 * et_best_kernel_export's; a listed size without a kernel is logged and
 * left to the generic kernel.
 */
ET_API et_status et_dispatch_export(const char *einsum, const char *shapes,
                                    const char *dtypes,
                                    const et_dispatch_options *o,
                                    et_dispatch_result *out, et_diag *diag);

/* ---- arrays in host memory and .npy files --------------------------------- */

#define ET_ARRAY_MAX_DIMS 32

/* A dense C-ordered array in host memory. */
typedef struct et_host_array {
    et_dtype dtype;
    int ndim;                        /* 0 for a scalar */
    int64_t dims[ET_ARRAY_MAX_DIMS];
    void *data;                      /* owned when the API allocated it:
                                      * freed with et_host_array_free */
} et_host_array;

/*
 * Reads a NumPy .npy file (format 1.0 to 3.0, dtypes <f2 <f4 <f8,
 * Fortran order transposed, big-endian swapped). out->data is allocated
 * here and freed with et_host_array_free. Errors: ET_ERR_INPUT
 * (ET_INPUT_FILE) for a file that is not a supported array, ET_ERR_IO when
 * it cannot be read, ET_ERR_NOMEM; diag->msg names the file.
 */
ET_API et_status et_npy_load(const char *path, et_host_array *out,
                             et_diag *diag);

/* Writes a as np.save would (format 1.0, little-endian, C order); the
 * file appears whole. ET_ERR_INPUT for an invalid array, ET_ERR_IO. */
ET_API et_status et_npy_save(const char *path, const et_host_array *a,
                             et_diag *diag);

/* Allocates out for operand k of p (k = -1: the output) with its dtype and
 * dims, zero-filled; freed with et_host_array_free. ET_ERR_NOMEM, or
 * ET_ERR_INPUT for k out of range. */
ET_API et_status et_host_array_init(const et_problem *p, int k,
                                    et_host_array *out);

/* Number of elements (1 for a scalar). */
ET_API int64_t et_host_array_elems(const et_host_array *a);

/* Frees a->data and sets it to NULL; a may be NULL. */
ET_API void et_host_array_free(et_host_array *a);

/* Checks an einsum's subscripts alone (no sizes) and gives its number of
 * input operands. ET_ERR_INPUT with diag->pos into the text. */
ET_API et_status et_einsum_count_operands(const char *einsum, int *n,
                                          et_diag *diag);

/* Checks an opt list's syntax ("LOCAL(i,8) UPCAST(j,4)"), without a
 * kernel: ET_ERR_INPUT (ET_INPUT_OPTS, diag->pos) when malformed. */
ET_API et_status et_opts_validate(const char *opts, et_diag *diag);

/* ---- running a kernel on host arrays -------------------------------------- */

/* Options of et_runner_open and et_run; the zero value means the
 * defaults. The runner keeps the pointers: the strings must outlive it. */
typedef struct et_run_options {
    size_t size;            /* sizeof(et_run_options), or 0: the 1.0 layout */
    const char *device;     /* NULL: the first OpenCL device */
    const char *db;         /* database for best and the peaks; NULL: the
                             * default path for best, and otherwise the
                             * peaks from the cache file (a session's
                             * runner uses the session's database) */
    const char *opts;       /* opts to apply; NULL or "": untransformed */
    int best;               /* run the best known kernel instead of opts
                             * (the database is opened before the device) */
    int verify;             /* et_run: check the output and verify */
    int time;               /* et_run: time the kernel */
    et_log_fn log;          /* log lines ("device ...", "best known: ...",
                             * "no roofline: ..."); NULL: silent */
    void *log_arg;
    int exact;              /* with best: no fallback to other sizes */
} et_run_options;

/* A kernel of one problem built on one device (opaque), run step by step:
 * et_runner_open, [et_runner_find_best], et_runner_build, et_runner_exec,
 * then any of et_runner_check_output, et_runner_verify, et_runner_time,
 * et_runner_roofline, et_runner_json. Not to be shared between threads;
 * freed with et_runner_free. */
typedef struct et_runner et_runner;

/* Where a runner runs and what. Plain value. */
typedef struct et_run_info {
    char device[256];       /* the device's name */
    char spec[64];          /* its spec ("opencl:0:0") */
    et_backend_kind backend;
    char driver[128];
    char db[4096];          /* the database opened ("" when none) */
    char opts[2048];        /* the kernel's opts ("" before build) */
    char kernel[160];       /* the kernel's name ("" before build) */
} et_run_info;

/* Verification figures (et_runner_check_output, et_runner_verify). */
typedef struct et_run_verification {
    int output_checked;      /* the output was checked on the caller's data */
    int output_ok;           /* every element within its rigorous bound */
    double output_max_norm_err;
    char output_reason[512]; /* the first element out of bound */
    int verified;            /* the statistical verification ran */
    et_outcome outcome;      /* ok or wrong_result */
    int trials;
    double max_norm_err;
    double p_value;          /* NaN without a baseline */
    char reason[1024];       /* why it failed, "" when ok */
    char summary[256];       /* "verified: 3 trials, ..." */
} et_run_verification;

/* Timing figures (et_runner_time). */
typedef struct et_run_timing {
    double time_s;          /* median device time */
    double ci95_s[2];       /* 95 % interval of the median */
    double cv;
    int runs;
    double gops;            /* GOps/s over all dtypes at the median */
    char summary[256];      /* "median 94.9 us [68.3, 110], cv ..." */
} et_run_timing;

/*
 * Opens the device for p (through an isolated worker) and, with o->best,
 * the database first. Logs "device NAME (SPEC)". Errors: the database's
 * (ET_INPUT_FILE), the device's (ET_INPUT_DEVICE for a bad spec),
 * ET_ERR_UNSUPPORTED for f64 on a device without fp64. p must outlive *out.
 */
ET_API ET_DEPRECATED et_status et_runner_open(const et_problem *p, const et_run_options *o,
                                et_runner **out, et_diag *diag);

/* The best kernel known for the runner's problem on its device (needs
 * o->best at open): ET_OK with *found 1 and info filled (both may be
 * NULL), or ET_ERR_NOT_FOUND with *found 0 and et_best_lookup's message.
 * Errors: mapping the stored opts. */
ET_API et_status et_runner_find_best(et_runner *r, et_best_info *info,
                                     int *found, et_diag *diag);

/* Builds the kernel: the best found, else o->opts. ET_ERR_INPUT /
 * ET_ERR_REFUSED (ET_INPUT_OPTS) for opts that do not parse or break a
 * rule, ET_ERR_BUILD with the build log, ET_ERR_INTERNAL. */
ET_API et_status et_runner_build(et_runner *r, et_diag *diag);

/* Uploads in[0..n-1] (dense arrays of the problem's operands), launches
 * the kernel and reads the output into out (et_problem_operand_bytes(p,
 * -1) bytes). ET_ERR_DEVICE / ET_ERR_LAUNCH with the driver's message. */
ET_API et_status et_runner_exec(et_runner *r, void *out, const void *const *in,
                                et_diag *diag);

/* Checks out against the extended-precision reference of in, element by
 * element within the rigorous bound: v's output_* fields. ET_OK whether
 * or not the check passes; ET_ERR_NOMEM / ET_ERR_INTERNAL when it cannot
 * run. */
ET_API et_status et_runner_check_output(et_runner *r, const void *const *in,
                                        const void *out, et_run_verification *v,
                                        et_diag *diag);

/* The statistical verification (3 input sets, one-sided test against the
 * untransformed kernel): v's other fields. ET_OK when it ran (see
 * v->outcome); errors when the baseline fails (diag->msg "the
 * untransformed kernel failed: ...") or the verification cannot run. */
ET_API et_status et_runner_verify(et_runner *r, et_run_verification *v,
                                  et_diag *diag);

/* Times the kernel with the protocol (two warm-ups, median and its 95 %
 * interval) on the buffers of et_runner_exec. */
ET_API et_status et_runner_time(et_runner *r, et_run_timing *t, et_diag *diag);

/*
 * After et_runner_time: the peaks (database, cache, or measured), the
 * roofline table written to table (may be NULL), and with plot (may be
 * NULL) the roofline chart (.svg or .png); *drawn (may be NULL) is 1 when
 * the roofline was computed and written. A roofline is a ceiling: when
 * the kernel's whole interval lies above it, the peaks are measured again
 * (each figure keeps the faster of the stored and the new one), logged as
 * a warning and noted in et_runner_json. No peaks or no roofline is
 * logged as a warning and is ET_OK with *drawn 0; a plot that cannot be
 * written is ET_ERR_INPUT / ET_ERR_IO with the reason.
 */
ET_API et_status et_runner_roofline(et_runner *r, FILE *table, const char *plot,
                                    int *drawn, et_diag *diag);

/* Fills *out. */
ET_API void et_runner_info(const et_runner *r, et_run_info *out);

/* `eintune run`'s JSON document (cJSON_Print's formatting) of what ran so
 * far: einsum, device, opts, kernel, output (the name given), verified,
 * time_s, ci95_s, cv, runs, gops, roofline_gops, roofline_fraction, and
 * roofline_note when the peaks were measured again because this kernel's
 * interval lay above the roof (et_runner_roofline). Freed with et_free;
 * NULL when out of memory. */
ET_API char *et_runner_json(const et_runner *r, const char *output);

ET_API void et_runner_free(et_runner *r);

/* The figures of et_run. Plain value. */
typedef struct et_run_result {
    char opts[2048];        /* the kernel's opts */
    char kernel[160];
    et_run_verification verify; /* with o->verify */
    int timed;
    et_run_timing timing;   /* with o->time */
} et_run_result;

/*
 * Runs p on a device in one call: the kernel of o->opts (or the best
 * known with o->best: ET_ERR_NOT_FOUND, et_best_lookup's message, when
 * none is known)
 * on the caller's host arrays in[0..n-1], the output into out (dense,
 * et_problem_operand_bytes(p, -1) bytes); with o->verify the output check
 * and the statistical verification, with o->time the timing. Returns
 * ET_OK when everything ran; a failed check is ET_OK with res->verify
 * saying so. res may be NULL.
 */
ET_API ET_DEPRECATED et_status et_run(const et_problem *p, const et_run_options *o, void *out,
                        const void *const *in, et_run_result *res,
                        et_diag *diag);

/* ---- kernels in the caller's own context ---------------------------------- */

/*
 * A tuned kernel built in the caller's own OpenCL context or CUDA context:
 * the caller owns the context, the queue or stream and every buffer;
 * eintune copies nothing and owns nothing but the program. Buffers are
 * passed in the kernel's argument order: the output, then the inputs in
 * operand order, each a dense C-ordered array of the problem's dtype.
 *
 * The OpenCL and CUDA types appear here under their struct tags (the same
 * types as cl_context, CUstream, ...), so this header needs neither
 * CL/cl.h nor cuda.h.
 *
 * Threads: a loaded kernel may be launched from several threads at once;
 * argument setting and enqueueing are serialized by a lock in the kernel
 * object (OpenCL's clSetKernelArg is not thread-safe on one cl_kernel).
 * Loading and freeing are not to be raced with launches of the same object.
 * Distinct loaded kernels are independent. Nothing here starts a worker
 * process: the build and the launches happen in the calling process, in
 * the caller's context.
 *
 * The device's database key is its backend, name and driver version, as
 * `eintune tune` recorded them; the kernel is rendered for the device's own
 * limits, so the opts reproduce the tuned kernel.
 */
typedef struct et_loaded_kernel et_loaded_kernel;

struct _cl_context;
struct _cl_device_id;
struct _cl_command_queue;
struct _cl_mem;
struct _cl_event;
struct CUstream_st;

/* Options of the loaders; the zero value means the defaults. */
typedef struct et_load_options {
    size_t size;            /* sizeof(et_load_options), or 0: the 1.0 layout */
    const char *db;         /* database; NULL: the default path */
    const char *opts;       /* use these opts instead of the best known
                             * ("" = the untransformed kernel); NULL: the
                             * database's best for this device (an entry
                             * with an open axis covers every size of
                             * it; then the fallback to other sizes) */
    int exact;              /* no fallback to other sizes */
    int no_verify;          /* build the kernel without checking it on the
                             * device first. By default a kernel that is
                             * not byte-identical to one the database's
                             * trial verified on this device (opts given
                             * here, other sizes' opts, an open entry at
                             * another size, a renamed einsum) is run in
                             * the caller's context on inputs of its own
                             * and checked against the extended-precision
                             * reference before it is returned: at the
                             * problem's sizes, and with an open axis at 1,
                             * 2, a prime below its tune-at size, that size
                             * and the problem's (ET_ERR_BUILD when it
                             * fails) */
} et_load_options;

/*
 * Finds the best kernel known for p on the caller's OpenCL device dev
 * (matched to the database's device by backend, name and driver version),
 * renders it for dev's limits and builds it in ctx. ET_ERR_NOT_FOUND with
 * et_best_lookup's message when the database has none for this device
 * and o->opts is NULL; ET_ERR_BUILD with the build log; ET_ERR_REFUSED
 * when o->opts breaks a rule. *out is freed with et_loaded_kernel_free.
 */
ET_API ET_DEPRECATED et_status et_cl_kernel_load(const et_problem *p, struct _cl_context *ctx,
                                   struct _cl_device_id *dev,
                                   const et_load_options *o,
                                   et_loaded_kernel **out, et_diag *diag);

/*
 * Enqueues the kernel on the caller's queue q (asynchronous): out and
 * in[0..n_inputs-1] are the caller's cl_mem buffers. A kernel whose opts
 * include SPLIT needs its output zeroed: that fill is enqueued on q first
 * (et_loaded_kernel_zero_bytes bytes), and the launch waits for it.
 * sizes: the size of each of the problem's indices in et_problem_index
 * order; NULL = the problem's sizes. A kernel with an open axis (the
 * problem's own x=*, or an entry tuned with one that covers the
 * problem's size) takes any size >= 1 there, and the geometry and the
 * bytes zeroed follow it; every other size is compiled in, and a size
 * other than the problem's is ET_ERR_UNSUPPORTED. When event is non-NULL
 * it gets the launch's event (the caller releases it; NULL when nothing
 * was enqueued).
 *
 * Checked before anything is enqueued, so that a refused launch writes
 * nothing: q must be a queue of the context the kernel was loaded into,
 * on its device, and every buffer a buffer of that context (else
 * ET_ERR_INPUT in words: "the command queue q belongs to another OpenCL
 * context ..."); each buffer (CL_MEM_SIZE) must hold the bytes its
 * operand spans at the launch's sizes, the output also the bytes SPLIT
 * zeroes: a shorter one is ET_ERR_INPUT (ET_INPUT_OPTION) naming the
 * operand, its size and the size needed ("the output (out) has 1020 bytes
 * but the kernel writes 1024 (256 f32 elements at these sizes)", "input 1
 * (in[1]) ..."). Larger buffers are fine. ET_ERR_INPUT for a wrong number
 * of buffers or a NULL one, ET_ERR_LAUNCH when an enqueue fails.
 */
ET_API et_status et_cl_kernel_launch(et_loaded_kernel *k,
                                     struct _cl_command_queue *q,
                                     struct _cl_mem *out,
                                     struct _cl_mem *const *in, int n_inputs,
                                     const int64_t *sizes,
                                     struct _cl_event **event, et_diag *diag);

/*
 * As et_cl_kernel_load for CUDA device `device` (a CUdevice ordinal); the
 * module is loaded into the calling thread's current context, which the
 * caller made (cuCtxSetCurrent / cuDevicePrimaryCtxRetain). The source is
 * compiled with NVRTC for the device's compute capability. ET_ERR_DEVICE
 * when there is no CUDA driver, no such device, no current context or a
 * current context on another device; ET_ERR_BUILD with NVRTC's log.
 * The driver is libcuda.so.1, or $ET_LIBCUDA when set.
 */
ET_API ET_DEPRECATED et_status et_cu_kernel_load(const et_problem *p, int device,
                                   const et_load_options *o,
                                   et_loaded_kernel **out, et_diag *diag);

/*
 * Launches on the caller's stream (asynchronous; NULL = the default
 * stream): out and in[] are CUdeviceptr values. SPLIT's zeroing is a
 * cuMemsetD8Async on the same stream. sizes as for et_cl_kernel_launch,
 * and the same checks before anything is queued: the calling thread's
 * current context must be the one the kernel was loaded into, and each
 * pointer must have the bytes its operand needs from where it points to
 * the end of its allocation (cuMemGetAddressRange); a pointer the context
 * did not allocate, a null one or a short one is ET_ERR_INPUT naming it.
 */
ET_API et_status et_cu_kernel_launch(et_loaded_kernel *k,
                                     struct CUstream_st *stream,
                                     unsigned long long out,
                                     const unsigned long long *in, int n_inputs,
                                     const int64_t *sizes, et_diag *diag);

/*
 * A batched einsum's kernel (et_problem_set_batch) takes one buffer per
 * row of the output and of each rowed operand: args[0..n_args-1] in the
 * order et_loaded_kernel_arg gives (the output's rows, then each operand,
 * a shared one once, a rowed one row by row; for any other kernel the
 * output, then the inputs). Each buffer is checked as above against its
 * own array: a row's holds that row alone. et_cl/cu_kernel_launch refuse
 * a batched kernel, naming these.
 */
ET_API et_status et_cl_kernel_launch_args(et_loaded_kernel *k,
                                          struct _cl_command_queue *q,
                                          struct _cl_mem *const *args,
                                          int n_args, const int64_t *sizes,
                                          struct _cl_event **event,
                                          et_diag *diag);
ET_API et_status et_cu_kernel_launch_args(et_loaded_kernel *k,
                                          struct CUstream_st *stream,
                                          const unsigned long long *args,
                                          int n_args, const int64_t *sizes,
                                          et_diag *diag);
/* The kernel's buffers (1 + operands, or a batched einsum's count), and
 * buffer a's operand (-1: the output) and row (-1: not a row); 0, or -1
 * for a out of range. */
ET_API int et_loaded_kernel_n_args(const et_loaded_kernel *k);
ET_API int et_loaded_kernel_arg(const et_loaded_kernel *k, int a,
                                int *operand, int *row);

/* The loaded kernel's opts ("" untransformed) and function name ("" for
 * a NULL k). */
ET_API const char *et_loaded_kernel_opts(const et_loaded_kernel *k);
ET_API const char *et_loaded_kernel_name(const et_loaded_kernel *k);
/* Bytes at the start of the output that the launch zeroes (SPLIT) at the
 * problem's sizes, 0 when none. */
ET_API size_t et_loaded_kernel_zero_bytes(const et_loaded_kernel *k);
/* Releases the program (the caller's context and buffers are untouched);
 * for CUDA, call it with the kernel's context current (cuModuleUnload).
 * NULL is allowed. */
ET_API void et_loaded_kernel_free(et_loaded_kernel *k);

/* ---- the tuning database -------------------------------------------------- */

/* An open tuning database (opaque); closed with et_database_close. */
typedef struct et_database et_database;

/* Opens (creating when missing) the database at path (NULL: the default,
 * $XDG_CACHE_HOME/eintune/tuning.db). ET_ERR_INPUT (ET_INPUT_FILE) for a
 * file that is not an eintune database or is from a newer eintune,
 * ET_ERR_IO otherwise. */
ET_API et_status et_database_open(const char *path, et_database **out,
                                  et_diag *diag);
ET_API void et_database_close(et_database *db);
/* The file's path; owned by db. */
ET_API const char *et_database_path(const et_database *db);

/* What the database holds. Plain value. */
typedef struct et_database_stats {
    int schema_version;
    int renderer_version;   /* this eintune's kernel renderer version */
    int64_t file_bytes;     /* the file and its -wal */
    int64_t devices, einsums, spaces, trials;
    int64_t by_outcome[ET_OUTCOME_COUNT];
    int64_t old_renderer;   /* trials of another renderer version */
    int64_t oldest, newest; /* Unix seconds of the trials; 0 if none */
    int integrity_ok;       /* PRAGMA integrity_check passed */
    char integrity[512];    /* "ok" or the first problem */
} et_database_stats;

/* Fills *out; a failed integrity check is ET_OK with integrity_ok 0. */
ET_API et_status et_database_stats_get(et_database *db, et_database_stats *out,
                                       et_diag *diag);

/* Which trials et_database_list gives; the zero value means all. */
typedef struct et_database_filter {
    size_t size;            /* sizeof(et_database_filter), or 0: the 1.0 layout */
    const et_problem *problem; /* only this einsum with its sizes and
                                * dtypes, or a renamed equivalent; NULL:
                                * every einsum */
    unsigned outcome_mask;     /* bit 1 << et_outcome; 0: every outcome */
    int64_t limit;             /* at most this many rows; 0: all */
} et_database_filter;

/* One trial with the names of what it refers to; the strings live until
 * the callback returns. */
typedef struct et_database_row {
    int64_t id;
    const char *einsum;     /* the einsum as first recorded */
    const char *sizes;      /* "i=4,j=5,k=6" in its names */
    const char *dtypes;     /* "f32,f32->f32" */
    const char *canonical;  /* the canonical form */
    const char *einsum_text; /* the einsum the opts name (may be renamed) */
    const char *device;     /* device name, backend and driver */
    const char *backend;
    const char *driver;
    const char *space;      /* "" without a space */
    const char *params;     /* the space point as JSON, "" when none */
    const char *opts;
    et_outcome outcome;
    const char *reason;
    double time_s;          /* median; 0 when not timed */
    double ci95_s[2];
    double cv;
    int runs;
    double gops;            /* all ops booked to the accumulation dtype */
    int verify_trials;      /* 0 when not verified */
    double max_norm_err;
    double p_value;
    double compile_s;
    const char *kernel;
    const char *source_hash;
    int renderer_version;
    int64_t recorded;       /* Unix seconds */
    const char *eintune_version;
} et_database_row;

/* Called once per row; nonzero stops the listing. */
typedef int (*et_database_row_fn)(void *arg, const et_database_row *row);

/* Calls fn for the trials f selects (f may be NULL): per einsum and
 * device, ok trials fastest first, then the others newest first. */
ET_API et_status et_database_list(et_database *db, const et_database_filter *f,
                                  et_database_row_fn fn, void *arg,
                                  et_diag *diag);

/* Criteria of et_database_prune: a trial is deleted when it meets every
 * criterion given. */
typedef struct et_database_prune_options {
    size_t size;            /* sizeof(et_database_prune_options), or 0: the 1.0 layout */
    int failed;             /* outcome other than ok */
    double older_than_days; /* > 0: recorded more than this long ago */
    int renderer_old;       /* made by another renderer version */
    int dry_run;            /* count only */
} et_database_prune_options;

/* Deletes in one transaction; *deleted (may be NULL) gets the count (or
 * what would be deleted with dry_run). ET_ERR_INPUT (ET_INPUT_OPTION)
 * when no criterion is given. */
ET_API et_status et_database_prune(et_database *db,
                                   const et_database_prune_options *o,
                                   int64_t *deleted, et_diag *diag);

/* What et_database_merge did to one table of the database. */
typedef struct et_database_merge_table {
    char name[64];          /* "devices", "einsums", "spaces", "trials"... */
    int64_t added;          /* rows new to the output */
    int64_t same;           /* already there (the output's row kept, its
                             * empty columns filled) */
    int64_t replaced;       /* already there, replaced by the input's
                             * newer row (tables with created_at) */
    int64_t skipped;        /* referring to rows the input lacks */
} et_database_merge_table;

typedef struct et_database_merge_stats {
    int n_tables;
    et_database_merge_table table[32];
} et_database_merge_stats;

/*
 * Merges the database file `in` into db in one transaction: rows are
 * matched by their key (a device by backend, name and driver; an einsum by
 * its canonical form; a trial by its trial key), so trials shared by both
 * files are not duplicated and per-device results stay per device; every
 * other row is added, with its references renumbered. Tables and columns
 * are read from the files' schemas, so those of later schema versions
 * come through. *st (may be NULL) gets the counts per table.
 * ET_ERR_INPUT (ET_INPUT_FILE) for an input that is not an eintune
 * database, is from a newer eintune, or is db's own file; ET_ERR_IO
 * otherwise. A failed merge changes nothing.
 */
ET_API et_status et_database_merge(et_database *db, const char *in,
                                   et_database_merge_stats *st, et_diag *diag);

/* ---- sessions ------------------------------------------------------------- */

/*
 * A session opens a device, a database and a log once, for every call made
 * through it: tune, best (lookup, the best kernel, and through it export),
 * load and run. The calls above that take a device spec and a database
 * path in their options open both for each call and close them after it;
 * they stay, as the same code with their own session for one call. In a
 * call through a session the options' device and db are not read (the
 * session's are used), and a NULL log means the session's log. A session
 * is used by one thread at a time (its device is one worker process).
 */
typedef struct et_session et_session; /* opaque */

/* Options of et_session_open; the zero value means the defaults. */
typedef struct et_session_options {
    size_t size;            /* sizeof(et_session_options), or 0: the 1.0
                             * layout */
    const char *device;     /* "opencl:0", "cuda:0", ...; NULL: the first
                             * OpenCL device */
    const char *db;         /* database path; NULL: the default path */
    et_log_fn log;          /* log lines of every call; NULL: silent */
    void *log_arg;
} et_session_options;

/* Opens the database (created when missing), then the device (in its own
 * worker process). ET_ERR_INPUT for a file that is not an eintune
 * database (ET_INPUT_FILE) or an unknown device spec (ET_INPUT_DEVICE). */
ET_API et_status et_session_open(const et_session_options *o,
                                 et_session **out, et_diag *diag);
ET_API void et_session_close(et_session *s);
/* The device's name, the database's path ("" for NULL). */
ET_API const char *et_session_device_name(const et_session *s);
ET_API const char *et_session_db_path(const et_session *s);

/* et_tune_run_full on the session's device and database (never spread
 * over the ranks of an MPI job: a session is one device). */
ET_API et_status et_session_tune(et_session *s, const et_problem *p,
                                 const et_tune_options *o,
                                 et_tune_report **out, et_diag *diag);
/* et_best_lookup, et_best_kernel_find (then et_best_kernel_export writes
 * the kernel for a library), et_runner_open, et_run, et_cl_kernel_load
 * and et_cu_kernel_load through the session. */
ET_API et_status et_session_best_lookup(et_session *s, const et_problem *p,
                                        et_best_info *out, int *found,
                                        et_diag *diag);
ET_API et_status et_session_best_kernel_find(et_session *s,
                                             const et_problem *p,
                                             const et_best_options *o,
                                             et_best_kernel **out,
                                             et_diag *diag);
ET_API et_status et_session_runner_open(et_session *s, const et_problem *p,
                                        const et_run_options *o,
                                        et_runner **out, et_diag *diag);
ET_API et_status et_session_run(et_session *s, const et_problem *p,
                                const et_run_options *o, void *out,
                                const void *const *in, et_run_result *res,
                                et_diag *diag);
ET_API et_status et_session_cl_kernel_load(et_session *s, const et_problem *p,
                                           struct _cl_context *ctx,
                                           struct _cl_device_id *dev,
                                           const et_load_options *o,
                                           et_loaded_kernel **out,
                                           et_diag *diag);
ET_API et_status et_session_cu_kernel_load(et_session *s, const et_problem *p,
                                           int device,
                                           const et_load_options *o,
                                           et_loaded_kernel **out,
                                           et_diag *diag);
/* et_campaign_run on the session's device and database, in this process
 * (never over the ranks of an MPI job). */
ET_API et_status et_session_campaign_run(et_session *s, const et_campaign *c,
                                         const et_campaign_options *o,
                                         et_campaign_report **out,
                                         et_diag *diag);

#ifdef __cplusplus
}
#endif
#endif /* EINTUNE_H */
