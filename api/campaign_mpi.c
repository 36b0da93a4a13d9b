/*
 * campaign_mpi.c - a campaign spread over the ranks of an MPI job: one
 * problem per free rank (docs/scale-out.md, scale/scale.h's campaign
 * messages).
 *
 * Who searches: the rank that tunes a problem runs its whole tuning run
 * (search, evaluations, final race) on its own device, as `eintune tune`
 * without MPI would, and sends rank 0 only what goes to the database: the
 * lookups of trials (answered by rank 0, so a resumed campaign answers
 * what an earlier run measured), the trials, the race, and the problem's
 * result. That is the simplest split that keeps rank 0 the only owner of
 * the database: rank 0 runs no search and needs no device, a rank's run
 * is the same code as a run on one machine, and a problem's figures
 * (candidates, race, speed-up) all come from one device. The price: a
 * problem is as fast as one rank; spreading one problem's candidates over
 * ranks is `mpirun eintune tune`'s job.
 *
 * Rank 0 hands problems out dynamically: each rank asks for the next
 * problem when it is free, problems finished by an earlier run are
 * answered from the database before any is handed out, and every rank is
 * told to stop once none is left (or the run was cancelled).
 */
#include "api/campaign_impl.h"

#include "base/clock.h"
#include "measure/remote.h"
#include "scale/scale.h"
#include "spaces/space.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a rank that tunes problems ----------------------------------------- */

typedef struct worker_store {
    et_scale *s;
    int problem;
} worker_store;

static et_status ws_lookup(void *ctx, const et_db_trial *key,
                           et_db_trial *out, bool *found, et_error *err)
{
    worker_store *w = ctx;
    return et_scale_campaign_lookup(w->s, w->problem, key, out, found, err);
}

static et_status ws_record(void *ctx, const et_db_trial *tr, et_error *err)
{
    worker_store *w = ctx;
    return et_scale_campaign_record(w->s, w->problem, tr, err);
}

static et_status ws_race(void *ctx, const et_db_race *r, et_error *err)
{
    worker_store *w = ctx;
    return et_scale_campaign_race(w->s, w->problem, r, err);
}

/* The log of a rank's runs, its lines marked with the rank. */
typedef struct rank_log {
    const et_campaign_options *o;
    int rank;
} rank_log;

static void rank_log_fn(void *arg, et_log_level lvl, const char *msg)
{
    rank_log *rl = arg;
    api_logf(rl->o->log, rl->o->log_arg, lvl, "rank %d: %s", rl->rank, msg);
}

static void rank_tune_log(void *arg, et_tune_level lvl, const char *msg)
{
    rank_log_fn(arg, lvl == ET_TUNE_DEBUG  ? ET_LOG_DEBUG
                     : lvl == ET_TUNE_WARN ? ET_LOG_WARN
                                           : ET_LOG_INFO,
                msg);
}

static et_status serve(const et_campaign *c, const et_campaign_options *o,
                       et_scale *s, et_campaign_report *r, et_diag *diag)
{
    rank_log rl = {o, r->rank};
    char spec[64], cpus[64];
    et_scale_campaign_device(s, o->device, spec, sizeof spec, cpus,
                             sizeof cpus, rank_tune_log, &rl);
    et_device *dev = NULL;
    et_error e1 = {{0}}, err = {{0}};
    et_status own = et_device_open_isolated(spec, NULL, &dev, &e1);
    bool go = false;
    et_status st = et_scale_campaign_hello(s, own, &e1, spec, cpus,
                                           dev ? &dev->info : NULL, &go,
                                           &err);
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    if (own != ET_OK) {
        /* rank 0 stopped the run for it; this rank says why too */
        et_errorf(&err, own, "rank %d (device %s): %s", r->rank, spec,
                  e1.msg);
        st = api_fail_err(diag, own, own == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                         : ET_INPUT_NONE,
                          &err);
        goto out;
    }
    if (!go)
        goto out; /* another rank's failure: rank 0 says it */
    campaign_describe_device(r, &dev->info);
    if (cpus[0])
        rank_log_fn(&rl, ET_LOG_INFO, cpus);
    for (;;) {
        int i = -1;
        if ((st = et_scale_campaign_ask(s, &i, &err)) != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (i < 0 || i >= c->n)
            break;
        const campaign_problem *cp = &c->p[i];
        et_campaign_entry *e = &r->e[i];
        worker_store ws = {s, i};
        et_tune_store store = {ws_lookup, ws_record, ws_race, &ws};
        et_tune_options to;
        campaign_tune_options(cp, o, &to);
        to.log = rank_log_fn;
        to.log_arg = &rl;
        api_tune_env env = {false, true, dev, &store};
        et_tune_report *rep = NULL;
        et_diag d;
        memset(&d, 0, sizeof d);
        et_status rs = api_tune_run(cp->p, &to, &env, &rep, &d);
        campaign_entry_from_run(e, rs, &d, rep);
        et_tune_report_free(rep);
        e->rank = r->rank;
        char *text = e->state == ET_CAMPAIGN_TUNED
                         ? campaign_summary_text(&e->summary)
                         : NULL;
        /* a cancelled run is not a finished problem: rank 0 leaves it */
        et_status ds = e->state == ET_CAMPAIGN_TUNED ? ET_OK
                       : rs != ET_OK                 ? rs
                                                     : ET_ERR_INTERNAL;
        st = et_scale_campaign_done(s, i, ds,
                                    e->state == ET_CAMPAIGN_NOT_RUN
                                        ? "cancelled"
                                        : e->message,
                                    text ? text : "", &err);
        free(text);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
    }
    st = ET_OK;
out:
    if (dev)
        et_device_close(dev);
    return st;
}

/* ---- rank 0 ------------------------------------------------------------- */

/* Rank 0's ids of problem i's rows: einsum, space. */
static et_status ids(et_db *db, const campaign_problem *cp, int64_t *eid,
                     int64_t *sid, et_error *err)
{
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx",
             (unsigned long long)cp->space->hash);
    et_status st = et_db_einsum_id(db, &cp->p->e, eid, err);
    if (st == ET_OK)
        st = et_db_space_id(db, et_space_name(cp->space), hash, sid, err);
    return st;
}

