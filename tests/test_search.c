/*
 * test_search.c - the searches of spaces/search.h, driven by synthetic
 * cost callbacks (no device): budget, no repeats, seed reproducibility,
 * beam never worse than its start, grid = exactly the valid points,
 * refused points recorded and skipped, time limit, cache accounting,
 * early-cut bound, action pools. Run from the repository root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <time.h>

#include <cmocka.h>

#include "spaces/search.h"
#include "transforms/kernel.h"

#define MAX_REC 4096

typedef struct rec {
    int n, n_refused;
    char text[MAX_REC][160];     /* params + opts of answered candidates */
    uint64_t key[MAX_REC];
    double bound[MAX_REC];
    double best;                 /* best time answered so far */
    bool bound_ok;
    int refused_with_reason;
    int stop_after;              /* return 1 after this many, 0 = never */
    int sleep_ms;
    int cache_every;             /* answer every n-th from "cache" */
    bool constant;               /* every candidate costs the same */
    bool trap;                   /* trap_cost instead of cost */
    long seq[MAX_REC];           /* of the answered candidates */
    int n_dup;                   /* on_duplicate: "<dup> = <first>" */
    char dup[MAX_REC][330];
    long batch_seq;              /* many_cb: the first seq of its batch */
    int dup_in_batch;            /* duplicates of a kernel of that batch */
} rec;

/* Synthetic cost of an opt list: prefers LOCAL 4 on i, UPCAST 2 on j,
 * UNROLL 2 on k, and in general more opts. */
static double cost(const et_candidate *c)
{
    double t = 10.0;
    for (int i = 0; i < c->n_opts; i++) {
        const et_opt *o = &c->opts[i];
        double a = (double)o->amt;
        switch (o->kind) {
        case ET_OPT_LOCAL: t -= 1.0 - fabs(a - 4.0) / 8.0; break;
        case ET_OPT_UPCAST: t -= 0.8 - fabs(a - 2.0) / 8.0; break;
        case ET_OPT_UNROLL: t -= 0.5 - fabs(a - 2.0) / 16.0; break;
        default: t -= 0.1; break;
        }
    }
    return t;
}

/* A landscape that traps a greedy beam: UPCAST(j,2) is the best first
 * step (5) but everything after it is worse (9); LOCAL(i,4) is worse
 * first (8), and LOCAL(i,4) UNROLL(k,4) is the optimum (1). */
static double trap_cost(const et_candidate *c)
{
    if (c->n_opts == 0)
        return 10.0;
    const et_opt *o = &c->opts[0];
    if (o->kind == ET_OPT_UPCAST && !strcmp(o->axis.name, "j"))
        return c->n_opts > 1 ? 9.0 : o->amt == 2 ? 5.0 : 6.0;
    if (o->kind == ET_OPT_LOCAL && !strcmp(o->axis.name, "i") &&
        o->amt == 4) {
        if (c->n_opts == 1)
            return 8.0;
        const et_opt *u = &c->opts[1];
        return c->n_opts == 2 && u->kind == ET_OPT_UNROLL && u->amt == 4
                   ? 1.0
                   : 9.5;
    }
    return 10.0 + 0.01 * c->n_opts;
}

