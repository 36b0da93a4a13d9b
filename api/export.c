/*
 * export.c - et_best_kernel_export and et_export_name_validate: the best
 * known kernel written for a library to embed, DIR/<name>.cl (or .cu)
 * and DIR/<name>.h (export/export.h says what they hold and which files in
 * the way are replaced). Here: the arguments checked, the backend asked
 * for, the kernel rendered through export/, verified on the device before
 * it is written (api_deliver_verify: at the sizes the header serves), and
 * export/'s errors turned into et_diag; also the checks of options and
 * that mapping, which et_dispatch_export (dispatch.c) shares.
 */
#include "api/best_impl.h"

#include <stdio.h>
#include <string.h>

et_status api_export_fail(et_diag *diag, et_status st,
                          const et_export_error *xe)
{
    static const et_input input[] = {
        [ET_EXPORT_ABOUT_NONE] = ET_INPUT_NONE,
        [ET_EXPORT_ABOUT_OPTION] = ET_INPUT_OPTION,
        [ET_EXPORT_ABOUT_FILE] = ET_INPUT_FILE,
    };
    api_fail(diag, st, input[xe->about], "%s", xe->err.msg);
    if (xe->pos >= 0)
        diag->pos = xe->pos;
    if (xe->file[0])
        snprintf(diag->file, sizeof diag->file, "%s", xe->file);
    return st;
}

et_status api_export_dir_check(const char *dir, et_diag *diag)
{
    if (!dir || !dir[0])
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "an output directory is needed");
    if (strlen(dir) > 3000)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the output directory's name is too long");
    return ET_OK;
}

et_status api_export_backend_check(const char *backend, et_diag *diag)
{
    if (backend && strcmp(backend, "opencl") && strcmp(backend, "cuda"))
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "backend must be opencl or cuda, not '%s'",
                        backend);
    return ET_OK;
}

et_backend_kind api_export_backend(const char *backend, et_backend_kind dflt)
{
    if (!backend)
        return dflt;
    return strcmp(backend, "cuda") == 0 ? ET_BACKEND_CUDA : ET_BACKEND_OPENCL;
}

et_status et_export_name_validate(const char *name, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, name, "name");
    et_export_error xe;
    et_status st = et_export_name_check(name, &xe);
    return st == ET_OK ? ET_OK : api_export_fail(diag, st, &xe);
}

/* The target bk's kernel is rendered for: the device's, with the backend
 * o asks for; what differs from the tuned kernel is logged. */
static et_target export_target(const et_best_kernel *bk,
                               const et_export_options *o)
{
    const et_device_info *info = &bk->info;
    const et_best *best = &bk->best;
    et_target tg = info->target;
    et_backend_kind kind = api_export_backend(o->backend, tg.backend);
    if (kind != tg.backend) {
        api_log(o->log, o->log_arg, ET_LOG_WARN,
                "the kernel was tuned on %s (%s); rendered for %s with the "
                "same opts, untimed there",
                info->name, et_backend_name(tg.backend),
                et_backend_name(kind));
        tg.backend = kind;
    }
    if (best->source == ET_BEST_FALLBACK)
        api_log(o->log, o->log_arg, ET_LOG_WARN,
                "no kernel tuned at these sizes: the opts tuned at %s are "
                "re-applied at %s, unverified there ('eintune run --best' "
                "verifies them; --exact refuses)",
                best->tuned_at, best->applied_at);
    return tg;
}

/* What reaches a user was verified: x at the sizes the header serves
 * (with an open axis also at the asked size). line: how, for the
 * header. */
static et_status export_verify(const et_best_kernel *bk,
                               const et_export_kernel *x,
                               const et_export_options *o, char *line,
                               size_t cap, et_diag *diag)
{
    const et_einsum *e = &bk->e;
    int oa = et_einsum_open_axis(e);
    int64_t asked = oa >= 0 ? e->idx[oa].size : 0;
    et_status st = api_deliver_verify(&bk->info, x->k, &bk->best, &asked,
                                      oa >= 0 ? 1 : 0, line, cap, diag);
    if (st == ET_OK)
        api_log(o->log, o->log_arg, ET_LOG_INFO, "%s", line);
    return st;
}

et_status et_best_kernel_export(const et_best_kernel *bk,
                                const et_export_options *o,
                                et_export_result *out, et_diag *diag)
{
    et_diag local;
    et_export_result local_out;
    if (!diag)
        diag = &local;
    if (!out)
        out = &local_out;
    api_diag_clear(diag);
    memset(out, 0, sizeof *out);
    API_NEED(diag, bk, "bk");
    API_NEED(diag, o, "o");
    API_OPTIONS(et_export_options, o, diag);
    if (api_export_dir_check(o->dir, diag) != ET_OK ||
        api_export_backend_check(o->backend, diag) != ET_OK ||
        (o->name && et_export_name_validate(o->name, diag) != ET_OK))
        return diag->status;
    const et_best *best = &bk->best;
    et_target tg = export_target(bk, o);
    et_export_kernel x;
    et_export_error xe;
    et_status st = et_export_kernel_render(&bk->e, &tg, best->opt,
                                           best->n_opts, o->name, o->dir,
                                           &x, &xe);
    snprintf(out->kernel, sizeof out->kernel, "%s", x.kernel);
    snprintf(out->source, sizeof out->source, "%s", x.source);
    snprintf(out->header, sizeof out->header, "%s", x.header);
    snprintf(out->prefix, sizeof out->prefix, "%s", x.prefix);
    out->backend = x.backend;
    if (st != ET_OK) {
        api_export_fail(diag, st, &xe);
        goto out;
    }
    char vline[768] = "not verified on a device (written with --no-verify)";
    if (!o->no_verify &&
        (st = export_verify(bk, &x, o, vline, sizeof vline, diag)) != ET_OK)
        goto out;
    et_export_origin from = {
        .opts = best->opts,
        .median_s = best->trial.median_s,
        .low_s = best->trial.low_s,
        .high_s = best->trial.high_s,
        .checked = vline,
        .verified = !o->no_verify,
    };
    et_export_files f = {.dir = o->dir, .embed = o->embed != 0,
                         .force = o->force != 0};
    bool replaced = false;
    st = et_export_kernel_write(&x, &bk->e, &bk->info, &from, &f, &replaced,
                                &xe);
    out->replaced = replaced;
    if (st != ET_OK)
        api_export_fail(diag, st, &xe);
out:
    et_export_kernel_free(&x);
    return st;
}
