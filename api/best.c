/*
 * best.c - the public best-kernel lookup (et_best_lookup, and
 * et_best_kernel_find keeping the answer as an object whose report,
 * et_best_report_print/_json, report/ makes) and the pieces of it that
 * other API files share (api_best_find, api_best_info_fill):
 * the database opened before any device, the device opened through a
 * worker only to learn its database key, and tune/best.h's mapping of the
 * stored opts onto the asker's index names.
 */
#include "api/best_impl.h"

#include "measure/remote.h"
#include "report/report.h"
#include "tune/deliver.h"
#include "tune/peaks_db.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status api_best_find(et_session *s, const et_einsum *e,
                        const et_device_info *info,
                        const char *db_path, bool exact, et_best *out,
                        bool *found,
                        char *db_used, size_t db_used_cap, et_diag *diag)
{
    et_error err = {{0}};
    et_db *db = NULL;
    bool own = false;
    *found = false;
    et_status st = api_session_db(s, db_path, &db, &own, diag);
    if (st != ET_OK)
        return st;
    if (db_used)
        snprintf(db_used, db_used_cap, "%s", et_db_path(db));
    st = et_best_find(db, e, info, exact, out, found, &err);
    if (st != ET_OK)
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
    if (own)
        et_db_close(db);
    return st;
}

void api_best_info_fill(const et_best *b, const et_device_info *info,
                        et_best_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->opts, sizeof out->opts, "%s", b->opts);
    snprintf(out->kernel, sizeof out->kernel, "%s", b->trial.kernel_name);
    snprintf(out->tuned_einsum, sizeof out->tuned_einsum, "%s",
             b->trial.einsum_text);
    out->exact = b->exact;
    out->time_s = b->trial.median_s;
    out->ci95_s[0] = b->trial.low_s;
    out->ci95_s[1] = b->trial.high_s;
    out->gops = b->trial.gops;
    snprintf(out->device, sizeof out->device, "%s", info->name);
    out->backend = info->target.backend;
    snprintf(out->driver, sizeof out->driver, "%s", info->driver_version);
    out->trial_id = b->trial.id;
    snprintf(out->tuned_opts, sizeof out->tuned_opts, "%s", b->trial.opts);
    snprintf(out->tuned_kernel, sizeof out->tuned_kernel, "%s",
             b->trial.kernel_name);
    out->runs = b->trial.runs;
    out->cv = b->trial.cv;
    out->verify_trials = b->trial.verify_trials;
    out->max_norm_err = b->trial.max_norm_err;
    out->p_value = b->trial.p_value;
    snprintf(out->source, sizeof out->source, "%s",
             et_best_source_name(b->source));
    if (b->open_axis >= 0)
        snprintf(out->open_axis, sizeof out->open_axis, "%s",
                 b->e.idx[b->open_axis].name);
    snprintf(out->tuned_at, sizeof out->tuned_at, "%s", b->tuned_at);
    snprintf(out->applied_at, sizeof out->applied_at, "%s", b->applied_at);
    if (b->source == ET_BEST_FALLBACK) {
        /* measured at other sizes: nothing to say about these */
        out->time_s = 0;
        out->ci95_s[0] = out->ci95_s[1] = 0;
        out->gops = 0;
    }
}

et_status api_no_kernel(et_diag *d, const et_einsum *e,
                        const et_device_info *info, const char *db,
                        bool exact)
{
    char sizes[512], dtypes[128];
    size_t n = 0;
    et_einsum_sizes_str(e, true, sizes, sizeof sizes);
    for (int k = 0; k < e->n_ops && n < sizeof dtypes; k++)
        n += (size_t)snprintf(dtypes + n, sizeof dtypes - n, "%s%s",
                              k ? "," : "", et_dtype_name(e->op[k].dtype));
    if (n < sizeof dtypes)
        snprintf(dtypes + n, sizeof dtypes - n, "->%s",
                 et_dtype_name(e->out.dtype));
    return api_fail(d, ET_ERR_NOT_FOUND, ET_INPUT_NONE,
                    "no verified kernel known for %s%s%s (%s) on %s (%s, "
                    "driver %s) in %s%s: tune it on this device first",
                    e->text, sizes[0] ? " at " : "", sizes, dtypes,
                    info->name, et_backend_name(info->target.backend),
                    info->driver_version, db,
                    exact ? " (exact: no fallback to other sizes)" : "");
}

