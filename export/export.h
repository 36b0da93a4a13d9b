/*
 * export.h - owns the files eintune writes for a program to embed: one
 * tuned kernel (its source and a C header describing how to launch it)
 * and a dispatch table (several tuned kernels of one einsum and the
 * generic kernel in one source, and a header whose dispatch function picks
 * one by the sizes at run time).
 *
 * Generation and writing only. The kernels come from the caller, already
 * looked up (tune/best.h); the caller verifies them on the device
 * (tune/deliver.h) between rendering and writing, and turns the errors
 * into its own diagnostics. Nothing here opens a device or a database.
 *
 * Names: an export name is a C identifier of at most 100 characters,
 * neither reserved nor a keyword or type of C or OpenCL C
 * (et_export_name_check), and used by the kernel's code nowhere but as
 * its own name. A header's macros are prefixed with the name in upper case
 * and '_' (et_export_macro_prefix), so headers of several kernels can be
 * included in one file.
 *
 * Files in the way: a file eintune did not write (its first line lacks the
 * marker) is never overwritten; one it wrote for another kernel or table
 * is replaced only when forced; one that holds the very same kernel or
 * table is rewritten. The header's first line names the kernel or table,
 * its backend and a hash of its source, which tells them apart. Both files
 * are checked before either is written, and each is written under a
 * temporary name in the directory and renamed, so a reader never sees
 * half a file. The directory is created with its parents.
 *
 * Ownership: et_export_kernel and et_export_entry hold a rendering (and
 * the kernel) until their _free; everything else is a plain value or
 * borrows the caller's strings for the length of a call. No global state;
 * distinct objects are independent.
 */
#ifndef ET_EXPORT_EXPORT_H
#define ET_EXPORT_EXPORT_H

#include "base/error.h"
#include "base/sbuf.h"
#include "einsum/einsum.h"
#include "measure/backend.h"
#include "transforms/kernel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors --------------------------------------------------------------- */

/* What a failure is about, for the caller's diagnostic. */
typedef enum et_export_about {
    ET_EXPORT_ABOUT_NONE = 0, /* no one input: rendering, memory */
    ET_EXPORT_ABOUT_OPTION,   /* an option of the export: its name */
    ET_EXPORT_ABOUT_FILE      /* the directory or a file in it */
} et_export_about;

/* A failure's message (err), what it is about, the offset of the bad
 * character of a name (pos, -1 when none) and the file in the way (file,
 * "" when none). Every function below that fails fills one. */
typedef struct et_export_error {
    et_error err;
    et_export_about about;
    int pos;
    char file[512];
} et_export_error;

/* ---- names ---------------------------------------------------------------- */

/* ET_OK when name can name an exported kernel or table (see above), else
 * ET_ERR_INPUT (ABOUT_OPTION, pos at a bad character) saying why. */
et_status et_export_name_check(const char *name, et_export_error *xe);

/* 1 when name occurs in source exactly once as a whole identifier (the
 * kernel's own name), else 0: a clash with the kernel's code. */
int et_export_name_used_once(const char *source, const char *name);

/* The macro prefix of an exported header (a kernel's or a dispatch
 * table's): name in upper case and '_' ("r_16_f32" -> "R_16_F32_"). */
void et_export_macro_prefix(const char *name, char *buf, size_t cap);

/* The dtypes as the default names end: "_f32" when the operands and the
 * output share one, else "_f16_to_f32" (one input dtype) or
 * "_f32_f64_to_f64". */
void et_export_dtype_suffix(const et_einsum *e, char *buf, size_t cap);

/* ---- the source as a C string --------------------------------------------- */

/* text as a C string literal appended to b: one piece in quotes per line
 * of text, joined by backslash-newlines (a macro's body); quote,
 * backslash, '?', tab, CR and every byte outside printable ASCII escaped,
 * so that the literal's bytes are text's exactly. */
void et_export_c_string(et_sbuf *b, const char *text);

/* ---- what both exports write ---------------------------------------------- */

/* Where and how the files are written. */
typedef struct et_export_files {
    const char *dir;        /* the directory (created with its parents) */
    bool embed;             /* the source also in the header, as the C
                             * string <PREFIX>SOURCE (and its length,
                             * <PREFIX>SOURCE_BYTES) */
    bool force;             /* replace the files eintune wrote for another
                             * kernel or table */
} et_export_files;

/* ---- one kernel ----------------------------------------------------------- */

/* A kernel rendered for export, with what its header says about its
 * launch. The paths and names are set once the kernel is rendered under
 * its name (before the geometry of an open axis is worked out), "" until
 * then; backend with them. */
typedef struct et_export_kernel {
    et_kernel *k;           /* opts applied; with an open axis, left at two
                             * steps of it */
    et_rendered r;          /* the source, its function called kernel */
    et_backend_kind backend;
    char kernel[160];       /* the function's name */
    char src_file[300];     /* kernel.cl or kernel.cu */
    char source[4096];      /* DIR/kernel.cl (.cu) */
    char header[4096];      /* DIR/kernel.h */
    char prefix[168];       /* the macros' prefix: kernel in upper case */
    et_launch geo1, geo2;   /* open axis: the geometry at one and two
                             * groups along it (else the rendered one) */
    int64_t step;           /* the open axis' step (et_kernel_open_step) */
    int64_t zero_per;       /* open axis: output bytes zeroed per unit of
                             * its size */
} et_export_kernel;

