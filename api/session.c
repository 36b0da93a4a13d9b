/*
 * session.c - et_session_*: a device, a database and a log opened once and
 * used by every call made through the session (docs/api.md, "Sessions").
 *
 * Each verb (tune, best, load, run, export through a best kernel) has one
 * internal form in its own file taking an et_session *; the path-taking
 * public functions pass NULL and open what their options name for the
 * call, the et_session_* functions pass the session. A session's device
 * is opened isolated (its own worker process), as every path-taking call
 * opens it; its database stays open until et_session_close.
 */
#include "api/api_impl.h"

#include "measure/remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

et_status api_session_db(et_session *s, const char *path, et_db **db,
                         bool *own, et_diag *d)
{
    *db = NULL;
    *own = false;
    if (s) {
        *db = s->db;
        return ET_OK;
    }
    et_error err = {{0}};
    et_status st = et_db_open(path, db, &err);
    if (st != ET_OK) {
        api_fail_err(d, st, ET_INPUT_FILE, &err);
        if (d && path)
            snprintf(d->file, sizeof d->file, "%s", path);
        return st;
    }
    *own = true;
    return ET_OK;
}

et_status et_session_open(const et_session_options *o, et_session **out,
                          et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_OPTIONS(et_session_options, o, diag);
    et_session *s = calloc(1, sizeof *s);
    if (!s)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    s->log = o->log;
    s->log_arg = o->log_arg;
    snprintf(s->device, sizeof s->device, "%s", o->device ? o->device : "");
    bool own = false;
    /* the database first: a file that is not eintune's costs no worker */
    et_status st = api_session_db(NULL, o->db, &s->db, &own, diag);
    if (st != ET_OK)
        goto fail;
    et_error err = {{0}};
    st = et_device_open_isolated(o->device, NULL, &s->dev, &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        goto fail;
    }
    api_logf(s->log, s->log_arg, ET_LOG_INFO, "session: device %s (%s), "
             "database %s", s->dev->info.name, s->dev->info.spec,
             et_db_path(s->db));
    *out = s;
    return ET_OK;
fail:
    et_session_close(s);
    return st;
}

void et_session_close(et_session *s)
{
    if (!s)
        return;
    if (s->dev)
        et_device_close(s->dev);
    et_db_close(s->db);
    free(s);
}

const char *et_session_device_name(const et_session *s)
{
    return s && s->dev ? s->dev->info.name : "";
}

const char *et_session_db_path(const et_session *s)
{
    return s && s->db ? et_db_path(s->db) : "";
}

et_status et_session_tune(et_session *s, const et_problem *p,
                          const et_tune_options *o, et_tune_report **out,
                          et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    API_NEED(diag, p, "p");
    API_OPTIONS(et_tune_options, o, diag);
    if (!o_v.log) {
        o_v.log = s->log;
        o_v.log_arg = s->log_arg;
    }
    /* the session's device and database; never an MPI job's ranks, which
     * have a device each (et_tune_run_full spreads a run over them) */
    api_tune_env env = {true, true, s->dev, NULL, s->db};
    return api_tune_run(p, o, &env, out, diag);
}

et_status et_session_best_lookup(et_session *s, const et_problem *p,
                                 et_best_info *out, int *found,
                                 et_diag *diag)
{
    api_diag_clear(diag);
    if (found)
        *found = 0;
    API_NEED(diag, out, "out");
    memset(out, 0, sizeof *out);
    API_NEED(diag, s, "s");
    return api_best_lookup(s, p, NULL, NULL, out, found, diag);
}

et_status et_session_best_kernel_find(et_session *s, const et_problem *p,
                                      const et_best_options *o,
                                      et_best_kernel **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    return api_best_kernel_find(s, p, o, out, diag);
}

et_status et_session_runner_open(et_session *s, const et_problem *p,
                                 const et_run_options *o, et_runner **out,
                                 et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    return api_runner_open(s, p, o, out, diag);
}

et_status et_session_run(et_session *s, const et_problem *p,
                         const et_run_options *o, void *out,
                         const void *const *in, et_run_result *res,
                         et_diag *diag)
{
    api_diag_clear(diag);
    if (res)
        memset(res, 0, sizeof *res);
    API_NEED(diag, s, "s");
    return api_run(s, p, o, out, in, res, diag);
}

et_status et_session_cl_kernel_load(et_session *s, const et_problem *p,
                                    struct _cl_context *ctx,
                                    struct _cl_device_id *dev,
                                    const et_load_options *o,
                                    et_loaded_kernel **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    return api_cl_kernel_load(s, p, ctx, dev, o, out, diag);
}

et_status et_session_campaign_run(et_session *s, const et_campaign *c,
                                  const et_campaign_options *o,
                                  et_campaign_report **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    return api_campaign_run(s, c, o, out, diag);
}

et_status et_session_cu_kernel_load(et_session *s, const et_problem *p,
                                    int device, const et_load_options *o,
                                    et_loaded_kernel **out, et_diag *diag)
{
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, s, "s");
    return api_cu_kernel_load(s, p, device, o, out, diag);
}
