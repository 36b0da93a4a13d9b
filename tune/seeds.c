/*
 * seeds.c - the seeds of a tuning run (see tune_impl.h): the best opts of
 * the nearest tuned problems on the device, those the einsum's structure
 * suggests, their entries in the result and what became of them.
 */
#include "tune/tune_impl.h"

#include "base/clock.h"
#include "transforms/kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A seed's candidate: marked with its entry, and the entry with it. */
void tune_mark_seed(tune_ctx *t, et_tune_candidate *tc,
                    const et_candidate *c)
{
    if (c->seed <= 0 || c->seed > t->n_seeds)
        return;
    int e = t->seed_entry[c->seed - 1];
    tc->seed = 1 + e;
    if (t->res->seeds[e].cand < 0)
        t->res->seeds[e].cand = (int)(tc - t->res->cand);
}

/* Appends an empty seed entry (no candidate yet); NULL when out of
 * memory. */
static et_tune_seed *seed_new(tune_ctx *t)
{
    et_tune_result *res = t->res;
    et_tune_seed *g = realloc(res->seeds,
                              (size_t)(res->n_seeds + 1) * sizeof *g);
    if (!g)
        return NULL;
    res->seeds = g;
    et_tune_seed *sd = &g[res->n_seeds++];
    memset(sd, 0, sizeof *sd);
    sd->cand = -1;
    return sd;
}

/* Appends a seed entry from a nearby problem's answer b. */
static et_tune_seed *seed_push(tune_ctx *t, const et_best *b)
{
    et_tune_seed *sd = seed_new(t);
    if (!sd)
        return NULL;
    tune_copy_str(sd->opts, sizeof sd->opts, b->opts);
    tune_copy_str(sd->einsum, sizeof sd->einsum, b->trial.einsum_text);
    tune_copy_str(sd->sizes, sizeof sd->sizes, b->sizes);
    sd->distance = b->distance;
    return sd;
}

/* "the best of xik,kj->xij at x=512,i=16,... (distance 1)", or "the
 * einsum's structure" for a structural seed. */
static void seed_origin(const et_tune_seed *sd, char *buf, size_t cap)
{
    if (sd->structural)
        snprintf(buf, cap, "suggested by the einsum's structure");
    else
        snprintf(buf, cap, "the best of %.200s at %.200s (distance %.3g)",
                 sd->einsum, sd->sizes, sd->distance);
}

/* et_best_nearest's skip: a nearby problem whose opts do not apply. */
static void seed_skipped(void *arg, const et_best *b, const char *why)
{
    tune_ctx *t = arg;
    et_tune_seed *sd = seed_push(t, b);
    if (!sd)
        return;
    sd->dropped = true;
    tune_copy_str(sd->reason, sizeof sd->reason, why);
    char from[512];
    seed_origin(sd, from, sizeof from);
    tune_say(t, ET_TUNE_INFO, "seed dropped: %s, %s, does not apply here: "
             "%s", sd->opts[0] ? sd->opts : "untransformed", from, why);
}

/* The search's on_seed_dropped. */
void tune_seed_dropped(void *user, int i, const char *reason)
{
    tune_ctx *t = user;
    et_tune_seed *sd = &t->res->seeds[t->seed_entry[i]];
    sd->dropped = true;
    tune_copy_str(sd->reason, sizeof sd->reason, reason);
    tune_say(t, ET_TUNE_INFO, "seed dropped: %s: %s",
             sd->opts[0] ? sd->opts : "untransformed", reason);
}

/*
 * A batched einsum's row seed: the best opts the database knows for one
 * row of it (at these sizes, else the nearest others), which apply to the batched kernel
 * as they are (its other axes have the row's letters) with the row axis
 * left global: every row in a work-group of its own, what the rows'
 * separate kernels do, in one launch. So the search starts no slower
 * than the rows tuned apart. (Rows summed: the rows a loop around the
 * row's kernel, each work-item summing every row.) False when the
 * einsum is not batched or nothing is known.
 */
