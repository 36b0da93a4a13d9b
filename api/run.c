/*
 * run.c - running a kernel on the caller's host arrays (et_runner_* and
 * the one-call et_run): what `eintune run` does, step by step so that a
 * front end can write its output before verifying and timing. The
 * arguments, the device and database opened (or a session's), the best
 * kernel looked up and the opts mapped; tune/runner.h builds, runs,
 * checks, verifies and times the kernel.
 *
 * All device work goes through an isolated device (a worker process, see
 * measure/remote.h): a kernel that hangs or crashes the driver costs the
 * run, never the caller's process.
 */
#include "api/best_impl.h"

#include "db/db.h"
#include "measure/remote.h"
#include "roofline/report.h"
#include "tune/peaks_db.h"
#include "tune/runner.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct et_runner {
    const et_einsum *e;         /* the caller's problem's */
    et_run_options o;
    et_db *db;                  /* with o.best */
    et_device *dev;
    bool shared;                /* db and dev are a session's: not closed */
    et_best *best;              /* found by et_runner_find_best */
    et_krun k;                  /* the kernel, its runs and figures */
    int have_roof;
    et_roofline roof;
    char roof_note[256];      /* the peaks were measured again: why */
};

et_status et_runner_open(const et_problem *p, const et_run_options *o,
                         et_runner **out, et_diag *diag)
{
    return api_runner_open(NULL, p, o, out, diag);
}

et_status api_runner_open(et_session *s, const et_problem *p,
                          const et_run_options *o, et_runner **out,
                          et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_run_options, o, diag);
    API_NEED(diag, p, "p");
    et_runner *r = calloc(1, sizeof *r);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    r->e = &p->e;
    r->o = *o;
    if (s && !r->o.log) {
        r->o.log = s->log;
        r->o.log_arg = s->log_arg;
    }
    o = &r->o;
    et_error err = {{0}};
    et_status st = ET_OK;
    r->shared = s != NULL;
    /* the database before the device: a refused file costs no worker.
     * Opened for the best kernel, and wherever one is named or the session
     * has one: the roofline takes its peaks from it, as `eintune peaks
     * --db` stores them (without one, from the cache file) */
    if (o->best || o->db || s) {
        bool own = false;
        st = api_session_db(s, o->db, &r->db, &own, diag);
        if (st != ET_OK)
            goto fail;
    }
    if (s)
        r->dev = s->dev;
    else
        st = et_device_open_isolated(o->device, NULL, &r->dev, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        goto fail;
    }
    r->k.e = r->e;
    r->k.dev = r->dev;
    r->k.log = o->log;
    r->k.log_arg = o->log_arg;
    api_log(o->log, o->log_arg, ET_LOG_INFO, "device %s (%s)",
            r->dev->info.name, r->dev->info.spec);
    if (r->e->acc_dtype == ET_F64 && !r->dev->info.target.has_fp64) {
        st = api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                      "device %s has no fp64 support", r->dev->info.name);
        goto fail;
    }
    *out = r;
    return ET_OK;
fail:
    et_runner_free(r);
    return st;
}

et_status et_runner_find_best(et_runner *r, et_best_info *info, int *found,
                              et_diag *diag)
{
    api_diag_clear(diag);
    if (found)
        *found = 0;
    API_NEED(diag, r, "r");
    if (!r->db)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                        "the runner was opened without best");
    if (!r->best) {
        r->best = malloc(sizeof *r->best);
        if (!r->best)
            return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
    }
    et_error err = {{0}};
    bool hit = false;
    et_status st = et_best_find(r->db, r->e, &r->dev->info,
                                r->o.exact != 0, r->best, &hit, &err);
    if (st != ET_OK || !hit) {
        free(r->best);
        r->best = NULL;
        return st != ET_OK ? api_fail_err(diag, st, ET_INPUT_NONE, &err)
                           : api_no_kernel(diag, r->e, &r->dev->info,
                                           et_db_path(r->db),
                                           r->o.exact != 0);
    }
    if (found)
        *found = 1;
    if (info) {
        et_db_race_pick pick;
        api_best_info_fill(r->best, &r->dev->info, info);
        api_best_info_race(api_best_race_lookup(r->db, r->best, &pick)
                               ? &pick
                               : NULL,
                           info);
    }
    et_krun_say_best(&r->k, r->best);
    return ET_OK;
}

/* A failure of tune/runner.h in diag: its status and message, about no
 * input but for refused opts (ET_INPUT_OPTS). */
