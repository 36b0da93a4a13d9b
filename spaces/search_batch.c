/*
 * search_batch.c - batched mode (et_search_run_many): candidates wait in
 * a batch until it is handed to the callback as a whole (flush), with the
 * duplicates of kernels that wait there told to on_duplicate once those
 * are answered; a beam step's members get their times from their slots.
 */
#include "spaces/search_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Batched mode: appends a candidate to the batch (P_PENDING, or
 * P_REFUSED for a refused one, which the callback records in its place
 * in the order). S->last_slot names its slot. */
int srch_enqueue(srch *S, const et_point *pt, const et_kernel *k,
                 const et_opt *opts, int n_opts, int n_actions,
                 const char *reason, const char *opts_text,
                 const char *params_text, uint64_t key, double bound)
{
    if (S->n_pend == S->cap_pend) {
        int cap = S->cap_pend ? 2 * S->cap_pend : 16;
        pend *np = realloc(S->pend, (size_t)cap * sizeof *np);
        if (!np) {
            S->nomem = true;
            srch_set_stop(S, "out of memory");
            return P_STOP;
        }
        S->pend = np;
        S->cap_pend = cap;
    }
    pend *e = &S->pend[S->n_pend];
    memset(e, 0, sizeof *e);
    if (k && !(e->k = et_kernel_clone(k))) {
        S->nomem = true;
        srch_set_stop(S, "out of memory");
        return P_STOP;
    }
    e->has_point = pt != NULL;
    if (pt)
        e->pt = *pt;
    e->n_opts = n_opts < ET_MAX_OPTS ? n_opts : ET_MAX_OPTS;
    if (e->n_opts > 0)
        memcpy(e->opts, opts, sizeof(et_opt) * (size_t)e->n_opts);
    snprintf(e->opts_text, sizeof e->opts_text, "%s", opts_text);
    snprintf(e->params_text, sizeof e->params_text, "%s", params_text);
    snprintf(e->reason, sizeof e->reason, "%s", reason ? reason : "");
    e->c.seq = S->seq++;
    e->c.seed = S->cur_seed;
    e->c.n_actions = n_actions;
    e->c.key = key;
    e->c.bound_s = bound;
    e->c.refused = k == NULL;
    e->t = INFINITY;
    S->last_slot = S->n_pend++;
    if (k) {
        S->n_pend_eval++;
        return P_PENDING;
    }
    S->st->refused++;
    return P_REFUSED;
}

/* Slot holding a pending candidate of this key, -1 if none. */
int srch_pending_slot(const srch *S, uint64_t key)
{
    for (int i = 0; i < S->n_pend; i++)
        if (!S->pend[i].c.refused && S->pend[i].c.key == key)
            return i;
    return -1;
}

/* Batched mode: keeps a duplicate of the kernel in pending slot `slot`
 * for on_duplicate, which is told once that kernel is answered. */
void srch_defer_duplicate(srch *S, int slot, const et_candidate *c)
{
    if (S->n_later == S->cap_later) {
        int cap = S->cap_later ? 2 * S->cap_later : 8;
        dup_later *nl = realloc(S->later, (size_t)cap * sizeof *nl);
        if (!nl) {
            S->nomem = true;
            return;
        }
        S->later = nl;
        S->cap_later = cap;
    }
    dup_later *l = &S->later[S->n_later++];
    memset(l, 0, sizeof *l);
    l->slot = slot;
    l->seq = c->seq;
    l->key = c->key;
    l->has_point = c->has_point;
    l->pt = c->point;
    l->n_opts = c->n_opts < ET_MAX_OPTS ? c->n_opts : ET_MAX_OPTS;
    if (l->n_opts > 0)
        memcpy(l->opts, c->opts, sizeof(et_opt) * (size_t)l->n_opts);
    l->n_actions = c->n_actions;
    l->seed = c->seed;
    snprintf(l->opts_text, sizeof l->opts_text, "%s", c->opts_text);
    snprintf(l->params_text, sizeof l->params_text, "%s", c->params_text);
}

/* Tells on_duplicate of the deferred duplicates whose first proposal was
 * answered in the flushed batch (the others were not answered either). */