static int eval_cb(void *user, const et_candidate *c, et_eval_result *r)
{
    rec *R = user;
    if (c->refused) {
        R->n_refused++;
        if (c->reason && c->reason[0] && !c->kernel)
            R->refused_with_reason++;
        return 0;
    }
    assert_true(R->n < MAX_REC);
    snprintf(R->text[R->n], sizeof(R->text[0]), "%s %s", c->params_text,
             c->opts_text);
    R->key[R->n] = c->key;
    R->seq[R->n] = c->seq;
    R->bound[R->n] = c->bound_s;
    double want = R->n == 0 || isinf(R->best) ? INFINITY : 3.0 * R->best;
    if (!(c->bound_s == want || (isinf(want) && isinf(c->bound_s))))
        R->bound_ok = false;
    R->n++;
    if (R->sleep_ms) {
        struct timespec ts = {0, R->sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    r->status = ET_EVAL_OK;
    r->time_s = R->constant ? 1.0 : R->trap ? trap_cost(c) : cost(c);
    r->cached = R->cache_every && R->n % R->cache_every == 0;
    if (r->time_s < R->best)
        R->best = r->time_s;
    return R->stop_after && R->n >= R->stop_after;
}

/* on_duplicate: the first must be an answered candidate of the same
 * kernel; kept as "<dup> = <first>". */
static void dup_cb(void *user, const et_candidate *c, long first_seq)
{
    rec *R = user;
    int f = -1;
    for (int i = 0; i < R->n && f < 0; i++)
        if (R->seq[i] == first_seq)
            f = i;
    if (f < 0)
        fail_msg("duplicate %s of seq %ld, which was not answered",
                 c->opts_text, first_seq);
    assert_true(R->key[f] == c->key);
    assert_true(R->n_dup < MAX_REC);
    R->dup_in_batch += first_seq >= R->batch_seq;
    char line[sizeof R->dup[0]];
    snprintf(line, sizeof line, "%s %s = %s", c->params_text, c->opts_text,
             R->text[f]);
    memcpy(R->dup[R->n_dup++], line, sizeof line);
}

static rec *rec_new(void)
{
    rec *R = calloc(1, sizeof(rec));
    R->best = INFINITY;
    R->bound_ok = true;
    return R;
}

typedef struct fixture {
    et_space *s;
    et_binding *b;
} fixture;

static fixture bind(const char *path, const char *einsum, const char *shape)
{
    fixture f = {NULL, NULL};
    et_diag d;
    if (et_space_load(path, &f.s, &d) != ET_OK)
        fail_msg("%s: %s", path, d.msg);
    et_einsum e;
    if (et_einsum_from_strings(einsum, shape, "f32", &e, &d) != ET_OK)
        fail_msg("%s: %s", einsum, d.msg);
    if (et_space_bind(f.s, &e, NULL, &f.b, &d) != ET_OK)
        fail_msg("bind: %s", d.msg);
    return f;
}

static void unbind(fixture *f)
{
    et_binding_free(f->b);
    et_space_free(f->s);
}

static void run(fixture *f, et_search_opts *o, rec *R, et_search_stats *st)
{
    et_diag d;
    et_status s = et_search_run(f->b, o, eval_cb, R, st, &d);
    if (s != ET_OK)
        fail_msg("search: %s", d.msg);
}

static void assert_no_repeats(const rec *R)
{
    for (int i = 0; i < R->n; i++)
        for (int j = i + 1; j < R->n; j++) {
            if (R->key[i] == R->key[j] || strcmp(R->text[i], R->text[j]) == 0)
                fail_msg("repeat: %d '%s' and %d '%s'", i, R->text[i], j,
                         R->text[j]);
        }
}

#define SMALL "tests/data/spaces/good_small.yaml"

/* The valid points of good_small with j = 6: li*uj != 8. */
static int small_valid(int64_t li, int64_t uj)
{
    return li * uj != 8;
}

static void test_grid_exact(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_GRID, .budget = 1000};
    et_search_stats st;
    run(&f, &o, R, &st);
    int want = 0;
    static const int64_t li[] = {1, 2, 4, 8}, uj[] = {1, 2, 3}, uk[] = {1, 2};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 3; b++)
            for (int c = 0; c < 2; c++) {
                if (!small_valid(li[a], uj[b]))
                    continue;
                char t[160];
                snprintf(t, sizeof(t),
                         "{'li': %lld, 'uj': %lld, 'uk': %lld} LOCAL(i,%lld) "
                         "UPCAST(j,%lld) UNROLL(k,%lld)",
                         (long long)li[a], (long long)uj[b], (long long)uk[c],
                         (long long)li[a], (long long)uj[b], (long long)uk[c]);
                /* grid order: first parameter outermost */
                assert_true(want < R->n);
                assert_string_equal(R->text[want], t);
                want++;
            }
    assert_int_equal(R->n, want);
    assert_int_equal(want, 20);
    assert_int_equal(st.answered, 20);
    assert_int_equal(st.invalid, 4);
    assert_int_equal(st.refused, 0);
    assert_string_equal(st.stop_reason, "exhausted");
    assert_no_repeats(R);
    assert_true(R->bound_ok);
    free(R);
    unbind(&f);
}

