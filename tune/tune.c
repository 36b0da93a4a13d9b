/* tune.c - the tuning loop (see tune.h). */
#include "tune/tune.h"
#include "base/clock.h"

#include "db/db.h"
#include "measure/remote.h"
#include "transforms/heuristic.h"
#include "transforms/kernel.h"
#include "tune/best.h"

#include <inttypes.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char et_builtin_space_yaml[] =
    "# built-in general space: a tinygrad-style action pool for any einsum;\n"
    "# UPCAST 16 and UNROLL 16 give full-width vector accumulators, amounts\n"
    "# that do not divide an axis are refused without being timed; SPLIT\n"
    "# spreads a reduction over work-groups (a full reduction has no other\n"
    "# parallelism); HOIST forms the product of all operands but one once\n"
    "# (three or more operands); FACTOR multiplies the operands without the\n"
    "# innermost reduce index after its loop; STAGE copies the inputs a\n"
    "# work-group shares to local memory once, vector lanes contiguous;\n"
    "# LOOP iterates a global axis inside a work-item (so that such a copy\n"
    "# serves many of its values)\n"
    "name: builtin_actions\n"
    "einsum: any\n"
    "actions:\n"
    "  - {op: UPCAST,   axis: any_global, amt: [0, 2, 3, 4, 5, 7, 8, 16]}\n"
    "  - {op: UNROLL,   axis: any_reduce, amt: [0, 2, 4, 5, 7, 8, 16]}\n"
    "  - {op: LOCAL,    axis: any_global, amt: [4, 16]}\n"
    "  - {op: GROUPTOP, axis: any_reduce, amt: [16, 64]}\n"
    "  - {op: SPLIT,    axis: any_reduce, amt: [4, 16, 64]}\n"
    "  - {op: HOIST}\n"
    "  - {op: FACTOR}\n"
    "  - {op: STAGE}\n"
    "  - {op: LOOP,     axis: any_global, amt: [64]}\n"
    "max_depth: 6\n";

typedef struct tune_ctx {
    et_device *dev;
    const et_binding *b;
    const et_tune_opts *o;
    et_tune_result *res;
    et_verifier *ver;
    et_error *err;
    et_status fatal;          /* a host failure that stops the search */
    int64_t einsum_id;        /* rows in the database (when o->db) */
    int64_t device_id;
    bool cancelled;           /* the progress callback asked to stop */
    et_backend_kind backend;  /* of the device the kernels are for */
    et_rendered best_rend;    /* with an executor: the winner so far */
    double t0;                /* when the run started (et_now_s) */
    /* an open axis: the awkward sizes every verified candidate is checked
     * at too (1 and a prime), with their verifiers */
    et_tune_awkward awk;
    /* seeding: the search's seed i is res->seeds[seed_entry[i]], its
     * opts in seed_best[i] */
    int seed_entry[ET_SEARCH_MAX_SEEDS];
    et_best *seed_best;
    int n_seeds;              /* the search's seeds */
    /* the structural seeds' opts (start opts + a suggestion) */
    et_opt heur[ET_HEURISTIC_MAX][ET_MAX_OPTS];
    /* the cost model, when on (learn.h) */
    bool learning;
    et_tune_learn learn;
} tune_ctx;

/* The largest prime below n (0 when none). */
static int64_t prime_below(int64_t n)
{
    for (int64_t p = n - 1; p >= 2; p--) {
        bool prime = true;
        for (int64_t q = 2; q * q <= p && prime; q++)
            prime = p % q != 0;
        if (prime)
            return p;
    }
    return 0;
}

et_status et_tune_awkward_init(const et_einsum *e, const et_verify_opts *vo,
                               et_tune_awkward *a, et_error *err)
{
    memset(a, 0, sizeof *a);
    a->axis = et_einsum_open_axis(e);
    if (a->axis < 0)
        return ET_OK;
    snprintf(a->name, sizeof a->name, "%s", e->idx[a->axis].name);
    int64_t w = e->idx[a->axis].size;
    int64_t cand[ET_TUNE_AWKWARD_MAX] = {1, prime_below(w)};
    if (!vo) {
        /* the sizes alone */
        for (int i = 0; i < ET_TUNE_AWKWARD_MAX; i++)
            if (cand[i] >= 1 && cand[i] != w &&
                !(i == 1 && cand[1] == cand[0]))
                a->size[a->n++] = cand[i];
        return ET_OK;
    }
    et_verify_opts one = *vo;
    one.trials = 1;
    et_einsum *ea = malloc(sizeof *ea);
    if (!ea)
        return et_errorf(err, ET_ERR_NOMEM, "out of memory");
    et_status st = ET_OK;
    for (int i = 0; i < ET_TUNE_AWKWARD_MAX && st == ET_OK; i++) {
        if (cand[i] < 1 || cand[i] == w || (i == 1 && cand[1] == cand[0]))
            continue;
        *ea = *e;
        if (et_einsum_set_size(ea, a->axis, cand[i], NULL) != ET_OK)
            continue;
        st = et_verifier_init(ea, &one, &a->ver[a->n], err);
        if (st == ET_OK)
            a->size[a->n++] = cand[i];
    }
    free(ea);
    if (st != ET_OK)
        et_tune_awkward_free(a);
    return st;
}

void et_tune_awkward_release(et_tune_awkward *a)
{
    for (int i = 0; i < a->n; i++)
        et_verifier_release(a->ver[i]);
}

void et_tune_awkward_free(et_tune_awkward *a)
{
    for (int i = 0; i < ET_TUNE_AWKWARD_MAX; i++) {
        if (a->ver[i]) {
            et_verifier_release(a->ver[i]);
            et_verifier_free(a->ver[i]);
        }
        a->ver[i] = NULL;
    }
    a->n = 0;
}

et_status et_tune_awkward_launch(const et_tune_awkward *a,
                                 const et_kernel *k, et_backend_kind be,
                                 et_launch geom[ET_TUNE_AWKWARD_MAX],
                                 et_error *err)
{
    for (int i = 0; i < a->n; i++) {
        et_kernel *c = et_kernel_clone(k);
        if (!c)
            return et_errorf(err, ET_ERR_NOMEM, "out of memory");
        et_diag d;
        memset(&d, 0, sizeof d);
        et_status st = et_kernel_set_open_size(c, a->size[i], &d);
        if (st == ET_OK)
            st = et_kernel_launch(c, be, &geom[i]);
        et_kernel_free(c);
        if (st != ET_OK)
            return et_errorf(err, st, "the launch at %s=%lld: %s", a->name,
                             (long long)a->size[i],
                             d.msg[0] ? d.msg : et_status_str(st));
    }
    return ET_OK;
}

/* One awkward size: build, launch with geom, check with ver. */
static void verify_at(et_tune_awkward *a, int i, const et_launch *geom,
                      et_device *dev, const char *source, const char *name,
                      et_evaluation *ev)
{
    et_program *prog = NULL;
    et_error e2 = {{0}};
    et_verify_result vr;
    memset(&vr, 0, sizeof vr);
    et_status st = et_program_build(dev, source, name, &prog, &e2);
    if (st == ET_OK)
        st = et_verify_kernel(a->ver[i], dev, prog, geom, &vr, &e2);
    if (prog)
        et_program_free(dev, prog);
    if (st != ET_OK) {
        ev->result.outcome = vr.outcome != ET_OUTCOME_OK
                                 ? vr.outcome
                                 : st == ET_ERR_BUILD
                                       ? ET_OUTCOME_BUILD_ERROR
                                       : ET_OUTCOME_LAUNCH_ERROR;
        snprintf(ev->result.reason, sizeof ev->result.reason,
                 "at %s=%lld: %.900s", a->name, (long long)a->size[i],
                 e2.msg);
        et_verifier_release(a->ver[i]);
    } else if (vr.outcome != ET_OUTCOME_OK) {
        ev->result.outcome = vr.outcome;
        snprintf(ev->result.reason, sizeof ev->result.reason,
                 "at %s=%lld: %.900s", a->name, (long long)a->size[i],
                 vr.reason);
        et_verifier_release(a->ver[i]);
    }
}

