/*
 * search_random.c - random search: points drawn from the parametric
 * space, and random sequences of valid actions; with a cost model, drawn
 * in pools that the model chooses from (search_rank.c).
 */
#include "spaces/search_impl.h"

#include <stdlib.h>

/* param_random through the model: pools of drawn points' kernels. */
static void param_random_ranked(srch *S)
{
    uint64_t total = srch_total_count(S);
    kmap drawn = {0};
    int idle = 0, want = srch_pool_new(S), cap = 4 * want;
    held *h = calloc((size_t)cap, sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)cap);
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    while (!srch_must_stop(S)) {
        int nh = 0, n_new = 0;
        bool exhausted = false;
        while (n_new < want && nh < cap && !S->stop) {
            if ((total < HUGE_COUNT && drawn.n >= total) ||
                idle >= S->o.max_draws) {
                exhausted = true;
                break;
            }
            et_point pt;
            uint64_t id = srch_point_draw(S, total, &pt);
            if (srch_kmap_find(&drawn, id, NULL)) {
                idle++;
                continue;
            }
            if (!srch_kmap_put(&drawn, id, 0))
                S->nomem = true;
            et_opt opts[ET_MAX_OPTS];
            char reason[512] = "";
            int n = 0;
            et_kernel *k = NULL;
            et_point_status ps = srch_point_kernel(S, &pt, &k, opts, &n, reason,
                                                   sizeof(reason));
            if (ps == ET_POINT_INVALID) {
                S->st->invalid++;
                idle++;
                continue;
            }
            if (!k) {
                srch_propose(S, &pt, NULL, opts, n, 0, reason, NULL);
                srch_maybe_flush(S);
                idle++;
                continue;
            }
            srch_held_add(S, h, &nh, k, &pt, 0, &n_new, &idle);
        }
        if (srch_pool_propose(S, h, nh, ord))
            idle = 0;
        if (exhausted) {
            srch_set_stop(S, "exhausted");
            break;
        }
    }
done:
    free(h);
    free(ord);
    srch_kmap_free(&drawn);
}

void srch_param_random(srch *S)
{
    if (srch_ranking_on(S)) {
        param_random_ranked(S);
        return;
    }
    uint64_t total = srch_total_count(S);
    kmap drawn = {0};
    int idle = 0;
    if (!srch_seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    while (!srch_must_stop(S)) {
        if (total < HUGE_COUNT && drawn.n >= total) {
            srch_set_stop(S, "exhausted");
            break;
        }
        if (idle >= S->o.max_draws) {
            srch_set_stop(S, "exhausted");
            break;
        }
        et_point pt;
        uint64_t id = srch_point_draw(S, total, &pt);
        if (srch_kmap_find(&drawn, id, NULL)) {
            idle++;
            continue;
        }
        srch_kmap_put(&drawn, id, 0);
        int res = srch_try_point(S, &pt, NULL, NULL);
        idle = res == P_ANSWERED || res == P_PENDING ? 0 : idle + 1;
        srch_maybe_flush(S);
    }
    srch_kmap_free(&drawn);
}

/* One random sequence of up to max_depth valid actions on a clone of
 * start (NULL when out of memory). */
static et_kernel *random_sequence(srch *S, const et_kernel *start,
                                  const et_opt *acts, int na, int *perm)
{
    et_kernel *k = et_kernel_clone(start);
    if (!k) {
        S->nomem = true;
        return NULL;
    }
    int depth = 1 + (int)srch_rng_below(&S->r, (uint64_t)S->s->max_depth);
    for (int d = 0; d < depth; d++) {
        for (int i = 0; i < na; i++)
            perm[i] = i;
        bool applied = false;
        for (int i = 0; i < na && !applied; i++) {
            int j = i + (int)srch_rng_below(&S->r, (uint64_t)(na - i));
            int tmp = perm[i];
            perm[i] = perm[j];
            perm[j] = tmp;
            applied = et_kernel_apply_opt(k, &acts[perm[i]], NULL, 0) == ET_OK;
            if (!applied)
                S->st->actions_refused++;
        }
        if (!applied)
            break;
    }
    return k;
}

/* action_random through the model: pools of random sequences. */
static void action_random_ranked(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int nstart = start->n_opts;
    int idle = 0, want = srch_pool_new(S), cap = 4 * want;
    int *perm = malloc(sizeof(int) * (size_t)(na ? na : 1));
    held *h = calloc((size_t)cap, sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)cap);
    if (!perm || !h || !ord) {
        S->nomem = true;
        goto done;
    }
    while (!srch_must_stop(S)) {
        int nh = 0, n_new = 0;
        bool exhausted = false;
        while (n_new < want && nh < cap && !S->nomem) {
            if (idle >= S->o.max_draws) {
                exhausted = true;
                break;
            }
            et_kernel *k = random_sequence(S, start, acts, na, perm);
            if (!k)
                break;
            srch_held_add(S, h, &nh, k, pt, k->n_opts - nstart, &n_new, &idle);
        }
        if (srch_pool_propose(S, h, nh, ord))
            idle = 0;
        if (exhausted) {
            srch_set_stop(S, "exhausted");
            break;
        }
        if (S->nomem)
            break;
    }
done:
    free(perm);
    free(h);
    free(ord);
}

/* Random sequences of up to max_depth valid actions. */
void srch_action_random(srch *S, et_kernel *start, const et_point *pt)
{
    if (srch_ranking_on(S)) {
        action_random_ranked(S, start, pt);
        return;
    }
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int *perm = malloc(sizeof(int) * (size_t)(na ? na : 1));
    int idle = 0;
    int nstart = start->n_opts;
    if (!perm) {
        S->nomem = true;
        return;
    }
    if (!srch_seeds_propose(S, NULL, NULL, NULL, 0)) {
        free(perm);
        return;
    }
    while (!srch_must_stop(S)) {
        if (idle >= S->o.max_draws) {
            srch_set_stop(S, "exhausted");
            break;
        }
        et_kernel *k = random_sequence(S, start, acts, na, perm);
        if (!k)
            break;
        int res = srch_propose(S, pt, k, NULL, 0, k->n_opts - nstart, NULL,
                               NULL);
        idle = res == P_ANSWERED || res == P_PENDING ? 0 : idle + 1;
        et_kernel_free(k);
        srch_maybe_flush(S);
    }
    free(perm);
}
