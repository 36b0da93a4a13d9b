/*
 * tune.c - the tuning loop (see tune.h): the baseline, the search's
 * callbacks wired to measurement and the database, worker recycling, an
 * executor's batches, the cost model, the run's summary; the built-in
 * space. The seeds are seeds.c's, the final race race.c's, the awkward
 * sizes of an open axis awkward.c's (tune_impl.h).
 */
#include "tune/tune_impl.h"
#include "base/clock.h"

#include "db/db.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

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
    "# serves many of its values); NTSTORE stores the outputs past the\n"
    "# caches (a memory-bound kernel's written lines are not read first)\n"
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
    "  - {op: NTSTORE}\n"
    "max_depth: 6\n";

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
        tune_say(t, ET_TUNE_WARN, "not recorded in the database: %s", e2.msg);
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

void tune_say(const tune_ctx *t, et_tune_level lvl, const char *fmt, ...)
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

int tune_stopping(const tune_ctx *t)
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

void tune_copy_str(char *dst, size_t cap, const char *src)
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
    tune_mark_seed(t, tc, c);
    tune_copy_str(tc->params, sizeof tc->params, c->params_text);
    tune_copy_str(tc->opts, sizeof tc->opts, c->opts_text);
    char ptext[512];
    et_tune_params_text(tc->params, ptext, sizeof ptext);
    tune_say(t, ET_TUNE_INFO, "trying %s%s%s",
             tc->opts[0] ? tc->opts : "untransformed", ptext[0] ? " " : "",
             ptext);

    if (c->refused) {
        tc->outcome = ET_OUTCOME_REFUSED;
        tune_copy_str(tc->reason, sizeof tc->reason, c->reason);
        res->failures[ET_OUTCOME_REFUSED]++;
        tune_say(t, ET_TUNE_INFO, "refused: %s", tc->reason);
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
    tune_copy_str(tc->kernel, sizeof tc->kernel, j->rend.name);
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
            tune_say(t, ET_TUNE_WARN, "database lookup failed: %s", e2.msg);
            found = false;
        }
        res->db_s += et_now_s() - t0;
    }
    if (found) {
        from_trial(tc, &j->tr);
        res->cached++;
        tune_say(t, ET_TUNE_INFO, "answered from the database (%s)",
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
        tune_say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s",
                 j->rend.name, ev->compiler_said);
    tc->outcome = ev->result.outcome;
    tune_copy_str(tc->reason, sizeof tc->reason, ev->result.reason);
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
        tune_copy_str(j->tr.kernel_name, sizeof j->tr.kernel_name,
                      j->rend.name);
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
        tune_say(t, ET_TUNE_INFO, "%s", line);
    }
    if (tc->outcome == ET_OUTCOME_OK) {
        char line[256];
        et_timing_format(&tc->timing, line, sizeof line);
        tune_say(t, ET_TUNE_INFO, "%s", line);
        r->status = ET_EVAL_OK;
        r->time_s = tc->timing.median_s;
    } else {
        res->failures[tc->outcome]++;
        /* a cut at the bound is the search working as meant, not a
         * warning; a kernel that fails to build, run or verify is */
        tune_say(t,
                 tc->outcome == ET_OUTCOME_SLOWER_THAN_BOUND ? ET_TUNE_INFO
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
    return tune_stopping(t);
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

/* The untransformed kernel, which the search proposes first, is the
 * baseline this run verified and timed before the search: it is answered
 * from that measurement, not built, verified and timed again (for a slow
 * kernel that was a fifth of a 20 s tune). Not with an open axis, whose
 * candidates are also checked at its awkward sizes. */
static bool from_baseline(const tune_ctx *t, const et_candidate *c,
                          et_evaluation *ev)
{
    if (c->n_opts != 0 || !t->ver || t->awk.axis >= 0 ||
        !(t->res->baseline.median_s > 0) ||
        t->res->baseline_verify.outcome != ET_OUTCOME_OK)
        return false;
    memset(ev, 0, sizeof *ev);
    ev->result.outcome = ET_OUTCOME_OK;
    ev->verified = true;
    ev->verify = t->res->baseline_verify;
    ev->timed = true;
    ev->timing = t->res->baseline;
    return true;
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
        return tune_stopping(t);
    et_evaluation ev;
    if (k == BEGIN_EVALUATE && from_baseline(t, c, &ev)) {
        tune_say(t, ET_TUNE_INFO, "the untransformed kernel: the baseline's "
                 "verification and timing");
        finish_eval(t, &j, &ev);
    } else if (k == BEGIN_EVALUATE) {
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
            tune_say(t, ET_TUNE_DEBUG, "new device worker after %d "
                     "evaluations (%.2f s)", res->evaluations,
                     et_now_s() - tr0);
        }
    }
    int stop = answer(t, &j, r);
    learn(t, c, &res->cand[j.ci], j.to.bound_s);
    return stop;
}

/* A time limit that the baseline (the reference, the untransformed
 * kernel's verification and timing) used up leaves the search no
 * candidate: the untransformed kernel is then the run's one candidate,
 * answered from the baseline's measurement, so that the run ends with a
 * best, as a search that found nothing faster does. Only when the
 * search starts from the untransformed kernel (no start opts). */
static void baseline_as_candidate(tune_ctx *t, const et_search_opts *so)
{
    if (t->res->n_cand > 0 || so->n_start > 0 || t->fatal != ET_OK)
        return;
    const et_kernel *base = et_binding_base(t->b);
    et_candidate c;
    memset(&c, 0, sizeof c);
    c.binding = t->b;
    c.opts_text = "";
    c.params_text = "{}";
    c.reason = "";
    c.kernel = base;
    c.key = et_kernel_dedupe_key(base, t->backend);
    c.bound_s = INFINITY;
    et_evaluation ev;
    if (!from_baseline(t, &c, &ev))
        return;
    tune_say(t, ET_TUNE_INFO, "the time limit left the search no candidate: "
             "the untransformed kernel is the run's one");
    et_eval_result r;
    memset(&r, 0, sizeof r);
    eval_cb(t, &c, &r);
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
                stop |= tune_stopping(t);
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
        tune_say(t, ET_TUNE_WARN, "the winner was not re-timed: %s",
                 e2.msg);
        return;
    }
    res->retimed = true;
    res->retime_rank = where;
    res->retime_outcome = ev.result.outcome;
    res->retime = ev.timing;
    if (ev.result.outcome == ET_OUTCOME_OK) {
        char line[256];
        et_timing_format(&ev.timing, line, sizeof line);
        tune_say(t, ET_TUNE_INFO, "the winner re-timed on rank %d: %s",
                 where, line);
    } else {
        tune_say(t, ET_TUNE_WARN, "the winner re-timed on rank %d: %s: %s",
                 where, et_outcome_name(ev.result.outcome),
                 ev.result.reason);
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
    if (et_tune_baseline_estimate(verify, timing))
        goto done; /* slow: the verification's launches are the estimate */
    et_buffer *args[ET_MAX_ARGS];
    size_t offsets[ET_MAX_ARGS];
    int nargs = 0;
    st = et_verifier_args(ver, dev, args, offsets, &nargs, err);
    if (st != ET_OK)
        goto done;
    /* an estimate (the protocol's brief step): the verification has just
     * run it on every input set, one warm-up is enough, and the final race
     * times it again with the candidates; a 1.2 s untransformed kernel
     * took 8 launches, 10 s before the search, with the full protocol */
    et_timing_opts bo = to ? *to : (et_timing_opts){0};
    bo.warmups = 1;
    bo.brief = true;
    if (!(bo.max_seconds > 0) || bo.max_seconds > ET_TUNE_BASELINE_S)
        bo.max_seconds = ET_TUNE_BASELINE_S;
    bo.bound_s = 0;
    et_result r;
    st = et_time_kernel(dev, p, &rend.launch, args, offsets, nargs, &bo,
                        timing, &r, err);
done:
    if (p)
        et_program_free(dev, p);
    et_rendered_free(&rend);
    return st;
}

bool et_tune_baseline_estimate(const et_verify_result *v, et_timing *timing)
{
    if (v->n_launch < 2)
        return false;
    for (int i = 0; i < v->n_launch; i++)
        if (!(v->launch_s[i] >= ET_TUNE_BASELINE_SLOW_S))
            return false;
    return et_timing_from_runs(v->launch_s, v->n_launch, timing) == ET_OK;
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
        tune_say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s", name,
                 said);
    if (st == ET_OK) {
        char line[256];
        et_timing_format(&t->res->baseline, line, sizeof line);
        tune_say(t, ET_TUNE_INFO, "untransformed kernel %s: %s", name,
                 line);
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
        tune_say(t, ET_TUNE_INFO, "cost model: fitted on %d trials of the "
                 "database (R^2 %.2f); it ranks the candidates of each "
                 "step", m->fitted_on, m->r2);
    else
        tune_say(t, ET_TUNE_INFO, "cost model: not fitted (%s); it learns "
                 "from this run's candidates", m->note);
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
        tune_say(t, ET_TUNE_WARN, "noisy timing: %s: other work on the "
                 "machine may have disturbed the timings%s", msg,
                 res->race.ran ? " (the race's paired rounds are the figures "
                                 "to trust)" : "");
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
    tune_mark_seed(t, tc, c);
    tune_copy_str(tc->params, sizeof tc->params, c->params_text);
    tune_copy_str(tc->opts, sizeof tc->opts, c->opts_text);
    tune_copy_str(tc->kernel, sizeof tc->kernel, f->kernel);
    tc->outcome = f->outcome;
    snprintf(tc->reason, sizeof tc->reason, "%s", f->reason);
    tc->timed = f->timed;
    tc->timing = f->timing;
    tc->verified = f->verified;
    tc->verify = f->verify;
    tc->done_s = et_now_s() - t->t0;
    res->duplicates++;
    tune_say(t, ET_TUNE_INFO, "%s is the same kernel as %s: answered from "
             "it, not charged to the budget",
             tc->opts[0] ? tc->opts : "untransformed",
             f->opts[0] ? f->opts : "untransformed");
}


/* The log line of a run over an open axis: the size it is tuned at and
 * the awkward sizes every verified candidate is checked at too. */
static void say_open_axis(const tune_ctx *t, const et_einsum *be)
{
    const char *an = t->awk.name;
    char also[128] = "";
    for (int i = 0; i < t->awk.n; i++)
        snprintf(also + strlen(also), sizeof also - strlen(also),
                 "%s%s=%lld", i ? " and " : "", an,
                 (long long)t->awk.size[i]);
    tune_say(t, ET_TUNE_INFO, "open axis %s: tuned at %s=%lld%s%s", an, an,
             (long long)be->idx[t->awk.axis].size,
             t->awk.n ? "; every verified candidate is also checked at "
                      : "",
             also);
}

/*
 * The search's options: o->search with this run's callbacks, its seeds
 * (the database's, then the structure's; their opts in seeds, which must
 * outlive the search), the cost model's predictor when it is on, and the
 * time limit less what the final race gets of it.
 */
static et_status search_opts(tune_ctx *t, const et_device_info *info,
                             et_search_opts *so, et_search_seed *seeds)
{
    const et_tune_opts *o = t->o;
    et_status st;
    *so = o->search;
    so->on_duplicate = dup_cb;
    so->seeds = NULL;
    so->n_seeds = 0;
    so->on_seed_dropped = tune_seed_dropped;
    if (o->seeds > 0 && o->db) {
        st = tune_seeds_find(t, info, seeds, &so->n_seeds);
        if (st != ET_OK)
            return st;
    }
    if (o->structural_seeds) {
        st = tune_seeds_structural(t, seeds, &so->n_seeds);
        if (st != ET_OK)
            return st;
    }
    t->n_seeds = so->n_seeds;
    if (so->n_seeds > 0)
        so->seeds = seeds;
    if (o->model >= 0) {
        st = model_start(t, info);
        if (st != ET_OK)
            return st;
        so->predict = predict_cb;
    }
    /* the final race gets what the search leaves of the time limit */
    if (so->time_limit_s > 0 && o->race_k > 0)
        so->time_limit_s = 0.85 * so->time_limit_s - (et_now_s() - t->t0);
    if (o->search.time_limit_s > 0 && !(so->time_limit_s > 0))
        so->time_limit_s = 1e-9;
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
    if (t.awk.axis >= 0)
        say_open_axis(&t, be);
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

    et_search_opts so;
    et_search_seed seeds[ET_SEARCH_MAX_SEEDS];
    st = search_opts(&t, info, &so, seeds);
    if (st != ET_OK)
        goto done;
    if (x) {
        if (so.batch <= 0)
            so.batch = 2 * x->slots;
        st = et_search_run_many(b, &so, eval_many, &t, &res->stats, &d);
    } else {
        st = et_search_run(b, &so, eval_cb, &t, &res->stats, &d);
        if (st == ET_OK)
            baseline_as_candidate(&t, &so);
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
    st = tune_race_run(&t, t0);
    /* without a race, the winner of a run spread over evaluators is timed
     * once more on one of them, so that its figure comes from one device */
    if (st == ET_OK && x && o->race_k <= 0 && !tune_stopping(&t))
        retime_best(&t);
    sample_load(res);
    noise_summary(&t);
done:
    if (t.learning) {
        et_tune_learn_free(&t.learn, res->stats.model_ranked,
                           res->stats.model_skipped);
        if (res->model.used)
            tune_say(&t, ET_TUNE_INFO, "cost model: %d of the %d new "
                     "kernels it ranked were not timed", res->model.skipped,
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
