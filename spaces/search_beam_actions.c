/*
 * search_beam_actions.c - the action beam: the starting kernel and the
 * seeds, then every beam member with every action of the pool, the
 * fastest beam_width kept, until progress stops or max_depth; with a time
 * limit, a converged beam widens from an archive of the fastest kernels.
 */
#include "spaces/search_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * True when child is parent with one split by 1 (UPCAST(i,0) once i is
 * whole, LOCAL(x,1)): one more part, of size 1, and the same parts of
 * size 2 or more (axis, kind, size) as before. Such a child is the same
 * kernel; in the beam it would take a member's place.
 */
static bool splits_nothing(const et_kernel *parent, const et_kernel *child)
{
    if (child->n_parts != parent->n_parts + 1)
        return false;
    bool used[ET_MAX_PARTS] = {false};
    int big = 0;
    for (int i = 0; i < child->n_parts; i++) {
        const et_part *c = &child->part[i];
        if (c->size < 2)
            continue;
        big++;
        int j = 0;
        while (j < parent->n_parts &&
               (used[j] || parent->part[j].axis != c->axis ||
                parent->part[j].kind != c->kind ||
                parent->part[j].size != c->size))
            j++;
        if (j == parent->n_parts)
            return false;
        used[j] = true;
    }
    for (int j = 0; j < parent->n_parts; j++)
        big -= parent->part[j].size >= 2;
    return big == 0;
}

/*
 * One step of the action beam through the model: every beam member with
 * every action is built first, the model chooses (choose), the chosen
 * are proposed. Returns the members of the next step in next.
 */
static int action_step_ranked(srch *S, member *beam, int nb,
                              const et_opt *acts, int na, int nstart,
                              const et_point *pt, member *next, long *order)
{
    held *h = calloc((size_t)nb * (size_t)(na ? na : 1), sizeof *h);
    int *ord = malloc(sizeof(int) * (size_t)nb * (size_t)(na ? na : 1));
    int nh = 0, nn = 0;
    if (!h || !ord) {
        S->nomem = true;
        goto done;
    }
    for (int i = 0; i < nb && !S->stop; i++)
        for (int a = 0; a < na && beam[i].depth < S->s->max_depth; a++) {
            et_kernel *k = et_kernel_clone(beam[i].k);
            if (!k) {
                S->nomem = true;
                goto done;
            }
            if (et_kernel_apply_opt(k, &acts[a], NULL, 0) != ET_OK ||
                splits_nothing(beam[i].k, k)) {
                S->st->actions_refused++;
                et_kernel_free(k);
                continue;
            }
            h[nh].k = k;
            h[nh].src = i;
            h[nh].n_actions = k->n_opts - nstart;
            nh++;
        }
    int ns = srch_choose(S, h, nh, ord);
    for (int s = 0; s < ns; s++) {
        held *e = &h[ord[s]];
        double t;
        int res = srch_propose_key(S, pt, e->k, NULL, 0, e->n_actions, NULL,
                                   &t, &e->key);
        if (res == P_STOP)
            break;
        if (res == P_ANSWERED || res == P_PENDING) {
            next[nn].k = e->k;
            next[nn].t = t;
            next[nn].slot = S->last_slot;
            next[nn].order = (*order)++;
            next[nn].depth = beam[e->src].depth + 1;
            if (pt)
                next[nn].pt = *pt;
            nn++;
            e->k = NULL;
        }
    }
done:
    if (h)
        srch_held_free(h, nh);
    free(h);
    free(ord);
    return nn;
}

/* The archive of the action beam: the fastest answered members of the
 * run (clones), for widening the beam once it has converged. */
#define ARCHIVE_MAX 256
/* how far a converged beam widens: up to this many times its width */
#define WIDEN_MAX_FACTOR 8

/* Keeps a clone of m in the archive (sorted fastest first) when it is
 * among the ARCHIVE_MAX fastest. */