bool api_best_race_lookup(et_db *db, const et_best *b, et_db_race_pick *pick)
{
    et_error err = {{0}};
    bool found = false;
    if (b->source == ET_BEST_FALLBACK ||
        et_db_race_pick_of(db, &b->trial, pick, &found, &err) != ET_OK)
        return false;
    return found;
}

void api_best_info_race(const et_db_race_pick *pick, et_best_info *out)
{
    out->raced = pick != NULL;
    out->race_time_s = pick ? pick->median_s : 0;
    out->race_ci95_s[0] = pick ? pick->low_s : 0;
    out->race_ci95_s[1] = pick ? pick->high_s : 0;
    out->race_rounds = pick ? pick->rounds : 0;
}

et_status et_best_lookup(const et_problem *p, const char *device,
                         const char *db, et_best_info *out, int *found,
                         et_diag *diag)
{
    return api_best_lookup(NULL, p, device, db, out, found, diag);
}

et_status api_best_lookup(et_session *s, const et_problem *p,
                          const char *device, const char *db,
                          et_best_info *out, int *found, et_diag *diag)
{
    API_DIAG(diag);
    api_diag_clear(diag);
    if (found)
        *found = 0;
    API_NEED(diag, out, "out");
    memset(out, 0, sizeof *out);
    API_NEED(diag, p, "p");
    et_best_options o;
    memset(&o, 0, sizeof o);
    o.device = device;
    o.db = db;
    et_best_kernel *bk = NULL;
    et_status st = api_best_kernel_find(s, p, &o, &bk, diag);
    if (st == ET_OK && bk) {
        et_best_kernel_info(bk, out);
        if (found)
            *found = 1;
    }
    et_best_kernel_free(bk);
    return st;
}

/* ---- the best kernel as an object --------------------------------------- */

char *api_json_own(char *text)
{
    if (!text)
        return NULL;
    size_t n = strlen(text) + 1;
    char *own = malloc(n);
    if (own)
        memcpy(own, text, n);
    cJSON_free(text);
    return own;
}

int api_best_kernel_name(const et_best_kernel *bk, char *name, size_t cap)
{
    if (bk->kernel[0]) {
        snprintf(name, cap, "%s", bk->kernel);
        return 0;
    }
    et_kernel *k = NULL;
    et_rendered r;
    memset(&r, 0, sizeof r);
    int rc = -1;
    if (et_kernel_init(&bk->e, &bk->info.target, &k) == ET_OK &&
        et_kernel_apply_opts(k, bk->best.opt, bk->best.n_opts, NULL, 0) ==
            ET_OK &&
        et_kernel_render(k, bk->info.target.backend, NULL, &r) == ET_OK) {
        snprintf(name, cap, "%s", r.name);
        rc = 0;
    }
    et_rendered_free(&r);
    et_kernel_free(k);
    return rc;
}

/* What kind of answer bk is, logged: another size's opts, the kernel of
 * an open axis, opts mapped by name. */
static void best_kernel_log(const et_best_kernel *bk,
                            const et_best_options *o)
{
    if (bk->best.source == ET_BEST_FALLBACK)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "no kernel tuned at these sizes: tuned at %s, applied at %s",
                 bk->best.tuned_at, bk->best.applied_at);
    else if (bk->best.source == ET_BEST_OPEN)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "a kernel with an open axis %s covers these sizes (tuned "
                 "at %s, applied at %s)",
                 bk->e.idx[bk->best.open_axis].name, bk->best.tuned_at,
                 bk->best.applied_at);
    if (!bk->best.exact && bk->best.source != ET_BEST_FALLBACK)
        api_logf(o->log, o->log_arg, ET_LOG_WARN,
                 "the stored kernel's source could not be reproduced for "
                 "%s; its opts are mapped by name",
                 bk->e.text);
}

