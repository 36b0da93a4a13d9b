/*
 * campaign.c - a campaign spread over the ranks of an MPI job: one
 * problem per free rank (campaign.h, docs/scale-out.md, scale.h's
 * campaign messages), built on tune/campaign.h's pieces.
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
#include "scale/campaign.h"

#include "measure/remote.h"
#include "scale/scale.h"

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
    const campaign_opts *o;
    int rank;
} rank_log;

static void rank_log_fn(void *arg, et_log_level lvl, const char *msg)
{
    rank_log *rl = arg;
    campaign_logf(rl->o, lvl, "rank %d: %s", rl->rank, msg);
}

static void rank_tune_log(void *arg, et_tune_level lvl, const char *msg)
{
    rank_log_fn(arg, lvl == ET_TUNE_DEBUG  ? ET_LOG_DEBUG
                     : lvl == ET_TUNE_WARN ? ET_LOG_WARN
                                           : ET_LOG_INFO,
                msg);
}

/* A rank's problem i tuned on dev, its end sent to rank 0. */
static et_status serve_one(const et_campaign *c, const campaign_opts *o,
                           et_scale *s, et_device *dev, rank_log *rl, int i,
                           et_campaign_entry *e, et_error *err)
{
    worker_store ws = {s, i};
    et_tune_store store = {ws_lookup, ws_record, ws_race, &ws};
    campaign_tune(o, &c->p[i], dev, &store, rank_log_fn, rl, e);
    e->rank = rl->rank;
    char *text = e->state == ET_CAMPAIGN_TUNED
                     ? campaign_summary_text(&e->summary)
                     : NULL;
    /* a cancelled run is not a finished problem: rank 0 leaves it */
    et_status ds = e->state == ET_CAMPAIGN_TUNED    ? ET_OK
                   : e->state == ET_CAMPAIGN_FAILED ? e->status
                                                    : ET_ERR_INTERNAL;
    et_status st = et_scale_campaign_done(s, i, ds,
                                          e->state == ET_CAMPAIGN_NOT_RUN
                                              ? "cancelled"
                                              : e->message,
                                          text ? text : "", err);
    free(text);
    return st;
}