static et_status run_fail(et_diag *diag, et_status st, const et_error *err)
{
    if (st == ET_ERR_REFUSED)
        return api_fail(diag, st, ET_INPUT_OPTS, "%s", err->msg);
    return api_fail_err(diag, st, ET_INPUT_NONE, err);
}

/* A NULL among the inputs of the problem's n_ops: ET_ERR_INPUT naming it
 * for fn. */
static et_status inputs_check(const et_runner *r, const void *const *in,
                              const char *fn, et_diag *diag)
{
    for (int i = 0; i < r->e->n_ops; i++)
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "%s: in[%d] (input %d) is NULL", fn, i, i);
    return ET_OK;
}

et_status et_runner_build(et_runner *r, et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    if (r->k.kern)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "the kernel is built already");
    et_opt *opts = calloc(ET_MAX_OPTS, sizeof *opts);
    if (!opts)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    int n_opts = 0;
    et_status st = ET_OK;
    if (r->best) {
        memcpy(opts, r->best->opt, (size_t)r->best->n_opts * sizeof *opts);
        n_opts = r->best->n_opts;
    } else if (r->o.opts && *r->o.opts) {
        st = et_opts_parse(r->o.opts, opts, ET_MAX_OPTS, &n_opts, diag);
        if (st != ET_OK) {
            diag->status = st;
            diag->input = ET_INPUT_OPTS;
            goto out;
        }
    }
    et_error err = {{0}};
    r->k.best = r->best;
    st = et_krun_build(&r->k, opts, n_opts, &err);
    if (st != ET_OK)
        run_fail(diag, st, &err);
out:
    free(opts);
    return st;
}

et_status et_runner_exec(et_runner *r, void *out, const void *const *in,
                         et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, out, "out");
    API_NEED(diag, in, "in");
    if (!r->k.prog)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "no kernel built (et_runner_build)");
    et_status st = inputs_check(r, in, __func__, diag);
    if (st != ET_OK)
        return st;
    et_error err = {{0}};
    st = et_krun_exec(&r->k, out, in, &err);
    return st != ET_OK ? run_fail(diag, st, &err) : ET_OK;
}

et_status et_runner_check_output(et_runner *r, const void *const *in,
                                 const void *out, et_run_verification *v,
                                 et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, in, "in");
    API_NEED(diag, out, "out");
    API_NEED(diag, v, "v");
    et_status st = inputs_check(r, in, __func__, diag);
    if (st != ET_OK)
        return st;
    v->output_checked = 0;
    v->output_ok = 0;
    v->output_max_norm_err = 0;
    v->output_reason[0] = '\0';
    et_error err = {{0}};
    st = et_krun_check_output(&r->k, in, out, &err);
    if (st != ET_OK)
        return run_fail(diag, st, &err);
    v->output_checked = 1;
    v->output_ok = r->k.output_ok;
    v->output_max_norm_err = r->k.output_max_norm_err;
    snprintf(v->output_reason, sizeof v->output_reason, "%s",
             r->k.output_reason);
    return ET_OK;
}

et_status et_runner_verify(et_runner *r, et_run_verification *v,
                           et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, r, "r");
    API_NEED(diag, v, "v");
    if (!r->k.kern)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "no kernel built (et_runner_build)");
    et_error err = {{0}};
    et_status st = et_krun_verify(&r->k, &err);
    if (st != ET_OK)
        return run_fail(diag, st, &err);
    const et_verify_result *vr = &r->k.vr;
    v->verified = 1;
    v->outcome = vr->outcome;
    v->trials = vr->trials;
    v->max_norm_err = vr->max_norm_err;
    v->p_value = vr->p_value;
    snprintf(v->reason, sizeof v->reason, "%s", vr->reason);
    snprintf(v->summary, sizeof v->summary, "%s", r->k.summary);
    return ET_OK;
}

et_status et_runner_time(et_runner *r, et_run_timing *t, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, t, "t");
    memset(t, 0, sizeof *t);
    API_NEED(diag, r, "r");
    if (!r->k.n_bufs)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "nothing ran yet (et_runner_exec)");
    et_error err = {{0}};
    et_status st = et_krun_time(&r->k, &err);
    if (st != ET_OK)
        return run_fail(diag, st, &err);
    const et_timing *tm = &r->k.timing;
    t->time_s = tm->median_s;
    t->ci95_s[0] = tm->low_s;
    t->ci95_s[1] = tm->high_s;
    t->cv = tm->cv;
    t->runs = tm->runs;
    t->gops = et_krun_gops(r->e, tm->median_s);
    et_timing_format(tm, t->summary, sizeof t->summary);
    return ET_OK;
}

