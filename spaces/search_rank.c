/*
 * search_rank.c - ranking by a cost model (et_search_opts.predict): which
 * of a step's held proposals are proposed at all (the best predicted, a
 * few others drawn for exploration), and the pools of a random search
 * that the model chooses from.
 */
#include "spaces/search_impl.h"

#include <math.h>
#include <stdlib.h>

bool srch_ranking_on(const srch *S)
{
    return S->o.predict != NULL;
}

/* Is this kernel new: never answered, not waiting in the batch? */
static bool is_new(const srch *S, uint64_t key)
{
    return !srch_kmap_find(&S->seen, key, NULL) &&
           !(S->many && srch_pending_slot(S, key) >= 0);
}

/* How many of n new kernels a step keeps. */
static int keep_count(const srch *S, int n)
{
    int k = (int)ceil(S->o.keep_frac * n);
    return k > S->o.keep_min ? k : S->o.keep_min;
}

/* A new kernel's place in the ranking. */
typedef struct ranked {
    double pred;
    int i;               /* its held index */
} ranked;

static int ranked_cmp(const void *x, const void *y)
{
    const ranked *a = x, *b = y;
    if (a->pred < b->pred)
        return -1;
    if (a->pred > b->pred)
        return 1;
    return (a->i > b->i) - (a->i < b->i);
}

/*
 * The model's choice among a step's n held proposals: writes into order
 * the indices to propose and returns their number. Kernels already known
 * (answered, waiting) come first in their order; when the new ones are
 * more than keep_count, the kept ones follow best predicted first, then
 * the explored ones; a later proposal of a kept kernel in the step right
 * after it. The others are counted as skipped. Without a ranking (too
 * few new kernels, a NaN prediction) every proposal in its own order.
 */
int srch_choose(srch *S, held *h, int n, int *order)
{
    int n_new = 0, no = 0;
    ranked *fresh = malloc(sizeof(ranked) * (size_t)(n ? n : 1));
    bool *sent = calloc((size_t)(n ? n : 1), sizeof(bool));
    if (!fresh || !sent) {
        S->nomem = true;
        goto all;
    }
    for (int i = 0; i < n; i++) {
        if (!h[i].key)
            h[i].key = srch_key_of(S, h[i].k);
        h[i].first = -1;
        for (int j = 0; j < i && h[i].first < 0; j++)
            if (h[j].key == h[i].key)
                h[i].first = h[j].first >= 0 ? h[j].first : j;
        if (h[i].first < 0 && is_new(S, h[i].key))
            fresh[n_new++].i = i;
    }
    if (n_new <= keep_count(S, n_new))
        goto all;
    int n_free = 0;
    for (int f = 0; f < n_new; f++) {
        fresh[f].pred = S->o.predict(S->user, h[fresh[f].i].k);
        if (isnan(fresh[f].pred))
            goto all;
        n_free += fresh[f].pred == -INFINITY;
    }
    /* the free ones (-INFINITY) sort first and are always kept */
    qsort(fresh, (size_t)n_new, sizeof(ranked), ranked_cmp);
    int keep = n_free + keep_count(S, n_new - n_free);
    if (keep >= n_new)
        goto all;
    int rest = n_new - keep;
    int explore = S->o.explore_frac < 0
                      ? 0
                      : (int)ceil(S->o.explore_frac * rest);
    if (explore > rest)
        explore = rest;
    /* exploration: a partial shuffle of the rest with the search's PRNG */
    for (int e = 0; e < explore; e++) {
        int j = keep + e + (int)srch_rng_below(&S->r, (uint64_t)(rest - e));
        ranked tmp = fresh[keep + e];
        fresh[keep + e] = fresh[j];
        fresh[j] = tmp;
    }
    int n_send = keep + explore;
    for (int f = 0; f < n_send; f++)
        sent[fresh[f].i] = true;
    S->st->model_ranked += n_new - n_free;
    /* the known kernels first, then the kept and explored ones; each
     * followed by its later proposals in the step */
    for (int i = 0; i < n; i++)
        if (h[i].first < 0 && !is_new(S, h[i].key))
            sent[i] = true;
    for (int pass = 0; pass < 2; pass++)
        for (int f = 0; f < (pass ? n_send : n); f++) {
            int r = pass ? fresh[f].i : f;
            if (!pass && !(h[r].first < 0 && sent[r] && !is_new(S, h[r].key)))
                continue;
            order[no++] = r;
            for (int i = r + 1; i < n; i++)
                if (h[i].first == r)
                    order[no++] = i;
        }
    for (int i = 0; i < n; i++)
        if (!sent[h[i].first >= 0 ? h[i].first : i])
            S->st->model_skipped++;
    free(fresh);
    free(sent);
    return no;
all:
    free(fresh);
    free(sent);
    for (int i = 0; i < n; i++)
        order[i] = i;
    return n;
}

/* Frees the held kernels left (those not proposed or not kept). */
void srch_held_free(held *h, int n)
{
    for (int i = 0; i < n; i++) {
        et_kernel_free(h[i].k);
        h[i].k = NULL;
    }
}

/* A random search's pool: room for this many held proposals, of which
 * srch_pool_new() new kernels. */
int srch_pool_new(const srch *S)
{
    return (int)ceil(S->o.keep_min / S->o.keep_frac);
}

/* Is key among h[0..n-1]? */
static bool held_has(const held *h, int n, uint64_t key)
{
    for (int i = 0; i < n; i++)
        if (h[i].key == key)
            return true;
    return false;
}

/* Adds kernel k (owned from here; of point pt, or none) to a random
 * search's pool h of *nh, counting it in *n_new when it is new to the
 * run and the pool, else in *idle. */
void srch_held_add(const srch *S, held *h, int *nh, et_kernel *k,
                   const et_point *pt, int n_actions, int *n_new,
                   int *idle)
{
    held *e = &h[*nh];
    e->k = k;
    e->has_pt = pt != NULL;
    if (pt)
        e->pt = *pt;
    e->n_actions = n_actions;
    e->key = srch_key_of(S, k);
    if (is_new(S, e->key) && !held_has(h, *nh, e->key))
        (*n_new)++;
    else
        (*idle)++;
    (*nh)++;
}

/*
 * Proposes what the model chooses of a random search's pool and frees
 * the pool. Returns 1 when a proposal was answered or is waiting (the
 * search is not idle).
 */
int srch_pool_propose(srch *S, held *h, int nh, int *ord)
{
    int ns = srch_choose(S, h, nh, ord), fresh = 0;
    for (int s = 0; s < ns && !S->stop; s++) {
        held *e = &h[ord[s]];
        int res = srch_propose_key(S, e->has_pt ? &e->pt : NULL, e->k, NULL, 0,
                                   e->n_actions, NULL, NULL, &e->key);
        fresh |= res == P_ANSWERED || res == P_PENDING;
        srch_maybe_flush(S);
        if (res == P_STOP)
            break;
    }
    srch_held_free(h, nh);
    return fresh;
}