static void test_refused_recorded(void **state)
{
    (void)state;
    /* j = 4: UPCAST(j,3) is refused by transforms/ */
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=4");
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_GRID, .budget = 1000};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_int_equal(st.refused, 8);
    assert_int_equal(R->n_refused, 8);
    assert_int_equal(R->refused_with_reason, 8);
    assert_int_equal(st.answered, 12);
    for (int i = 0; i < R->n; i++)
        assert_null(strstr(R->text[i], "UPCAST(j,3)"));
    /* refused points do not use the budget */
    memset(R, 0, sizeof(*R));
    R->best = INFINITY;
    R->bound_ok = true;
    o.budget = 12;
    run(&f, &o, R, &st);
    assert_int_equal(st.answered, 12);
    free(R);
    unbind(&f);
}

static void test_random_budget_seed(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    rec *A = rec_new(), *B = rec_new(), *C = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_RANDOM, .budget = 10, .seed = 42};
    et_search_stats st;
    run(&f, &o, A, &st);
    assert_int_equal(A->n, 10);
    assert_int_equal(st.answered, 10);
    assert_string_equal(st.stop_reason, "budget");
    assert_no_repeats(A);
    run(&f, &o, B, &st);
    assert_int_equal(B->n, 10);
    for (int i = 0; i < 10; i++)
        assert_string_equal(A->text[i], B->text[i]);
    o.seed = 43;
    run(&f, &o, C, &st);
    bool differ = false;
    for (int i = 0; i < 10; i++)
        differ = differ || strcmp(A->text[i], C->text[i]) != 0;
    assert_true(differ);
    /* a budget larger than the space: every valid point once */
    memset(A, 0, sizeof(*A));
    A->best = INFINITY;
    A->bound_ok = true;
    o.budget = 100;
    run(&f, &o, A, &st);
    assert_int_equal(A->n, 20);
    assert_string_equal(st.stop_reason, "exhausted");
    assert_no_repeats(A);
    assert_true(A->bound_ok);
    free(A);
    free(B);
    free(C);
    unbind(&f);
}

static void test_beam_param(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 100, .beam_width = 2};
    et_search_stats st;
    run(&f, &o, R, &st);
    /* start (nothing decided), then li (4 values), then uj for 2 members,
     * then uk for 2 members */
    assert_string_equal(R->text[0], "{} ");
    assert_true(st.answered <= 1 + 4 + 2 * 3 + 2 * 2);
    assert_true(st.answered >= 5);
    assert_true(st.has_best);
    assert_true(st.best_time_s <= st.start_time_s);
    assert_string_equal(st.stop_reason, "all parameters decided");
    assert_no_repeats(R);
    /* the decided parameters are li, uj, uk in transform order */
    assert_true(st.best_has_point);
    assert_int_equal(st.best_point.decided, 7);
    /* budget respected mid-beam */
    rec *S = rec_new();
    o.budget = 3;
    run(&f, &o, S, &st);
    assert_int_equal(S->n, 3);
    assert_int_equal(st.answered, 3);
    assert_string_equal(st.stop_reason, "budget");
    /* deterministic */
    rec *T = rec_new();
    run(&f, &o, T, &st);
    for (int i = 0; i < 3; i++)
        assert_string_equal(S->text[i], T->text[i]);
    free(R);
    free(S);
    free(T);
    unbind(&f);
}

static void test_beam_param_constraint_waits(void **state)
{
    (void)state;
    /* tiled matmul: constraints mention several parameters; the beam must
     * still find complete points and never get worse than its start */
    fixture f = bind("examples/tiled_matmul.yaml", "ab,bc->ac", "a=32,b=32,c=32");
    rec *R = rec_new();
    et_search_opts o = {.budget = 200};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_true(st.answered <= 200);
    assert_true(st.best_time_s <= st.start_time_s);
    assert_no_repeats(R);
    assert_true(R->bound_ok);
    free(R);
    unbind(&f);
}

