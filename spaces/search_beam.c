/*
 * search_beam.c - the parametric beam: the parameters decided one at a
 * time in the binding's order, every beam member with every value of the
 * next one, the fastest beam_width kept; and the order of beam members.
 */
#include "spaces/search_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int srch_member_cmp(const void *x, const void *y)
{
    const member *a = x, *b = y;
    if (a->t < b->t)
        return -1;
    if (a->t > b->t)
        return 1;
    return (a->order > b->order) - (a->order < b->order);
}

/*
 * One step of the parametric beam through the model: the kernel of every
 * beam member with every value of parameter q is built first (refused
 * points are proposed at once, invalid ones counted), the model chooses
 * (choose), the chosen are proposed. Returns the members of the next
 * step in next (room for cap).
 */
static int param_step_ranked(srch *S, member *beam, int nb, int q,
                             size_t cap, member *next, long *order)
{
    held *h = calloc(cap ? cap : 1, sizeof *h);
    int *ord = malloc(sizeof(int) * (cap ? cap : 1));
    int nh = 0, nn = 0;
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    for (int i = 0; i < nb && !S->stop; i++) {
        const int64_t *v;
        int nv = et_binding_domain(S->b, beam[i].pt.map, q, &v);
        for (int j = 0; j < nv && !S->stop; j++) {
            et_point pt = beam[i].pt;
            pt.v[q] = v[j];
            pt.decided |= (uint64_t)1 << q;
            et_opt opts[ET_MAX_OPTS];
            char reason[512] = "";
            int n = 0;
            et_kernel *k = NULL;
            et_point_status ps = srch_point_kernel(S, &pt, &k, opts, &n,
                                                   reason, sizeof(reason));
            if (ps == ET_POINT_INVALID) {
                S->st->invalid++;
                continue;
            }
            if (!k) {
                /* refused: recorded, free of charge */
                if (srch_propose(S, &pt, NULL, opts, n, 0, reason, NULL) ==
                    P_STOP)
                    goto done;
                continue;
            }
            h[nh].k = k;
            h[nh].has_pt = true;
            h[nh].pt = pt;
            h[nh].src = i;
            nh++;
        }
    }
    int ns = srch_choose(S, h, nh, ord);
    for (int s = 0; s < ns; s++) {
        held *e = &h[ord[s]];
        double t;
        int res = srch_propose_key(S, &e->pt, e->k, NULL, 0, 0, NULL, &t,
                                   &e->key);
        if (res == P_STOP)
            break;
        if (res == P_ANSWERED || res == P_DUPLICATE || res == P_PENDING) {
            next[nn].pt = e->pt;
            next[nn].t = t;
            next[nn].order = (*order)++;
            next[nn].slot = S->last_slot;
            nn++;
        }
    }
done:
    if (h)
        srch_held_free(h, nh);
    free(h);
    free(ord);
    return nn;
}

/*
 * One step of the parametric beam: every beam member with every value of
 * parameter q, each proposed as it is built. Returns the members of the
 * next step in next.
 */
static int param_step(srch *S, member *beam, int nb, int q, member *next,
                      long *order)
{
    int nn = 0;
    for (int i = 0; i < nb; i++) {
        const int64_t *v;
        int nv = et_binding_domain(S->b, beam[i].pt.map, q, &v);
        for (int j = 0; j < nv; j++) {
            et_point pt = beam[i].pt;
            pt.v[q] = v[j];
            pt.decided |= (uint64_t)1 << q;
            double t;
            int res = srch_try_point(S, &pt, &t, NULL);
            if (res == P_STOP)
                return nn;
            if (res == P_ANSWERED || res == P_DUPLICATE ||
                res == P_PENDING) {
                next[nn].pt = pt;
                next[nn].t = t;
                next[nn].order = (*order)++;
                next[nn].slot = S->last_slot;
                nn++;
            }
        }
    }
    return nn;
}

/*
 * Round 0: every mapping with nothing decided; the first mapping's time
 * is the start time. Returns the members, their times known, or -1 when
 * the search must stop.
 */
static int round_zero(srch *S, member *beam, long *order)
{
    int n_maps = et_binding_n_maps(S->b);
    int nb = 0, start_slot = -1;
    for (int m = 0; m < n_maps; m++) {
        et_point pt;
        memset(&pt, 0, sizeof(pt));
        pt.map = m;
        double t;
        int res = srch_try_point(S, &pt, &t, NULL);
        if (res == P_STOP)
            return -1;
        if (m == 0 && res != -2)
            S->st->start_time_s = t;
        if (res == P_ANSWERED || res == P_DUPLICATE || res == P_REFUSED ||
            res == P_PENDING) {
            beam[nb].pt = pt;
            beam[nb].t = t;
            beam[nb].order = (*order)++;
            beam[nb].slot = res == P_REFUSED ? -1 : S->last_slot;
            if (m == 0)
                start_slot = beam[nb].slot;
            nb++;
        }
    }
    if (S->many && start_slot >= 0) {
        srch_flush(S);
        S->st->start_time_s = S->pend[start_slot].t;
    }
    return srch_settle(S, beam, nb);
}

void srch_param_beam(srch *S)
{
    const et_space *s = S->s;
    int K = S->o.beam_width;
    int n_maps = et_binding_n_maps(S->b);
    size_t cap = (size_t)(n_maps > K ? n_maps : K);
    member *beam = calloc(cap, sizeof(member));
    member *next = NULL;
    int nb = 0;
    long order = 0;
    if (!beam) {
        S->nomem = true;
        return;
    }
    if (!srch_seeds_propose(S, NULL, NULL, NULL, 0))
        goto done;
    nb = round_zero(S, beam, &order);
    if (nb < 0)
        goto done;
    qsort(beam, (size_t)nb, sizeof(member), srch_member_cmp);
    if (nb > K)
        nb = K;
    const int *ord = et_binding_order(S->b);
    for (int r = 0; r < s->n_params && nb > 0; r++) {
        int q = ord[r];
        size_t ncap = 0;
        for (int i = 0; i < nb; i++) {
            const int64_t *v;
            ncap += (size_t)et_binding_domain(S->b, beam[i].pt.map, q, &v);
        }
        next = calloc(ncap ? ncap : 1, sizeof(member));
        if (!next) {
            S->nomem = true;
            goto done;
        }
        int nn = srch_ranking_on(S)
                     ? param_step_ranked(S, beam, nb, q, ncap, next, &order)
                     : param_step(S, beam, nb, q, next, &order);
        nn = srch_settle(S, next, nn);
        if (S->stop)
            goto done;
        if (nn == 0) {
            snprintf(S->st->stop_reason, sizeof(S->st->stop_reason),
                     "no valid value for %.40s", s->param[q].name);
            S->stop = true;
            goto done;
        }
        qsort(next, (size_t)nn, sizeof(member), srch_member_cmp);
        nb = nn < K ? nn : K;
        memcpy(beam, next, sizeof(member) * (size_t)nb);
        free(next);
        next = NULL;
    }
    srch_set_stop(S, "all parameters decided");
done:
    free(next);
    free(beam);
}
