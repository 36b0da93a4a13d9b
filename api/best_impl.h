/*
 * best_impl.h - internal pieces shared by api/best.c, api/export.c and
 * api/run.c: the best-kernel object behind et_best_kernel and the log
 * helper of the options' et_log_fn. Nothing outside api/ includes it.
 */
#ifndef ET_API_BEST_IMPL_H
#define ET_API_BEST_IMPL_H

#include "api/api_impl.h"

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
};

/* Sends a printf-formatted line to log (may be NULL) at level lvl. */
void api_log(et_log_fn log, void *arg, et_log_level lvl, const char *fmt,
             ...) __attribute__((format(printf, 4, 5)));

/* The name of bk's kernel rendered in the asker's names for the device's
 * backend into name (cap bytes); -1 when it cannot be rendered. */
int api_best_kernel_name(const et_best_kernel *bk, char *name, size_t cap);

/* Export helpers (export.c): mkdir -p; 1 when path exists and does not
 * start with mark (a file eintune did not write), else 0; text written
 * to path through a temporary file and a rename (0, or -1 with errno). */
int api_make_dirs(const char *path);
int api_foreign_file(const char *path, const char *mark);
int api_write_atomic(const char *path, const char *text);

/* A copy of cJSON_Print's text that et_free releases (cJSON's allocator
 * may differ from malloc); text is freed. NULL for NULL or no memory. */
char *api_json_own(char *text);

#endif /* ET_API_BEST_IMPL_H */