static void test_time_limit(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    rec *R = rec_new();
    R->sleep_ms = 20;
    et_search_opts o = {.kind = ET_SEARCH_RANDOM, .budget = 100,
                        .time_limit_s = 0.1};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_string_equal(st.stop_reason, "time limit");
    assert_true(R->n >= 2 && R->n <= 7);
    assert_true(st.elapsed_s < 0.5);
    free(R);
    unbind(&f);
}

static void test_cache_and_stop(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    rec *R = rec_new();
    R->cache_every = 2;
    et_search_opts o = {.kind = ET_SEARCH_GRID, .budget = 10};
    et_search_stats st;
    run(&f, &o, R, &st);
    /* cached answers count against the budget */
    assert_int_equal(st.answered, 10);
    assert_int_equal(st.cached, 5);
    rec *S = rec_new();
    S->stop_after = 4;
    run(&f, &o, S, &st);
    assert_int_equal(S->n, 4);
    assert_string_equal(st.stop_reason, "stopped by the caller");
    free(R);
    free(S);
    unbind(&f);
}

static void test_action_beam(void **state)
{
    (void)state;
    fixture f = bind("examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16");
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 60};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_true(st.answered <= 60);
    assert_string_equal(R->text[0], "{} ");
    assert_true(st.best_time_s <= st.start_time_s);
    assert_true(st.actions_refused > 0);
    assert_no_repeats(R);
    assert_true(R->bound_ok);
    /* no progress: stops after the first round */
    rec *S = rec_new();
    S->constant = true;
    o.budget = 1000;
    run(&f, &o, S, &st);
    assert_string_equal(st.stop_reason, "converged");
    const et_opt *acts;
    int na = et_binding_actions(f.b, &acts);
    assert_true(S->n <= 1 + na);
    free(R);
    free(S);
    unbind(&f);
}

/* A split by 1 (UPCAST(i,0) once i is whole) is the same kernel: the
 * action beam does not propose it, so it is neither a duplicate nor a
 * beam member in another's place. */
static void test_action_beam_no_empty_split(void **state)
{
    (void)state;
    static const char text[] =
        "name: whole\n"
        "einsum: any\n"
        "actions:\n"
        "  - {op: UPCAST, axis: any_global, amt: [0]}\n"
        "max_depth: 4\n";
    fixture f = {NULL, NULL};
    et_diag d;
    assert_int_equal(et_space_load_text(text, strlen(text), "whole.yaml",
                                        &f.s, &d),
                     ET_OK);
    et_einsum e;
    assert_int_equal(et_einsum_from_strings("ik,kj->ij", "i=16,k=16,j=16",
                                            "f32", &e, &d),
                     ET_OK);
    assert_int_equal(et_space_bind(f.s, &e, NULL, &f.b, &d), ET_OK);
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 60,
                        .on_duplicate = dup_cb};
    et_search_stats st;
    run(&f, &o, R, &st);
    /* the start, i whole, j whole, and both (in one order): nothing else;
     * each UPCAST(i,0) after i is whole refused */
    assert_int_equal(R->n, 4);
    assert_int_equal(st.duplicates, R->n_dup);
    for (int i = 0; i < R->n_dup; i++)
        if (strstr(R->dup[i], "UPCAST(i,0) UPCAST(i,0)") ||
            strstr(R->dup[i], "UPCAST(j,0) UPCAST(j,0)"))
            fail_msg("a split by 1 proposed: %s", R->dup[i]);
    assert_true(st.actions_refused >= 3);
    free(R);
    unbind(&f);
}

/* Without a time limit a converged beam stops where it is; with one it
 * widens from the run's fastest kernels not yet expanded and finds what
 * the greedy path missed, until it has widened WIDEN_MAX_FACTOR times
 * its width. */
