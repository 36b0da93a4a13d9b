/*
 * campaign_run.c - a campaign's problems tuned (campaign.h): the key a
 * finished problem is recorded under and its record in the database, one
 * problem tuned through the caller's tuning function, and the campaign in
 * one process, one problem after another.
 *
 * Resuming: a problem tuned to its end is recorded in the database
 * (campaign_results: its result under the einsum, the device and the
 * problem's key, the rest of what defines it); a campaign run again
 * answers those from the database and times nothing for them, and tunes
 * the others, whose trials the database answers as far as they got.
 */
#include "tune/campaign.h"

#include "measure/remote.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

et_status campaign_failf(et_diag *d, et_status st, et_input in,
                         const char *fmt, ...)
{
    if (!d)
        return st;
    d->status = st;
    d->input = in;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
    return st;
}

et_status campaign_fail(et_diag *d, et_status st, et_input in,
                        const et_error *err)
{
    return campaign_failf(d, st, in, "%s", err->msg[0] ? err->msg
                                                       : et_status_str(st));
}

void campaign_logf(const campaign_opts *o, et_log_level lvl,
                   const char *fmt, ...)
{
    if (!o->log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->log(o->log_arg, lvl, buf);
}

/* ---- results ------------------------------------------------------------ */

void campaign_problem_key(const campaign_problem *cp, char *out, size_t cap)
{
    snprintf(out, cap,
             "einsum=%s shape=%s dtype=%s space=%s:%016llx search=%s "
             "budget=%d time_limit=%.17g seed=%llu race=%d%s%s",
             cp->einsum, cp->shape, cp->dtype, cp->space->name,
             (unsigned long long)cp->space->hash, cp->search, cp->budget,
             cp->time_limit_s, (unsigned long long)cp->seed, cp->race,
             cp->tune_at[0] ? " tune_at=" : "", cp->tune_at);
}

et_status campaign_finished(et_db *db, const campaign_problem *cp,
                            int64_t device_id, et_campaign_entry *e,
                            bool *found, et_error *err)
{
    int64_t eid = 0;
    char key[2048];
    *found = false;
    campaign_problem_key(cp, key, sizeof key);
    et_status st = et_db_einsum_id(db, cp->e, &eid, err);
    char *json = NULL;
    int64_t at = 0;
    if (st == ET_OK)
        st = et_db_campaign_lookup(db, eid, device_id, key, &json, &at,
                                   found, err);
    if (st == ET_OK && *found) {
        *found = campaign_summary_parse(json, &e->summary);
        e->finished_at = at;
        e->state = ET_CAMPAIGN_FROM_DB;
    }
    free(json);
    return st;
}

et_status campaign_record(et_db *db, const campaign_problem *cp,
                          int64_t device_id, et_campaign_entry *e,
                          et_error *err)
{
    int64_t eid = 0;
    char key[2048];
    campaign_problem_key(cp, key, sizeof key);
    char *json = campaign_summary_text(&e->summary);
    if (!json)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = et_db_einsum_id(db, cp->e, &eid, err);
    if (st == ET_OK)
        st = et_db_campaign_record(db, eid, device_id, key, json, err);
    free(json);
    e->finished_at = (int64_t)time(NULL);
    return st;
}

void campaign_from_db(const et_campaign *c, const campaign_opts *o, int i,
                      const et_campaign_entry *e)
{
    const campaign_problem *cp = &c->p[i];
    campaign_logf(o, ET_LOG_INFO,
                  "problem %d/%d (line %d): %s %s %s: finished before, "
                  "answered from the database", i + 1, c->n, cp->line,
                  cp->einsum, cp->shape, cp->dtype);
    if (o->done)
        o->done(o->done_arg, e);
}

/* ---- tuning ------------------------------------------------------------- */

void campaign_tune(const campaign_opts *o, const campaign_problem *cp,
                   et_device *dev, const et_tune_store *store, et_log_fn log,
                   void *log_arg, et_campaign_entry *e)
{
    const campaign_tune_req q = {cp, o, dev, store, log, log_arg};
    et_diag d;
    memset(&d, 0, sizeof d);
    et_status st = o->tune(o->tune_arg, &q, &e->summary, &d);
    if (st != ET_OK) {
        e->state = ET_CAMPAIGN_FAILED;
        e->status = st;
        snprintf(e->message, sizeof e->message, "%s", d.msg);
        return;
    }
    e->state = e->summary.cancelled ? ET_CAMPAIGN_NOT_RUN
                                    : ET_CAMPAIGN_TUNED;
}

void campaign_describe_device(et_campaign_report *r, const et_device_info *i)
{
    snprintf(r->device, sizeof r->device, "%s", i->name);
    snprintf(r->backend, sizeof r->backend, "%s",
             et_backend_name(i->target.backend));
    snprintf(r->driver, sizeof r->driver, "%s", i->driver_version);
}

/* Problem i of c in this process: answered from the database, or tuned
 * on dev and recorded. A database error stops the campaign. */
static et_status one_here(const et_campaign *c, const campaign_opts *o,
                          et_db *db, int64_t did, et_device *dev, int i,
                          et_campaign_entry *e, et_diag *d)
{
    const campaign_problem *cp = &c->p[i];
    et_error err = {{0}};
    bool found = false;
    et_status st;
    if (!o->retime &&
        (st = campaign_finished(db, cp, did, e, &found, &err)) != ET_OK)
        return campaign_fail(d, st, ET_INPUT_NONE, &err);
    if (found) {
        campaign_from_db(c, o, i, e);
        return ET_OK;
    }
    campaign_logf(o, ET_LOG_INFO,
                  "problem %d/%d (line %d): %s %s %s, space %s, %s search, "
                  "budget %d", i + 1, c->n, cp->line, cp->einsum, cp->shape,
                  cp->dtype, cp->space->name, cp->search, cp->budget);
    campaign_tune(o, cp, dev, NULL, o->log, o->log_arg, e);
    if (e->state == ET_CAMPAIGN_TUNED &&
        (st = campaign_record(db, cp, did, e, &err)) != ET_OK)
        return campaign_fail(d, st, ET_INPUT_NONE, &err);
    if (e->state == ET_CAMPAIGN_FAILED)
        campaign_logf(o, ET_LOG_WARN, "problem %d failed: %s", i + 1,
                      e->message);
    if (o->done)
        o->done(o->done_arg, e);
    return ET_OK;
}

et_status campaign_run_here(const et_campaign *c, const campaign_opts *o,
                            et_campaign_report *r, et_diag *d)
{
    et_device *dev = o->dev;
    et_db *db = o->open_db;
    et_error err = {{0}};
    et_status st = ET_OK;
    if (!dev)
        st = et_device_open_isolated(o->device, NULL, &dev, &err);
    if (st != ET_OK)
        return campaign_fail(d, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                       : ET_INPUT_NONE,
                             &err);
    campaign_describe_device(r, &dev->info);
    int64_t did = 0;
    if (!db)
        st = et_db_open(o->db, &db, &err);
    if (st != ET_OK) {
        campaign_fail(d, st, ET_INPUT_FILE, &err);
        if (o->db)
            snprintf(d->file, sizeof d->file, "%s", o->db);
        goto out;
    }
    snprintf(r->db, sizeof r->db, "%s", et_db_path(db));
    if ((st = et_db_device_id(db, &dev->info, &did, &err)) != ET_OK) {
        campaign_fail(d, st, ET_INPUT_NONE, &err);
        goto out;
    }
    for (int i = 0; i < c->n && st == ET_OK; i++) {
        if (o->cancel && *o->cancel)
            break;
        st = one_here(c, o, db, did, dev, i, &r->e[i], d);
    }
out:
    if (db != o->open_db)
        et_db_close(db);
    if (dev != o->dev)
        et_device_close(dev);
    return st;
}
