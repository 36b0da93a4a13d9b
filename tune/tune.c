/* tune.c - the tuning loop (see tune.h). */
#include "tune/tune.h"
#include "base/clock.h"

#include "db/db.h"
#include "measure/remote.h"
#include "transforms/kernel.h"

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
    "# parallelism)\n"
    "name: builtin_actions\n"
    "einsum: any\n"
    "actions:\n"
    "  - {op: UPCAST,   axis: any_global, amt: [0, 2, 3, 4, 5, 7, 8, 16]}\n"
    "  - {op: UNROLL,   axis: any_reduce, amt: [0, 2, 4, 5, 7, 8, 16]}\n"
    "  - {op: LOCAL,    axis: any_global, amt: [4, 16]}\n"
    "  - {op: GROUPTOP, axis: any_reduce, amt: [16, 64]}\n"
    "  - {op: SPLIT,    axis: any_reduce, amt: [4, 16, 64]}\n"
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
    double t0;                /* when the run started (et_now_s) */
} tune_ctx;

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
    tr->space_id = t->o->db_space_id;
    params_to_json(c->params, tr->params_json, sizeof tr->params_json);
    if (et_db_trial_record(t->o->db, tr, NULL, &e2) != ET_OK)
        say(t, ET_TUNE_WARN, "not recorded in the database: %s", e2.msg);
}

/* Fills c from a trial the database answered. */
static void from_trial(et_tune_candidate *c, const et_db_trial *tr)
{
    c->cached = true;
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

static int eval_cb(void *user, const et_candidate *c, et_eval_result *r)
{
    tune_ctx *t = user;
    et_tune_result *res = t->res;
    et_tune_candidate *tc = push(res);
    if (!tc) {
        t->fatal = ET_ERR_NOMEM;
        return 1;
    }
    tc->seq = c->seq;
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
        if (t->o->db) {
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
        return stopping(t);
    }

    double t0 = et_now_s();
    et_backend_kind bk = t->dev->info.target.backend;
    et_rendered rend = {0};
    et_status st = et_kernel_render(c->kernel, bk, NULL, &rend);
    if (st != ET_OK) {
        tc->outcome = ET_OUTCOME_BUILD_ERROR;
        snprintf(tc->reason, sizeof tc->reason, "cannot render: %s",
                 et_status_str(st));
    } else {
        copy_str(tc->kernel, sizeof tc->kernel, rend.name);
        et_db_trial tr;
        bool found = false, use_db = false;
        if (t->o->db) {
            et_error e2 = {{0}};
            use_db = et_db_trial_init(&tr, t->einsum_id,
                                      et_binding_einsum(t->b), t->device_id,
                                      tc->opts, rend.source, &rend.launch,
                                      &e2) == ET_OK;
            if (use_db && !t->o->retime &&
                et_db_trial_lookup(t->o->db, &tr, &tr, &found, &e2) !=
                    ET_OK) {
                say(t, ET_TUNE_WARN, "database lookup failed: %s", e2.msg);
                found = false;
            }
        }
        if (found) {
            from_trial(tc, &tr);
            res->cached++;
            say(t, ET_TUNE_INFO, "answered from the database (%s)",
                et_outcome_name(tc->outcome));
            goto answered;
        }
        et_timing_opts to = t->o->timing;
        to.bound_s = isfinite(c->bound_s) ? c->bound_s : 0;
        et_evaluation ev;
        memset(&ev, 0, sizeof ev);
        st = et_evaluate_kernel(t->ver, t->dev, rend.source, rend.name,
                                &rend.launch, &to, &ev, t->err);
        if (st != ET_OK) {
            t->fatal = st;
            et_rendered_free(&rend);
            return 1;
        }
        if (ev.compiler_said[0])
            say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s", rend.name,
                ev.compiler_said);
        tc->outcome = ev.result.outcome;
        copy_str(tc->reason, sizeof tc->reason, ev.result.reason);
        tc->verified = ev.verified;
        tc->verify = ev.verify;
        tc->timed = ev.timed;
        tc->timing = ev.timing;
        tc->build_s = ev.build_s;
        tc->verify_s = ev.verify_s;
        tc->timing_s = ev.timing_s;
        res->build_s += ev.build_s;
        res->verify_s += ev.verify_s;
        res->timing_s += ev.timing_s;
        res->evaluations++;
        if (use_db) {
            et_db_trial_set_evaluation(&tr, et_binding_einsum(t->b), &ev);
            copy_str(tr.kernel_name, sizeof tr.kernel_name, rend.name);
            db_record(t, &tr, tc);
        }
        int every = t->o->recycle_every ? t->o->recycle_every : 250;
        if (every > 0 && res->evaluations % every == 0 &&
            et_device_is_isolated(t->dev)) {
            double tr0 = et_now_s();
            /* the verifier's device buffers are freed first (it uploads
             * them again on the new worker), so none is left behind */
            et_verifier_release(t->ver);
            st = et_device_recycle(t->dev, t->err);
            if (st != ET_OK) {
                t->fatal = st;
                et_rendered_free(&rend);
                return 1;
            }
            res->recycles++;
            say(t, ET_TUNE_DEBUG, "new device worker after %d evaluations "
                "(%.2f s)", res->evaluations, et_now_s() - tr0);
        }
    }
answered:
    et_rendered_free(&rend);
    tc->eval_s = et_now_s() - t0;
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
    return stopping(t);
}