static void test_action_beam_widens(void **state)
{
    (void)state;
    fixture f = bind("examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16");
    rec *R = rec_new();
    R->trap = true;
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 1000,
                        .beam_width = 1};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_string_equal(st.stop_reason, "converged");
    assert_int_equal(st.widenings, 0);
    assert_true(st.best_time_s == 5.0);
    rec *W = rec_new();
    W->trap = true;
    o.time_limit_s = 600;
    run(&f, &o, W, &st);
    assert_int_equal(st.widenings, 3); /* 1 -> 2 -> 4 -> 8 */
    assert_string_equal(st.stop_reason, "converged");
    assert_true(st.best_time_s == 1.0);
    assert_true(W->n > R->n);
    assert_no_repeats(W);
    free(R);
    free(W);
    unbind(&f);
}

static void test_action_random_grid(void **state)
{
    (void)state;
    fixture f = bind("examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16");
    rec *A = rec_new(), *B = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_RANDOM, .budget = 25, .seed = 7};
    et_search_stats st;
    run(&f, &o, A, &st);
    assert_int_equal(A->n, 25);
    assert_no_repeats(A);
    run(&f, &o, B, &st);
    for (int i = 0; i < 25; i++)
        assert_string_equal(A->text[i], B->text[i]);
    /* grid over a pool deeper than 2 is refused */
    et_diag d;
    o.kind = ET_SEARCH_GRID;
    assert_int_equal(et_search_run(f.b, &o, eval_cb, A, &st, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "max_depth <= 2"));
    free(A);
    free(B);
    unbind(&f);
    /* a pool of depth 2: grid enumerates sequences of 0, 1, 2 actions */
    const char *text = "name: p\neinsum: any\nactions:\n"
                       "  - {op: UPCAST, axis: any_global, amt: [2]}\n"
                       "  - {op: UNROLL, axis: any_reduce, amt: [2]}\n"
                       "max_depth: 2\n";
    fixture g = {NULL, NULL};
    assert_int_equal(et_space_load_text(text, strlen(text), "p.yaml", &g.s, &d), ET_OK);
    et_einsum e;
    assert_int_equal(et_einsum_from_strings("ik,kj->ij", "i=4,k=4,j=4", NULL, &e, &d), ET_OK);
    assert_int_equal(et_space_bind(g.s, &e, NULL, &g.b, &d), ET_OK);
    rec *C = rec_new();
    o.budget = 1000;
    run(&g, &o, C, &st);
    /* 3 actions (UPCAST i, UPCAST j, UNROLL k): start + 3 + distinct pairs */
    assert_true(C->n > 4);
    assert_no_repeats(C);
    assert_string_equal(st.stop_reason, "exhausted");
    free(C);
    unbind(&g);
}

static void test_transforms_then_actions(void **state)
{
    (void)state;
    const char *text = "name: both\neinsum: \"ik,kj->ij\"\nparams:\n"
                       "  li: {values: [1, 2, 4]}\n"
                       "transforms:\n  - {op: LOCAL, axis: i, amt: li}\n"
                       "actions:\n"
                       "  - {op: UPCAST, axis: j, amt: [2, 4]}\n"
                       "  - {op: UNROLL, axis: k, amt: [2]}\n"
                       "max_depth: 2\n";
    fixture f = {NULL, NULL};
    et_diag d;
    assert_int_equal(et_space_load_text(text, strlen(text), "b.yaml", &f.s, &d), ET_OK);
    et_einsum e;
    assert_int_equal(et_einsum_from_strings("ik,kj->ij", "i=8,k=8,j=8", NULL, &e, &d), ET_OK);
    assert_int_equal(et_space_bind(f.s, &e, NULL, &f.b, &d), ET_OK);
    rec *R = rec_new();
    et_search_opts o = {.budget = 30};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_true(st.answered <= 30);
    /* the best has LOCAL(i,4) from the transforms and actions on top */
    char buf[256];
    et_opts_format(st.best_opts, st.best_n_opts, buf, sizeof(buf));
    assert_non_null(strstr(buf, "LOCAL(i,4)"));
    assert_non_null(strstr(buf, "UPCAST(j,2)"));
    assert_no_repeats(R);
    free(R);
    unbind(&f);
}