static bool row_seed(tune_ctx *t, const et_device_info *info, et_best *out)
{
    const et_einsum *e = et_binding_einsum(t->b);
    if (!e->n_rows)
        return false;
    et_einsum *base = malloc(sizeof *base);
    if (!base)
        return false;
    et_einsum_unbatch(e, base);
    bool found = false;
    et_error e2 = {{0}};
    double t0 = et_now_s();
    /* the row at these sizes, else at the nearest other sizes */
    et_status st = et_best_find(t->o->db, base, info, false, out, &found,
                                &e2);
    t->res->db_s += et_now_s() - t0;
    if (st == ET_OK && found && !out->sizes[0])
        et_einsum_sizes_str(base, true, out->sizes, sizeof out->sizes);
    free(base);
    return st == ET_OK && found;
}

/* Has the list NTSTORE? */
static bool has_ntstore(const et_opt *o, int n)
{
    for (int i = 0; i < n; i++)
        if (o[i].kind == ET_OPT_NTSTORE)
            return true;
    return false;
}

/* The largest product of divisors d[i] of a[i] (i < n) that is at most
 * cap (>= 1: all ones), the divisors in d. */
static int64_t fit_divisors(const int64_t *a, int n, int64_t cap, int64_t *d)
{
    if (n == 0)
        return 1;
    int64_t best = 0, rest[ET_MAX_OPTS];
    for (int64_t v = a[0] < cap ? a[0] : cap; v >= 1 && best < cap; v--) {
        if (a[0] % v != 0)
            continue;
        int64_t p = v * fit_divisors(a + 1, n - 1, cap / v, rest);
        if (p > best) {
            best = p;
            d[0] = v;
            memcpy(d + 1, rest, sizeof *d * (size_t)(n - 1));
        }
    }
    return best;
}

/* et_tune_row_fused_opts (tune.h). */
int et_tune_row_fused_opts(const et_kernel *base, const et_opt *row,
                           int n_row, et_opt *out)
{
    const et_einsum *e = &base->e;
    if (n_row + 1 > ET_MAX_OPTS)
        return 0;
    bool summed = et_einsum_rows_summed(e);
    out[0] = et_opt_make(summed ? ET_OPT_UNROLL : ET_OPT_UPCAST,
                         e->idx[e->row_axis].name, 0);
    memcpy(&out[1], row, sizeof *row * (size_t)n_row);
    int n_out = n_row + 1;
    /* the row's UPCASTs after the first (the vector axis's), found by
     * applying the row's opts alone (the row seed, which applies): where
     * they are in out, and their amounts (0: the part they take whole) */
    int at[ET_MAX_OPTS], n = 0;
    int64_t amt[ET_MAX_OPTS], prod = 1;
    et_kernel *k = summed ? NULL : et_kernel_clone(base);
    bool first = true;
    for (int i = 0; k && i < n_row; i++) {
        const et_opt *o = &row[i];
        int a = o->kind == ET_OPT_UPCAST ? et_kernel_axis_find(k, &o->axis)
                                         : -1;
        int64_t size = a >= 0 ? k->part[k->outer[a]].size : 0;
        if (et_kernel_apply_opt(k, o, NULL, 0) != ET_OK) {
            n = 0;
            break;
        }
        if (a < 0 || a == e->row_axis)
            continue;
        if (first) {
            first = false;
            continue;
        }
        at[n] = i + 1;
        amt[n] = o->amt ? o->amt : size;
        prod *= amt[n++];
    }
    et_kernel_free(k);
    if (n == 0)
        return n_out;
    int64_t cap = prod / e->n_rows > 1 ? prod / e->n_rows : 1;
    int64_t d[ET_MAX_OPTS];
    fit_divisors(amt, n, cap, d);
    et_opt cut[ET_MAX_OPTS];
    int m = 0;
    for (int i = 0, j = 0; i < n_out; i++) {
        et_opt o = out[i];
        if (j < n && at[j] == i) {
            int64_t v = d[j++];
            if (v == 1)
                continue;
            o.amt = v;
        }
        cut[m++] = o;
    }
    et_kernel *c = et_kernel_clone(base);
    if (c && et_kernel_apply_opts(c, cut, m, NULL, 0) == ET_OK) {
        memcpy(out, cut, sizeof *cut * (size_t)m);
        n_out = m;
    }
    et_kernel_free(c);
    return n_out;
}

