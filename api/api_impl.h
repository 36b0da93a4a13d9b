/*
 * api_impl.h - internal glue of the public API (include/eintune.h) shared
 * by the files of api/: the problem's layout, turning the layers' errors
 * into et_diag, and the best-kernel lookup the CLI's `best`, `export`,
 * `run --best` and the loaders of kernels in the caller's context share.
 * Not installed; nothing outside api/ includes it.
 */
#ifndef ET_API_IMPL_H
#define ET_API_IMPL_H

#include "eintune.h"

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "roofline/roofline.h"
#include "tune/best.h"
#include "tune/tune.h"

#include <stdbool.h>

struct et_problem {
    et_einsum e;
    et_rows rows; /* a batched problem's array names (n_rows 0: none) */
};

/* Clears d (when non-NULL) for a new call: pos -1, status ET_OK. */
void api_diag_clear(et_diag *d);

/* Fills d (may be NULL) with status st, input in and a printf message;
 * returns st. */
et_status api_fail(et_diag *d, et_status st, et_input in, const char *fmt,
                   ...) __attribute__((format(printf, 4, 5)));

/* A layer's status st whose parser filled d's message and position: d
 * says so (status st, input in) unless st is ET_OK; returns st. */
et_status api_input_status(et_diag *d, et_status st, et_input in);

/* Copies a layer's et_error into d with status st (input ET_INPUT_NONE,
 * or ET_INPUT_DEVICE when st is ET_ERR_INPUT from a device call); returns
 * st. */
et_status api_fail_err(et_diag *d, et_status st, et_input in,
                       const et_error *err);

/*
 * Refuses a NULL argument of the public function fn: ET_ERR_INPUT
 * (ET_INPUT_OPTION, an argument of the call) with "fn: argument 'arg' is
 * NULL", arg named as include/eintune.h names it. Returns ET_ERR_INPUT.
 */
et_status api_null(et_diag *d, const char *fn, const char *arg);

/* In a public function whose diag may be NULL: points diag at one of its
 * own, so that the function reads the statuses it set. */
#define API_DIAG(diag)                                                      \
    et_diag api_diag_local_;                                                \
    if (!(diag))                                                            \
    (diag) = &api_diag_local_

/* In a public function: returns api_null(diag, __func__, name) when ptr
 * is NULL. */
#define API_NEED(diag, ptr, name)                                           \
    do {                                                                    \
        if (!(ptr))                                                         \
            return api_null((diag), __func__, (name));                      \
    } while (0)

/*
 * The one answer for "no verified kernel known for this problem on this
 * device" (et_best_lookup, et_best_kernel_find, et_runner_find_best,
 * et_run, the loaders of kernels in the caller's context, and through
 * them the command): ET_ERR_NOT_FOUND with "no verified kernel known for
 * E at SIZES on DEVICE (BACKEND, driver D) in DB: tune it on this device
 * first" (with exact: no fallback to other sizes was tried). Returns
 * ET_ERR_NOT_FOUND.
 */
et_status api_no_kernel(et_diag *d, const et_einsum *e,
                        const et_device_info *info, const char *db,
                        bool exact);

/*
 * The caller's options struct as this library's (eintune.h, "Growing the
 * ABI"): local (cur bytes) gets the first n bytes of given, n its size
 * field (0: base, the 1.0 layout), and zeros after them, the defaults of
 * fields the caller's header did not have; given NULL gives all zeros.
 * A caller's struct larger than cur (built against a newer header) is
 * accepted when the bytes this library does not know are all zero, else
 * refused: ET_ERR_UNSUPPORTED naming fn. Returns ET_OK or that status.
 */
et_status api_options_copy(void *local, size_t cur, const void *given,
                           size_t n, size_t base, const char *fn,
                           et_diag *d);

/* In a public function taking `const T *name`: declares T name_v, a
 * full-size copy (api_options_copy), and points name at it, so that the
 * rest of the function reads name as before and never sees NULL. */
#define API_OPTIONS(T, name, diag) API_OPTIONS_V10(T, name, diag, sizeof(T))

/* As API_OPTIONS for a struct that has grown since 1.0: v10 is its 1.0
 * layout's size (the offset of its first field added since), what a
 * caller's size 0 stands for. */
#define API_OPTIONS_V10(T, name, diag, v10)                                 \
    T name##_v;                                                             \
    do {                                                                    \
        et_status api_st_ = api_options_copy(&name##_v, sizeof name##_v,    \
                                             (name), (name) ? (name)->size  \
                                                            : 0,            \
                                             (v10), __func__, (diag));      \
        if (api_st_ != ET_OK)                                               \
            return api_st_;                                                 \
        (name) = &name##_v;                                                 \
    } while (0)

/* Formats a log line and hands it to log (a no-op when log is NULL). */
void api_logf(et_log_fn log, void *arg, et_log_level lvl, const char *fmt,
              ...) __attribute__((format(printf, 4, 5)));

/*
 * The fastest verified kernel known for e on the device info describes,
 * from session s's database, or (s NULL) database db_path (NULL: the
 * default). *found false when none (out untouched). The database's path
 * goes to db_used (may be NULL) for messages.
 */