static void test_start_opts(void **state)
{
    (void)state;
    fixture f = bind(SMALL, "ik,kj->ij", "i=8,k=6,j=6");
    et_opt start[1];
    int n = 0;
    et_diag d;
    assert_int_equal(et_opts_parse("SWAP(i,j)", start, 1, &n, &d), ET_OK);
    rec *R = rec_new();
    et_search_opts o = {.kind = ET_SEARCH_GRID, .budget = 3, .start = start,
                        .n_start = 1};
    et_search_stats st;
    run(&f, &o, R, &st);
    assert_int_equal(R->n, 3);
    for (int i = 0; i < 3; i++)
        assert_non_null(strstr(R->text[i], "SWAP(i,j) LOCAL(i,"));
    /* refused start opts are an input error */
    assert_int_equal(et_opts_parse("UNROLL(i,2)", start, 1, &n, &d), ET_OK);
    assert_int_equal(et_search_run(f.b, &o, eval_cb, R, &st, &d), ET_ERR_INPUT);
    assert_non_null(strstr(d.msg, "start opts refused"));
    free(R);
    unbind(&f);
}

/* The key of xik,kj->xij (x=16, i=8, k=8, j=12) with opts applied. */
static uint64_t key_of(const char *opts)
{
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings("xik,kj->xij", "x=16,i=8,k=8,j=12", "f64", &e,
                               &d) != ET_OK)
        fail_msg("%s", d.msg);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_opt ol[ET_MAX_OPTS];
    int n = 0;
    assert_int_equal(et_opts_parse(opts, ol, ET_MAX_OPTS, &n, &d), ET_OK);
    char why[256];
    assert_int_equal(et_kernel_apply_opts(k, ol, n, why, sizeof why), ET_OK);
    uint64_t h = et_kernel_dedupe_key(k, ET_BACKEND_OPENCL);
    et_kernel_free(k);
    return h;
}

/* The key sees through names: a second UPCAST of an axis that is already
 * upcast whole renders the same kernel under other names; another amount,
 * another geometry or another backend is another kernel. */
static void test_dedupe_key_up_to_names(void **state)
{
    (void)state;
    assert_true(key_of("UPCAST(j,0)") == key_of("UPCAST(j,0) UPCAST(j,0)"));
    assert_true(key_of("UPCAST(j,0)") != key_of("UPCAST(j,4)"));
    assert_true(key_of("UPCAST(j,4)") != key_of("UPCAST(j,3)"));
    assert_true(key_of("LOCAL(x,4)") != key_of("LOCAL(x,8)"));
    assert_true(key_of("") != key_of("UNROLL(k,2)"));
    assert_true(key_of("UPCAST(j,0)") == key_of("UPCAST(j,0)"));
}

static uint64_t open_key_of(const char *text, const char *shape,
                            const char *tune_at, const char *opts)
{
    et_einsum e;
    et_diag d;
    if (et_einsum_from_strings(text, shape, "f64", &e, &d) != ET_OK)
        fail_msg("%s", d.msg);
    if (tune_at && et_einsum_tune_at(&e, tune_at, &d) != ET_OK)
        fail_msg("%s", d.msg);
    et_kernel *k = NULL;
    assert_int_equal(et_kernel_init(&e, NULL, &k), ET_OK);
    et_opt ol[ET_MAX_OPTS];
    int n = 0;
    assert_int_equal(et_opts_parse(opts, ol, ET_MAX_OPTS, &n, &d), ET_OK);
    char why[256];
    if (et_kernel_apply_opts(k, ol, n, why, sizeof why) != ET_OK)
        fail_msg("%s: %s", opts, why);
    uint64_t h = et_kernel_dedupe_key(k, ET_BACKEND_OPENCL);
    et_kernel_free(k);
    return h;
}