/* Verifies and times the untransformed kernel: the baseline. */
static et_status baseline(tune_ctx *t)
{
    const et_kernel *base = et_binding_base(t->b);
    et_rendered rend = {0};
    et_program *p = NULL;
    et_status st = et_kernel_render(base, t->dev->info.target.backend, NULL,
                                    &rend);
    if (st != ET_OK) {
        snprintf(t->err->msg, sizeof t->err->msg,
                 "cannot render the untransformed kernel: %s",
                 et_status_str(st));
        return st;
    }
    st = et_program_build(t->dev, rend.source, rend.name, &p, t->err);
    if (st != ET_OK)
        goto done;
    if (t->err->msg[0])
        say(t, ET_TUNE_DEBUG, "compiler output for %s:\n%s", rend.name,
            t->err->msg);
    st = et_verifier_baseline_kernel(t->ver, t->dev, p, &rend.launch,
                                     &t->res->baseline_verify, t->err);
    if (st != ET_OK)
        goto done;
    if (t->res->baseline_verify.outcome != ET_OUTCOME_OK) {
        snprintf(t->err->msg, sizeof t->err->msg,
                 "the untransformed kernel fails verification: %s",
                 t->res->baseline_verify.reason);
        st = ET_ERR_INTERNAL;
        goto done;
    }
    et_buffer *args[ET_MAX_OPERANDS + 1];
    size_t offsets[ET_MAX_OPERANDS + 1];
    int nargs = 0;
    st = et_verifier_args(t->ver, t->dev, args, offsets, &nargs, t->err);
    if (st != ET_OK)
        goto done;
    et_result r;
    st = et_time_kernel(t->dev, p, &rend.launch, args, offsets, nargs,
                        &t->o->timing, &t->res->baseline, &r, t->err);
    if (st == ET_OK) {
        char line[256];
        et_timing_format(&t->res->baseline, line, sizeof line);
        say(t, ET_TUNE_INFO, "untransformed kernel %s: %s", rend.name, line);
    }
done:
    if (p)
        et_program_free(t->dev, p);
    et_rendered_free(&rend);
    return st;
}

et_status et_tune_run(et_device *dev, const et_binding *b,
                      const et_tune_opts *o, et_tune_result *res,
                      et_error *err)
{
    memset(res, 0, sizeof *res);
    res->best = -1;
    double t0 = et_now_s();
    tune_ctx t = {dev, b, o, res, NULL, err, ET_OK, 0, 0, false, t0};
    et_status st;
    if (o->db) {
        st = et_db_einsum_id(o->db, et_binding_einsum(b), &t.einsum_id, err);
        if (st == ET_OK)
            st = et_db_device_id(o->db, &dev->info, &t.device_id, err);
        if (st != ET_OK)
            return st;
    }
    st = et_verifier_init(et_binding_einsum(b), &o->verify, &t.ver, err);
    if (st != ET_OK)
        return st;
    double tb = et_now_s();
    st = baseline(&t);
    res->baseline_s = et_now_s() - tb;
    if (st != ET_OK)
        goto done;

    et_diag d = {0};
    st = et_search_run(b, &o->search, eval_cb, &t, &res->stats, &d);
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
done:
    res->elapsed_s = et_now_s() - t0;
    et_verifier_release(t.ver);
    et_verifier_free(t.ver);
    return st;
}

void et_tune_result_free(et_tune_result *res)
{
    free(res->cand);
    res->cand = NULL;
    res->n_cand = res->cap_cand = 0;
}