et_status et_tune_evaluate(et_verifier *ver, et_tune_awkward *a,
                           const et_launch *geom_at, et_device *dev,
                           const char *source, const char *name,
                           const et_launch *geom, const et_timing_opts *to,
                           et_evaluation *ev, et_error *err)
{
    et_status st = et_evaluate_kernel(ver, dev, source, name, geom, to, ev,
                                      err);
    if (st != ET_OK || !a || !geom_at)
        return st;
    for (int i = 0; i < a->n && ev->result.outcome == ET_OUTCOME_OK; i++)
        verify_at(a, i, &geom_at[i], dev, source, name, ev);
    return ET_OK;
}

static void say(const tune_ctx *t, et_tune_level lvl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "{'a': 1, 'b': true}" (et_point_format) -> JSON text. */
static void params_to_json(const char *text, char *out, size_t cap)
{
    snprintf(out, cap, "%s", text);
    for (char *p = out; *p; p++)
        if (*p == '\'')
            *p = '"';
}

void et_tune_params_text(const char *params, char *out, size_t cap)
{
    size_t n = 0;
    if (!cap)
        return;
    out[0] = '\0';
    for (const char *p = params ? params : ""; *p && n + 1 < cap; p++) {
        if (*p == '{' || *p == '}' || *p == '\'')
            continue;
        if (*p == ':') {
            out[n++] = '=';
            while (p[1] == ' ')
                p++;
        } else if (*p == ',') {
            out[n++] = ' ';
            while (p[1] == ' ')
                p++;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
}

/* Records a finished candidate; a database that cannot be written loses
 * the record, not the run. */
static void db_record(tune_ctx *t, et_db_trial *tr, const et_tune_candidate *c)
{
    et_error e2 = {{0}};
    double t0 = et_now_s();
    tr->space_id = t->o->db_space_id;
    params_to_json(c->params, tr->params_json, sizeof tr->params_json);
    et_status st = t->o->store
                       ? t->o->store->record(t->o->store->ctx, tr, &e2)
                       : et_db_trial_record(t->o->db, tr, NULL, &e2);
    if (st != ET_OK)
        say(t, ET_TUNE_WARN, "not recorded in the database: %s", e2.msg);
    t->res->db_s += et_now_s() - t0;
}

/* Fills c from a trial the database answered. */
static void from_trial(et_tune_candidate *c, const et_db_trial *tr)
{
    c->cached = true;
    c->db_created_at = tr->created_at;
    c->outcome = tr->outcome;
    snprintf(c->reason, sizeof c->reason, "%s", tr->reason);
    if (tr->verify_trials > 0) {
        c->verified = true;
        c->verify.outcome = tr->outcome == ET_OUTCOME_WRONG_RESULT
                                ? ET_OUTCOME_WRONG_RESULT
                                : ET_OUTCOME_OK;
        c->verify.trials = tr->verify_trials;
        c->verify.max_norm_err = tr->max_norm_err;
        c->verify.p_value = tr->p_value;
        /* not kept in the database: the summary line leaves it out */
        c->verify.mean_ratio = NAN;
        c->verify.mean_norm_err = NAN;
    }
    if (tr->runs > 0) {
        c->timed = true;
        c->timing.median_s = tr->median_s;
        c->timing.low_s = tr->low_s;
        c->timing.high_s = tr->high_s;
        c->timing.cv = tr->cv;
        c->timing.runs = tr->runs;
    }
}

static void say(const tune_ctx *t, et_tune_level lvl, const char *fmt, ...)
{
    if (!t->o->log)
        return;
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    t->o->log(t->o->arg, lvl, buf);
}

double et_tune_load_1m(void)
{
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

/* Samples the load into the run's range; returns it. */
static double sample_load(et_tune_result *res)
{
    double l = et_tune_load_1m();
    if (isnan(l))
        return l;
    if (isnan(res->load_min) || l < res->load_min)
        res->load_min = l;
    if (isnan(res->load_max) || l > res->load_max)
        res->load_max = l;
    return l;
}

/* 1 when the search is to stop after the candidate in flight. */
static int stopping(const tune_ctx *t)
{
    return t->cancelled || (t->o->stop && *t->o->stop) ? 1 : 0;
}

/* Appends a zeroed candidate; NULL when out of memory. */
static et_tune_candidate *push(et_tune_result *res)
{
    if (res->n_cand == res->cap_cand) {
        int cap = res->cap_cand ? 2 * res->cap_cand : 64;
        et_tune_candidate *c = realloc(res->cand, (size_t)cap * sizeof *c);
        if (!c)
            return NULL;
        res->cand = c;
        res->cap_cand = cap;
    }
    et_tune_candidate *c = &res->cand[res->n_cand++];
    memset(c, 0, sizeof *c);
    c->duplicate_of = -1;
    c->load_1m = NAN;
    return c;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

static void report(tune_ctx *t, et_tune_candidate *c)
{
    et_tune_result *res = t->res;
    const et_tune_candidate *best = res->best >= 0 ? &res->cand[res->best]
                                                   : NULL;
    if (c->outcome == ET_OUTCOME_OK &&
        (!best || c->timing.median_s < best->timing.median_s)) {
        res->best = (int)(c - res->cand);
        best = c;
        if (t->o->new_best)
            t->o->new_best(t->o->arg, c);
    }
    if (t->o->progress &&
        t->o->progress(t->o->arg, res->evaluations + res->cached,
                       t->o->search.budget ? t->o->search.budget : 100, c,
                       best))
        t->cancelled = true;
}

/* A seed's candidate: marked with its entry, and the entry with it. */
static void mark_seed(tune_ctx *t, et_tune_candidate *tc,
                      const et_candidate *c)
{
    if (c->seed <= 0 || c->seed > t->n_seeds)
        return;
    int e = t->seed_entry[c->seed - 1];
    tc->seed = 1 + e;
    if (t->res->seeds[e].cand < 0)
        t->res->seeds[e].cand = (int)(tc - t->res->cand);
}

/* Appends an empty seed entry (no candidate yet); NULL when out of
 * memory. */
static et_tune_seed *seed_new(tune_ctx *t)
{
    et_tune_result *res = t->res;
    et_tune_seed *g = realloc(res->seeds,
                              (size_t)(res->n_seeds + 1) * sizeof *g);
    if (!g)
        return NULL;
    res->seeds = g;
    et_tune_seed *sd = &g[res->n_seeds++];
    memset(sd, 0, sizeof *sd);
    sd->cand = -1;
    return sd;
}

/* Appends a seed entry from a nearby problem's answer b. */
static et_tune_seed *seed_push(tune_ctx *t, const et_best *b)
{
    et_tune_seed *sd = seed_new(t);
    if (!sd)
        return NULL;
    copy_str(sd->opts, sizeof sd->opts, b->opts);
    copy_str(sd->einsum, sizeof sd->einsum, b->trial.einsum_text);
    copy_str(sd->sizes, sizeof sd->sizes, b->sizes);
    sd->distance = b->distance;
    return sd;
}

/* "the best of xik,kj->xij at x=512,i=16,... (distance 1)", or "the
 * einsum's structure" for a structural seed. */
static void seed_origin(const et_tune_seed *sd, char *buf, size_t cap)
{
    if (sd->structural)
        snprintf(buf, cap, "suggested by the einsum's structure");
    else
        snprintf(buf, cap, "the best of %.200s at %.200s (distance %.3g)",
                 sd->einsum, sd->sizes, sd->distance);
}

/* et_best_nearest's skip: a nearby problem whose opts do not apply. */
static void seed_skipped(void *arg, const et_best *b, const char *why)
{
    tune_ctx *t = arg;
    et_tune_seed *sd = seed_push(t, b);
    if (!sd)
        return;
    sd->dropped = true;
    copy_str(sd->reason, sizeof sd->reason, why);
    char from[512];
    seed_origin(sd, from, sizeof from);
    say(t, ET_TUNE_INFO, "seed dropped: %s, %s, does not apply here: %s",
        sd->opts[0] ? sd->opts : "untransformed", from, why);
}

/* The search's on_seed_dropped. */
static void seed_dropped_cb(void *user, int i, const char *reason)
{
    tune_ctx *t = user;
    et_tune_seed *sd = &t->res->seeds[t->seed_entry[i]];
    sd->dropped = true;
    copy_str(sd->reason, sizeof sd->reason, reason);
    say(t, ET_TUNE_INFO, "seed dropped: %s: %s",
        sd->opts[0] ? sd->opts : "untransformed", reason);
}

/*
 * The seeds of a run: up to o->seeds best opts of the nearest tuned
 * problems on this device (et_best_nearest), into ss (the opts live in
 * t->seed_best). A database that cannot answer costs the run its seeds,
 * not the run: a warning, and no seeds.
 */
static et_status seeds_find(tune_ctx *t, const et_device_info *info,
                            et_search_seed *ss, int *n)
{
    *n = 0;
    int max = t->o->seeds < ET_SEARCH_MAX_SEEDS ? t->o->seeds
                                                : ET_SEARCH_MAX_SEEDS;
    t->seed_best = calloc((size_t)max, sizeof *t->seed_best);
    if (!t->seed_best)
        return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
    int found = 0;
    et_error e2 = {{0}};
    double t0 = et_now_s();
    et_status st = et_best_nearest(t->o->db, et_binding_einsum(t->b), info,
                                   max, t->seed_best, &found, seed_skipped,
                                   t, &e2);
    t->res->db_s += et_now_s() - t0;
    if (st == ET_ERR_NOMEM)
        return et_errorf(t->err, st, "%s", e2.msg);
    if (st != ET_OK) {
        say(t, ET_TUNE_WARN, "no seeds from the database: it did not "
            "answer: %s", e2.msg);
        return ET_OK;
    }
    for (int i = 0; i < found; i++) {
        et_tune_seed *sd = seed_push(t, &t->seed_best[i]);
        if (!sd)
            return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
        t->seed_entry[i] = t->res->n_seeds - 1;
        ss[i].opts = t->seed_best[i].opt;
        ss[i].n_opts = t->seed_best[i].n_opts;
        char from[512];
        seed_origin(sd, from, sizeof from);
        say(t, ET_TUNE_INFO, "seed %d: %s, %s", i + 1,
            sd->opts[0] ? sd->opts : "untransformed", from);
    }
    *n = found;
    if (found == 0)
        say(t, ET_TUNE_INFO, "no seeds from the database: no tuned problem "
            "near this one on this device has opts that apply here");
    return ET_OK;
}

/*
 * The structural seeds (transforms/heuristic.h): the start opts and each
 * suggestion of the rules for the start kernel, appended to ss after the
 * n seeds already there (at most ET_SEARCH_MAX_SEEDS in all).
 */
static et_status seeds_structural(tune_ctx *t, et_search_seed *ss, int *n)
{
    const et_search_opts *so = &t->o->search;
    et_kernel *k = et_kernel_clone(et_binding_base(t->b));
    if (!k)
        return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
    et_heuristic h[ET_HEURISTIC_MAX];
    int nh = 0;
    if (et_kernel_apply_opts(k, so->start, so->n_start, NULL, 0) == ET_OK)
        nh = et_kernel_heuristics(k, h);
    int n0 = k->n_opts;
    for (int i = 0; i < nh && *n < ET_SEARCH_MAX_SEEDS; i++) {
        if (n0 + h[i].n_opts > ET_MAX_OPTS)
            continue;
        et_opt *o = t->heur[i];
        memcpy(o, k->opts, sizeof(et_opt) * (size_t)n0);
        memcpy(o + n0, h[i].opt, sizeof(et_opt) * (size_t)h[i].n_opts);
        et_tune_seed *sd = seed_new(t);
        if (!sd) {
            et_kernel_free(k);
            return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
        }
        et_opts_format(o, n0 + h[i].n_opts, sd->opts, sizeof sd->opts);
        copy_str(sd->einsum, sizeof sd->einsum,
                 et_binding_einsum(t->b)->text);
        sd->structural = true;
        t->seed_entry[*n] = t->res->n_seeds - 1;
        ss[*n].opts = o;
        ss[*n].n_opts = n0 + h[i].n_opts;
        (*n)++;
        say(t, ET_TUNE_INFO, "seed %d: %s, suggested by the einsum's "
            "structure", *n, sd->opts);
    }
    et_kernel_free(k);
    return ET_OK;
}

/* A candidate between its proposal and its answer. */
typedef struct tune_job {
    int ci;                 /* its index in res->cand */
    double t0;
    et_rendered rend;       /* rendered (freed by answer()) */
    et_db_trial tr;         /* its database key, when use_db */
    bool use_db;
    et_timing_opts to;      /* the timing options with its bound */
    /* an open kernel: its launch at the awkward sizes (t->awk) */
    et_launch geom_at[ET_TUNE_AWKWARD_MAX];
} tune_job;

enum { BEGIN_FATAL = -1, BEGIN_REFUSED = 0, BEGIN_EVALUATE = 1,
       BEGIN_ANSWERED = 2 };

/*
 * The first half of a candidate: recorded in the result, logged; a
 * refused one recorded in the database (BEGIN_REFUSED: nothing more to
 * do); rendered and looked up in the database (BEGIN_ANSWERED: answer()
 * next); otherwise BEGIN_EVALUATE: build, verify and time j->rend with
 * j->to, then finish_eval() and answer(). bound is the early-cut bound.
 */
static int begin(tune_ctx *t, const et_candidate *c, double bound,
                 tune_job *j)
{
    et_tune_result *res = t->res;
    memset(j, 0, sizeof *j);
    et_tune_candidate *tc = push(res);
    if (!tc) {
        t->fatal = ET_ERR_NOMEM;
        return BEGIN_FATAL;
    }
    j->ci = (int)(tc - res->cand);
    j->t0 = et_now_s();
    tc->seq = c->seq;
    tc->key = c->refused ? 0 : c->key;
    tc->n_opts = c->n_opts;
    tc->load_1m = sample_load(res);
    mark_seed(t, tc, c);
    copy_str(tc->params, sizeof tc->params, c->params_text);
    copy_str(tc->opts, sizeof tc->opts, c->opts_text);
    char ptext[512];
    et_tune_params_text(tc->params, ptext, sizeof ptext);
    say(t, ET_TUNE_INFO, "trying %s%s%s",
        tc->opts[0] ? tc->opts : "untransformed", ptext[0] ? " " : "", ptext);

    if (c->refused) {
        tc->outcome = ET_OUTCOME_REFUSED;
        copy_str(tc->reason, sizeof tc->reason, c->reason);
        res->failures[ET_OUTCOME_REFUSED]++;
        say(t, ET_TUNE_INFO, "refused: %s", tc->reason);
        if (t->o->db || t->o->store) {
            et_db_trial tr;
            et_error e2 = {{0}};
            if (et_db_trial_init(&tr, t->einsum_id, et_binding_einsum(t->b),
                                 t->device_id, tc->opts, NULL, NULL,
                                 &e2) == ET_OK) {
                tr.outcome = ET_OUTCOME_REFUSED;
                snprintf(tr.reason, sizeof tr.reason, "%s", tc->reason);
                db_record(t, &tr, tc);
            }
        }
        tc->done_s = et_now_s() - t->t0;
        return BEGIN_REFUSED;
    }

    et_status st = et_kernel_render(c->kernel, t->backend, NULL, &j->rend);
    if (st != ET_OK) {
        tc->outcome = ET_OUTCOME_BUILD_ERROR;
        snprintf(tc->reason, sizeof tc->reason, "cannot render: %s",
                 et_status_str(st));
        return BEGIN_ANSWERED;
    }
    copy_str(tc->kernel, sizeof tc->kernel, j->rend.name);
    bool found = false;
    if (t->o->db || t->o->store) {
        et_error e2 = {{0}};
        j->use_db = et_db_trial_init(&j->tr, t->einsum_id,
                                     et_binding_einsum(t->b), t->device_id,
                                     tc->opts, j->rend.source,
                                     &j->rend.launch, &e2) == ET_OK;
        double t0 = et_now_s();
        const et_tune_store *sto = t->o->store;
        if (j->use_db && !t->o->retime &&
            (sto ? sto->lookup(sto->ctx, &j->tr, &j->tr, &found, &e2)
                 : et_db_trial_lookup(t->o->db, &j->tr, &j->tr, &found,
                                      &e2)) != ET_OK) {
            say(t, ET_TUNE_WARN, "database lookup failed: %s", e2.msg);
            found = false;
        }
        res->db_s += et_now_s() - t0;
    }
    if (found) {
        from_trial(tc, &j->tr);
        res->cached++;
        say(t, ET_TUNE_INFO, "answered from the database (%s)",
            et_outcome_name(tc->outcome));
        return BEGIN_ANSWERED;
    }
    if (t->awk.n > 0) {
        /* an open kernel is verified at the awkward sizes too, with its
         * launch there (wherever it is evaluated) */
        et_error e2 = {{0}};
        st = et_tune_awkward_launch(&t->awk, c->kernel, t->backend,
                                    j->geom_at, &e2);
        if (st != ET_OK) {
            tc->outcome = ET_OUTCOME_BUILD_ERROR;
            snprintf(tc->reason, sizeof tc->reason, "%.1000s", e2.msg);
            return BEGIN_ANSWERED;
        }
    }
    j->to = t->o->timing;
    j->to.bound_s = isfinite(bound) ? bound : 0;
    return BEGIN_EVALUATE;
}

/* The measured half: the evaluation into the result and the database. */
static void finish_eval(tune_ctx *t, tune_job *j, const et_evaluation *ev)
{
    et_tune_result *res = t->res;
    et_tune_candidate *tc = &res->cand[j->ci];
    if (ev->compiler_said[0])
        say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s", j->rend.name,
            ev->compiler_said);
    tc->outcome = ev->result.outcome;
    copy_str(tc->reason, sizeof tc->reason, ev->result.reason);
    tc->verified = ev->verified;
    tc->verify = ev->verify;
    tc->timed = ev->timed;
    tc->timing = ev->timing;
    tc->build_s = ev->build_s;
    tc->verify_s = ev->verify_s;
    tc->timing_s = ev->timing_s;
    res->build_s += ev->build_s;
    res->verify_s += ev->verify_s;
    res->timing_s += ev->timing_s;
    res->evaluations++;
    if (ev->timed && ev->result.outcome == ET_OUTCOME_OK &&
        ev->timing.cv > ET_TUNE_NOISY_CV)
        res->noisy++;
    if (j->use_db) {
        et_db_trial_set_evaluation(&j->tr, et_binding_einsum(t->b), ev);
        j->tr.load_1m = tc->load_1m;
        copy_str(j->tr.kernel_name, sizeof j->tr.kernel_name, j->rend.name);
        db_record(t, &j->tr, tc);
    }
}

/* The last half: the log, the search's answer r, progress; frees j's
 * kernel text (kept first when it is the new best of a run whose winner
 * is re-timed). Returns nonzero when the search is to stop. */
static int answer(tune_ctx *t, tune_job *j, et_eval_result *r)
{
    et_tune_result *res = t->res;
    et_tune_candidate *tc = &res->cand[j->ci];
    tc->eval_s = et_now_s() - j->t0;
    if (tc->verified) {
        char line[256];
        et_verify_summary(&tc->verify, line, sizeof line);
        /* a failed verification is warned about with the outcome below */
        say(t, ET_TUNE_INFO, "%s", line);
    }
    if (tc->outcome == ET_OUTCOME_OK) {
        char line[256];
        et_timing_format(&tc->timing, line, sizeof line);
        say(t, ET_TUNE_INFO, "%s", line);
        r->status = ET_EVAL_OK;
        r->time_s = tc->timing.median_s;
    } else {
        res->failures[tc->outcome]++;
        /* a cut at the bound is the search working as meant, not a
         * warning; a kernel that fails to build, run or verify is */
        say(t, tc->outcome == ET_OUTCOME_SLOWER_THAN_BOUND ? ET_TUNE_INFO
                                                           : ET_TUNE_WARN,
            "%s: %s", et_outcome_name(tc->outcome), tc->reason);
        r->status = ET_EVAL_FAILED;
        snprintf(r->reason, sizeof r->reason, "%.40s: %.400s",
                 et_outcome_name(tc->outcome), tc->reason);
    }
    r->outcome = (int)tc->outcome;
    r->cached = tc->cached;
    tc->done_s = et_now_s() - t->t0;
    report(t, tc);
    if (t->o->exec && res->best == j->ci && j->rend.source) {
        /* the winner so far: kept to be re-timed on one rank */
        et_rendered_free(&t->best_rend);
        t->best_rend = j->rend;
        memset(&j->rend, 0, sizeof j->rend);
    }
    et_rendered_free(&j->rend);
    return stopping(t);
}

/* The cost model learns a candidate timed in this run: its time, or the
 * bound a cut one exceeded. */
static void learn(tune_ctx *t, const et_candidate *c,
                  const et_tune_candidate *tc, double bound)
{
    if (!t->learning || c->refused || !c->kernel || tc->cached)
        return;
    if (tc->outcome == ET_OUTCOME_OK && tc->timed)
        et_tune_learn_add(&t->learn, c->kernel, tc->timing.median_s);
    else if (tc->outcome == ET_OUTCOME_SLOWER_THAN_BOUND && bound > 0)
        et_tune_learn_add(&t->learn, c->kernel, bound);
}

/* The search's predictor: a kernel the database already answers costs
 * nothing to answer (-INFINITY: always proposed, so that a resumed run
 * takes what it knows); else the model's prediction (NaN while it is not
 * fitted). */
static double predict_cb(void *user, const et_kernel *k)
{
    tune_ctx *t = user;
    double p = et_tune_learn_predict(&t->learn, k);
    if (isnan(p) || !(t->o->db || t->o->store) || t->o->retime)
        return p;
    et_rendered rend;
    if (et_kernel_render(k, t->backend, NULL, &rend) != ET_OK)
        return p;
    char opts[ET_DB_OPTS_LEN];
    et_opts_format(k->opts, k->n_opts, opts, sizeof opts);
    et_db_trial tr;
    et_error e2 = {{0}};
    bool found = false;
    double t0 = et_now_s();
    const et_tune_store *sto = t->o->store;
    if (et_db_trial_init(&tr, t->einsum_id, et_binding_einsum(t->b),
                         t->device_id, opts, rend.source, &rend.launch,
                         &e2) == ET_OK &&
        (sto ? sto->lookup(sto->ctx, &tr, &tr, &found, &e2)
             : et_db_trial_lookup(t->o->db, &tr, &tr, &found, &e2)) != ET_OK)
        found = false;
    t->res->db_s += et_now_s() - t0;
    et_rendered_free(&rend);
    return found ? -INFINITY : p;
}

static int eval_cb(void *user, const et_candidate *c, et_eval_result *r)
{
    tune_ctx *t = user;
    et_tune_result *res = t->res;
    tune_job j;
    int k = begin(t, c, c->bound_s, &j);
    if (k == BEGIN_FATAL)
        return 1;
    if (k == BEGIN_REFUSED)
        return stopping(t);
    if (k == BEGIN_EVALUATE) {
        et_evaluation ev;
        memset(&ev, 0, sizeof ev);
        et_status st = et_tune_evaluate(t->ver, &t->awk, j.geom_at, t->dev,
                                        j.rend.source, j.rend.name,
                                        &j.rend.launch, &j.to, &ev, t->err);
        if (st != ET_OK) {
            t->fatal = st;
            et_rendered_free(&j.rend);
            return 1;
        }
        finish_eval(t, &j, &ev);
        int every = t->o->recycle_every ? t->o->recycle_every : 250;
        if (every > 0 && res->evaluations % every == 0 &&
            et_device_is_isolated(t->dev)) {
            double tr0 = et_now_s();
            /* the verifier's device buffers are freed first (it uploads
             * them again on the new worker), so none is left behind */
            et_verifier_release(t->ver);
            et_tune_awkward_release(&t->awk);
            st = et_device_recycle(t->dev, t->err);
            if (st != ET_OK) {
                t->fatal = st;
                et_rendered_free(&j.rend);
                return 1;
            }
            res->recycles++;
            say(t, ET_TUNE_DEBUG, "new device worker after %d evaluations "
                "(%.2f s)", res->evaluations, et_now_s() - tr0);
        }
    }
    int stop = answer(t, &j, r);
    learn(t, c, &res->cand[j.ci], j.to.bound_s);
    return stop;
}

/*
 * A batch through an executor (o->exec): candidates go to free slots in
 * proposal order as slots free up; each one's bound is tightened with the
 * best time answered in the batch so far (the one the one-at-a-time loop
 * would have had). Refused and database-answered candidates need no slot.
 * After a stop (the callback, ^C, a host failure, the deadline) nothing
 * more is handed out, and the candidates in flight are waited for and
 * recorded.
 */
static int eval_many(void *user, et_eval_batch *B)
{
    tune_ctx *t = user;
    const et_tune_exec *x = t->o->exec;
    tune_job *jobs = calloc((size_t)(B->n ? B->n : 1), sizeof *jobs);
    if (!jobs) {
        t->fatal = ET_ERR_NOMEM;
        return 1;
    }
    int next = 0, inflight = 0, stop = 0;
    double best = INFINITY;
    while (t->fatal == ET_OK) {
        while (next < B->n && inflight < x->slots && !stop &&
               t->fatal == ET_OK) {
            if (et_now_s() >= B->deadline_s)
                break;
            const et_candidate *c = &B->c[next];
            tune_job *j = &jobs[next];
            double bound = c->bound_s;
            if (isfinite(best) && B->cut_factor * best < bound)
                bound = B->cut_factor * best;
            int k = begin(t, c, bound, j);
            if (k == BEGIN_FATAL)
                break;
            if (k == BEGIN_REFUSED) {
                stop |= stopping(t);
                next++;
                continue;
            }
            if (k == BEGIN_ANSWERED) {
                et_eval_result *r = &B->r[next];
                stop |= answer(t, j, r);
                learn(t, c, &t->res->cand[j->ci], j->to.bound_s);
                r->answered = true;
                if (r->status == ET_EVAL_OK && r->time_s < best)
                    best = r->time_s;
                next++;
                continue;
            }
            et_status st = x->submit(x->ctx, next, j->rend.source,
                                     j->rend.name, &j->rend.launch,
                                     t->awk.n ? j->geom_at : NULL, t->awk.n,
                                     &j->to, t->err);
            if (st != ET_OK) {
                t->fatal = st;
                et_rendered_free(&j->rend);
                break;
            }
            inflight++;
            next++;
        }
        if (inflight == 0)
            break;
        long id = -1;
        int where = 0;
        et_evaluation ev;
        memset(&ev, 0, sizeof ev);
        double load = NAN;
        et_status st = x->wait(x->ctx, &id, &ev, &where, &load, t->err);
        if (st != ET_OK || id < 0 || id >= B->n) {
            t->fatal = st != ET_OK ? st : ET_ERR_INTERNAL;
            break;
        }
        inflight--;
        tune_job *j = &jobs[id];
        if (!isnan(load))
            t->res->cand[j->ci].load_1m = load;
        finish_eval(t, j, &ev);
        t->res->cand[j->ci].rank = where;
        et_eval_result *r = &B->r[id];
        stop |= answer(t, j, r);
        learn(t, &B->c[id], &t->res->cand[j->ci], j->to.bound_s);
        r->answered = true;
        if (r->status == ET_EVAL_OK && r->time_s < best)
            best = r->time_s;
    }
    for (int i = 0; i < B->n; i++)
        et_rendered_free(&jobs[i].rend);
    free(jobs);
    return stop || t->fatal != ET_OK;
}

/* The winner re-timed on one evaluator (the executor's first free slot),
 * without a bound, so that the figure reported comes from one device. */
static void retime_best(tune_ctx *t)
{
    const et_tune_exec *x = t->o->exec;
    et_tune_result *res = t->res;
    if (res->best < 0 || !t->best_rend.source)
        return;
    et_timing_opts to = t->o->timing;
    to.bound_s = 0;
    et_error e2 = {{0}};
    long id = -1;
    int where = 0;
    et_evaluation ev;
    memset(&ev, 0, sizeof ev);
    if (x->submit(x->ctx, 0, t->best_rend.source, t->best_rend.name,
                  &t->best_rend.launch, NULL, 0, &to, &e2) != ET_OK ||
        x->wait(x->ctx, &id, &ev, &where, NULL, &e2) != ET_OK) {
        say(t, ET_TUNE_WARN, "the winner was not re-timed: %s", e2.msg);
        return;
    }
    res->retimed = true;
    res->retime_rank = where;
    res->retime_outcome = ev.result.outcome;
    res->retime = ev.timing;
    if (ev.result.outcome == ET_OUTCOME_OK) {
        char line[256];
        et_timing_format(&ev.timing, line, sizeof line);
        say(t, ET_TUNE_INFO, "the winner re-timed on rank %d: %s", where,
            line);
    } else {
        say(t, ET_TUNE_WARN, "the winner re-timed on rank %d: %s: %s", where,
            et_outcome_name(ev.result.outcome), ev.result.reason);
    }
}

et_status et_tune_baseline(et_device *dev, et_verifier *ver,
                           const et_kernel *base, const et_timing_opts *to,
                           et_timing *timing, et_verify_result *verify,
                           char *name, size_t name_cap, char *said,
                           size_t said_cap, et_error *err)
{
    et_rendered rend = {0};
    et_program *p = NULL;
    if (said_cap)
        said[0] = '\0';
    et_status st = et_kernel_render(base, dev->info.target.backend, NULL,
                                    &rend);
    if (st != ET_OK) {
        snprintf(err->msg, sizeof err->msg,
                 "cannot render the untransformed kernel: %s",
                 et_status_str(st));
        return st;
    }
    snprintf(name, name_cap, "%s", rend.name);
    st = et_program_build(dev, rend.source, rend.name, &p, err);
    if (st != ET_OK)
        goto done;
    if (said_cap)
        snprintf(said, said_cap, "%s", err->msg);
    st = et_verifier_baseline_kernel(ver, dev, p, &rend.launch, verify, err);
    if (st != ET_OK)
        goto done;
    if (verify->outcome != ET_OUTCOME_OK) {
        snprintf(err->msg, sizeof err->msg,
                 "the untransformed kernel fails verification: %s",
                 verify->reason);
        st = ET_ERR_INTERNAL;
        goto done;
    }
    et_buffer *args[ET_MAX_OPERANDS + 1];
    size_t offsets[ET_MAX_OPERANDS + 1];
    int nargs = 0;
    st = et_verifier_args(ver, dev, args, offsets, &nargs, err);
    if (st != ET_OK)
        goto done;
    et_result r;
    st = et_time_kernel(dev, p, &rend.launch, args, offsets, nargs, to,
                        timing, &r, err);
done:
    if (p)
        et_program_free(dev, p);
    et_rendered_free(&rend);
    return st;
}

/* Verifies and times the untransformed kernel: the baseline. */
static et_status baseline(tune_ctx *t)
{
    char name[160], said[1024];
    et_status st = et_tune_baseline(t->dev, t->ver, et_binding_base(t->b),
                                    &t->o->timing, &t->res->baseline,
                                    &t->res->baseline_verify, name,
                                    sizeof name, said, sizeof said, t->err);
    if (said[0])
        say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s", name, said);
    if (st == ET_OK) {
        char line[256];
        et_timing_format(&t->res->baseline, line, sizeof line);
        say(t, ET_TUNE_INFO, "untransformed kernel %s: %s", name, line);
    }
    return st;
}

/* The cost model before the search: learns from the database's trials
 * of the device and fits (learn.h); logs what it knows. */
static et_status model_start(tune_ctx *t, const et_device_info *info)
{
    const et_tune_opts *o = t->o;
    et_tune_result *res = t->res;
    et_status st = et_tune_learn_init(&t->learn, o->db, t->device_id,
                                      et_binding_einsum(t->b), &info->target,
                                      o->peaks, res->baseline.median_s,
                                      &res->model, t->err);
    if (st != ET_OK) {
        et_tune_learn_free(&t->learn, 0, 0);
        return st;
    }
    t->learning = true;
    const et_tune_model_report *m = &res->model;
    if (m->fitted_at_start)
        say(t, ET_TUNE_INFO, "cost model: fitted on %d trials of the "
            "database (R^2 %.2f); it ranks the candidates of each step",
            m->fitted_on, m->r2);
    else
        say(t, ET_TUNE_INFO, "cost model: not fitted (%s); it learns from "
            "this run's candidates", m->note);
    return ET_OK;
}

/* One warning at the end when the run's timings may be disturbed: the
 * candidates timed here with a cv above ET_TUNE_NOISY_CV (how many, the
 * first few by name) and a load that moved by more than
 * ET_TUNE_LOAD_CHANGE. */
static void noise_summary(tune_ctx *t)
{
    const et_tune_result *res = t->res;
    char msg[1536] = "";
    size_t n = 0;
    if (res->noisy > 0) {
        int timed = 0;
        for (int i = 0; i < res->n_cand; i++) {
            const et_tune_candidate *c = &res->cand[i];
            timed += c->timed && !c->cached && c->duplicate_of < 0 &&
                     c->outcome == ET_OUTCOME_OK;
        }
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%d of %d candidates "
                              "timed in this run had a cv above %.0f %% (",
                              res->noisy, timed, 100 * ET_TUNE_NOISY_CV);
        int shown = 0;
        for (int i = 0; i < res->n_cand && n < sizeof msg; i++) {
            const et_tune_candidate *c = &res->cand[i];
            if (c->cached || c->duplicate_of >= 0 || !c->timed ||
                c->outcome != ET_OUTCOME_OK || c->timing.cv <= ET_TUNE_NOISY_CV)
                continue;
            if (shown < 3)
                n += (size_t)snprintf(msg + n, sizeof msg - n, "%s%s %.0f %%",
                                      shown ? ", " : "",
                                      c->opts[0] ? c->opts : "untransformed",
                                      100 * c->timing.cv);
            shown++;
        }
        if (n < sizeof msg && shown > 3)
            n += (size_t)snprintf(msg + n, sizeof msg - n, " and %d more",
                                  shown - 3);
        if (n < sizeof msg)
            n += (size_t)snprintf(msg + n, sizeof msg - n, ")");
    }
    if (!isnan(res->load_min) &&
        res->load_max - res->load_min > ET_TUNE_LOAD_CHANGE && n < sizeof msg)
        n += (size_t)snprintf(msg + n, sizeof msg - n, "%sthe machine's "
                              "1-minute load moved between %.2f and %.2f "
                              "during the run", n ? "; " : "", res->load_min,
                              res->load_max);
    if (n)
        say(t, ET_TUNE_WARN, "noisy timing: %s: other work on the machine "
            "may have disturbed the timings%s", msg,
            res->race.ran ? " (the race's paired rounds are the figures to "
                            "trust)" : "");
}

/* A proposal whose kernel is one already answered: answered from it. */
static void dup_cb(void *user, const et_candidate *c, long first_seq)
{
    tune_ctx *t = user;
    et_tune_result *res = t->res;
    int first = -1;
    for (int i = res->n_cand - 1; i >= 0; i--)
        if (res->cand[i].seq == first_seq) {
            first = i;
            break;
        }
    if (first < 0)
        return;
    et_tune_candidate *tc = push(res);
    if (!tc) {
        t->fatal = ET_ERR_NOMEM;
        return;
    }
    const et_tune_candidate *f = &res->cand[first];
    tc->seq = c->seq;
    tc->key = c->key;
    tc->n_opts = c->n_opts;
    tc->duplicate_of = first;
    mark_seed(t, tc, c);
    copy_str(tc->params, sizeof tc->params, c->params_text);
    copy_str(tc->opts, sizeof tc->opts, c->opts_text);
    copy_str(tc->kernel, sizeof tc->kernel, f->kernel);
    tc->outcome = f->outcome;
    snprintf(tc->reason, sizeof tc->reason, "%s", f->reason);
    tc->timed = f->timed;
    tc->timing = f->timing;
    tc->verified = f->verified;
    tc->verify = f->verify;
    tc->done_s = et_now_s() - t->t0;
    res->duplicates++;
    say(t, ET_TUNE_INFO, "%s is the same kernel as %s: answered from it, "
        "not charged to the budget", tc->opts[0] ? tc->opts : "untransformed",
        f->opts[0] ? f->opts : "untransformed");
}

/* Renders, for the race, the base kernel with opts text applied. */
static et_status race_render(tune_ctx *t, const char *opts, et_rendered *rend,
                             int *n_opts)
{
    const et_kernel *base = et_binding_base(t->b);
    et_kernel *k = et_kernel_clone(base);
    et_opt *ol = calloc(ET_MAX_OPTS, sizeof *ol);
    et_status st = k && ol ? ET_OK : ET_ERR_NOMEM;
    int n = 0;
    char why[512] = "";
    if (st == ET_OK && opts[0]) {
        et_diag d = {0};
        st = et_opts_parse(opts, ol, ET_MAX_OPTS, &n, &d);
        if (st == ET_OK)
            st = et_kernel_apply_opts(k, ol, n, why, sizeof why);
        if (st != ET_OK)
            et_errorf(t->err, st, "race: opts %s: %s", opts,
                      why[0] ? why : d.msg);
    }
    if (st == ET_OK)
        st = et_kernel_render(k, t->backend, NULL, rend);
    *n_opts = n;
    et_kernel_free(k);
    free(ol);
    return st;
}

et_status et_tune_race_time(et_device *dev, et_verifier *ver,
                            const et_tune_race_kernel *k, int n, int warmups,
                            int rounds, double max_seconds, double *times,
                            int *done, int *failed, et_error *err)
{
    et_program *progs[ET_RACE_MAX] = {NULL};
    et_launch geoms[ET_RACE_MAX];
    *done = 0;
    *failed = -1;
    if (n < 1 || n > ET_RACE_MAX)
        return et_errorf(err, ET_ERR_INPUT, "race: %d kernels (1 to %d)", n,
                         ET_RACE_MAX);
    et_status st = ET_OK;
    for (int i = 0; i < n && st == ET_OK; i++) {
        geoms[i] = k[i].geom;
        st = et_program_build(dev, k[i].source, k[i].name, &progs[i], err);
        if (st != ET_OK)
            *failed = i;
    }
    et_buffer *args[ET_MAX_OPERANDS + 1];
    size_t offsets[ET_MAX_OPERANDS + 1];
    int nargs = 0;
    if (st == ET_OK)
        st = et_verifier_args(ver, dev, args, offsets, &nargs, err);
    if (st == ET_OK)
        st = et_time_round_robin(dev, progs, geoms, n, args, offsets, nargs,
                                 warmups, rounds, max_seconds, times, done,
                                 failed, err);
    for (int i = 0; i < n; i++)
        if (progs[i])
            et_program_free(dev, progs[i]);
    return st;
}

/* The race's estimated wall time for np candidates and the untransformed
 * kernel over `rounds` rounds: building and first launches, then the
 * rounds (the kernels' known medians and a launch's round trip). */
static double race_cost(const et_tune_result *res, const int *pick, int np,
                        double base_s, int rounds)
{
    double setup = res->evaluations > 0
                       ? (res->build_s + res->verify_s) / res->evaluations
                       : 1.0;
    double round = base_s + 0.002;
    for (int i = 0; i < np; i++)
        round += res->cand[pick[i]].timing.median_s + 0.002;
    return (np + 1) * setup + rounds * round;
}

static void race_record(tune_ctx *t)
{
    et_tune_race *R = &t->res->race;
    et_db_race *dr = calloc(1, sizeof *dr);
    if (!dr)
        return;
    et_error e2 = {{0}};
    dr->einsum_id = t->einsum_id;
    dr->device_id = t->device_id;
    copy_str(dr->einsum_text, sizeof dr->einsum_text,
             et_binding_einsum(t->b)->text);
    dr->rounds = R->rounds;
    dr->conf = R->conf;
    copy_str(dr->verdict, sizeof dr->verdict, et_race_verdict_name(R->verdict));
    copy_str(dr->chosen_opts, sizeof dr->chosen_opts, R->e[R->chosen].opts);
    if (R->runner_up >= 0)
        copy_str(dr->runner_up_opts, sizeof dr->runner_up_opts,
                 R->e[R->runner_up].opts);
    dr->faster_pct = R->runner_up >= 0 ? R->faster_pct : NAN;
    dr->faster_lo = R->runner_up >= 0 && isfinite(R->faster_lo) ? R->faster_lo
                                                                 : NAN;
    dr->faster_hi = R->runner_up >= 0 && isfinite(R->faster_hi) ? R->faster_hi
                                                                 : NAN;
    dr->speedup = R->speedup;
    dr->speedup_lo = isfinite(R->speedup_lo) ? R->speedup_lo : NAN;
    dr->speedup_hi = isfinite(R->speedup_hi) ? R->speedup_hi : NAN;
    dr->load_1m = et_tune_load_1m();
    dr->n = R->n;
    for (int i = 0; i < R->n; i++) {
        const et_tune_race_entry *e = &R->e[i];
        et_db_race_entry *d = &dr->e[i];
        copy_str(d->opts, sizeof d->opts, e->opts);
        copy_str(d->kernel_name, sizeof d->kernel_name, e->kernel);
        copy_str(d->source_hash, sizeof d->source_hash, e->source_hash);
        d->untransformed = e->untransformed;
        d->chosen = i == R->chosen;
        d->tied = e->tied;
        d->median_s = e->timing.median_s;
        d->low_s = e->timing.low_s;
        d->high_s = e->timing.high_s;
        d->cv = e->timing.cv;
        d->times = R->times + i;
        d->stride = R->n;
    }
    et_status st = t->o->store
                       ? t->o->store->race(t->o->store->ctx, dr, &e2)
                       : et_db_race_record(t->o->db, dr, &R->db_id, &e2);
    if (st != ET_OK)
        say(t, ET_TUNE_WARN, "the race is not recorded in the database: %s",
            e2.msg);
    free(dr);
}

/*
 * The final race (tune.h, docs/measurement.md). Fills res->race; a race
 * that cannot run leaves race.ran false with the reason in race.note and
 * the search's figures stand. Returns an error only for a host failure.
 */
static et_status race_run(tune_ctx *t, double t_run0)
{
    et_tune_result *res = t->res;
    et_tune_race *R = &res->race;
    R->fastest = R->runner_up = R->chosen = R->baseline = -1;
    if (t->o->race_k <= 0) {
        snprintf(R->note, sizeof R->note, "no final race (turned off)");
        return ET_OK;
    }
    if (stopping(t)) {
        snprintf(R->note, sizeof R->note, "no final race (interrupted)");
        return ET_OK;
    }
    uint64_t base_key = et_kernel_dedupe_key(et_binding_base(t->b),
                                             t->backend);
    int k = t->o->race_k < ET_RACE_MAX - 1 ? t->o->race_k : ET_RACE_MAX - 1;
    int pick[ET_RACE_MAX], np = 0, base_cand = -1;
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *c = &res->cand[i];
        if (c->outcome == ET_OUTCOME_OK && c->duplicate_of < 0 &&
            c->key == base_key && base_cand < 0)
            base_cand = i;
    }
    while (np < k) {
        int b = -1;
        for (int i = 0; i < res->n_cand; i++) {
            const et_tune_candidate *c = &res->cand[i];
            if (c->outcome != ET_OUTCOME_OK || c->duplicate_of >= 0 ||
                c->key == base_key)
                continue;
            bool taken = false;
            for (int j = 0; j < np; j++)
                taken = taken || res->cand[pick[j]].key == c->key;
            if (!taken &&
                (b < 0 || c->timing.median_s < res->cand[b].timing.median_s))
                b = i;
        }
        if (b < 0)
            break;
        pick[np++] = b;
    }
    if (np == 0) {
        snprintf(R->note, sizeof R->note, "no final race: %s",
                 base_cand >= 0 ? "only the untransformed kernel passed"
                                : "no candidate passed");
        return ET_OK;
    }
    /* the time it may take */
    double base_s = base_cand >= 0 ? res->cand[base_cand].timing.median_s
                                   : res->baseline.median_s;
    double elapsed = et_now_s() - t_run0;
    double limit = t->o->search.time_limit_s;
    double allow = limit > 0 ? limit - elapsed
                             : fmax(10.0, 0.25 * elapsed);
    int want = t->o->race_rounds > 0 ? t->o->race_rounds : ET_RACE_ROUNDS;
    int min_rounds = want < ET_RACE_MIN_ROUNDS ? want : ET_RACE_MIN_ROUNDS;
    int dropped = 0;
    while (limit > 0 && np > 1 &&
           race_cost(res, pick, np, base_s, min_rounds) > allow) {
        np--;
        dropped++;
    }
    if (race_cost(res, pick, np, base_s, min_rounds) > allow && limit > 0) {
        snprintf(R->note, sizeof R->note,
                 "no final race: the time limit leaves %.1f s, %d rounds "
                 "need about %.1f s", allow > 0 ? allow : 0, min_rounds,
                 race_cost(res, pick, np, base_s, min_rounds));
        say(t, ET_TUNE_WARN, "%s; the figures are the search's own",
            R->note);
        return ET_OK;
    }
    int rounds = want;
    while (rounds > min_rounds &&
           race_cost(res, pick, np, base_s, rounds) > allow)
        rounds--;
    if (dropped)
        snprintf(R->note, sizeof R->note, "%d candidate%s left out of the "
                 "race to fit the time limit", dropped,
                 dropped == 1 ? "" : "s");

    /* the kernels: the candidates fastest first, the untransformed last */
    double r0 = et_now_s();
    int n = np + 1;
    et_rendered rends[ET_RACE_MAX];
    et_tune_race_kernel ks[ET_RACE_MAX];
    int n_opts[ET_RACE_MAX];
    bool eligible[ET_RACE_MAX];
    memset(rends, 0, sizeof rends);
    memset(ks, 0, sizeof ks);
    et_status st = ET_OK;
    et_error e2 = {{0}};
    R->n = n;
    R->baseline = np;
    for (int i = 0; i < n && st == ET_OK; i++) {
        et_tune_race_entry *e = &R->e[i];
        e->untransformed = i == np;
        e->cand = e->untransformed ? base_cand : pick[i];
        e->eligible = e->cand >= 0;
        eligible[i] = e->eligible;
        copy_str(e->opts, sizeof e->opts,
                 e->untransformed ? "" : res->cand[pick[i]].opts);
        st = race_render(t, e->opts, &rends[i], &e->n_opts);
        if (st != ET_OK)
            break;
        n_opts[i] = e->n_opts;
        copy_str(e->kernel, sizeof e->kernel, rends[i].name);
        et_db_source_hash(rends[i].source, &rends[i].launch, e->source_hash);
        ks[i].source = rends[i].source;
        ks[i].name = rends[i].name;
        ks[i].geom = rends[i].launch;
    }
    int done = 0, failed = -1;
    R->times = st == ET_OK ? calloc((size_t)n * (size_t)rounds,
                                    sizeof *R->times)
                           : NULL;
    if (st == ET_OK && !R->times)
        st = ET_ERR_NOMEM;
    if (st == ET_OK) {
        const et_tune_exec *x = t->o->exec;
        double max_s = limit > 0 ? fmax(1e-3, allow - (et_now_s() - r0)) : 0;
        say(t, ET_TUNE_INFO, "final race: %d candidate%s and the "
            "untransformed kernel, %d rounds round robin", np,
            np == 1 ? "" : "s", rounds);
        if (x)
            st = x->race(x->ctx, ks, n, 2, rounds, max_s, R->times, &done,
                         &failed, &R->rank, &e2);
        else
            st = et_tune_race_time(t->dev, t->ver, ks, n, 2, rounds, max_s,
                                   R->times, &done, &failed, &e2);
    }
    for (int i = 0; i < n; i++)
        et_rendered_free(&rends[i]);
    R->rounds_planned = rounds;
    R->rounds = done;
    if (st == ET_ERR_NOMEM)
        return et_errorf(t->err, st, "race: out of memory");
    if (st != ET_OK) {
        snprintf(R->note, sizeof R->note, "no final race: %s%s%.200s",
                 failed >= 0 ? R->e[failed].kernel : "",
                 failed >= 0 ? ": " : "", e2.msg);
        say(t, ET_TUNE_WARN, "%s; the figures are the search's own",
            R->note);
        return ET_OK;
    }
    et_race_stats *S = malloc(sizeof *S);
    if (!S)
        return et_errorf(t->err, ET_ERR_NOMEM, "race: out of memory");
    st = et_race_decide(R->times, n, done, n_opts, eligible, 0.95, S, &e2);
    if (st != ET_OK) {
        free(S);
        snprintf(R->note, sizeof R->note, "no final race: %.200s", e2.msg);
        say(t, ET_TUNE_WARN, "%s", R->note);
        return st == ET_ERR_NOMEM ? et_errorf(t->err, st, "%s", e2.msg)
                                  : ET_OK;
    }
    R->ran = true;
    R->conf = S->conf;
    R->pair_conf = S->pair_conf;
    R->verdict = S->verdict;
    R->fastest = S->fastest;
    R->runner_up = S->runner_up;
    R->chosen = S->chosen;
    for (int i = 0; i < n; i++) {
        R->e[i].timing = S->timing[i];
        R->e[i].tied = S->tied[i];
    }
    if (R->runner_up >= 0)
        et_race_faster_pct(S, R->fastest, R->runner_up, &R->faster_pct,
                           &R->faster_lo, &R->faster_hi);
    R->tie_with = -1;
    if (R->verdict == ET_RACE_TIED) {
        R->tie_with = R->chosen;
        if (R->chosen == R->fastest)
            for (int i = 0; i < n; i++)
                if (i != R->fastest && S->tied[i] &&
                    (R->tie_with == R->fastest ||
                     S->timing[i].median_s <
                         S->timing[R->tie_with].median_s))
                    R->tie_with = i;
        et_race_faster_pct(S, R->fastest, R->tie_with, &R->tie_pct,
                           &R->tie_lo, &R->tie_hi);
    }
    int c = R->chosen, b = R->baseline;
    R->speedup = exp(-S->lr[c][b]);
    R->speedup_lo = c == b ? 1 : exp(-S->lr_hi[c][b]);
    R->speedup_hi = c == b ? 1 : exp(-S->lr_lo[c][b]);
    free(S);
    R->elapsed_s = et_now_s() - r0;

    res->best = R->e[c].cand;
    res->baseline = R->e[b].timing;
    char line[256];
    for (int i = 0; i < n; i++) {
        et_timing_format(&R->e[i].timing, line, sizeof line);
        say(t, ET_TUNE_INFO, "race %s: %s",
            R->e[i].opts[0] ? R->e[i].opts : "untransformed", line);
    }
    if (t->o->db || t->o->store)
        race_record(t);
    return ET_OK;
}

et_status et_tune_run(et_device *dev, const et_binding *b,
                      const et_tune_opts *o, et_tune_result *res,
                      et_error *err)
{
    memset(res, 0, sizeof *res);
    res->best = -1;
    res->race.fastest = res->race.runner_up = res->race.chosen = -1;
    res->race.baseline = res->race.tie_with = -1;
    res->load_min = res->load_max = NAN;
    res->load_start = sample_load(res);
    double t0 = et_now_s();
    const et_tune_exec *x = o->exec;
    tune_ctx t;
    memset(&t, 0, sizeof t);
    t.dev = dev;
    t.b = b;
    t.o = o;
    t.res = res;
    t.err = err;
    t.fatal = ET_OK;
    t.t0 = t0;
    const et_device_info *info = x ? &x->info : &dev->info;
    t.backend = info->target.backend;
    et_status st;
    if (o->db) {
        st = et_db_einsum_id(o->db, et_binding_einsum(b), &t.einsum_id, err);
        if (st == ET_OK)
            st = et_db_device_id(o->db, info, &t.device_id, err);
        if (st != ET_OK)
            return st;
    }
    const et_einsum *be = et_binding_einsum(b);
    st = et_tune_awkward_init(be, x ? NULL : &o->verify, &t.awk, err);
    if (st != ET_OK)
        return st;
    if (t.awk.axis >= 0) {
        const char *an = t.awk.name;
        char also[128] = "";
        for (int i = 0; i < t.awk.n; i++)
            snprintf(also + strlen(also), sizeof also - strlen(also),
                     "%s%s=%lld", i ? " and " : "", an,
                     (long long)t.awk.size[i]);
        say(&t, ET_TUNE_INFO, "open axis %s: tuned at %s=%lld%s%s", an, an,
            (long long)be->idx[t.awk.axis].size,
            t.awk.n ? "; every verified candidate is also checked at " : "",
            also);
    }
    et_diag d = {0};
    if (x) {
        /* the evaluators verified and timed the untransformed kernel */
        res->baseline = x->baseline;
        res->baseline_verify = x->baseline_verify;
        res->baseline_s = x->baseline_s;
    } else {
        st = et_verifier_init(et_binding_einsum(b), &o->verify, &t.ver, err);
        if (st != ET_OK)
            goto done;
        double tb = et_now_s();
        st = baseline(&t);
        res->baseline_s = et_now_s() - tb;
        if (st != ET_OK)
            goto done;
    }

    et_search_opts so = o->search;
    so.on_duplicate = dup_cb;
    so.seeds = NULL;
    so.n_seeds = 0;
    so.on_seed_dropped = seed_dropped_cb;
    et_search_seed seeds[ET_SEARCH_MAX_SEEDS];
    if (o->seeds > 0 && o->db) {
        st = seeds_find(&t, info, seeds, &so.n_seeds);
        if (st != ET_OK)
            goto done;
    }
    if (o->structural_seeds) {
        st = seeds_structural(&t, seeds, &so.n_seeds);
        if (st != ET_OK)
            goto done;
    }
    t.n_seeds = so.n_seeds;
    if (so.n_seeds > 0)
        so.seeds = seeds;
    if (o->model >= 0) {
        st = model_start(&t, info);
        if (st != ET_OK)
            goto done;
        so.predict = predict_cb;
    }
    /* the final race gets what the search leaves of the time limit */
    if (so.time_limit_s > 0 && o->race_k > 0)
        so.time_limit_s = 0.85 * so.time_limit_s - (et_now_s() - t0);
    if (o->search.time_limit_s > 0 && !(so.time_limit_s > 0))
        so.time_limit_s = 1e-9;
    if (x) {
        if (so.batch <= 0)
            so.batch = 2 * x->slots;
        st = et_search_run_many(b, &so, eval_many, &t, &res->stats, &d);
    } else {
        st = et_search_run(b, &so, eval_cb, &t, &res->stats, &d);
    }
    if (st != ET_OK && t.fatal == ET_OK) {
        et_errorf(err, st, "%s", d.msg);
        goto done;
    }
    if (t.fatal != ET_OK) {
        st = t.fatal;
        goto done;
    }
    if (t.cancelled)
        snprintf(res->stop_reason, sizeof res->stop_reason, "cancelled");
    else if (o->stop && *o->stop)
        snprintf(res->stop_reason, sizeof res->stop_reason, "interrupted");
    else
        snprintf(res->stop_reason, sizeof res->stop_reason, "%s",
                 res->stats.stop_reason);
    st = race_run(&t, t0);
    /* without a race, the winner of a run spread over evaluators is timed
     * once more on one of them, so that its figure comes from one device */
    if (st == ET_OK && x && o->race_k <= 0 && !stopping(&t))
        retime_best(&t);
    sample_load(res);
    noise_summary(&t);
done:
    if (t.learning) {
        et_tune_learn_free(&t.learn, res->stats.model_ranked,
                           res->stats.model_skipped);
        if (res->model.used)
            say(&t, ET_TUNE_INFO, "cost model: %d of the %d new kernels it "
                "ranked were not timed", res->model.skipped,
                res->model.ranked);
    }
    res->elapsed_s = et_now_s() - t0;
    et_rendered_free(&t.best_rend);
    free(t.seed_best);
    if (t.ver) {
        et_verifier_release(t.ver);
        et_verifier_free(t.ver);
    }
    et_tune_awkward_free(&t.awk);
    return st;
}

void et_tune_result_free(et_tune_result *res)
{
    free(res->race.times);
    res->race.times = NULL;
    free(res->cand);
    res->cand = NULL;
    res->n_cand = res->cap_cand = 0;
    free(res->seeds);
    res->seeds = NULL;
    res->n_seeds = 0;
}
