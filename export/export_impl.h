/*
 * export_impl.h - the pieces the files of export/ share: failures, the
 * files in the way and their writing (files.c), the text both headers
 * carry (text.c) and the kernel's header (header.c). Nothing outside
 * export/ includes it.
 */
#ifndef ET_EXPORT_IMPL_H
#define ET_EXPORT_IMPL_H

#include "export/export.h"

/* Fills xe (status st, about, a printf message, pos -1, no file) and
 * returns st. */
et_status xp_fail(et_export_error *xe, et_status st, et_export_about about,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- files (files.c) ------------------------------------------------------ */

/* mkdir -p: 0, or -1 with errno. */
int xp_make_dirs(const char *path);

/* The marker line a header starts with (through its newline): "/" "*
 * eintune WHAT: NAME (BACKEND), source HASH *" "/", the hash of source
 * (FNV-1a, 64 bits). what is "export" for a kernel, "dispatch" for a
 * table. */
void xp_mark(char *buf, size_t cap, const char *what, const char *name,
             et_backend_kind backend, const char *source);

/*
 * Writes source to paths[0] and hdr to paths[1] (mark: hdr's first line)
 * after checking both against what they hold (see export.h, files in the
 * way). *replaced is set once both are checked. Errors: ET_ERR_INPUT
 * (ABOUT_FILE, file the path) for a file in the way, ET_ERR_IO
 * (ABOUT_FILE) "cannot write in DIR" when a write fails.
 */
et_status xp_put_files(const char *dir, const char *const paths[2],
                       const char *source, const char *hdr, const char *mark,
                       bool force, bool *replaced, et_export_error *xe);

/* ---- text both headers carry (text.c) ------------------------------------- */

/* hdr (freed) with the source embedded: PREFIX_SOURCE_BYTES and
 * PREFIX_SOURCE, the source as a C string, before the include guard's
 * closing #endif; src_file names the file it equals. NULL when out of
 * memory or hdr has no guard. */
char *xp_header_embed(char *hdr, const char *prefix, const char *source,
                      const char *src_file);

/* hdr (freed) with how the kernel was checked: a " * checked LINE" line
 * after the comment's " * source ..." line, and PREFIX_VERIFIED 1 or 0
 * after the include guard's #define. NULL when out of memory or hdr lacks
 * either. */
char *xp_header_add_check(char *hdr, const char *prefix, const char *line,
                          bool verified);

/* ---- the kernel's header (header.c) --------------------------------------- */

/* The header of kernel x of problem e tuned on the device info describes
 * (from: its opts and times), starting with mark; without the check line
 * and the embedded source. NULL when out of memory. */
char *xp_kernel_header(const et_export_kernel *x, const et_einsum *e,
                       const et_device_info *info,
                       const et_export_origin *from, const char *mark);

#endif /* ET_EXPORT_IMPL_H */