/*
 * Renders e with opt[0..n_opts-1] applied for tg (its backend is the
 * dialect) under name, or when name is NULL the kernel's default name
 * followed by the dtypes (r_16_12_8_f32; name was checked by the caller
 * with et_export_name_check), for files in dir. The caller frees x with
 * et_export_kernel_free, also after a failure. Errors: the kernel's status
 * when it cannot be rendered, ET_ERR_INPUT (ABOUT_OPTION) for a default
 * name over 100 characters or a name the kernel's code uses itself,
 * ET_ERR_INTERNAL when an open axis has no launch geometry.
 */
et_status et_export_kernel_render(const et_einsum *e, const et_target *tg,
                                  const et_opt *opt, int n_opts,
                                  const char *name, const char *dir,
                                  et_export_kernel *x, et_export_error *xe);
void et_export_kernel_free(et_export_kernel *x);

/* Where a kernel comes from and how it was checked, for its header. */
typedef struct et_export_origin {
    const char *opts;       /* its opts' text ("": untransformed) */
    double median_s;        /* its measured time */
    double low_s, high_s;   /* and 95 % interval */
    const char *checked;    /* how it was checked: the comment's "checked"
                             * line */
    bool verified;          /* verified on the device (<PREFIX>VERIFIED) */
} et_export_origin;

/*
 * Writes x's source and header (for problem e, tuned on the device info
 * describes) under f. *replaced says whether files of another kernel are
 * replaced (set once the files are checked, before they are written).
 * Errors: ET_ERR_NOMEM; ET_ERR_IO (ABOUT_FILE, file the directory) when
 * the directory cannot be made; ET_ERR_INPUT (ABOUT_FILE, file the path)
 * for a file in the way; ET_ERR_IO (ABOUT_FILE) when a file cannot be
 * written.
 */
et_status et_export_kernel_write(const et_export_kernel *x,
                                 const et_einsum *e,
                                 const et_device_info *info,
                                 const et_export_origin *from,
                                 const et_export_files *f, bool *replaced,
                                 et_export_error *xe);

/* ---- a dispatch table ----------------------------------------------------- */

/*
 * The table's name into buf (cap bytes): asked when not NULL (checked by
 * the caller), else "dispatch_" with e's terms joined by '_' (an ellipsis
 * is "0"), "_to_" before the output, and the dtypes as a kernel's default
 * name ends ("dispatch_xik_kj_to_xij_f64"). ET_ERR_INPUT (ABOUT_OPTION)
 * when the default name is no usable name.
 */
et_status et_export_table_name(const et_einsum *e, const char *asked,
                               char *buf, size_t cap, et_export_error *xe);

/* One tuned kernel of a table. e and opts are the caller's to set;
 * et_export_entry_render fills the rest. */
typedef struct et_export_entry {
    et_einsum e;            /* the einsum it runs (open axis or not) */
    const char *opts;       /* its opts' text, "" untransformed (the
                             * caller's, kept while the entry is used) */
    et_rendered r;          /* rendered under the renderer's name */
    char name[200];         /* its name in the table: TABLE_k<number> */
    int64_t step;           /* open axis: groups are ceil(n / step) */
    int64_t g1[3], grows[3]; /* open axis: global at one group; grows */
    int64_t zero_per;       /* open axis: zeroed bytes per unit of n */
} et_export_entry;

/*
 * Renders x->e with opt[0..n_opts-1] applied for tg (its backend the
 * dialect), as kernel number `number` of table `table`, with the geometry
 * of its open axis if it has one. spec (the sizes as listed) names the
 * problem in the message: the kernel's status with "cannot render the
 * kernel of E at SPEC: why". et_export_entry_free releases the rendering
 * (also after a failure, and of a zero entry).
 */
et_status et_export_entry_render(et_export_entry *x, const et_target *tg,
                                 const et_opt *opt, int n_opts,
                                 const char *table, int number,
                                 const char *spec, et_export_error *xe);
void et_export_entry_free(et_export_entry *x);

/* A table to write. */
typedef struct et_export_table {
    const char *name;       /* the table's name (et_export_table_name) */
    const et_einsum *e;     /* the einsum at its first listed sizes: text,
                             * indices, dtypes; the generic kernel's */
    const et_device_info *info; /* the device the kernels were tuned on */
    et_backend_kind backend; /* rendered for */
    const et_export_entry *entry; /* the tuned kernels, rendered */
    int n;
    bool verified;          /* every tuned kernel was verified */
} et_export_table;

/* What et_export_table_write wrote; set once the header is made (before
 * the directory is), zero until then. replaced: once the files are
 * checked. */
typedef struct et_export_table_result {
    char source[4096];      /* DIR/NAME.cl or .cu */
    char header[4096];      /* DIR/NAME.h */
    et_backend_kind backend;
    int n_kernels;          /* tuned ones and the generic one */
    int n_tuned;            /* tuned for one size each */
    int n_open;             /* tuned with an open axis */
    char name[112];
    char prefix[120];       /* NAME in upper case and '_' */
    bool replaced;
} et_export_table_result;

/*
 * Writes table t under f: DIR/NAME.cl (.cu), every tuned kernel renamed
 * NAME_k<number> and NAME_generic, the untransformed kernel with every
 * size an argument; DIR/NAME.h with NAME_launch and NAME_dispatch. res
 * must be zero. Errors: the status when the generic kernel cannot be
 * rendered; ET_ERR_INPUT (ABOUT_OPTION) when a kernel's name is used in
 * the kernels' code; ET_ERR_NOMEM, ET_ERR_INTERNAL; ET_ERR_IO (ABOUT_FILE)
 * when the directory or a file cannot be made; ET_ERR_INPUT (ABOUT_FILE,
 * file the path) for a file in the way.
 */
et_status et_export_table_write(const et_export_table *t,
                                const et_export_files *f,
                                et_export_table_result *res,
                                et_export_error *xe);

#endif /* ET_EXPORT_EXPORT_H */
