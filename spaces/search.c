/*
 * search.c - the searches' entry points (search.h): the kinds' names, the
 * options' defaults, and a run: the parametric search, then the actions
 * search on top of its best kernel. The strategies and the pieces they
 * share are in the files search_impl.h lists.
 */
#include "spaces/search_impl.h"

#include "base/clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const search_names[] = {"beam", "random", "grid"};
_Static_assert(sizeof(search_names) / sizeof(search_names[0]) ==
                   ET_SEARCH_COUNT,
               "search_names must match et_search_kind");

const char *et_search_name(et_search_kind k)
{
    return (unsigned)k < ET_SEARCH_COUNT ? search_names[k] : "?";
}

int et_search_parse(const char *name, et_search_kind *out)
{
    for (int i = 0; i < ET_SEARCH_COUNT; i++)
        if (strcmp(name, search_names[i]) == 0) {
            *out = (et_search_kind)i;
            return 0;
        }
    return -1;
}

/* The zero values of the options become the defaults (search.h). */
static void opts_defaults(et_search_opts *o)
{
    if (o->budget <= 0)
        o->budget = 100;
    if (o->beam_width <= 0)
        o->beam_width = 4;
    if (o->min_progress <= 0)
        o->min_progress = 0.01;
    if (o->cut_factor <= 0)
        o->cut_factor = 3.0;
    if (o->max_draws <= 0)
        o->max_draws = 100000;
    if (o->batch <= 0)
        o->batch = 8;
    if (!(o->keep_frac > 0 && o->keep_frac <= 1))
        o->keep_frac = 0.3;
    if (o->keep_min <= 0)
        o->keep_min = 2 * o->beam_width;
    if (o->explore_frac == 0)
        o->explore_frac = 0.1;
}

/* Options a search cannot run with: ET_ERR_INPUT with d->msg. */
static et_status opts_check(const et_search_opts *o, const et_space *s,
                            et_diag *d)
{
    if (o->n_start < 0 || o->n_start > ET_MAX_OPTS / 2 ||
        (o->n_start > 0 && !o->start)) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "at most %d start opts",
                     ET_MAX_OPTS / 2);
        return ET_ERR_INPUT;
    }
    if (o->n_seeds < 0 || o->n_seeds > ET_SEARCH_MAX_SEEDS ||
        (o->n_seeds > 0 && !o->seeds)) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "at most %d seeds",
                     ET_SEARCH_MAX_SEEDS);
        return ET_ERR_INPUT;
    }
    if (s->n_actions > 0 && o->kind == ET_SEARCH_GRID && s->max_depth > 2) {
        if (d)
            snprintf(d->msg, sizeof(d->msg),
                     "grid search over an action pool needs max_depth <= 2 "
                     "(space '%s' has %d); use beam or random",
                     s->name, s->max_depth);
        return ET_ERR_INPUT;
    }
    return ET_OK;
}

/* The search over the parametric space, with the budget set. */
static void param_phase(srch *S)
{
    if (S->o.kind == ET_SEARCH_RANDOM)
        srch_param_random(S);
    else if (S->o.kind == ET_SEARCH_GRID)
        srch_param_grid(S);
    else
        srch_param_beam(S);
    srch_flush(S);
    srch_batch_clear(S);
}

/* The actions search, with the rest of the budget, on top of the fastest
 * point of the parametric phase when there was one (a seed may be faster
 * still: the action beam's first step has the seeds too). */
static void actions_phase(srch *S, bool has_param)
{
    S->stop = false;
    S->budget = S->o.budget;
    et_kernel *from = S->start;
    et_kernel *best = NULL;
    et_point bp;
    const et_point *ppt = NULL;
    if (has_param && S->has_bp) {
        bp = S->bp;
        ppt = &bp;
        et_opt opts[ET_MAX_OPTS];
        char reason[512];
        int n;
        if (srch_point_kernel(S, &bp, &best, opts, &n, reason,
                              sizeof(reason)) == ET_POINT_OK)
            from = best;
    }
    if (S->o.kind == ET_SEARCH_RANDOM)
        srch_action_random(S, from, ppt);
    else if (S->o.kind == ET_SEARCH_GRID)
        srch_action_grid(S, from, ppt);
    else
        srch_action_beam(S, from, ppt);
    srch_flush(S);
    srch_batch_clear(S);
    et_kernel_free(best);
}

static et_status run(const et_binding *b, const et_search_opts *o,
                     et_eval_fn fn, et_eval_many_fn many, void *user,
                     et_search_stats *stats, et_diag *d)
{
    srch S;
    memset(&S, 0, sizeof(S));
    memset(stats, 0, sizeof(*stats));
    if (d)
        memset(d, 0, sizeof(*d));
    stats->start_time_s = INFINITY;
    stats->best_time_s = INFINITY;
    S.b = b;
    S.s = et_binding_space(b);
    if (o)
        S.o = *o;
    opts_defaults(&S.o);
    S.many = many;
    S.last_slot = -1;
    if (opts_check(&S.o, S.s, d) != ET_OK)
        return ET_ERR_INPUT;
    S.fn = fn;
    S.user = user;
    S.st = stats;
    srch_rng_seed(&S.r, S.o.seed);
    S.t0 = et_now_s();
    bool has_param = S.s->n_steps > 0;
    bool has_act = S.s->n_actions > 0;
    S.start = et_kernel_clone(et_binding_base(b));
    if (!S.start)
        return ET_ERR_NOMEM;
    char reason[512];
    if (et_kernel_apply_opts(S.start, S.o.start, S.o.n_start, reason,
                             sizeof(reason)) != ET_OK) {
        if (d)
            snprintf(d->msg, sizeof(d->msg), "start opts refused: %.480s",
                     reason);
        et_kernel_free(S.start);
        return ET_ERR_INPUT;
    }
    et_status st = ET_OK;
    srch_seeds_build(&S);
    S.budget = has_param && has_act ? (S.o.budget + 1) / 2 : S.o.budget;
    if (has_param)
        param_phase(&S);
    /* the actions search goes on unless the time is up or the caller
     * stopped */
    if (has_act && !S.nomem &&
        !(S.stop && strcmp(stats->stop_reason, "time limit") == 0) &&
        !(S.stop && strcmp(stats->stop_reason, "stopped by the caller") == 0))
        actions_phase(&S, has_param);
    if (S.nomem) {
        st = ET_ERR_NOMEM;
        srch_set_stop(&S, "out of memory");
    }
    if (!stats->stop_reason[0])
        snprintf(stats->stop_reason, sizeof(stats->stop_reason), "done");
    stats->elapsed_s = srch_elapsed(&S);
    srch_kmap_free(&S.seen);
    srch_kmap_free(&S.seen_seq);
    srch_kmap_free(&S.said);
    for (int i = 0; i < S.o.n_seeds; i++)
        et_kernel_free(S.seed_k[i]);
    et_kernel_free(S.start);
    free(S.later);
    free(S.pend);
    return st;
}

et_status et_search_run(const et_binding *b, const et_search_opts *o,
                        et_eval_fn fn, void *user, et_search_stats *stats,
                        et_diag *d)
{
    return run(b, o, fn, NULL, user, stats, d);
}

et_status et_search_run_many(const et_binding *b, const et_search_opts *o,
                             et_eval_many_fn many, void *user,
                             et_search_stats *stats, et_diag *d)
{
    return run(b, o, NULL, many, user, stats, d);
}