static et_status serve(const et_campaign *c, const campaign_opts *o,
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
        campaign_fail(diag, st, ET_INPUT_NONE, &err);
        goto out;
    }
    if (own != ET_OK) {
        /* rank 0 stopped the run for it; this rank says why too */
        et_errorf(&err, own, "rank %d (device %s): %s", r->rank, spec,
                  e1.msg);
        st = campaign_fail(diag, own, own == ET_ERR_INPUT ? ET_INPUT_DEVICE
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
            campaign_fail(diag, st, ET_INPUT_NONE, &err);
            goto out;
        }
        if (i < 0 || i >= c->n)
            break;
        st = serve_one(c, o, s, dev, &rl, i, &r->e[i], &err);
        if (st != ET_OK) {
            campaign_fail(diag, st, ET_INPUT_NONE, &err);
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

/* Rank 0's state while it hands problems out. */
typedef struct lead_state {
    const et_campaign *c;
    const campaign_opts *o;
    et_scale *s;
    et_db *db;
    int64_t did;              /* the device's row */
    et_campaign_report *r;
    int next;                 /* the next problem to hand out */
    int active;               /* ranks not yet told to stop */
} lead_state;

/* Rank 0's ids of problem i's rows: einsum, space. */
static et_status ids(et_db *db, const campaign_problem *cp, int64_t *eid,
                     int64_t *sid, et_error *err)
{
    char hash[ET_DB_HASH_LEN];
    snprintf(hash, sizeof hash, "%016llx",
             (unsigned long long)cp->space->hash);
    et_status st = et_db_einsum_id(db, cp->e, eid, err);
    if (st == ET_OK)
        st = et_db_space_id(db, cp->space->name, hash, sid, err);
    return st;
}

/* ASK: the next problem not settled for rank m->rank, or STOP. */
static et_status handle_ask(lead_state *L, const et_scale_cmsg *m,
                            et_diag *diag)
{
    const et_campaign *c = L->c;
    const campaign_opts *o = L->o;
    et_error err = {{0}};
    while (L->next < c->n && L->r->e[L->next].state != ET_CAMPAIGN_NOT_RUN)
        L->next++;
    int give = (o->cancel && *o->cancel) || L->next >= c->n ? -1 : L->next;
    if (give >= 0) {
        const campaign_problem *cp = &c->p[give];
        L->r->e[give].rank = m->rank;
        L->r->e[give].state = ET_CAMPAIGN_NOT_RUN;
        campaign_logf(o, ET_LOG_INFO,
                      "problem %d/%d (line %d) to rank %d: %s %s %s, space "
                      "%s, %s search, budget %d", give + 1, c->n, cp->line,
                      m->rank, cp->einsum, cp->shape, cp->dtype,
                      cp->space->name, cp->search, cp->budget);
        L->next++;
    } else {
        L->active--;
    }
    et_status st = et_scale_campaign_give(L->s, m->rank, give, &err);
    return st == ET_OK ? ET_OK : campaign_fail(diag, st, ET_INPUT_NONE,
                                               &err);
}

/* DONE: problem m->problem's end on its rank, recorded when tuned. */
static et_status handle_done(lead_state *L, const et_scale_cmsg *m,
                             et_diag *diag)
{
    const campaign_problem *cp = &L->c->p[m->problem];
    et_campaign_entry *e = &L->r->e[m->problem];
    et_error err = {{0}};
    e->rank = m->rank;
    if (m->status == ET_OK && campaign_summary_parse(m->text, &e->summary)) {
        e->state = ET_CAMPAIGN_TUNED;
        et_status st = campaign_record(L->db, cp, L->did, e, &err);
        if (st != ET_OK)
            return campaign_fail(diag, st, ET_INPUT_NONE, &err);
    } else if (strcmp(m->msg, "cancelled") == 0) {
        e->state = ET_CAMPAIGN_NOT_RUN;
    } else {
        e->state = ET_CAMPAIGN_FAILED;
        e->status = m->status != ET_OK ? (et_status)m->status
                                       : ET_ERR_INTERNAL;
        snprintf(e->message, sizeof e->message, "%s",
                 m->msg[0] ? m->msg : "no result");
        campaign_logf(L->o, ET_LOG_WARN, "problem %d failed on rank %d: %s",
                      m->problem + 1, m->rank, e->message);
    }
    if (L->o->done)
        L->o->done(L->o->done_arg, e);
    return ET_OK;
}

/* LOOKUP, RECORD, RACE: problem m->problem's trials with the database. A
 * failure to record is logged, not fatal. */
static et_status handle_db(lead_state *L, const et_scale_cmsg *m,
                           et_diag *diag)
{
    const campaign_problem *cp = &L->c->p[m->problem];
    et_error err = {{0}};
    int64_t eid = 0, sid = 0;
    et_status st = ids(L->db, cp, &eid, &sid, &err);
    if (m->kind == ET_CMSG_LOOKUP) {
        et_db_trial key = m->trial, got;
        bool found = false;
        key.einsum_id = eid;
        key.device_id = L->did;
        if (st == ET_OK)
            st = et_db_trial_lookup(L->db, &key, &got, &found, &err);
        if (st != ET_OK) {
            campaign_logf(L->o, ET_LOG_WARN,
                          "database lookup for rank %d failed: %s", m->rank,
                          err.msg);
            found = false;
        }
        st = et_scale_campaign_answer(L->s, m->rank, &got, found, &err);
        return st == ET_OK ? ET_OK : campaign_fail(diag, st, ET_INPUT_NONE,
                                                   &err);
    }
    if (m->kind == ET_CMSG_RECORD) {
        et_db_trial tr = m->trial;
        tr.einsum_id = eid;
        tr.device_id = L->did;
        tr.space_id = sid;
        if (st == ET_OK)
            st = et_db_trial_record(L->db, &tr, NULL, &err);
        if (st != ET_OK)
            campaign_logf(L->o, ET_LOG_WARN,
                          "a trial of rank %d is not recorded: %s", m->rank,
                          err.msg);
        return ET_OK;
    }
    et_db_race *race = malloc(sizeof *race);
    if (!race)
        return campaign_failf(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                              "out of memory");
    *race = m->race;
    race->einsum_id = eid;
    race->device_id = L->did;
    if (st == ET_OK)
        st = et_db_race_record(L->db, race, NULL, &err);
    if (st != ET_OK)
        campaign_logf(L->o, ET_LOG_WARN,
                      "the race of rank %d is not recorded: %s", m->rank,
                      err.msg);
    free(race);
    return ET_OK;
}

/* One message of a rank (m) with the database. */
static et_status handle(lead_state *L, const et_scale_cmsg *m, et_diag *diag)
{
    if (m->kind == ET_CMSG_ASK)
        return handle_ask(L, m, diag);
    if (m->problem < 0 || m->problem >= L->c->n)
        return ET_OK; /* nothing to do with it */
    switch (m->kind) {
    case ET_CMSG_LOOKUP:
    case ET_CMSG_RECORD:
    case ET_CMSG_RACE:
        return handle_db(L, m, diag);
    case ET_CMSG_DONE:
        return handle_done(L, m, diag);
    default:
        return ET_OK;
    }
}

/* Every rank's HELLO (one device kind: *info), the ranks logged. */
static et_status start(const campaign_opts *o, et_scale *s,
                       et_device_info *info, et_diag *diag)
{
    int n = et_scale_size(s);
    et_scale_rank *ranks = calloc((size_t)n, sizeof *ranks);
    if (!ranks)
        return campaign_failf(diag, ET_ERR_NOMEM, ET_INPUT_NONE,
                              "out of memory");
    memset(info, 0, sizeof *info);
    et_error err = {{0}};
    et_status st = et_scale_campaign_start(s, ranks, info, &err);
    if (st != ET_OK) {
        /* every rank was told to stop */
        campaign_fail(diag, st, st == ET_ERR_INPUT ? ET_INPUT_DEVICE
                                                   : ET_INPUT_NONE, &err);
        free(ranks);
        return st;
    }
    for (int k = 1; k < n; k++)
        campaign_logf(o, ET_LOG_INFO, "rank %d on %s: %s (%s)%s%s", k,
                      ranks[k].host, ranks[k].info.name, ranks[k].spec,
                      ranks[k].cpus[0] ? ", bound to cores " : "",
                      ranks[k].cpus);
    free(ranks);
    return ET_OK;
}

/* The database opened and the problems it knows finished answered from
 * it, never handed out; on failure nothing is handed out (L->next) and
 * the ranks are stopped as they ask. */
static et_status open_db(lead_state *L, const et_device_info *info,
                         et_diag *diag)
{
    const et_campaign *c = L->c;
    const campaign_opts *o = L->o;
    et_error err = {{0}};
    et_status st = et_db_open(o->db, &L->db, &err);
    if (st == ET_OK) {
        snprintf(L->r->db, sizeof L->r->db, "%s", et_db_path(L->db));
        st = et_db_device_id(L->db, info, &L->did, &err);
    }
    if (st != ET_OK) {
        campaign_fail(diag, st, ET_INPUT_FILE, &err);
        L->next = c->n;
    }
    for (int i = 0; st == ET_OK && !o->retime && i < c->n; i++) {
        bool found = false;
        st = campaign_finished(L->db, &c->p[i], L->did, &L->r->e[i], &found,
                               &err);
        if (st != ET_OK) {
            campaign_fail(diag, st, ET_INPUT_NONE, &err);
            L->next = c->n;
        } else if (found) {
            campaign_from_db(c, o, i, &L->r->e[i]);
        }
    }
    return st;
}

static et_status lead(const et_campaign *c, const campaign_opts *o,
                      et_scale *s, et_campaign_report *r, et_diag *diag)
{
    et_device_info info;
    et_status st = start(o, s, &info, diag);
    if (st != ET_OK)
        return st;
    campaign_describe_device(r, &info);
    lead_state L = {c, o, s, NULL, 0, r, 0, et_scale_size(s) - 1};
    et_status first = open_db(&L, &info, diag);
    et_error err = {{0}};
    while (L.active > 0) {
        et_scale_cmsg m;
        et_diag d2;
        memset(&d2, 0, sizeof d2);
        st = et_scale_campaign_next(s, &m, &err);
        if (st != ET_OK) {
            et_scale_cmsg_clear(&m);
            if (first == ET_OK)
                first = campaign_fail(diag, st, ET_INPUT_NONE, &err);
            break;
        }
        if (first != ET_OK && m.kind == ET_CMSG_ASK)
            L.next = c->n;
        st = handle(&L, &m, &d2);
        et_scale_cmsg_clear(&m);
        if (st != ET_OK && first == ET_OK) {
            *diag = d2;
            first = st;
            L.next = c->n; /* stop handing out; ranks finish what they have */
        }
    }
    et_db_close(L.db);
    return first;
}

et_status et_scale_campaign_run(const et_campaign *c, const campaign_opts *o,
                                et_campaign_report *r, bool *scaled,
                                et_diag *d)
{
    *scaled = false;
    et_scale_env env;
    et_scale_env_get(&env);
    if (!o->comm && !(env.launched && env.size > 1))
        return ET_OK;
    if (!et_scale_available())
        return campaign_failf(d, ET_ERR_UNSUPPORTED, ET_INPUT_NONE,
                              "scale-out is off: eintune was built without "
                              "MPI, and this is rank %d of %d under an MPI "
                              "launcher (run it without mpirun, or rebuild "
                              "with libopenmpi-dev installed)", env.rank,
                              env.size);
    et_scale *s = NULL;
    et_error err = {{0}};
    et_status st = et_scale_join(o->comm, &s, &err);
    if (st != ET_OK)
        return campaign_fail(d, st, ET_INPUT_NONE, &err);
    if (et_scale_size(s) == 1) {
        et_scale_free(s);
        return ET_OK;
    }
    *scaled = true;
    r->rank = et_scale_rank_of(s);
    r->n_ranks = et_scale_size(s);
    st = r->rank == 0 ? lead(c, o, s, r, d) : serve(c, o, s, r, d);
    et_scale_free(s);
    return st;
}
