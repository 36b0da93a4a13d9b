/*
 * dispatch.c - et_dispatch_export: several tuned kernels of one einsum
 * written as one source file and one C header whose dispatch function
 * picks a kernel by the sizes at run time, for a kernel library that
 * calls the einsum with many sizes (export/export.h says what the files
 * hold and which files in the way are replaced).
 *
 * The kernels are the answers of the database for the sizes listed (a
 * shape spec with lists and ranges, as tune takes): a kernel tuned for
 * exactly those sizes, or one tuned with an open axis that covers them
 * (kept once however many sizes it covers, verified at each of them).
 * Re-applying opts tuned at other sizes, `best`'s last resort, needs a
 * kernel rendered for the new sizes, which a file written ahead of time
 * cannot hold: the generic kernel stands in. Here: the arguments checked,
 * the kernels looked up and rendered through export/, verified on the
 * device before anything is written (api_deliver_verify), the table
 * written by export/, and its errors turned into et_diag (export.c).
 */
#include "api/best_impl.h"
#include "tune/deliver.h"

#include "measure/remote.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What one kernel of the table was found from. */
typedef struct dfound {
    et_best best;
    int64_t served[ET_DELIVER_MAX_SIZES]; /* open axis: the listed sizes it
                                           * serves, verified at */
    int n_served;
} dfound;

/* A table being gathered: n kernels so far, in x[0..n-1] (rendered) and
 * d[0..n-1] (their answers); x[n] and d[n] the one being looked up. */
typedef struct dtable {
    et_export_entry *x;        /* n_specs of them */
    dfound *d;                 /* n_specs of them */
    int n, n_specs;
    char name[112];            /* the table's */
    et_einsum *e0;             /* the einsum at the first listed sizes */
    et_device_info *info;
    et_target tg;              /* the device's, with the backend asked */
    et_db *db;
} dtable;

/* The arrays, the database, then the device's key (as best does). */
static et_status table_open(dtable *t, const et_dispatch_options *o,
                            et_diag *diag)
{
    t->x = calloc((size_t)t->n_specs, sizeof *t->x);
    t->d = calloc((size_t)t->n_specs, sizeof *t->d);
    t->e0 = calloc(1, sizeof *t->e0);
    if (!t->x || !t->d || !t->e0 || !t->info)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_error err = {{0}};
    et_status st = et_db_open(o->db, &t->db, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st, ET_INPUT_FILE, &err);
    et_device *dev = NULL;
    st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st,
                            st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                               : ET_INPUT_NONE,
                            &err);
    *t->info = dev->info;
    et_device_close(dev);
    t->tg = t->info->target;
    t->tg.backend = api_export_backend(o->backend, t->tg.backend);
    return ET_OK;
}

static void table_free(dtable *t)
{
    for (int k = 0; t->x && k < t->n_specs; k++)
        et_export_entry_free(&t->x[k]);
    free(t->x);
    free(t->d);
    free(t->e0);
    free(t->info);
    et_db_close(t->db);
}

/* Is the answer being looked up (d[n], of einsum x[n].e) an open-axis
 * kernel the table holds already? Then that one serves this size too
 * (and is verified at it). */
static bool covered(dtable *t)
{
    int n = t->n;
    const et_best *b = &t->d[n].best;
    bool dup = false;
    for (int k = 0; k < n && !dup; k++)
        dup = t->d[k].best.trial.id == b->trial.id &&
              et_einsum_open_axis(&t->x[k].e) >= 0 &&
              strcmp(t->d[k].best.opts, b->opts) == 0;
    if (!dup)
        return false;
    for (int k = 0; k < n; k++)
        if (t->d[k].best.trial.id == b->trial.id &&
            et_einsum_open_axis(&t->x[k].e) >= 0 &&
            t->d[k].n_served < ET_DELIVER_MAX_SIZES - 4) {
            const et_einsum *e = &t->x[n].e;
            int oa = et_einsum_open_axis(e);
            t->d[k].served[t->d[k].n_served++] = e->idx[oa].size;
            break;
        }
    return true;
}

/* e as the batched einsum of rows (et_problem_set_batch's rules);
 * ET_INPUT_BATCH or ET_INPUT_EINSUM errors. */
static et_status batch_of(et_einsum *e, const char *rows, et_diag *diag)
{
    et_einsum *b = malloc(sizeof *b);
    et_status st = b ? et_einsum_batch_spec(e, rows, NULL, b, diag)
                     : ET_ERR_NOMEM;
    if (st == ET_OK)
        *e = *b;
    else if (st == ET_ERR_NOMEM)
        api_fail(diag, st, ET_INPUT_NONE, "out of memory");
    free(b);
    return st;
}

/* The kernel for the listed sizes spec (number i of the list), added to
 * the table unless the database knows none (the generic kernel serves
 * them) or an open kernel of the table covers them. The first sizes
 * name the table. */
