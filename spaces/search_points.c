/*
 * search_points.c - the parametric space as an index set (numbered
 * points, random draws) and the kernel of a point on top of the start
 * kernel, proposed through srch_try_point.
 */
#include "spaces/search_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Builds the kernel of a point on top of the start kernel. */
et_point_status srch_point_kernel(srch *S, const et_point *pt, et_kernel **k,
                                  et_opt *opts, int *n, char *reason,
                                  size_t rcap)
{
    *k = NULL;
    int ns = S->o.n_start;
    if (ns > 0)
        memcpy(opts, S->o.start, sizeof(et_opt) * (size_t)ns);
    int np = 0;
    et_point_status ps = et_binding_point_opts(S->b, pt, opts + ns,
                                               ET_MAX_OPTS - ns, &np, reason,
                                               rcap);
    *n = ns + np;
    if (ps != ET_POINT_OK)
        return ps;
    et_kernel *kk = et_kernel_clone(S->start);
    if (!kk) {
        S->nomem = true;
        snprintf(reason, rcap, "out of memory");
        return ET_POINT_REFUSED;
    }
    if (et_kernel_apply_opts(kk, opts + ns, np, reason, rcap) != ET_OK) {
        et_kernel_free(kk);
        return ET_POINT_REFUSED;
    }
    *k = kk;
    return ET_POINT_OK;
}

/* Evaluates a point: P_* or -2 for an invalid point (not a candidate). */
int srch_try_point(srch *S, const et_point *pt, double *t, et_kernel **keep)
{
    et_opt opts[ET_MAX_OPTS];
    char reason[512] = "";
    int n = 0;
    et_kernel *k = NULL;
    if (keep)
        *keep = NULL;
    if (t)
        *t = INFINITY;
    if (srch_must_stop(S))
        return P_STOP;
    et_point_status ps = srch_point_kernel(S, pt, &k, opts, &n, reason,
                                           sizeof(reason));
    if (ps == ET_POINT_INVALID) {
        S->st->invalid++;
        return -2;
    }
    int res = srch_propose(S, pt, k, opts, n, 0, reason, t);
    if (keep && k && (res == P_ANSWERED || res == P_DUPLICATE))
        *keep = k;
    else
        et_kernel_free(k);
    return res;
}

static uint64_t map_count(const srch *S, int m)
{
    uint64_t c = 1;
    for (int k = 0; k < S->s->n_params; k++) {
        const int64_t *v;
        uint64_t n = (uint64_t)et_binding_domain(S->b, m, k, &v);
        if (__builtin_mul_overflow(c, n, &c) || c > HUGE_COUNT)
            return HUGE_COUNT;
    }
    return c;
}

uint64_t srch_total_count(const srch *S)
{
    uint64_t c = 0;
    for (int m = 0; m < et_binding_n_maps(S->b); m++) {
        c += map_count(S, m);
        if (c > HUGE_COUNT)
            return HUGE_COUNT;
    }
    return c;
}

/* Point number idx: mapping blocks, then mixed radix with the first
 * declared parameter outermost. */
void srch_point_at(const srch *S, uint64_t idx, et_point *pt)
{
    memset(pt, 0, sizeof(*pt));
    int m = 0;
    while (m + 1 < et_binding_n_maps(S->b) && idx >= map_count(S, m))
        idx -= map_count(S, m++);
    pt->map = m;
    for (int k = S->s->n_params - 1; k >= 0; k--) {
        const int64_t *v;
        uint64_t n = (uint64_t)et_binding_domain(S->b, m, k, &v);
        pt->v[k] = v[idx % n];
        idx /= n;
        pt->decided |= (uint64_t)1 << k;
    }
}

static void point_random(srch *S, et_point *pt)
{
    memset(pt, 0, sizeof(*pt));
    pt->map = (int)srch_rng_below(&S->r, (uint64_t)et_binding_n_maps(S->b));
    for (int k = 0; k < S->s->n_params; k++) {
        const int64_t *v;
        int n = et_binding_domain(S->b, pt->map, k, &v);
        pt->v[k] = v[srch_rng_below(&S->r, (uint64_t)n)];
        pt->decided |= (uint64_t)1 << k;
    }
}

/* A random point of the space: by its index among total points when they
 * can be counted, else drawn parameter by parameter; returns its identity
 * (the index, or a hash of the point) for the set of points drawn. */
uint64_t srch_point_draw(srch *S, uint64_t total, et_point *pt)
{
    if (total < HUGE_COUNT) {
        uint64_t id = srch_rng_below(&S->r, total);
        srch_point_at(S, id, pt);
        return id;
    }
    point_random(S, pt);
    return srch_fnv(1469598103934665603ULL, pt, sizeof(*pt));
}