/* One message of a rank (m) with the database. */
static et_status handle(const et_campaign *c, const et_campaign_options *o,
                        et_scale *s, et_db *db, int64_t did,
                        et_campaign_report *r, const et_scale_cmsg *m,
                        int *next, int *active, et_diag *diag)
{
    et_error err = {{0}};
    et_status st = ET_OK;
    if (m->kind == ET_CMSG_ASK) {
        while (*next < c->n && r->e[*next].state != ET_CAMPAIGN_NOT_RUN)
            (*next)++;
        int give = (o->cancel && *o->cancel) || *next >= c->n ? -1 : *next;
        if (give >= 0) {
            const campaign_problem *cp = &c->p[give];
            r->e[give].rank = m->rank;
            r->e[give].state = ET_CAMPAIGN_NOT_RUN;
            api_logf(o->log, o->log_arg, ET_LOG_INFO,
                     "problem %d/%d (line %d) to rank %d: %s %s %s, space "
                     "%s, %s search, budget %d", give + 1, c->n, cp->line,
                     m->rank, cp->einsum, cp->shape, cp->dtype,
                     et_space_name(cp->space), cp->search, cp->budget);
            (*next)++;
        } else {
            (*active)--;
        }
        st = et_scale_campaign_give(s, m->rank, give, &err);
        return st == ET_OK ? ET_OK : api_fail_err(diag, st, ET_INPUT_NONE,
                                                   &err);
    }
    if (m->problem < 0 || m->problem >= c->n)
        return ET_OK; /* nothing to do with it */
    const campaign_problem *cp = &c->p[m->problem];
    et_campaign_entry *e = &r->e[m->problem];
    int64_t eid = 0, sid = 0;
    switch (m->kind) {
    case ET_CMSG_LOOKUP: {
        et_db_trial key = m->trial, got;
        bool found = false;
        st = ids(db, cp, &eid, &sid, &err);
        key.einsum_id = eid;
        key.device_id = did;
        if (st == ET_OK)
            st = et_db_trial_lookup(db, &key, &got, &found, &err);
        if (st != ET_OK) {
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "database lookup for rank %d failed: %s", m->rank,
                     err.msg);
            found = false;
        }
        st = et_scale_campaign_answer(s, m->rank, &got, found, &err);
        break;
    }
    case ET_CMSG_RECORD: {
        et_db_trial tr = m->trial;
        st = ids(db, cp, &eid, &sid, &err);
        tr.einsum_id = eid;
        tr.device_id = did;
        tr.space_id = sid;
        if (st == ET_OK)
            st = et_db_trial_record(db, &tr, NULL, &err);
        if (st != ET_OK)
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "a trial of rank %d is not recorded: %s", m->rank,
                     err.msg);
        st = ET_OK;
        break;
    }
    case ET_CMSG_RACE: {
        et_db_race *race = malloc(sizeof *race);
        if (!race)
            return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                            "out of memory");
        *race = m->race;
        st = ids(db, cp, &eid, &sid, &err);
        race->einsum_id = eid;
        race->device_id = did;
        if (st == ET_OK)
            st = et_db_race_record(db, race, NULL, &err);
        if (st != ET_OK)
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "the race of rank %d is not recorded: %s", m->rank,
                     err.msg);
        free(race);
        st = ET_OK;
        break;
    }
    case ET_CMSG_DONE:
        e->rank = m->rank;
        if (m->status == ET_OK &&
            campaign_summary_parse(m->text, &e->summary)) {
            e->state = ET_CAMPAIGN_TUNED;
            st = campaign_record(db, cp, did, e, &err);
            if (st != ET_OK)
                return api_fail_err(diag, st, ET_INPUT_NONE, &err);
        } else if (strcmp(m->msg, "cancelled") == 0) {
            e->state = ET_CAMPAIGN_NOT_RUN;
        } else {
            e->state = ET_CAMPAIGN_FAILED;
            e->status = m->status != ET_OK ? (et_status)m->status
                                           : ET_ERR_INTERNAL;
            snprintf(e->message, sizeof e->message, "%s",
                     m->msg[0] ? m->msg : "no result");
            api_logf(o->log, o->log_arg, ET_LOG_WARN,
                     "problem %d failed on rank %d: %s", m->problem + 1,
                     m->rank, e->message);
        }
        if (o->done)
            o->done(o->done_arg, e);
        break;
    default:
        break;
    }
    if (st != ET_OK)
        return api_fail_err(diag, st, ET_INPUT_NONE, &err);
    return ET_OK;
}