static void archive_add(srch *S, member *arch, int *n, const member *m)
{
    if (!isfinite(m->t))
        return;
    if (*n == ARCHIVE_MAX && !(m->t < arch[*n - 1].t))
        return;
    member c = *m;
    c.k = et_kernel_clone(m->k);
    if (!c.k) {
        S->nomem = true;
        return;
    }
    if (*n == ARCHIVE_MAX)
        et_kernel_free(arch[--*n].k);
    int i = *n;
    while (i > 0 && srch_member_cmp(&arch[i - 1], &c) > 0) {
        arch[i] = arch[i - 1];
        i--;
    }
    arch[i] = c;
    (*n)++;
}

/* Marks the archive's copies of the beam's members as expanded. */
static void archive_expanded(member *arch, int n, const member *beam, int nb)
{
    for (int i = 0; i < nb; i++)
        for (int j = 0; j < n; j++)
            if (arch[j].order == beam[i].order)
                arch[j].expanded = true;
}

/*
 * Widening (a time limit given, the beam converged): the beam becomes the
 * k fastest members of the archive not yet expanded that can still take
 * an action (clones; the old beam's kernels are freed). Returns the new
 * beam's size.
 */
static int widen(srch *S, member *beam, int nb, const member *arch,
                 int n_arch, int k)
{
    for (int i = 0; i < nb; i++)
        et_kernel_free(beam[i].k);
    int n = 0;
    for (int i = 0; i < n_arch && n < k; i++) {
        if (arch[i].expanded || arch[i].depth >= S->s->max_depth)
            continue;
        beam[n] = arch[i];
        beam[n].k = et_kernel_clone(arch[i].k);
        if (!beam[n].k) {
            S->nomem = true;
            break;
        }
        n++;
    }
    S->st->widenings++;
    return n;
}

/*
 * One step of the action beam: every beam member with every action, each
 * proposed as it is built. Returns the members of the next step in next.
 */
static int action_step(srch *S, member *beam, int nb, const et_opt *acts,
                       int na, int nstart, const et_point *pt, member *next,
                       long *order)
{
    int nn = 0;
    et_kernel *scratch = NULL;
    for (int i = 0; i < nb && !S->stop; i++) {
        for (int a = 0; a < na && beam[i].depth < S->s->max_depth; a++) {
            if (!scratch && !(scratch = et_kernel_clone(beam[i].k))) {
                S->nomem = true;
                break;
            }
            if (et_kernel_apply_opt(scratch, &acts[a], NULL, 0) != ET_OK) {
                S->st->actions_refused++;
                continue; /* left unchanged: reuse it */
            }
            if (splits_nothing(beam[i].k, scratch)) {
                S->st->actions_refused++;
                et_kernel_free(scratch);
                scratch = NULL;
                continue;
            }
            double t;
            int res = srch_propose(S, pt, scratch, NULL, 0,
                                   scratch->n_opts - nstart, NULL, &t);
            if (res == P_STOP)
                break;
            if (res == P_ANSWERED || res == P_PENDING) {
                next[nn].k = scratch;
                next[nn].t = t;
                next[nn].slot = S->last_slot;
                next[nn].order = (*order)++;
                next[nn].depth = beam[i].depth + 1;
                if (pt)
                    next[nn].pt = *pt;
                nn++;
                scratch = NULL;
            } else {
                et_kernel_free(scratch);
                scratch = NULL;
            }
        }
    }
    et_kernel_free(scratch);
    return nn;
}

/*
 * The first step: the starting kernel and the seeds (one batch). The
 * beam becomes the fastest k of them (a seed that failed is no member);
 * all of them go to the archive when there is one. Returns the beam's
 * size, 0 when the starting kernel was not answered.
 */
