/*
 * search_grid.c - grid search: every point of the parametric space in
 * index order, and every sequence of 0, 1 and 2 actions in pool order.
 */
#include "spaces/search_impl.h"

void srch_param_grid(srch *S)
{
    uint64_t total = srch_total_count(S);
    if (!srch_seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    for (uint64_t i = 0; i < total; i++) {
        et_point pt;
        srch_point_at(S, i, &pt);
        if (srch_try_point(S, &pt, NULL, NULL) == P_STOP)
            return;
        srch_maybe_flush(S);
    }
    srch_set_stop(S, "exhausted");
}

/* Sequences of 0, 1 and 2 actions, in pool order. */
void srch_action_grid(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int nstart = start->n_opts;
    if (srch_propose(S, pt, start, NULL, 0, 0, NULL, NULL) == P_STOP)
        return;
    if (!srch_seeds_propose(S, NULL, NULL, NULL, 0))
        return;
    for (int a = 0; a < na; a++) {
        et_kernel *k1 = et_kernel_clone(start);
        if (!k1) {
            S->nomem = true;
            return;
        }
        if (et_kernel_apply_opt(k1, &acts[a], NULL, 0) != ET_OK) {
            S->st->actions_refused++;
            et_kernel_free(k1);
            continue;
        }
        int res = srch_propose(S, pt, k1, NULL, 0, 1, NULL, NULL);
        srch_maybe_flush(S);
        for (int c = 0; S->s->max_depth >= 2 && c < na && res != P_STOP; c++) {
            et_kernel *k2 = et_kernel_clone(k1);
            if (!k2) {
                S->nomem = true;
                break;
            }
            if (et_kernel_apply_opt(k2, &acts[c], NULL, 0) != ET_OK)
                S->st->actions_refused++;
            else
                res = srch_propose(S, pt, k2, NULL, 0, k2->n_opts - nstart,
                                   NULL, NULL);
            et_kernel_free(k2);
            srch_maybe_flush(S);
        }
        et_kernel_free(k1);
        if (res == P_STOP || S->stop)
            return;
    }
    srch_set_stop(S, "exhausted");
}