static void tell_deferred(srch *S)
{
    for (int i = 0; i < S->n_later; i++) {
        const dup_later *l = &S->later[i];
        const pend *e = &S->pend[l->slot];
        if (e->c.refused || !e->r.answered)
            continue;
        et_candidate c;
        memset(&c, 0, sizeof c);
        c.seq = l->seq;
        c.binding = S->b;
        c.has_point = l->has_point;
        c.point = l->pt;
        c.n_actions = l->n_actions;
        c.seed = l->seed;
        c.n_opts = l->n_opts;
        c.opts = l->opts;
        c.opts_text = l->opts_text;
        c.params_text = l->params_text;
        c.key = l->key;
        c.bound_s = INFINITY;
        c.reason = "";
        S->o.on_duplicate(S->user, &c, e->c.seq);
    }
    S->n_later = 0;
}

/*
 * Batched mode: hands the batch to the callback and books the answers.
 * Slots keep their times (pend[i].t) until batch_clear. A candidate the
 * callback did not get to (it stopped, or the time limit came) is not
 * answered: it is left out of the counts and the map, and the search
 * stops.
 */
void srch_flush(srch *S)
{
    if (!S->many || S->n_pend == 0 || S->flushed)
        return;
    S->flushed = true;
    et_candidate *cs = calloc((size_t)S->n_pend, sizeof *cs);
    et_eval_result *rs = calloc((size_t)S->n_pend, sizeof *rs);
    if (!cs || !rs) {
        free(cs);
        free(rs);
        S->nomem = true;
        srch_set_stop(S, "out of memory");
        S->n_pend_eval = 0;
        return;
    }
    for (int i = 0; i < S->n_pend; i++) {
        pend *e = &S->pend[i];
        cs[i] = e->c;
        cs[i].binding = S->b;
        cs[i].has_point = e->has_point;
        cs[i].point = e->pt;
        cs[i].n_opts = e->n_opts;
        cs[i].opts = e->opts;
        cs[i].opts_text = e->opts_text;
        cs[i].params_text = e->params_text;
        cs[i].kernel = e->k;
        cs[i].reason = e->c.refused ? e->reason : "";
        rs[i].time_s = INFINITY;
    }
    /* the start kernel and the seeds: the limit waits (S->opening) */
    double deadline = S->o.time_limit_s > 0 && !S->opening
                          ? S->t0 + S->o.time_limit_s
                          : INFINITY;
    et_eval_batch batch = {cs, rs, S->n_pend, S->o.cut_factor, deadline};
    int stop = S->many(S->user, &batch);
    bool missed = false;
    for (int i = 0; i < S->n_pend; i++) {
        pend *e = &S->pend[i];
        e->r = rs[i];
        if (e->c.refused)
            continue;
        if (!rs[i].answered) {
            missed = true;
            continue;
        }
        srch_record_answer(S, e->c.key, e->has_point ? &e->pt : NULL, e->opts,
                           e->n_opts, &rs[i], &e->t);
    }
    S->n_pend_eval = 0;
    free(cs);
    free(rs);
    tell_deferred(S);
    if (stop != 0)
        srch_set_stop(S, "stopped by the caller");
    if (missed)
        srch_set_stop(S, "time limit");
    if (S->nomem)
        srch_set_stop(S, "out of memory");
}

/* Forgets the flushed batch. */
void srch_batch_clear(srch *S)
{
    for (int i = 0; i < S->n_pend; i++)
        et_kernel_free(S->pend[i].k);
    S->n_pend = 0;
    S->n_pend_eval = 0;
    S->n_later = 0;
    S->flushed = false;
}

/* Random and grid searches in batched mode: flush once the batch is
 * full (their proposals do not depend on the answers). */
void srch_maybe_flush(srch *S)
{
    if (S->many && S->n_pend_eval >= S->o.batch) {
        srch_flush(S);
        srch_batch_clear(S);
    }
}

/*
 * Batched mode, after a step's candidates were proposed: flushes them and
 * gives every member waiting for a slot its time; members whose candidate
 * was not answered (the batch stopped early) are dropped (their kernels
 * freed). Returns the new count. Sequential mode: nothing to do.
 */
int srch_settle(srch *S, member *m, int n)
{
    if (!S->many)
        return n;
    srch_flush(S);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (m[i].slot >= 0) {
            const pend *e = &S->pend[m[i].slot];
            if (!e->c.refused && !e->r.answered) {
                et_kernel_free(m[i].k);
                continue;
            }
            m[i].t = e->t;
            m[i].slot = -1;
        }
        m[k++] = m[i];
    }
    srch_batch_clear(S);
    return k;
}