static et_status gather(dtable *t, const char *einsum, const char *spec,
                        const char *dtypes, int i,
                        const et_dispatch_options *o, et_diag *diag)
{
    int n = t->n;
    et_einsum *e = &t->x[n].e;
    et_export_error xe;
    et_status st = et_einsum_from_strings(einsum, spec, dtypes, e, diag);
    if (st == ET_OK && o->batch)
        st = batch_of(e, o->batch, diag);
    if (st != ET_OK)
        return st;
    if (i == 0) {
        *t->e0 = *e;
        st = et_export_table_name(t->e0, o->name, t->name, sizeof t->name,
                                  &xe);
        if (st != ET_OK)
            return api_export_fail(diag, st, &xe);
    }
    bool found = false;
    et_error err = {{0}};
    st = et_best_find(t->db, e, t->info, true, &t->d[n].best, &found, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st, ET_INPUT_NONE, &err);
    if (!found) {
        api_log(o->log, o->log_arg, ET_LOG_WARN,
                "no kernel tuned for %s at %s: the generic kernel "
                "serves it", e->text, spec);
        return ET_OK;
    }
    *e = t->d[n].best.e;
    if (covered(t))
        return ET_OK;
    dfound *d = &t->d[n];
    if (et_einsum_open_axis(e) >= 0)
        d->served[d->n_served++] = e->idx[et_einsum_open_axis(e)].size;
    t->x[n].opts = d->best.opts;
    st = et_export_entry_render(&t->x[n], &t->tg, d->best.opt, d->best.n_opts,
                                t->name, n, spec, &xe);
    if (st != ET_OK)
        return api_export_fail(diag, st, &xe);
    t->n++;
    return ET_OK;
}

/* What reaches a user was verified: each kernel at the sizes it serves
 * (an open one also at 1, 2 and a prime). */
static et_status verify_all(const dtable *t, const et_dispatch_options *o,
                            et_diag *diag)
{
    for (int k = 0; k < t->n && !o->no_verify; k++) {
        const et_best *best = &t->d[k].best;
        et_kernel *kk = NULL;
        char vline[768] = "";
        et_status st = et_kernel_init(&t->x[k].e, &t->tg, &kk);
        if (st == ET_OK)
            st = et_kernel_apply_opts(kk, best->opt, best->n_opts, NULL, 0);
        if (st == ET_OK)
            st = api_deliver_verify(t->info, kk, best, t->d[k].served,
                                    t->d[k].n_served, vline, sizeof vline,
                                    diag);
        else
            api_fail(diag, st, ET_INPUT_NONE, "cannot build kernel %d", k);
        et_kernel_free(kk);
        if (st != ET_OK)
            return st;
        api_log(o->log, o->log_arg, ET_LOG_INFO, "%s (%s): %s",
                t->x[k].name, best->opts[0] ? best->opts : "untransformed",
                vline);
    }
    return ET_OK;
}

/* The table written by export/, what it wrote into out (may be
 * NULL). */
static et_status table_write(const dtable *t, const et_dispatch_options *o,
                             et_dispatch_result *out, et_diag *diag)
{
    et_export_table tab = {
        .name = t->name,
        .e = t->e0,
        .info = t->info,
        .backend = t->tg.backend,
        .entry = t->x,
        .n = t->n,
        .verified = !o->no_verify,
    };
    et_export_files f = {.dir = o->dir, .embed = o->embed != 0,
                         .force = o->force != 0};
    et_export_table_result res;
    memset(&res, 0, sizeof res);
    et_export_error xe;
    et_status st = et_export_table_write(&tab, &f, &res, &xe);
    if (st != ET_OK)
        api_export_fail(diag, st, &xe);
    if (!out)
        return st;
    snprintf(out->source, sizeof out->source, "%s", res.source);
    snprintf(out->header, sizeof out->header, "%s", res.header);
    out->backend = res.backend;
    out->n_kernels = res.n_kernels;
    out->n_tuned = res.n_tuned;
    out->n_open = res.n_open;
    snprintf(out->name, sizeof out->name, "%s", res.name);
    snprintf(out->prefix, sizeof out->prefix, "%s", res.prefix);
    out->replaced = res.replaced;
    return st;
}

et_status et_dispatch_export(const char *einsum, const char *shapes,
                             const char *dtypes,
                             const et_dispatch_options *o,
                             et_dispatch_result *out, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    if (out)
        memset(out, 0, sizeof *out);
    API_NEED(diag, einsum, "einsum");
    API_NEED(diag, shapes, "shapes");
    API_NEED(diag, o, "o");
    API_OPTIONS_V10(et_dispatch_options, o, diag,
                    offsetof(et_dispatch_options, batch));
    if (api_export_dir_check(o->dir, diag) != ET_OK ||
        (o->name && et_export_name_validate(o->name, diag) != ET_OK) ||
        api_export_backend_check(o->backend, diag) != ET_OK)
        return diag->status;

    dtable t;
    memset(&t, 0, sizeof t);
    char *specs = NULL;
    t.info = calloc(1, sizeof *t.info);
    et_status st = et_shape_expand(shapes, &specs, &t.n_specs, diag);
    if (st == ET_OK)
        st = table_open(&t, o, diag);
    char *line = specs;
    for (int i = 0; st == ET_OK && i < t.n_specs; i++) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        st = gather(&t, einsum, line, dtypes, i, o, diag);
        line = nl ? nl + 1 : line + strlen(line);
    }
    if (st == ET_OK)
        st = verify_all(&t, o, diag);
    if (st == ET_OK)
        st = table_write(&t, o, out, diag);
    table_free(&t);
    free(specs);
    return st;
}