et_status et_runner_roofline(et_runner *r, FILE *table, const char *plot,
                             int *drawn, et_diag *diag)
{
    api_diag_clear(diag);
    if (drawn)
        *drawn = 0;
    API_NEED(diag, r, "r");
    if (!r->k.timed)
        return api_fail(diag, ET_ERR_INPUT, ET_INPUT_NONE,
                        "not timed yet (et_runner_time)");
    et_error err = {{0}};
    et_peaks pk;
    et_peaks_get_opts po;
    memset(&po, 0, sizeof po);
    char why[256] = "";
    double median = r->k.timing.median_s;
    if (drawn)
        *drawn = 0;
    if (et_peaks_get_db(r->dev, r->db, &po, &pk, &err) != ET_OK) {
        api_log(r->o.log, r->o.log_arg, ET_LOG_WARN, "no roofline: %s",
                err.msg);
        return ET_OK;
    }
    if (et_roofline_compute(r->e, &pk, &r->roof, why, sizeof why) !=
        ET_OK) {
        api_log(r->o.log, r->o.log_arg, ET_LOG_WARN, "no roofline: %s", why);
        return ET_OK;
    }
    r->have_roof = 1;
    /* a kernel above the roofline: the peaks are measured again */
    api_roof_again(r->dev, r->db, r->e, median, r->k.timing.high_s, &pk,
                   &r->roof, "this kernel", r->roof_note,
                   sizeof r->roof_note, r->o.log, r->o.log_arg);
    if (table)
        et_roofline_table(table, &r->roof, median);
    if (plot) {
        et_plot_point pt = {r->roof.intensity,
                            (double)r->roof.ops_total / median / 1e9};
        char title[ET_MAX_TEXT + 300], sub[2600], opts[2048] = "";
        api_problem_title(r->e, title, sizeof title);
        if (r->k.kern)
            et_opts_format(r->k.kern->opts, r->k.kern->n_opts, opts,
                           sizeof opts);
        snprintf(sub, sizeof sub, "%.255s (%s)   %.2000s, median %.4g ms",
                 r->dev->info.name,
                 et_backend_name(r->dev->info.target.backend),
                 opts[0] ? opts : "untransformed", median * 1e3);
        char label[96];
        snprintf(label, sizeof label, "this kernel: %.3g GOps/s, %.3g %% of "
                 "the roofline",
                 pt.gops, 100 * et_roofline_ratio(&r->roof, median));
        et_plot pl;
        memset(&pl, 0, sizeof pl);
        pl.peaks = &pk;
        pl.title = title;
        pl.subtitle = sub;
        pl.points = &pt;
        pl.n_points = 1;
        pl.best = 0;
        pl.best_label = label;
        pl.roof_dtypes = api_roof_dtypes(r->e);
        pl.bandwidth_gbs = r->roof.bandwidth_gbs;
        char pwhy[256] = "";
        et_status st = et_plot_write(plot, &pl, pwhy, sizeof pwhy);
        if (st != ET_OK) {
            api_fail(diag, st, ET_INPUT_FILE, "%s", pwhy);
            if (diag)
                snprintf(diag->file, sizeof diag->file, "%s", plot);
            return st;
        }
    }
    if (drawn)
        *drawn = 1;
    return ET_OK;
}

void et_runner_info(const et_runner *r, et_run_info *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    const et_device_info *info = &r->dev->info;
    snprintf(out->device, sizeof out->device, "%s", info->name);
    snprintf(out->spec, sizeof out->spec, "%s", info->spec);
    out->backend = info->target.backend;
    snprintf(out->driver, sizeof out->driver, "%s", info->driver_version);
    if (r->db)
        snprintf(out->db, sizeof out->db, "%s", et_db_path(r->db));
    if (r->k.kern) {
        et_opts_format(r->k.kern->opts, r->k.kern->n_opts, out->opts,
                       sizeof out->opts);
        snprintf(out->kernel, sizeof out->kernel, "%s", r->k.rend.name);
    }
}

