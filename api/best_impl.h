/*
 * best_impl.h - internal pieces shared by api/best.c, api/export.c,
 * api/dispatch.c and api/run.c: the best-kernel object behind
 * et_best_kernel, the log helper of the options' et_log_fn, and what
 * the two exports share (export/ writes their files). Nothing outside
 * api/ includes it.
 */
#ifndef ET_API_BEST_IMPL_H
#define ET_API_BEST_IMPL_H

#include "api/api_impl.h"

#include "base/sbuf.h"
#include "export/export.h"

#include "roofline/peaks.h"
#include "roofline/roofline.h"

/* The answer of et_best_kernel_find. */
struct et_best_kernel {
    et_einsum e;               /* the asker's problem */
    et_device_info info;       /* the device it was looked up for */
    et_best best;              /* the stored trial, opts in e's names */
    char db[4096];             /* the database's path */
    int have_roof;             /* roof computed from the stored peaks */
    et_roofline roof;
    char kernel[160];          /* rendered name in e's names ("" unknown) */
    bool raced;                /* the latest final race chose it: race */
    et_db_race_pick race;
};

/* Sends a printf-formatted line to log (may be NULL) at level lvl:
 * api_logf (api_impl.h), under the name these files call it by. */
#define api_log api_logf

/* The name of bk's kernel rendered in the asker's names for the device's
 * backend into name (cap bytes); -1 when it cannot be rendered. */
int api_best_kernel_name(const et_best_kernel *bk, char *name, size_t cap);

/* Shared by the exports (export.c, dispatch.c): export/'s error into
 * diag (its message, the input it is about, the position in a name, the
 * file in the way); returns st. */
et_status api_export_fail(et_diag *diag, et_status st,
                          const et_export_error *xe);
/* The output directory (needed, at most 3000 bytes) and the backend asked
 * for (NULL, "opencl" or "cuda"): ET_ERR_INPUT (ET_INPUT_OPTION) when
 * wrong. */
et_status api_export_dir_check(const char *dir, et_diag *diag);
et_status api_export_backend_check(const char *backend, et_diag *diag);
/* The backend asked for, dflt when NULL. */
et_backend_kind api_export_backend(const char *backend, et_backend_kind dflt);
/* text as a C string literal appended to b (et_export_c_string). */
static inline void api_c_string(et_sbuf *b, const char *text)
{
    et_export_c_string(b, text);
}

/*
 * The check every kernel handed out passes (tune/deliver.h): kernel k,
 * with best's opts applied, is verified on the device info describes
 * (opened in a worker for the check, with its own backend: a kernel
 * rendered for another backend is checked as the same kernel in the
 * device's dialect) at its own sizes, or with an open axis at 1, 2, a
 * prime below the trial's tune-at size, that size and extra[0..n_extra-1].
 * line gets "verified on DEVICE at x=1, 2, 13, 256: max normalized error
 * 0.41 (limit 1)" (cap bytes). Returns ET_OK when it passed; ET_ERR_BUILD
 * with the failure in diag when it did not; the device's status when it
 * could not be opened.
 */
et_status api_deliver_verify(const et_device_info *info, const et_kernel *k,
                             const et_best *best, const int64_t *extra,
                             int n_extra, char *line, size_t cap,
                             et_diag *diag);

/* A copy of cJSON_Print's text that et_free releases (cJSON's allocator
 * may differ from malloc); text is freed. NULL for NULL or no memory. */
char *api_json_own(char *text);

#endif /* ET_API_BEST_IMPL_H */