/* The kernel's name, and its roofline from the stored peaks (database,
 * else the cache file) at the sizes its time was measured at; none for
 * another size's opts. ET_ERR_INTERNAL when it cannot be rendered. */
static et_status best_kernel_roofline(et_best_kernel *bk, et_db *db,
                                      const et_best_options *o,
                                      et_diag *diag)
{
    et_peaks peaks;
    int have_peaks = 0;
    et_error perr;
    perr.msg[0] = '\0';
    if (et_peaks_db_load(db, &bk->info, &peaks, &perr) == ET_OK ||
        et_peaks_load(&bk->info, &peaks, &perr) == ET_OK)
        have_peaks = 1;
    else
        api_logf(o->log, o->log_arg, ET_LOG_INFO, "no roofline: %s",
                 perr.msg);
    char kname[sizeof bk->kernel];
    if (api_best_kernel_name(bk, kname, sizeof kname) != 0)
        return api_fail(diag, ET_ERR_INTERNAL, ET_INPUT_NONE,
                        "cannot render the kernel");
    memcpy(bk->kernel, kname, sizeof kname);
    char why[256] = "";
    /* the roofline of the sizes the time was measured at */
    et_einsum re = bk->e;
    int oa = et_einsum_open_axis(&re);
    const char *eq = strchr(bk->best.tuned_at, '=');
    if (oa >= 0 && eq)
        et_einsum_set_size(&re, oa, strtoll(eq + 1, NULL, 10), NULL);
    if (have_peaks && bk->best.source != ET_BEST_FALLBACK) {
        if (et_roofline_compute(&re, &peaks, &bk->roof, why,
                                sizeof why) == ET_OK)
            bk->have_roof = 1;
        else
            api_logf(o->log, o->log_arg, ET_LOG_WARN, "no roofline: %s",
                     why);
    }
    return ET_OK;
}

et_status et_best_kernel_find(const et_problem *p, const et_best_options *o,
                              et_best_kernel **out, et_diag *diag)
{
    return api_best_kernel_find(NULL, p, o, out, diag);
}

et_status api_best_kernel_find(et_session *s, const et_problem *p,
                               const et_best_options *o,
                               et_best_kernel **out, et_diag *diag)
{
    API_DIAG(diag);
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_best_options, o, diag);
    API_NEED(diag, p, "p");
    if (s && !o_v.log) {
        o_v.log = s->log;
        o_v.log_arg = s->log_arg;
    }
    et_best_kernel *bk = calloc(1, sizeof *bk);
    if (!bk)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    bk->e = p->e;
    et_error err = {{0}};
    et_db *db = NULL;
    bool own_db = false;
    et_device *dev = NULL;
    /* the database first: a file that is not eintune's costs no worker */
    et_status st = api_session_db(s, o->db, &db, &own_db, diag);
    if (st != ET_OK)
        goto fail;
    snprintf(bk->db, sizeof bk->db, "%s", et_db_path(db));
    api_logf(o->log, o->log_arg, ET_LOG_DEBUG, "database %s", bk->db);
    if (s) {
        bk->info = s->dev->info;
    } else {
        st = et_device_open_isolated(o->device, NULL, &dev, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                      : ET_INPUT_NONE, &err);
            goto fail;
        }
        bk->info = dev->info;
        et_device_close(dev);
    }
    bool found = false;
    st = et_best_find(db, &bk->e, &bk->info, o->exact != 0, &bk->best,
                      &found, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto fail;
    }
    if (!found) {
        st = api_no_kernel(diag, &bk->e, &bk->info, bk->db, o->exact != 0);
        goto fail;
    }
    bk->raced = api_best_race_lookup(db, &bk->best, &bk->race);
    /* the einsum the kernel runs: with an open axis for an open answer */
    bk->e = bk->best.e;
    best_kernel_log(bk, o);
    if (o->roofline) {
        st = best_kernel_roofline(bk, db, o, diag);
        if (st != ET_OK)
            goto fail;
    }
    if (own_db)
        et_db_close(db);
    *out = bk;
    return ET_OK;
fail:
    if (own_db)
        et_db_close(db);
    free(bk);
    return st;
}