static int first_step(srch *S, et_kernel *start, const et_point *pt,
                      member *beam, int k, member *arch, int *n_arch,
                      long *order)
{
    member *first = calloc((size_t)S->o.n_seeds + 1, sizeof(member));
    int nf = 0, nb = 0;
    double t;
    if (!first) {
        S->nomem = true;
        return 0;
    }
    S->opening = !S->seeds_done;
    if (srch_propose(S, pt, start, NULL, 0, 0, NULL, &t) == P_STOP)
        goto done;
    first[0].k = et_kernel_clone(start);
    if (!first[0].k) {
        S->nomem = true;
        goto done;
    }
    first[0].t = t;
    first[0].slot = S->last_slot;
    first[0].order = (*order)++;
    nf = 1;
    srch_seeds_propose(S, first, &nf, order, srch_key_of(S, start));
    nf = srch_settle(S, first, nf);
    if (nf == 0 || first[0].order != 0)
        goto done; /* the starting kernel was not answered */
    if (!pt)
        S->st->start_time_s = first[0].t;
    int keep = 1;
    for (int i = 1; i < nf; i++) {
        if (isfinite(first[i].t))
            first[keep++] = first[i];
        else
            et_kernel_free(first[i].k);
    }
    nf = keep;
    qsort(first, (size_t)nf, sizeof(member), srch_member_cmp);
    nb = nf < k ? nf : k;
    for (int i = 0; i < nf; i++) {
        if (pt)
            first[i].pt = *pt;
        if (arch)
            archive_add(S, arch, n_arch, &first[i]);
        if (i < nb)
            beam[i] = first[i];
        else
            et_kernel_free(first[i].k);
    }
    nf = 0;
done:
    S->opening = false;
    for (int i = 0; i < nf; i++)
        et_kernel_free(first[i].k);
    free(first);
    return nb;
}

int srch_action_beam(srch *S, et_kernel *start, const et_point *pt)
{
    const et_opt *acts;
    int na = et_binding_actions(S->b, &acts);
    int K = S->o.beam_width;
    /* with a time limit, a converged beam widens (x2) up to K_max */
    bool widening = S->o.time_limit_s > 0;
    int K_max = widening ? WIDEN_MAX_FACTOR * K : K;
    int nstart = start->n_opts;
    member *beam = calloc((size_t)K_max, sizeof(member));
    member *next = calloc((size_t)K_max * (size_t)(na ? na : 1),
                          sizeof(member));
    member *arch = widening ? calloc(ARCHIVE_MAX, sizeof(member)) : NULL;
    int nb = 0, n_arch = 0;
    long order = 0;
    if (!beam || !next || (widening && !arch)) {
        S->nomem = true;
        goto done;
    }
    nb = first_step(S, start, pt, beam, K, arch, &n_arch, &order);
    while (nb > 0 && !S->stop) {
        /* the best time before this step: the beam's, or after a
         * widening the archive's */
        double before = arch && n_arch ? arch[0].t : beam[0].t;
        int nn = srch_ranking_on(S)
                     ? action_step_ranked(S, beam, nb, acts, na, nstart, pt,
                                          next, &order)
                     : action_step(S, beam, nb, acts, na, nstart, pt, next,
                                   &order);
        if (arch)
            archive_expanded(arch, n_arch, beam, nb);
        nn = srch_settle(S, next, nn);
        for (int i = 0; arch && i < nn; i++)
            archive_add(S, arch, &n_arch, &next[i]);
        bool converged = true, deep = true;
        if (nn > 0) {
            qsort(next, (size_t)nn, sizeof(member), srch_member_cmp);
            converged = !(next[0].t < before * (1.0 - S->o.min_progress));
            for (int i = 0; i < nb; i++)
                et_kernel_free(beam[i].k);
            nb = nn < K ? nn : K;
            memcpy(beam, next, sizeof(member) * (size_t)nb);
            for (int i = nb; i < nn; i++)
                et_kernel_free(next[i].k);
            for (int i = 0; i < nb && deep; i++)
                deep = beam[i].depth >= S->s->max_depth;
        }
        if (S->stop)
            break;
        if (!converged && !deep)
            continue;
        if (widening && K < K_max && !S->nomem) {
            K *= 2;
            nb = widen(S, beam, nb, arch, n_arch, K);
            if (nb > 0)
                continue;
        }
        srch_set_stop(S, nn == 0 ? "no new kernels"
                         : converged ? "converged" : "max_depth");
        break;
    }
done:
    for (int i = 0; beam && i < nb; i++)
        et_kernel_free(beam[i].k);
    for (int i = 0; arch && i < n_arch; i++)
        et_kernel_free(arch[i].k);
    free(arch);
    free(beam);
    free(next);
    return 0;
}