et_status api_best_find(et_session *s, const et_einsum *e,
                        const et_device_info *info,
                        const char *db_path, bool exact, et_best *out,
                        bool *found,
                        char *db_used, size_t db_used_cap, et_diag *diag);

/* The public view of a lookup's answer. */
void api_best_info_fill(const et_best *b, const et_device_info *info,
                        et_best_info *out);

/* Whether the latest final race chose b's trial (et_db_race_pick_of;
 * never for a fallback, whose times are another size's), its figures in
 * *pick; a database error counts as no race. */
bool api_best_race_lookup(et_db *db, const et_best *b, et_db_race_pick *pick);
/* out's race fields (raced, race_time_s, race_ci95_s, race_rounds) from
 * pick, or cleared for NULL. */
void api_best_info_race(const et_db_race_pick *pick, et_best_info *out);

/* Adds the problem's "sizes" ({"i": 512, ...} in the einsum's index
 * names, "..." dimensions as "_0", "_1"..., an open axis "*") and
 * "dtypes" ({"inputs": ["f64", ...], "output": "f64"}) to the JSON object
 * doc (a cJSON *). */
void api_json_problem(void *doc, const et_einsum *e);

/* A chart's title line for the problem: "xik,kj->xij   x=64 i=16 k=16
 * j=16   f32,f32 -> f32", an open axis "x=* (at 4096)" (truncated to
 * cap). */
void api_problem_title(const et_einsum *e, char *buf, size_t cap);

/* The dtypes whose compute roofs apply to e (bit 1 << dtype): those its
 * ops are booked to (f16 data are computed in f32), else the output's. */
unsigned api_roof_dtypes(const et_einsum *e);

/*
 * A roofline is a ceiling: a kernel whose whole interval (high_s) lies
 * below roof->time_s makes the peaks suspect, so they are measured again
 * on dev (each figure keeping the faster of the stored and the new one,
 * stored in db), and pk and roof are recomputed for e. `what` names the
 * kernel in the note ("the best", "this kernel"); the note (the warning
 * logged, and kept in note) says what happened. Returns 1 when it
 * measured again (note set), 0 when there was nothing to do (within the
 * roof, or peaks from an override file, the user's own).
 */
int api_roof_again(et_device *dev, et_db *db, const et_einsum *e,
                   double median_s, double high_s, et_peaks *pk,
                   et_roofline *roof, const char *what, char *note,
                   size_t cap, et_log_fn log, void *log_arg);

/* How a tuning run is made (et_tune_run_full's defaults: roofline on,
 * scale-out when launched, its own device and database). */
typedef struct api_tune_env {
    bool roofline;            /* look up the device's peaks */
    bool no_scale;            /* never join an MPI job (a campaign's rank
                               * tuning a problem on its own) */
    et_device *dev;           /* an open device to use (kept open); NULL:
                               * open o->device */
    const et_tune_store *store; /* the trials' database elsewhere (o->db is
                                 * not opened); NULL: db, else o->db */
    et_db *db;                /* an open database to use (kept open);
                               * NULL: open o->db */
} api_tune_env;

/* The database a call uses: session s's (*own false), else the one at
 * path (NULL: the default) opened for the call (*own true; close it with
 * et_db_close). Fills d on failure. */
et_status api_session_db(et_session *s, const char *path, et_db **db,
                         bool *own, et_diag *d);

/* The public functions' internal forms, taking a session (NULL: open
 * what the options name, as the path-taking functions do). */
et_status api_best_lookup(et_session *s, const et_problem *p,
                          const char *device, const char *db,
                          et_best_info *out, int *found, et_diag *diag);
et_status api_best_kernel_find(et_session *s, const et_problem *p,
                               const et_best_options *o,
                               et_best_kernel **out, et_diag *diag);
et_status api_runner_open(et_session *s, const et_problem *p,
                          const et_run_options *o, et_runner **out,
                          et_diag *diag);
et_status api_run(et_session *s, const et_problem *p,
                  const et_run_options *o, void *out,
                  const void *const *in, et_run_result *res, et_diag *diag);
et_status api_cl_kernel_load(et_session *s, const et_problem *p,
                             struct _cl_context *ctx,
                             struct _cl_device_id *dev,
                             const et_load_options *o,
                             et_loaded_kernel **out, et_diag *diag);
et_status api_cu_kernel_load(et_session *s, const et_problem *p, int device,
                             const et_load_options *o,
                             et_loaded_kernel **out, et_diag *diag);
et_status api_campaign_run(et_session *s, const et_campaign *c,
                           const et_campaign_options *o,
                           et_campaign_report **out, et_diag *diag);

/*
 * A session (et_session_*): the device, the database and the log opened
 * once for every call made through it. The calls that take paths open
 * their own for the call and are otherwise the same code: each public
 * function has an internal form taking a session, NULL for its own.
 */
struct et_session {
    et_device *dev;           /* isolated: its own worker process */
    et_db *db;
    char device[256];         /* the spec it was opened with ("" first) */
    et_log_fn log;
    void *log_arg;
};

/* et_tune_run_full with env. */
et_status api_tune_run(const et_problem *p, const et_tune_options *o,
                       const api_tune_env *env, et_tune_report **out,
                       et_diag *diag);

#endif /* ET_API_IMPL_H */