/* The row seed's fused form (et_tune_row_fused_opts); false when there
 * is no room for one more opt. */
static bool row_seed_fused(const et_kernel *base, const et_best *row,
                           et_best *out)
{
    *out = *row;
    out->n_opts = et_tune_row_fused_opts(base, row->opt, row->n_opts,
                                         out->opt);
    if (out->n_opts == 0)
        return false;
    et_opts_format(out->opt, out->n_opts, out->opts, sizeof out->opts);
    return true;
}

/*
 * The row seed's separate form: the row's opts with the row axis the
 * slowest launch dimension (SWAP(R, a), a the axis launched last), so
 * that the work-groups run row after row, as the rows' separate kernels
 * launched one after another do, in one launch. The search can then
 * find where splitting the rows is faster than running them side by
 * side (docs/opts.md, "Batched einsums"). False for rows summed, for a
 * row axis already launched last (an output of the row axis and one
 * other) and when the opts do not apply.
 */
static bool row_seed_apart(const et_kernel *base, const et_best *row,
                           et_best *out)
{
    const et_einsum *e = &base->e;
    if (!e->n_rows || et_einsum_rows_summed(e) || row->n_opts >= ET_MAX_OPTS)
        return false;
    et_kernel *k = et_kernel_clone(base);
    if (!k)
        return false;
    bool ok = et_kernel_apply_opts(k, row->opt, row->n_opts, NULL, 0) ==
              ET_OK;
    int last = k->order[e->n_out - 1];
    et_opt swap = et_opt_make(ET_OPT_SWAP, e->idx[e->row_axis].name, 0);
    swap.axis2 = et_opt_make(ET_OPT_SWAP, e->idx[last].name, 0).axis;
    ok = ok && last != e->row_axis &&
         et_kernel_apply_opt(k, &swap, NULL, 0) == ET_OK;
    if (ok) {
        *out = *row;
        out->opt[out->n_opts++] = swap;
        et_opts_format(out->opt, out->n_opts, out->opts, sizeof out->opts);
    }
    et_kernel_free(k);
    return ok;
}

/*
 * The seeds of a run: up to o->seeds best opts of the nearest tuned
 * problems on this device (et_best_nearest), into ss (the opts live in
 * t->seed_best). A database that cannot answer costs the run its seeds,
 * not the run: a warning, and no seeds.
 */
et_status tune_seeds_find(tune_ctx *t, const et_device_info *info,
                          et_search_seed *ss, int *n)
{
    *n = 0;
    int max = t->o->seeds < ET_SEARCH_MAX_SEEDS ? t->o->seeds
                                                : ET_SEARCH_MAX_SEEDS;
    /* room for a batched einsum's row seeds after them */
    t->seed_best = calloc((size_t)max + 3, sizeof *t->seed_best);
    if (!t->seed_best)
        return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
    int found = 0;
    et_error e2 = {{0}};
    double t0 = et_now_s();
    et_status st = et_best_nearest(t->o->db, et_binding_einsum(t->b), info,
                                   max, t->seed_best, &found, seed_skipped,
                                   t, &e2);
    t->res->db_s += et_now_s() - t0;
    if (st == ET_ERR_NOMEM)
        return et_errorf(t->err, st, "%s", e2.msg);
    if (st != ET_OK) {
        tune_say(t, ET_TUNE_WARN, "no seeds from the database: it did "
                 "not answer: %s", e2.msg);
        return ET_OK;
    }
    int fused_at = -1, apart_at = -1;
    if (found < ET_SEARCH_MAX_SEEDS &&
        row_seed(t, info, &t->seed_best[found])) {
        int at = found++;
        t->row_ntstore = has_ntstore(t->seed_best[at].opt,
                                     t->seed_best[at].n_opts);
        if (found < ET_SEARCH_MAX_SEEDS &&
            row_seed_fused(et_binding_base(t->b), &t->seed_best[at],
                           &t->seed_best[found]))
            fused_at = found++;
        if (found < ET_SEARCH_MAX_SEEDS &&
            row_seed_apart(et_binding_base(t->b), &t->seed_best[at],
                           &t->seed_best[found]))
            apart_at = found++;
    }
    for (int i = 0; i < found; i++) {
        et_tune_seed *sd = seed_push(t, &t->seed_best[i]);
        if (!sd)
            return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
        t->seed_entry[i] = t->res->n_seeds - 1;
        ss[i].opts = t->seed_best[i].opt;
        ss[i].n_opts = t->seed_best[i].n_opts;
        char from[512];
        seed_origin(sd, from, sizeof from);
        tune_say(t, ET_TUNE_INFO, "seed %d: %s, %s%s", i + 1,
                 sd->opts[0] ? sd->opts : "untransformed", from,
                 i == fused_at   ? ", with every row in each work-item"
                 : i == apart_at ? ", with the rows one after another"
                                 : "");
    }
    *n = found;
    if (found == 0)
        tune_say(t, ET_TUNE_INFO, "no seeds from the database: no tuned "
                 "problem near this one on this device has opts that apply "
                 "here");
    return ET_OK;
}

