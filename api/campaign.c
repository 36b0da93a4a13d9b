/*
 * campaign.c - et_campaign_*: a list of problems tuned in one go
 * (`eintune campaign FILE`, docs/scale-out.md). The handles, the
 * arguments' checks, the options mapped onto tune/campaign.h's, and the
 * choice between a campaign over MPI ranks (scale/campaign.h) and one in
 * this process (tune/campaign.h). The campaign file, the runs, the
 * database records and the report are tune/'s; tuning one problem is
 * api_tune_run's, handed down as the campaign's tuning function.
 */
#include "api/api_impl.h"

#include "base/clock.h"
#include "scale/campaign.h"
#include "tune/campaign.h"

#include <stdlib.h>
#include <string.h>

et_status et_campaign_load(const char *path, et_campaign **out,
                           et_diag *diag)
{
    et_diag local;
    if (!diag)
        diag = &local;
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, path, "path");
    return campaign_load(path, out, diag);
}

void et_campaign_free(et_campaign *c)
{
    campaign_free(c);
}

int et_campaign_n_problems(const et_campaign *c)
{
    return c ? c->n : 0;
}

const char *et_campaign_state_name(et_campaign_state s)
{
    return campaign_state_name(s);
}

/*
 * A campaign's tuning function (campaign_tune_fn): q's problem with its
 * options as et_tune_run_full takes them, on q's open device, its trials
 * in q's store or the campaign's database, no MPI job of its own, no
 * roofline. No seeds: a campaign's problems give the same trials with and
 * without MPI (where the database is rank 0's alone).
 */
static et_status tune_one(void *arg, const campaign_tune_req *q,
                          et_tune_summary *out, et_diag *d)
{
    const campaign_problem *cp = q->cp;
    et_tune_options to;
    memset(&to, 0, sizeof to);
    to.device = q->o->device;
    to.db = q->o->db;
    to.space_obj = cp->space;
    to.search = cp->search;
    to.budget = cp->budget;
    to.time_limit_s = cp->time_limit_s;
    to.seed = cp->seed;
    to.retime = q->o->retime;
    to.race = cp->race > 0 ? cp->race : -1;
    to.log = q->log;
    to.log_arg = q->log_arg;
    to.cancel = q->o->cancel;
    to.no_seeding = 1;
    et_problem *p = malloc(sizeof *p);
    if (!p)
        return api_fail(d, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    p->e = *cp->e;
    api_tune_env env = {.no_scale = true, .dev = q->dev, .store = q->store,
                        .db = q->store ? NULL : q->o->open_db};
    et_tune_report *rep = NULL;
    et_status st = api_tune_run(p, &to, &env, &rep, d);
    if (st == ET_OK)
        et_tune_report_summary(rep, out);
    et_tune_report_free(rep);
    free(p);
    return st;
}

/* o (NULL: the defaults) as tune/campaign.h's options. */
static void options_of(const et_campaign_options *o, campaign_opts *co)
{
    memset(co, 0, sizeof *co);
    co->tune = tune_one;
    if (!o)
        return;
    co->device = o->device;
    co->db = o->db;
    co->retime = o->retime;
    co->log = o->log;
    co->log_arg = o->log_arg;
    co->cancel = o->cancel;
    co->comm = o->comm;
    co->done = o->done;
    co->done_arg = o->done_arg;
}

et_status et_campaign_run(const et_campaign *c, const et_campaign_options *o,
                          et_campaign_report **out, et_diag *diag)
{
    return api_campaign_run(NULL, c, o, out, diag);
}

et_status api_campaign_run(et_session *s, const et_campaign *c,
                           const et_campaign_options *o,
                           et_campaign_report **out, et_diag *diag)
{
    API_DIAG(diag);
    api_diag_clear(diag);
    API_NEED(diag, out, "out");
    *out = NULL;
    API_NEED(diag, c, "c");
    API_OPTIONS(et_campaign_options, o, diag);
    campaign_opts co;
    options_of(o, &co);
    if (s) {
        co.dev = s->dev;
        co.open_db = s->db;
        if (!co.log) {
            co.log = s->log;
            co.log_arg = s->log_arg;
        }
    }
    et_campaign_report *r = campaign_report_new(c);
    if (!r)
        return api_fail(diag, ET_ERR_NOMEM, ET_INPUT_NONE, "out of memory");
    double t0 = et_now_s();
    bool scaled = false;
    /* a session is one device: never the ranks of an MPI job */
    et_status st = s ? ET_OK : et_scale_campaign_run(c, &co, r, &scaled, diag);
    if (st == ET_OK && !scaled)
        st = campaign_run_here(c, &co, r, diag);
    r->elapsed_s = et_now_s() - t0;
    if (st != ET_OK) {
        campaign_report_free(r);
        return st;
    }
    *out = r;
    return ET_OK;
}

void et_campaign_report_free(et_campaign_report *r)
{
    campaign_report_free(r);
}

int et_campaign_report_rank(const et_campaign_report *r)
{
    return r ? r->rank : 0;
}

int et_campaign_report_n(const et_campaign_report *r)
{
    return r ? r->n : 0;
}

int et_campaign_report_entry(const et_campaign_report *r, int i,
                             et_campaign_entry *out)
{
    if (!out)
        return -1;
    if (!r || i < 0 || i >= r->n) {
        memset(out, 0, sizeof *out);
        return -1;
    }
    *out = r->e[i];
    return 0;
}

void et_campaign_report_print(const et_campaign_report *r, FILE *f)
{
    if (r && f)
        campaign_report_print(r, f);
}

char *et_campaign_report_json(const et_campaign_report *r)
{
    return r ? campaign_report_json(r) : NULL;
}