void et_best_kernel_free(et_best_kernel *bk)
{
    free(bk);
}

void et_best_kernel_info(const et_best_kernel *bk, et_best_info *out)
{
    if (!out)
        return;
    if (!bk) {
        memset(out, 0, sizeof *out);
        return;
    }
    api_best_info_fill(&bk->best, &bk->info, out);
    api_best_info_race(bk->raced ? &bk->race : NULL, out);
}

/* bk as its report shows it (report/report.h), kname its kernel's name
 * (cap bytes); -1 when the kernel cannot be rendered. */
static int best_report_of(const et_best_kernel *bk, char *kname, size_t cap,
                          report_best *out)
{
    if (api_best_kernel_name(bk, kname, cap) != 0)
        return -1;
    out->e = &bk->e;
    out->info = &bk->info;
    out->best = &bk->best;
    out->kernel = kname;
    out->roof = bk->have_roof ? &bk->roof : NULL;
    out->race = bk->raced ? &bk->race : NULL;
    return 0;
}

int et_best_report_print(const et_best_kernel *bk, FILE *f)
{
    char kname[160];
    report_best rb;
    if (!bk || !f || best_report_of(bk, kname, sizeof kname, &rb) != 0)
        return -1;
    report_best_print(&rb, f);
    return 0;
}

char *et_best_report_json(const et_best_kernel *bk)
{
    char kname[160];
    report_best rb;
    if (!bk || best_report_of(bk, kname, sizeof kname, &rb) != 0)
        return NULL;
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "einsum", bk->e.text);
    api_json_problem(doc, &bk->e);
    report_best_json(&rb, doc);
    return api_json_own(report_json_text(doc));
}

et_status api_deliver_verify(const et_device_info *info, const et_kernel *k,
                             const et_best *best, const int64_t *extra,
                             int n_extra, char *line, size_t cap,
                             et_diag *diag)
{
    et_error err = {{0}};
    et_kernel *own = NULL;
    et_device *dev = NULL;
    et_deliver_result res;
    memset(&res, 0, sizeof res);
    et_status st = ET_OK;
    if (k->target.backend != info->target.backend) {
        /* the same kernel in the device's own dialect */
        char why[512] = "";
        st = et_kernel_init(&k->e, &info->target, &own);
        if (st == ET_OK)
            st = et_kernel_apply_opts(own, best->opt, best->n_opts, why,
                                      sizeof why);
        if (st != ET_OK) {
            st = api_fail(diag, st, ET_INPUT_NONE,
                          "cannot verify the kernel on %s: %s", info->name,
                          why[0] ? why : et_status_str(st));
            goto done;
        }
        k = own;
    }
    int64_t sizes[ET_DELIVER_MAX_SIZES];
    int n = 0;
    if (et_einsum_open_axis(&k->e) >= 0) {
        int64_t at = et_deliver_tuned_at(&best->trial);
        n = et_deliver_open_sizes(at > 0 ? at : ET_OPEN_DEFAULT_SIZE, extra,
                                  n_extra, sizes);
    }
    st = et_device_open_isolated(info->spec, NULL, &dev, &err);
    if (st != ET_OK) {
        api_fail(diag, st, ET_INPUT_DEVICE,
                 "cannot open %s to verify the kernel: %s", info->spec,
                 err.msg);
        goto done;
    }
    st = et_deliver_verify(dev, k, sizes, n, &res, &err);
    if (st != ET_OK) {
        api_fail(diag, st == ET_ERR_BUILD ? ET_ERR_BUILD : st, ET_INPUT_NONE,
                 "cannot verify the kernel on %s: %s", info->name, err.msg);
        goto done;
    }
    snprintf(line, cap, "%s, on %s", res.summary, info->name);
    if (!res.ok)
        st = api_fail(diag, ET_ERR_BUILD, ET_INPUT_NONE,
                      "the kernel (%s) fails verification on %s: %s",
                      best->opts[0] ? best->opts : "untransformed",
                      info->name, res.reason);
done:
    if (dev)
        et_device_close(dev);
    et_kernel_free(own);
    return st;
}
