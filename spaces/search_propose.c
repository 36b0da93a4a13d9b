/*
 * search_propose.c - proposing one candidate: the stop conditions (budget,
 * time limit, callback), de-duplication against the kernels answered, the
 * evaluate callback (or the batch, search_batch.c), on_duplicate, and the
 * booking of an answer into the statistics and the best so far.
 */
#include "spaces/search_impl.h"

#include "base/clock.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

double srch_elapsed(const srch *S)
{
    return et_now_s() - S->t0;
}

void srch_set_stop(srch *S, const char *why)
{
    if (!S->stop)
        snprintf(S->st->stop_reason, sizeof(S->st->stop_reason), "%s", why);
    S->stop = true;
}

/* True when the search must stop before the next proposal. */
bool srch_must_stop(srch *S)
{
    if (S->stop)
        return true;
    if (S->st->answered + S->n_pend_eval >= S->budget)
        srch_set_stop(S, "budget");
    else if (S->o.time_limit_s > 0 && srch_elapsed(S) >= S->o.time_limit_s &&
             !S->opening)
        srch_set_stop(S, "time limit");
    return S->stop;
}

/* Books an answer: the de-duplication map, the counts, the best so far. */
void srch_record_answer(srch *S, uint64_t key, const et_point *pt,
                        const et_opt *opts, int n_opts,
                        const et_eval_result *r, double *t)
{
    double time = r->status == ET_EVAL_OK ? r->time_s : INFINITY;
    if (isnan(time))
        time = INFINITY;
    if (!srch_kmap_put(&S->seen, key, time))
        S->nomem = true;
    S->st->answered++;
    if (r->cached)
        S->st->cached++;
    if (r->status != ET_EVAL_OK)
        S->st->failed++;
    if (r->status == ET_EVAL_OK && pt && (!S->has_bp || time < S->bp_t)) {
        S->has_bp = true;
        S->bp = *pt;
        S->bp_t = time;
    }
    if (r->status == ET_EVAL_OK &&
        (!S->st->has_best || time < S->st->best_time_s)) {
        S->st->has_best = true;
        S->st->best_time_s = time;
        S->st->best_has_point = pt != NULL;
        if (pt)
            S->st->best_point = *pt;
        S->st->best_n_opts = n_opts < ET_MAX_OPTS ? n_opts : ET_MAX_OPTS;
        memcpy(S->st->best_opts, opts,
               sizeof(et_opt) * (size_t)S->st->best_n_opts);
    }
    *t = time;
}

/*
 * Proposes one candidate. k is the kernel (NULL when refused, with
 * reason). On P_ANSWERED and P_DUPLICATE *t gets its time (INFINITY for a
 * failure or an unknown duplicate).
 */
int srch_propose_key(srch *S, const et_point *pt, const et_kernel *k,
                     const et_opt *opts, int n_opts, int n_actions,
                     const char *reason, double *t, const uint64_t *key)
{
    if (t)
        *t = INFINITY;
    S->last_slot = -1;
    if (srch_must_stop(S))
        return P_STOP;
    char opts_text[4096], params_text[1024] = "{}";
    if (k) {
        opts = k->opts;
        n_opts = k->n_opts;
    }
    et_opts_format(opts, n_opts, opts_text, sizeof(opts_text));
    if (pt)
        et_point_format(S->b, pt, params_text, sizeof(params_text));
    et_candidate c;
    memset(&c, 0, sizeof(c));
    c.binding = S->b;
    c.has_point = pt != NULL;
    if (pt)
        c.point = *pt;
    c.n_actions = n_actions;
    c.n_opts = n_opts;
    c.opts = opts;
    c.opts_text = opts_text;
    c.params_text = params_text;
    c.kernel = k;
    c.bound_s = INFINITY;
    c.reason = "";
    c.seed = S->cur_seed;
    if (S->cur_seed)
        S->st->seeds++;
    et_eval_result r;
    memset(&r, 0, sizeof(r));
    if (!k && S->many)
        return srch_enqueue(S, pt, NULL, opts, n_opts, n_actions,
                            reason ? reason : "refused", opts_text, params_text,
                            0, INFINITY);
    if (!k) {
        c.seq = S->seq++;
        c.refused = true;
        c.reason = reason ? reason : "refused";
        S->st->refused++;
        if (S->fn(S->user, &c, &r) != 0)
            srch_set_stop(S, "stopped by the caller");
        return P_REFUSED;
    }
    c.key = key ? *key : srch_key_of(S, k);
    double known;
    uint64_t said = srch_fnv(srch_fnv(1469598103934665603ULL, opts_text,
                                      strlen(opts_text)),
                             params_text, strlen(params_text));
    if (srch_kmap_find(&S->seen, c.key, &known)) {
        S->st->duplicates++;
        if (t)
            *t = known;
        double first = -1;
        /* a seed is told even when its text was seen: it is a proposal
         * of its own (the untransformed kernel as a seed) */
        if (S->o.on_duplicate &&
            (S->cur_seed || !srch_kmap_find(&S->said, said, NULL)) &&
            srch_kmap_find(&S->seen_seq, c.key, &first)) {
            if (!srch_kmap_put(&S->said, said, 0))
                S->nomem = true;
            c.seq = S->seq++;
            S->o.on_duplicate(S->user, &c, (long)first);
        }
        return P_DUPLICATE;
    }
    if (S->many) {
        /* a kernel already waiting in the batch: a duplicate whose time
         * the caller reads from that slot after the flush, and which
         * on_duplicate is told of once that kernel is answered */
        int slot = srch_pending_slot(S, c.key);
        if (slot >= 0) {
            S->st->duplicates++;
            S->last_slot = slot;
            if (S->o.on_duplicate &&
                (S->cur_seed || !srch_kmap_find(&S->said, said, NULL))) {
                if (!srch_kmap_put(&S->said, said, 0))
                    S->nomem = true;
                c.seq = S->seq++;
                srch_defer_duplicate(S, slot, &c);
            }
            return P_DUPLICATE;
        }
        int res = srch_enqueue(S, pt, k, opts, n_opts, n_actions, NULL,
                               opts_text, params_text, c.key,
                               S->st->has_best
                                   ? S->o.cut_factor * S->st->best_time_s
                                   : INFINITY);
        if (res == P_PENDING &&
            (!srch_kmap_put(&S->said, said, 0) ||
             !srch_kmap_put(&S->seen_seq, c.key,
                            (double)S->pend[S->last_slot].c.seq)))
            S->nomem = true;
        return res;
    }
    c.seq = S->seq++;
    if (!srch_kmap_put(&S->said, said, 0) ||
        !srch_kmap_put(&S->seen_seq, c.key, (double)c.seq))
        S->nomem = true;
    if (S->st->has_best)
        c.bound_s = S->o.cut_factor * S->st->best_time_s;
    r.time_s = INFINITY;
    int stop = S->fn(S->user, &c, &r);
    double time;
    srch_record_answer(S, c.key, pt, opts, n_opts, &r, &time);
    if (stop != 0)
        srch_set_stop(S, "stopped by the caller");
    if (S->nomem)
        srch_set_stop(S, "out of memory");
    if (t)
        *t = time;
    return P_ANSWERED;
}

int srch_propose(srch *S, const et_point *pt, const et_kernel *k,
                 const et_opt *opts, int n_opts, int n_actions,
                 const char *reason, double *t)
{
    return srch_propose_key(S, pt, k, opts, n_opts, n_actions, reason, t, NULL);
}
