/*
 * kernel.c - one exported kernel: rendered under its export name
 * (the caller's, or the renderer's name, which holds the loop sizes only,
 * followed by the dtypes: r_16_12_8_f32 and r_16_12_8_f64 are the two
 * kernels of one shape, which must be able to live in one directory and
 * one program), the launch geometry of an open axis at one and two groups
 * along it, and the two files written:
 *
 *   DIR/<name>.cl (or .cu)  the kernel source, as `codegen` prints it but
 *                           with the function called <name>
 *   DIR/<name>.h            the C header (header.c), with how the kernel
 *                           was checked and, with embed, the source as a
 *                           C string (text.c)
 */
#include "export/export_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void et_export_kernel_free(et_export_kernel *x)
{
    et_rendered_free(&x->r);
    et_kernel_free(x->k);
    x->k = NULL;
}

/* The name into buf: asked, or the kernel's default name and the
 * dtypes. */
static et_status kernel_name(const et_export_kernel *x, const et_einsum *e,
                             const char *asked, char *buf, size_t cap,
                             et_export_error *xe)
{
    if (asked) {
        snprintf(buf, cap, "%s", asked);
        return ET_OK;
    }
    char base[160], suffix[160];
    et_kernel_name(x->k, base, sizeof base);
    et_export_dtype_suffix(e, suffix, sizeof suffix);
    if (strlen(base) + strlen(suffix) >= 101)
        return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                       "the kernel's name %s%s would be over 100 "
                       "characters: give it a name",
                       base, suffix);
    snprintf(buf, cap, "%.100s%.50s", base, suffix);
    return ET_OK;
}

/* The geometry at one and two groups along the open axis, and the zeroed
 * bytes per unit of its size (the rendered geometry without one). */
static et_status open_geometry(et_export_kernel *x, const et_einsum *e,
                               et_export_error *xe)
{
    x->geo1 = x->geo2 = x->r.launch;
    x->step = et_kernel_open_step(x->k);
    if (et_einsum_open_axis(e) < 0)
        return ET_OK;
    if (et_kernel_set_open_size(x->k, x->step, NULL) != ET_OK ||
        et_kernel_launch(x->k, x->backend, &x->geo1) != ET_OK ||
        et_kernel_set_open_size(x->k, 2 * x->step, NULL) != ET_OK ||
        et_kernel_launch(x->k, x->backend, &x->geo2) != ET_OK)
        return xp_fail(xe, ET_ERR_INTERNAL, ET_EXPORT_ABOUT_NONE,
                       "no launch geometry for the open axis");
    x->zero_per = x->geo1.zero_bytes / x->step;
    return ET_OK;
}

et_status et_export_kernel_render(const et_einsum *e, const et_target *tg,
                                  const et_opt *opt, int n_opts,
                                  const char *name, const char *dir,
                                  et_export_kernel *x, et_export_error *xe)
{
    memset(x, 0, sizeof *x);
    et_backend_kind bk = tg->backend;
    char reason[512] = "";
    et_status st = et_kernel_init(e, tg, &x->k);
    if (st == ET_OK)
        st = et_kernel_apply_opts(x->k, opt, n_opts, reason, sizeof reason);
    if (st != ET_OK)
        return xp_fail(xe, st, ET_EXPORT_ABOUT_NONE,
                       "cannot render the kernel for %s: %s",
                       et_backend_name(bk),
                       reason[0] ? reason : et_status_str(st));
    char own[160] = "";
    if ((st = kernel_name(x, e, name, own, sizeof own, xe)) != ET_OK)
        return st;
    et_render_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.name = own;
    st = et_kernel_render(x->k, bk, &ro, &x->r);
    if (st != ET_OK)
        return xp_fail(xe, st, ET_EXPORT_ABOUT_NONE,
                       "cannot render the kernel for %s: %s",
                       et_backend_name(bk), et_status_str(st));
    if (!et_export_name_used_once(x->r.source, own))
        return xp_fail(xe, ET_ERR_INPUT, ET_EXPORT_ABOUT_OPTION,
                       "name '%s' is used inside the kernel's code (an "
                       "argument, a variable or a built-in): choose another",
                       own);
    snprintf(x->src_file, sizeof x->src_file, "%s.%s", x->r.name,
             bk == ET_BACKEND_CUDA ? "cu" : "cl");
    snprintf(x->source, sizeof x->source, "%s/%s", dir, x->src_file);
    snprintf(x->header, sizeof x->header, "%s/%s.h", dir, x->r.name);
    snprintf(x->kernel, sizeof x->kernel, "%s", x->r.name);
    et_export_macro_prefix(x->r.name, x->prefix, sizeof x->prefix);
    x->backend = bk;
    return open_geometry(x, e, xe);
}

et_status et_export_kernel_write(const et_export_kernel *x,
                                 const et_einsum *e,
                                 const et_device_info *info,
                                 const et_export_origin *from,
                                 const et_export_files *f, bool *replaced,
                                 et_export_error *xe)
{
    char mark[300];
    xp_mark(mark, sizeof mark, "export", x->r.name, x->backend, x->r.source);
    char *hdr = xp_kernel_header(x, e, info, from, mark);
    if (!hdr ||
        !(hdr = xp_header_add_check(hdr, x->prefix, from->checked,
                                    from->verified)) ||
        (f->embed && !(hdr = xp_header_embed(hdr, x->prefix, x->r.source,
                                             x->src_file))))
        return xp_fail(xe, ET_ERR_NOMEM, ET_EXPORT_ABOUT_NONE,
                       "out of memory");
    et_status st;
    if (xp_make_dirs(f->dir) != 0) {
        st = xp_fail(xe, ET_ERR_IO, ET_EXPORT_ABOUT_FILE,
                     "cannot create %s: %s", f->dir, strerror(errno));
        snprintf(xe->file, sizeof xe->file, "%s", f->dir);
    } else {
        const char *paths[2] = {x->source, x->header};
        st = xp_put_files(f->dir, paths, x->r.source, hdr, mark, f->force,
                          replaced, xe);
    }
    free(hdr);
    return st;
}
