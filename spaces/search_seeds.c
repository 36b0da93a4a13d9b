/*
 * search_seeds.c - the seeds (docs/spaces.md, "Seeds"): their kernels,
 * checked against the start opts, and their proposal before anything
 * else, or as the beam's first step.
 */
#include "spaces/search_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/*
 * The seeds' kernels: each seed's opts applied to the untransformed
 * kernel, kept when the kernel accepts them and they begin with the start
 * opts as S->start resolved them (the search builds on those); the others
 * are told to on_seed_dropped.
 */
void srch_seeds_build(srch *S)
{
    char start_text[4096], head[4096], reason[512];
    et_opts_format(S->start->opts, S->start->n_opts, start_text,
                   sizeof start_text);
    for (int i = 0; i < S->o.n_seeds; i++) {
        const et_search_seed *sd = &S->o.seeds[i];
        et_kernel *k = et_kernel_clone(et_binding_base(S->b));
        if (!k) {
            S->nomem = true;
            return;
        }
        reason[0] = '\0';
        if (et_kernel_apply_opts(k, sd->opts, sd->n_opts, reason,
                                 sizeof reason) != ET_OK) {
            et_kernel_free(k);
            k = NULL;
        } else if (S->start->n_opts > 0) {
            head[0] = '\0';
            if (k->n_opts >= S->start->n_opts)
                et_opts_format(k->opts, S->start->n_opts, head, sizeof head);
            if (strcmp(head, start_text) != 0) {
                snprintf(reason, sizeof reason,
                         "it does not begin with the start opts %.400s",
                         start_text);
                et_kernel_free(k);
                k = NULL;
            }
        }
        S->seed_k[i] = k;
        if (!k) {
            S->st->seeds_dropped++;
            if (S->o.on_seed_dropped)
                S->o.on_seed_dropped(S->user, i, reason);
        }
    }
}

/*
 * Proposes the seeds, once in a run, as candidates of no point. With out
 * (the beam's first step), each seed answered or waiting in the batch
 * becomes a member with a clone of its kernel, and after the first time
 * the seeds already answered come back with their known times (a
 * parametric phase proposed them; those of key skip_key, the start
 * kernel, or of a member already taken are left out). Returns false when
 * the search must stop.
 */
bool srch_seeds_propose(srch *S, member *out, int *n_out, long *order,
                        uint64_t skip_key)
{
    bool again = S->seeds_done;
    bool opening = S->opening;
    S->seeds_done = true;
    S->opening = opening || !again;
    uint64_t taken[ET_SEARCH_MAX_SEEDS];
    int n_taken = 0;
    for (int i = 0; i < S->o.n_seeds; i++) {
        et_kernel *k = S->seed_k[i];
        if (!k)
            continue;
        double t = INFINITY;
        int res;
        if (again) {
            if (!out)
                continue;
            uint64_t key = srch_key_of(S, k);
            bool dup = key == skip_key;
            for (int j = 0; j < n_taken; j++)
                dup = dup || taken[j] == key;
            if (dup || !srch_kmap_find(&S->seen, key, &t))
                continue;
            taken[n_taken++] = key;
            S->last_slot = -1;
            res = P_ANSWERED;
        } else {
            S->cur_seed = i + 1;
            res = srch_propose(S, NULL, k, NULL, 0,
                               k->n_opts - S->start->n_opts, NULL, &t);
            S->cur_seed = 0;
            if (res == P_STOP) {
                S->opening = opening;
                return false;
            }
        }
        if (out && (res == P_ANSWERED || res == P_PENDING)) {
            member *m = &out[(*n_out)++];
            memset(m, 0, sizeof *m);
            m->k = et_kernel_clone(k);
            if (!m->k) {
                S->nomem = true;
                (*n_out)--;
                return false;
            }
            m->t = t;
            m->slot = S->last_slot;
            m->order = (*order)++;
        } else if (!out) {
            srch_maybe_flush(S);
        }
    }
    S->opening = opening;
    return !S->stop;
}