static et_status lead(const et_campaign *c, const et_campaign_options *o,
                      et_scale *s, et_campaign_report *r, et_diag *diag)
{
    int n = et_scale_size(s);
    et_scale_rank *ranks = calloc((size_t)n, sizeof *ranks);
    if (!ranks)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    et_device_info info;
    memset(&info, 0, sizeof info);
    et_error err = {{0}};
    et_db *db = NULL;
    int64_t did = 0;
    et_status st = et_scale_campaign_start(s, ranks, &info, &err);
    if (st != ET_OK) {
        /* every rank was told to stop */
        api_fail_err(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                  : ET_INPUT_NONE, &err);
        free(ranks);
        return st;
    }
    campaign_describe_device(r, &info);
    for (int k = 1; k < n; k++)
        api_logf(o->log, o->log_arg, ET_LOG_INFO,
                 "rank %d on %s: %s (%s)%s%s", k, ranks[k].host,
                 ranks[k].info.name, ranks[k].spec,
                 ranks[k].cpus[0] ? ", bound to cores " : "", ranks[k].cpus);
    free(ranks);
    int active = n - 1, next = 0;
    st = et_db_open(o->db, &db, &err);
    if (st == ET_OK) {
        snprintf(r->db, sizeof r->db, "%s", et_db_path(db));
        st = et_db_device_id(db, &info, &did, &err);
    }
    if (st != ET_OK) {
        api_fail_err(diag, st, ET_INPUT_FILE, &err);
        next = c->n; /* nothing is handed out: the ranks are stopped */
    }
    /* problems finished before: answered now, never handed out */
    for (int i = 0; st == ET_OK && !o->retime && i < c->n; i++) {
        bool found = false;
        st = campaign_finished(db, &c->p[i], did, &r->e[i], &found, &err);
        if (st != ET_OK) {
            api_fail_err(diag, st, ET_INPUT_NONE, &err);
            next = c->n;
        } else if (found) {
            api_logf(o->log, o->log_arg, ET_LOG_INFO,
                     "problem %d/%d (line %d): %s %s %s: finished before, "
                     "answered from the database", i + 1, c->n,
                     c->p[i].line, c->p[i].einsum, c->p[i].shape,
                     c->p[i].dtype);
            if (o->done)
                o->done(o->done_arg, &r->e[i]);
        }
    }
    et_status first = st;
    while (active > 0) {
        et_scale_cmsg m;
        et_diag d2;
        memset(&d2, 0, sizeof d2);
        st = et_scale_campaign_next(s, &m, &err);
        if (st != ET_OK) {
            et_scale_cmsg_clear(&m);
            if (first == ET_OK)
                first = api_fail_err(diag, st, ET_INPUT_NONE, &err);
            break;
        }
        if (first != ET_OK && m.kind == ET_CMSG_ASK)
            next = c->n;
        st = handle(c, o, s, db, did, r, &m, &next, &active, &d2);
        et_scale_cmsg_clear(&m);
        if (st != ET_OK && first == ET_OK) {
            *diag = d2;
            first = st;
            next = c->n; /* stop handing out; ranks finish what they have */
        }
    }
    et_db_close(db);
    return first;
}

et_status campaign_mpi_maybe(const et_campaign *c,
                             const et_campaign_options *o,
                             et_campaign_report *r, bool *scaled,
                             et_diag *diag)
{
    *scaled = false;
    et_scale_env env;
    et_scale_env_get(&env);
    if (!o->comm && !(env.launched && env.size > 1))
        return ET_OK;
    if (!et_scale_available())
        return api_fail(diag, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                        "scale-out is off: eintune was built without MPI, "
                        "and this is rank %d of %d under an MPI launcher "
                        "(run it without mpirun, or rebuild with "
                        "libopenmpi-dev installed)", env.rank, env.size);
    et_scale *s = NULL;
    et_error err = {{0}};
    et_status st = et_scale_join(o->comm, &s, &err);
    if (st != ET_OK)
        return api_fail_err(diag, st, ET_INPUT_NONE, &err);
    if (et_scale_size(s) == 1) {
        et_scale_free(s);
        return ET_OK;
    }
    *scaled = true;
    r->rank = et_scale_rank_of(s);
    r->n_ranks = et_scale_size(s);
    st = r->rank == 0 ? lead(c, o, s, r, diag) : serve(c, o, s, r, diag);
    et_scale_free(s);
    return st;
}
