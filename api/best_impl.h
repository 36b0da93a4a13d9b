/*
 * best_impl.h - internal pieces shared by api/best.c, api/export.c,
 * api/dispatch.c and api/run.c: the best-kernel object behind
 * et_best_kernel, the log helper of the options' et_log_fn, and the
 * export's rules for names and files in the way. Nothing outside api/
 * includes it.
 */
#ifndef ET_API_BEST_IMPL_H
#define ET_API_BEST_IMPL_H

#include "api/api_impl.h"

#include "base/sbuf.h"

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

/* Sends a printf-formatted line to log (may be NULL) at level lvl. */
void api_log(et_log_fn log, void *arg, et_log_level lvl, const char *fmt,
             ...) __attribute__((format(printf, 4, 5)));

/* The name of bk's kernel rendered in the asker's names for the device's
 * backend into name (cap bytes); -1 when it cannot be rendered. */
int api_best_kernel_name(const et_best_kernel *bk, char *name, size_t cap);

/* Export helpers (export.c), shared with the dispatch table (dispatch.c).
 * mkdir -p; text written to path through a temporary file and a rename
 * (0, or -1 with errno). */
int api_make_dirs(const char *path);
int api_write_atomic(const char *path, const char *text);

/* What a file in the way of an export holds. */
typedef enum api_file_state {
    API_FILE_ABSENT = 0,
    API_FILE_SAME,      /* eintune's, with what is about to be written */
    API_FILE_OTHER,     /* eintune's, another kernel or table */
    API_FILE_FOREIGN    /* not written by eintune export (or unreadable) */
} api_file_state;

/* The source file at path against the text to write (an eintune source
 * starts "// eintune "), and the header at path against its first line,
 * mark (an eintune header starts with "/" "* eintune "; mark carries a
 * hash of the source, api_text_hash). */
api_file_state api_source_state(const char *path, const char *source);
api_file_state api_header_state(const char *path, const char *mark);
unsigned long long api_text_hash(const char *s);
/* text as a C string literal (quoted pieces, one per line of text, joined
 * by backslash-newlines: a macro's body) appended to b. */
void api_c_string(et_sbuf *b, const char *text);
/* hdr (freed) with the source embedded: PREFIX_SOURCE_BYTES and
 * PREFIX_SOURCE, the source as a C string, before the include guard's
 * closing #endif; src_file names the file it equals. NULL when out of
 * memory or hdr has no guard. */
char *api_header_embed(char *hdr, const char *prefix, const char *source,
                       const char *src_file);
/* The macro prefix of an exported header (a kernel's or a dispatch
 * table's): name in upper case and '_' ("r_16_f32" -> "R_16_F32_"). */
void api_macro_prefix(const char *name, char *buf, size_t cap);
/* The rule for files in the way: paths[0] the source, paths[1] the
 * header. A foreign file is never replaced, another eintune file only
 * with force; ET_ERR_INPUT (ET_INPUT_FILE, diag->file) saying which and
 * why, else ET_OK. */
et_status api_files_check(const char *const paths[2],
                          const api_file_state fs[2], int force,
                          et_diag *diag);
/* 1 when name occurs in source exactly once as a whole identifier (the
 * kernel's own name), else 0: a clash with the kernel's code. */
int api_name_used_once(const char *source, const char *name);
/* The dtypes as export's default names end: "_f32" when the operands
 * and the output share one, else "_f16_to_f32" (one input dtype) or
 * "_f32_f64_to_f64". */
void api_dtype_suffix(const et_einsum *e, char *buf, size_t cap);

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