char *et_runner_json(const et_runner *r, const char *output)
{
    if (!r)
        return NULL;
    et_run_info info;
    et_runner_info(r, &info);
    cJSON *doc = cJSON_CreateObject();
    if (!doc)
        return NULL;
    cJSON_AddStringToObject(doc, "einsum", r->e->text);
    api_json_problem(doc, r->e);
    cJSON *jdev = cJSON_AddObjectToObject(doc, "device");
    cJSON_AddStringToObject(jdev, "name", info.device);
    cJSON_AddStringToObject(jdev, "backend", et_backend_name(info.backend));
    cJSON_AddStringToObject(jdev, "driver", info.driver);
    cJSON_AddStringToObject(doc, "opts", info.opts);
    cJSON_AddStringToObject(doc, "kernel", info.kernel);
    cJSON_AddStringToObject(doc, "output", output ? output : "");
    if (r->k.checked || r->k.verified) {
        cJSON *jv = cJSON_AddObjectToObject(doc, "verified");
        if (r->k.checked)
            cJSON_AddNumberToObject(jv, "output_max_norm_err",
                                    r->k.output_max_norm_err);
        if (r->k.verified) {
            cJSON_AddNumberToObject(jv, "trials", r->k.vr.trials);
            cJSON_AddNumberToObject(jv, "max_norm_err", r->k.vr.max_norm_err);
            if (isfinite(r->k.vr.p_value))
                cJSON_AddNumberToObject(jv, "p_value", r->k.vr.p_value);
            else
                cJSON_AddNullToObject(jv, "p_value");
            cJSON_AddStringToObject(jv, "status",
                                    et_outcome_name(r->k.vr.outcome));
        }
    }
    if (r->k.timed) {
        const et_timing *t = &r->k.timing;
        cJSON_AddNumberToObject(doc, "time_s", t->median_s);
        cJSON *ci = cJSON_AddArrayToObject(doc, "ci95_s");
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->low_s));
        cJSON_AddItemToArray(ci, cJSON_CreateNumber(t->high_s));
        cJSON_AddNumberToObject(doc, "cv", t->cv);
        cJSON_AddNumberToObject(doc, "runs", t->runs);
        if (r->have_roof && et_report_add_gops(doc, &r->roof, t->median_s)) {
            cJSON_Delete(doc);
            return NULL;
        }
        if (r->roof_note[0])
            cJSON_AddStringToObject(doc, "roofline_note", r->roof_note);
    }
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    return api_json_own(text);
}

void et_runner_free(et_runner *r)
{
    if (!r)
        return;
    et_krun_release(&r->k);
    if (r->dev && !r->shared)
        et_device_close(r->dev);
    free(r->best);
    if (!r->shared)
        et_db_close(r->db);
    free(r);
}

et_status et_run(const et_problem *p, const et_run_options *o, void *out,
                 const void *const *in, et_run_result *res, et_diag *diag)
{
    return api_run(NULL, p, o, out, in, res, diag);
}

et_status api_run(et_session *s, const et_problem *p,
                  const et_run_options *o, void *out,
                  const void *const *in, et_run_result *res, et_diag *diag)
{
    et_diag local;
    et_run_result local_res;
    if (!diag)
        diag = &local;
    if (!res)
        res = &local_res;
    memset(res, 0, sizeof *res);
    api_diag_clear(diag);
    API_OPTIONS(et_run_options, o, diag);
    API_NEED(diag, p, "p");
    API_NEED(diag, out, "out");
    API_NEED(diag, in, "in");
    for (int i = 0; i < p->e.n_ops; i++)
        if (!in[i])
            return api_fail(diag, ET_ERR_INPUT, ET_INPUT_OPTION,
                            "et_run: in[%d] (input %d) is NULL", i, i);
    et_runner *r = NULL;
    et_status st = api_runner_open(s, p, o, &r, diag);
    if (st != ET_OK)
        return st;
    if (o->best) {
        /* nothing known: ET_ERR_NOT_FOUND, api_no_kernel's message */
        st = et_runner_find_best(r, NULL, NULL, diag);
        if (st != ET_OK)
            goto out;
    }
    st = et_runner_build(r, diag);
    if (st == ET_OK)
        st = et_runner_exec(r, out, in, diag);
    if (st == ET_OK && o->verify) {
        st = et_runner_check_output(r, in, out, &res->verify, diag);
        if (st == ET_OK)
            st = et_runner_verify(r, &res->verify, diag);
    }
    if (st == ET_OK && o->time) {
        st = et_runner_time(r, &res->timing, diag);
        res->timed = st == ET_OK;
    }
    if (r->k.kern) {
        et_run_info info;
        et_runner_info(r, &info);
        memcpy(res->opts, info.opts, sizeof res->opts);
        memcpy(res->kernel, info.kernel, sizeof res->kernel);
    }
out:
    et_runner_free(r);
    return st;
}