/*
 * The structural seeds (transforms/heuristic.h): the start opts and each
 * suggestion of the rules for the start kernel, appended to ss after the
 * n seeds already there (at most ET_SEARCH_MAX_SEEDS in all). A batched
 * einsum whose row's best stores past the caches (NTSTORE, t->row_ntstore)
 * has NTSTORE after each suggestion that takes it: the rows write the
 * row's outputs, one per row, and its search found those stores faster
 * (the gradient P1 f64 on an AVX-512 EPYC, in one process:
 * `UPCAST(i,0) UPCAST(R,0) STAGE LOOP(x,64)` 9.65 ms, with NTSTORE 8.44,
 * the rows' NTSTORE kernels 9.07; a 20 s fused search, which times a
 * dozen candidates, kept the first).
 */
et_status tune_seeds_structural(tune_ctx *t, et_search_seed *ss, int *n)
{
    const et_search_opts *so = &t->o->search;
    et_kernel *k = et_kernel_clone(et_binding_base(t->b));
    if (!k)
        return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
    et_heuristic h[ET_HEURISTIC_MAX];
    int nh = 0;
    if (et_kernel_apply_opts(k, so->start, so->n_start, NULL, 0) == ET_OK)
        nh = et_kernel_heuristics(k, h);
    int n0 = k->n_opts;
    for (int i = 0; i < nh && *n < ET_SEARCH_MAX_SEEDS; i++) {
        if (n0 + h[i].n_opts > ET_MAX_OPTS)
            continue;
        et_opt *o = t->heur[i];
        memcpy(o, k->opts, sizeof(et_opt) * (size_t)n0);
        memcpy(o + n0, h[i].opt, sizeof(et_opt) * (size_t)h[i].n_opts);
        int m = n0 + h[i].n_opts;
        if (t->row_ntstore && m < ET_MAX_OPTS && !has_ntstore(o, m)) {
            et_kernel *c = et_kernel_clone(k);
            o[m] = et_opt_make(ET_OPT_NTSTORE, NULL, 0);
            if (c && et_kernel_apply_opts(c, o + n0, m + 1 - n0, NULL, 0) ==
                         ET_OK)
                m++;
            et_kernel_free(c);
        }
        et_tune_seed *sd = seed_new(t);
        if (!sd) {
            et_kernel_free(k);
            return et_errorf(t->err, ET_ERR_NOMEM, "out of memory");
        }
        et_opts_format(o, m, sd->opts, sizeof sd->opts);
        tune_copy_str(sd->einsum, sizeof sd->einsum,
                      et_binding_einsum(t->b)->text);
        sd->structural = true;
        t->seed_entry[*n] = t->res->n_seeds - 1;
        ss[*n].opts = o;
        ss[*n].n_opts = m;
        (*n)++;
        tune_say(t, ET_TUNE_INFO, "seed %d: %s, suggested by the einsum's "
                 "structure%s", *n, sd->opts,
                 m > n0 + h[i].n_opts ? ", with the row's NTSTORE" : "");
    }
    et_kernel_free(k);
    return ET_OK;
}