/* With an open axis: a renamed einsum's kernel is the same kernel; the
 * open kernel is not the concrete one at its tune-at size (it takes the
 * size at launch and masks), and the rounding step on the open axis
 * (LOCAL, UPCAST there) tells kernels apart. */
static void test_dedupe_key_open(void **state)
{
    (void)state;
    const char *sh = "x=*,i=8,k=8,j=12";
    uint64_t a = open_key_of("xik,kj->xij", sh, "x=64", "LOCAL(x,4)");
    assert_true(a == open_key_of("bik,kj->bij", "b=*,i=8,k=8,j=12", "b=64",
                                 "LOCAL(b,4)"));
    assert_true(a != open_key_of("xik,kj->xij", "x=64,i=8,k=8,j=12", NULL,
                                 "LOCAL(x,4)"));
    assert_true(a != open_key_of("xik,kj->xij", sh, "x=64", "LOCAL(x,8)"));
    assert_true(a != open_key_of("xik,kj->xij", sh, "x=64",
                                 "LOCAL(x,4) UPCAST(x,2)"));
    assert_true(open_key_of("xik,kj->xij", sh, "x=64", "UPCAST(j,0)") ==
                open_key_of("xik,kj->xij", sh, "x=64",
                            "UPCAST(j,0) UPCAST(j,0)"));
}

/* et_search_run_many's callback: answers the batch last to first (as
 * devices finishing in any order would), with eval_cb's costs; refused
 * candidates are counted as eval_cb counts them. Stops dispatching after
 * R->stop_after answers, leaving the rest unanswered. */
static int many_cb(void *user, et_eval_batch *b)
{
    rec *R = user;
    int stop = 0;
    R->batch_seq = b->n > 0 ? b->c[0].seq : 0;
    for (int i = 0; i < b->n; i++)
        if (b->c[i].refused)
            eval_cb(R, &b->c[i], &b->r[i]);
    for (int i = b->n - 1; i >= 0; i--) {
        if (b->c[i].refused || stop)
            continue;
        assert_true(b->r[i].time_s == INFINITY && !b->r[i].answered);
        assert_non_null(b->c[i].kernel);
        stop = eval_cb(R, &b->c[i], &b->r[i]);
        b->r[i].answered = true;
    }
    return stop;
}

/* Batched searches propose what the one-at-a-time searches propose
 * (beam steps decided from the same answers; random and grid do not
 * depend on answers) and end with the same best. */
static void test_batched_same_as_sequential(void **state)
{
    (void)state;
    static const struct {
        const char *space, *einsum, *shape;
        et_search_kind kind;
        int budget;
    } cases[] = {
        {SMALL, "ik,kj->ij", "i=8,k=6,j=6", ET_SEARCH_BEAM, 100},
        {SMALL, "ik,kj->ij", "i=8,k=6,j=6", ET_SEARCH_GRID, 100},
        {SMALL, "ik,kj->ij", "i=8,k=6,j=6", ET_SEARCH_RANDOM, 7},
        {"examples/tiled_matmul.yaml", "ab,bc->ac", "a=32,b=32,c=32",
         ET_SEARCH_BEAM, 40},
        {"examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16",
         ET_SEARCH_BEAM, 60},
        {"examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16",
         ET_SEARCH_BEAM, 9},
        {"examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16",
         ET_SEARCH_RANDOM, 20},
    };
    int dups = 0, in_batch = 0;
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        fixture f = bind(cases[n].space, cases[n].einsum, cases[n].shape);
        et_search_opts o = {.kind = cases[n].kind, .budget = cases[n].budget,
                            .seed = 5, .batch = 3, .on_duplicate = dup_cb};
        rec *A = rec_new(), *B = rec_new();
        et_search_stats sa, sb;
        et_diag d;
        run(&f, &o, A, &sa);
        assert_int_equal(et_search_run_many(f.b, &o, many_cb, B, &sb, &d),
                         ET_OK);
        assert_int_equal(sa.answered, sb.answered);
        assert_int_equal(A->n, B->n);
        assert_int_equal(A->n_refused, B->n_refused);
        assert_true(sa.answered <= cases[n].budget);
        /* the same candidates (in a batch, answered last to first) */
        for (int i = 0; i < A->n; i++) {
            bool found = false;
            for (int j = 0; j < B->n && !found; j++)
                found = A->key[i] == B->key[j];
            if (!found)
                fail_msg("case %zu: '%s' not proposed batched", n,
                         A->text[i]);
        }
        assert_no_repeats(B);
        /* the same duplicates, each told once its first was answered
         * (within a batch too), none charged to the budget */
        assert_int_equal(A->n_dup, B->n_dup);
        assert_int_equal(sa.duplicates, sb.duplicates);
        for (int i = 0; i < A->n_dup; i++) {
            bool found = false;
            for (int j = 0; j < B->n_dup && !found; j++)
                found = strcmp(A->dup[i], B->dup[j]) == 0;
            if (!found)
                fail_msg("case %zu: duplicate '%s' not told batched", n,
                         A->dup[i]);
        }
        dups += B->n_dup;
        in_batch += B->dup_in_batch;
        assert_true(sa.has_best && sb.has_best);
        assert_true(sa.best_time_s == sb.best_time_s);
        assert_string_equal(sa.stop_reason, sb.stop_reason);
        free(A);
        free(B);
        unbind(&f);
    }
    /* the cases do propose duplicates, some within one batch */
    assert_true(dups > 0);
    assert_true(in_batch > 0);
}

/* A batch callback that stops: the search stops, and counts only what
 * was answered. */
static void test_batched_stop(void **state)
{
    (void)state;
    fixture f = bind("examples/actions.yaml", "ik,kj->ij", "i=16,k=16,j=16");
    rec *R = rec_new();
    R->stop_after = 4;
    et_search_opts o = {.kind = ET_SEARCH_BEAM, .budget = 60};
    et_search_stats st;
    et_diag d;
    assert_int_equal(et_search_run_many(f.b, &o, many_cb, R, &st, &d), ET_OK);
    assert_int_equal(st.answered, 4);
    assert_int_equal(R->n, 4);
    assert_string_equal(st.stop_reason, "stopped by the caller");
    free(R);
    unbind(&f);
}

/* Not a pass/fail check: reports what a de-duplication key costs. */
static void test_dedupe_key_cost(void **state)
{
    (void)state;
    fixture f = bind("examples/dg_operator.yaml", "xre,rij,xej->xei",
                     "x=4096,r=3,e=4,i=35,j=35");
    const et_kernel *k = et_binding_base(f.b);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t h = 0;
    for (int i = 0; i < 200; i++)
        h ^= et_kernel_dedupe_key(k, ET_BACKEND_OPENCL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double us = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
                 (double)(t1.tv_nsec - t0.tv_nsec)) / 200 / 1e3;
    print_message("dedupe key (render + hash) of a 3-operand kernel: %.1f us\n", us);
    assert_true(h == 0 || h != 0);
    assert_true(us < 5000);
    unbind(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grid_exact),
        cmocka_unit_test(test_refused_recorded),
        cmocka_unit_test(test_random_budget_seed),
        cmocka_unit_test(test_beam_param),
        cmocka_unit_test(test_beam_param_constraint_waits),
        cmocka_unit_test(test_time_limit),
        cmocka_unit_test(test_cache_and_stop),
        cmocka_unit_test(test_action_beam),
        cmocka_unit_test(test_action_beam_no_empty_split),
        cmocka_unit_test(test_action_beam_widens),
        cmocka_unit_test(test_action_random_grid),
        cmocka_unit_test(test_transforms_then_actions),
        cmocka_unit_test(test_start_opts),
        cmocka_unit_test(test_dedupe_key_cost),
        cmocka_unit_test(test_batched_same_as_sequential),
        cmocka_unit_test(test_batched_stop),
        cmocka_unit_test(test_dedupe_key_up_to_names),
        cmocka_unit_test(test_dedupe_key_open),
    };
    return cmocka_run_group_tests_name("search", tests, NULL, NULL);
}
