/*
 * test_tune.c - the tuning loop (tune/tune.h) on the suite's device through
 * the isolated worker: each search on a small problem respects its budget,
 * never times the same kernel twice, is reproducible from its seed where
 * it does not depend on timings (random, grid), records refused points and
 * goes on, and beam search never ends worse than its starting kernel.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "db/db.h"
#include "einsum/einsum.h"
#include "measure/remote.h"
#include "transforms/kernel.h"
#include "spaces/search.h"
#include "spaces/space.h"
#include "tests/suite_device.h"
#include "tune/tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static et_device *g_dev;
static int g_recycle; /* et_tune_opts.recycle_every for run_tune */
static double g_cut;  /* et_search_opts.cut_factor for run_tune (0: 3) */
static double g_limit; /* et_search_opts.time_limit_s for run_tune */
static int g_race;    /* et_tune_opts.race_k for run_tune */
static et_db *g_db;   /* et_tune_opts.db for run_tune */
static const char *g_start; /* start opts for run_tune */
static int g_structural;    /* et_tune_opts.structural_seeds for run_tune */

/* The log lines of the last run_tune, by level. */
typedef struct log_seen {
    int lines, cut_info, cut_warn, untransformed, dict, no_candidate;
} log_seen;
static log_seen g_log;

static void capture_log(void *arg, et_tune_level lvl, const char *msg)
{
    (void)arg;
    g_log.lines++;
    if (strstr(msg, "slower_than_bound")) {
        if (lvl == ET_TUNE_WARN)
            g_log.cut_warn++;
        else
            g_log.cut_info++;
    }
    if (strcmp(msg, "trying untransformed") == 0)
        g_log.untransformed++;
    if (strstr(msg, "left the search no candidate"))
        g_log.no_candidate++;
    size_t n = strlen(msg);
    if (strstr(msg, "{") || strstr(msg, "':") ||
        (n >= 2 && strcmp(msg + n - 2, " -") == 0))
        g_log.dict++;
}

/* A small parametric space with points that transforms/ refuses: LOCAL
 * amounts that do not divide j = 12 (8, 16) and UPCAST by 3 or 5. */
static const char space_yaml[] =
    "name: test_small\n"
    "einsum: \"ik,kj->ij\"\n"
    "params:\n"
    "  wg_j: {values: [1, 2, 4, 8, 16]}\n"
    "  up_i: {values: [1, 2, 3, 5]}\n"
    "  un_k: {values: [1, 2, 4]}\n"
    "transforms:\n"
    "  - {op: LOCAL,  axis: j, amt: wg_j}\n"
    "  - {op: UPCAST, axis: i, amt: up_i}\n"
    "  - {op: UNROLL, axis: k, amt: un_k}\n";

static int setup(void **state)
{
    (void)state;
    et_error err;
    /* Short timing: these tests check the loop, not the speed. */
    if (et_device_open_isolated(td_device(), NULL, &g_dev, &err) != ET_OK) {
        fprintf(stderr, "no device %s: %s\n", td_spec(), err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    et_device_close(g_dev);
    return 0;
}

typedef struct run {
    et_space *space;
    et_binding *b;
    et_tune_result res;
} run;

static void run_tune(run *r, const char *einsum, const char *shape,
                     const char *yaml, et_search_kind kind, int budget,
                     uint64_t seed)
{
    et_diag d;
    static et_einsum e;
    memset(r, 0, sizeof *r);
    assert_int_equal(et_einsum_from_strings(einsum, shape, "f32", &e, &d),
                     ET_OK);
    /* the knobs below are for one run only */
    const char *start_text = g_start;
    int race_k = g_race;
    g_start = NULL;
    g_race = 0;
    if (yaml && et_space_load_text(yaml, strlen(yaml), "<test>", &r->space,
                                   &d) != ET_OK)
        fail_msg("space: %s", d.msg);
    else if (!yaml)
        assert_int_equal(et_space_load_text(et_builtin_space_yaml,
                                            strlen(et_builtin_space_yaml),
                                            "<built-in>", &r->space, &d),
                         ET_OK);
    assert_int_equal(et_space_bind(r->space, &e, &g_dev->info.target, &r->b,
                                   &d),
                     ET_OK);
    et_tune_opts o;
    memset(&o, 0, sizeof o);
    o.search.kind = kind;
    o.search.budget = budget;
    o.search.seed = seed;
    o.timing.max_runs = 8;
    o.timing.max_seconds = 0.2;
    o.recycle_every = g_recycle;
    o.search.cut_factor = g_cut;
    o.search.time_limit_s = g_limit;
    o.race_k = race_k;
    o.structural_seeds = g_structural;
    o.db = g_db;
    static et_opt start[ET_MAX_OPTS];
    if (start_text) {
        assert_int_equal(et_opts_parse(start_text, start, ET_MAX_OPTS,
                                       &o.search.n_start, &d),
                         ET_OK);
        o.search.start = start;
    }
    o.log = capture_log;
    memset(&g_log, 0, sizeof g_log);
    et_error err;
    et_status st = et_tune_run(g_dev, r->b, &o, &r->res, &err);
    if (st != ET_OK)
        fail_msg("et_tune_run: %s: %s", et_status_str(st), err.msg);
}

static void run_free(run *r)
{
    et_tune_result_free(&r->res);
    et_binding_free(r->b);
    et_space_free(r->space);
}

/* Answered candidates (not refused) and their distinct kernels. */
static int answered(const et_tune_result *res)
{
    int n = 0;
    for (int i = 0; i < res->n_cand; i++)
        if (res->cand[i].outcome != ET_OUTCOME_REFUSED &&
            res->cand[i].duplicate_of < 0) /* duplicates are free */
            n++;
    return n;
}

static void assert_no_repeats(const et_tune_result *res)
{
    for (int i = 0; i < res->n_cand; i++) {
        if (res->cand[i].outcome == ET_OUTCOME_REFUSED)
            continue;
        for (int j = i + 1; j < res->n_cand; j++) {
            if (res->cand[j].outcome == ET_OUTCOME_REFUSED)
                continue;
            if (strcmp(res->cand[i].opts, res->cand[j].opts) == 0)
                fail_msg("opts '%s' answered twice", res->cand[i].opts);
        }
    }
}

static void test_random(void **state)
{
    (void)state;
    run a, b;
    run_tune(&a, "ab,bc->ac", "a=8,b=8,c=12", space_yaml, ET_SEARCH_RANDOM,
             6, 42);
    assert_int_equal(answered(&a.res), 6);
    assert_int_equal(a.res.evaluations, 6);
    assert_no_repeats(&a.res);
    assert_true(a.res.best >= 0);
    /* Every answered candidate was verified before it was timed. */
    for (int i = 0; i < a.res.n_cand; i++)
        if (a.res.cand[i].outcome == ET_OUTCOME_OK) {
            assert_true(a.res.cand[i].verified);
            assert_true(a.res.cand[i].verify.max_norm_err <= 1.0);
            assert_true(a.res.cand[i].timing.median_s > 0);
        }
    /* The same seed proposes the same candidates in the same order. */
    run_tune(&b, "ab,bc->ac", "a=8,b=8,c=12", space_yaml, ET_SEARCH_RANDOM,
             6, 42);
    assert_int_equal(a.res.n_cand, b.res.n_cand);
    for (int i = 0; i < a.res.n_cand; i++)
        assert_string_equal(a.res.cand[i].params, b.res.cand[i].params);
    run_free(&a);
    run_free(&b);
}

static void test_grid_records_refused(void **state)
{
    (void)state;
    run g;
    /* 5 * 4 * 3 = 60 points; j = 12 refuses LOCAL 8 and 16, i = 8 refuses
     * UPCAST 3 and 5: 3 * 2 * 3 = 18 valid kernels. */
    run_tune(&g, "ab,bc->ac", "a=8,b=8,c=12", space_yaml, ET_SEARCH_GRID,
             100, 0);
    assert_int_equal(answered(&g.res), 18);
    assert_int_equal(g.res.failures[ET_OUTCOME_REFUSED], 60 - 18);
    for (int i = 0; i < g.res.n_cand; i++)
        if (g.res.cand[i].outcome == ET_OUTCOME_REFUSED)
            assert_non_null(strstr(g.res.cand[i].reason, "divide"));
    assert_no_repeats(&g.res);
    assert_string_equal(g.res.stop_reason, g.res.stats.stop_reason);
    run_free(&g);
}

static void test_beam_actions(void **state)
{
    (void)state;
    run r;
    run_tune(&r, "xik,kj->xij", "x=4,i=8,k=8,j=8", NULL, ET_SEARCH_BEAM, 12,
             0);
    assert_true(answered(&r.res) <= 12);
    assert_true(answered(&r.res) >= 1);
    assert_no_repeats(&r.res);
    assert_true(r.res.best >= 0);
    /* The beam starts from the untransformed kernel and keeps the best. */
    if (isfinite(r.res.stats.start_time_s))
        assert_true(r.res.cand[r.res.best].timing.median_s <=
                    r.res.stats.start_time_s);
    assert_true(r.res.baseline.median_s > 0);
    /* the beam's first candidate, the untransformed kernel, is answered
     * from the baseline's measurement: not built or timed again */
    int untransformed = 0;
    for (int i = 0; i < r.res.n_cand; i++) {
        const et_tune_candidate *c = &r.res.cand[i];
        if (c->opts[0] || c->outcome == ET_OUTCOME_REFUSED)
            continue;
        untransformed++;
        assert_int_equal(c->outcome, ET_OUTCOME_OK);
        assert_true(c->verified && c->timed);
        assert_true(c->timing.median_s == r.res.baseline.median_s);
        assert_true(c->build_s == 0 && c->timing_s == 0);
    }
    assert_int_equal(untransformed, 1);
    run_free(&r);
}

/* A time limit the baseline used up: the search still proposes its start
 * kernel, answered from the baseline's verification and timing, and its
 * seeds, each one built, verified and timed (the limit waits for them:
 * the baseline of a large problem can take a 20 s limit whole, and the
 * run would end with its slowest kernel); nothing else. */
static void test_limit_spent_by_baseline(void **state)
{
    (void)state;
    run r;
    g_limit = 1e-6;
    g_structural = 1;
    run_tune(&r, "xik,kj->xij", "x=4,i=8,k=32,j=32", NULL, ET_SEARCH_BEAM,
             12, 0);
    g_limit = 0;
    g_structural = 0;
    assert_string_equal(r.res.stats.stop_reason, "time limit");
    assert_true(r.res.n_cand >= 2);
    const et_tune_candidate *c = &r.res.cand[0];
    assert_string_equal(c->opts, "");
    assert_int_equal(c->outcome, ET_OUTCOME_OK);
    assert_true(c->timing.median_s == r.res.baseline.median_s);
    assert_true(c->build_s == 0 && c->timing_s == 0);
    int seeds = 0;
    for (int i = 1; i < r.res.n_cand; i++) {
        /* every candidate after the start kernel is a seed, timed */
        assert_true(r.res.cand[i].seed > 0);
        if (r.res.cand[i].outcome == ET_OUTCOME_OK) {
            assert_true(r.res.cand[i].timed);
            seeds++;
        }
    }
    assert_true(seeds >= 1);
    assert_int_equal(g_log.no_candidate, 0);
    run_free(&r);
}

/* A time limit spent with no start kernel proposed (the random search
 * proposes seeds, then points; there are none here): the untransformed
 * kernel, verified and timed as the baseline, is the run's one candidate
 * and its best. */
static void test_limit_spent_random(void **state)
{
    (void)state;
    run r;
    g_limit = 1e-6;
    run_tune(&r, "xik,kj->xij", "x=4,i=8,k=8,j=8", NULL, ET_SEARCH_RANDOM,
             12, 0);
    g_limit = 0;
    assert_int_equal(r.res.n_cand, 1);
    assert_int_equal(r.res.best, 0);
    const et_tune_candidate *c = &r.res.cand[0];
    assert_string_equal(c->opts, "");
    assert_int_equal(c->outcome, ET_OUTCOME_OK);
    assert_true(c->timing.median_s == r.res.baseline.median_s);
    assert_int_equal(g_log.no_candidate, 1);
    run_free(&r);
}

/* SPLIT through the whole loop: the worker zeroes the output before each
 * launch (verification starts every output as NaN, so a launch that did
 * not would be rejected), every point is verified,
 * and the built-in space offers SPLIT for a full reduction. */
static const char split_yaml[] =
    "name: test_split\n"
    "einsum: \"xij->\"\n"
    "params:\n"
    "  groups: {values: [1, 2, 8, 64]}\n"
    "transforms:\n"
    "  - {op: SPLIT,  axis: x, amt: groups, when: groups > 1}\n"
    "  - {op: UNROLL, axis: j, amt: 4}\n";

static void test_split_tuned(void **state)
{
    (void)state;
    run g;
    /* no early cut: whatever the timings, every point is verified */
    g_cut = 1e9;
    run_tune(&g, "xij->", "x=64,i=8,j=16", split_yaml, ET_SEARCH_GRID, 10,
             0);
    g_cut = 0;
    assert_int_equal(answered(&g.res), 4);
    int split = 0;
    for (int i = 0; i < g.res.n_cand; i++) {
        const et_tune_candidate *c = &g.res.cand[i];
        if (c->outcome != ET_OUTCOME_OK)
            fail_msg("'%s': %s", c->opts, c->reason);
        assert_true(c->verified);
        assert_true(c->verify.max_norm_err <= 1.0);
        split += strstr(c->opts, "SPLIT(x,") != NULL;
    }
    assert_int_equal(split, 3); /* groups 2, 8 and 64 */
    run_free(&g);

    et_space *sp = NULL;
    et_binding *b = NULL;
    et_einsum e;
    et_diag d;
    assert_int_equal(et_einsum_from_strings("xij->", "x=64,i=8,j=16", "f32",
                                            &e, &d),
                     ET_OK);
    assert_int_equal(et_space_load_text(et_builtin_space_yaml,
                                        strlen(et_builtin_space_yaml),
                                        "<built-in>", &sp, &d),
                     ET_OK);
    assert_int_equal(et_space_bind(sp, &e, &g_dev->info.target, &b, &d),
                     ET_OK);
    const et_opt *acts;
    int na = et_binding_actions(b, &acts), nsplit = 0;
    for (int i = 0; i < na; i++)
        nsplit += acts[i].kind == ET_OPT_SPLIT;
    assert_int_equal(nsplit, 3 * 3); /* 3 amounts on each of x, i, j */
    et_binding_free(b);
    et_space_free(sp);
}

/* A long run replaces its device worker every recycle_every evaluations;
 * the candidates after a replacement are verified and timed as before. */
/* The log: "trying untransformed" (not "{} -"), parameters as a=1 b=2,
 * and a candidate cut at the bound is an info line, not a warning. */
static void test_log_lines(void **state)
{
    (void)state;
    char buf[128];
    et_tune_params_text("{'n_x_per_wg': 16, 'n_wi_per_i': 5}", buf,
                        sizeof buf);
    assert_string_equal(buf, "n_x_per_wg=16 n_wi_per_i=5");
    et_tune_params_text("{'a': true}", buf, sizeof buf);
    assert_string_equal(buf, "a=true");
    et_tune_params_text("{}", buf, sizeof buf);
    assert_string_equal(buf, "");

    run r;
    /* a bound just over the best so far cuts most candidates */
    g_cut = 1.0001;
    run_tune(&r, "ab,bc->ac", "a=64,b=64,c=64", NULL, ET_SEARCH_BEAM, 12,
             1);
    g_cut = 0;
    int cut = r.res.failures[ET_OUTCOME_SLOWER_THAN_BOUND];
    run_free(&r);
    assert_true(g_log.lines > 0);
    assert_int_equal(g_log.untransformed, 1);
    assert_int_equal(g_log.dict, 0);
    assert_int_equal(g_log.cut_warn, 0);
    assert_int_equal(g_log.cut_info, cut);
    assert_true(cut > 0);

    memset(&r, 0, sizeof r);
    run_tune(&r, "ab,bc->ac", "a=8,b=8,c=12", space_yaml, ET_SEARCH_GRID, 6,
             0);
    run_free(&r);
    assert_int_equal(g_log.dict, 0);
}

static void test_worker_recycled(void **state)
{
    (void)state;
    run r;
    uint64_t epoch = et_device_epoch(g_dev);
    int pid = et_device_worker_pid(g_dev);
    g_recycle = 2;
    run_tune(&r, "ab,bc->ac", "a=8,b=8,c=12", space_yaml, ET_SEARCH_RANDOM,
             7, 3);
    g_recycle = 0;
    assert_int_equal(r.res.evaluations, 7);
    assert_int_equal(r.res.recycles, 3);
    assert_int_equal(et_device_epoch(g_dev), epoch + 3);
    assert_true(et_device_worker_pid(g_dev) != pid);
    int ok = 0;
    for (int i = 0; i < r.res.n_cand; i++) {
        const et_tune_candidate *c = &r.res.cand[i];
        if (c->outcome == ET_OUTCOME_REFUSED)
            continue;
        assert_true(c->build_s > 0 && c->timing_s > 0);
        if (c->outcome == ET_OUTCOME_SLOWER_THAN_BOUND)
            continue; /* cut before verification, or by the protocol after */
        assert_int_equal(c->outcome, ET_OUTCOME_OK);
        assert_true(c->verified && c->verify_s > 0);
        assert_true(c->verify.max_norm_err <= 1.0);
        ok++;
    }
    assert_true(ok >= 1);
    /* the phases are parts of the whole */
    assert_true(r.res.build_s > 0 && r.res.verify_s > 0 &&
                r.res.timing_s > 0 && r.res.baseline_s > 0);
    assert_true(r.res.baseline_s + r.res.build_s + r.res.verify_s +
                    r.res.timing_s <= r.res.elapsed_s);
    run_free(&r);
}

/* An action pool whose UNROLL(k,8) (k = 8) renders the kernel of
 * UNROLL(k,0) again. (A split by 1, UPCAST(j,0) twice, is not proposed
 * by the action beam at all.) */
static const char dup_yaml[] =
    "name: dup\n"
    "einsum: \"ik,kj->ij\"\n"
    "actions:\n"
    "  - {op: UNROLL, axis: k, amt: [0, 8]}\n"
    "  - {op: UPCAST, axis: i, amt: [2]}\n"
    "max_depth: 2\n";

static void test_duplicate_not_charged(void **state)
{
    (void)state;
    run r;
    g_start = "UPCAST(j,0)";
    run_tune(&r, "ik,kj->ij", "i=8,k=8,j=12", dup_yaml, ET_SEARCH_BEAM, 3,
             0);
    const et_tune_result *res = &r.res;
    int first = -1, dup = -1, refused = 0;
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *c = &res->cand[i];
        refused += c->outcome == ET_OUTCOME_REFUSED;
        if (!strcmp(c->opts, "UPCAST(j,0) UNROLL(k,0)"))
            first = i;
        if (!strcmp(c->opts, "UPCAST(j,0) UNROLL(k,8)"))
            dup = i;
    }
    assert_true(first >= 0);
    assert_true(dup > first);
    assert_int_equal(res->cand[dup].duplicate_of, first);
    assert_int_equal(res->cand[first].duplicate_of, -1);
    assert_int_equal(res->cand[dup].outcome, res->cand[first].outcome);
    assert_true(res->cand[dup].timing.median_s ==
                res->cand[first].timing.median_s);
    assert_true(res->duplicates >= 1);
    /* every duplicate names an earlier candidate of the same kernel */
    int dups = 0;
    for (int i = 0; i < res->n_cand; i++) {
        const et_tune_candidate *c = &res->cand[i];
        if (c->duplicate_of < 0)
            continue;
        dups++;
        assert_true(c->duplicate_of < i);
        assert_int_equal(res->cand[c->duplicate_of].duplicate_of, -1);
        assert_true(c->key == res->cand[c->duplicate_of].key);
        assert_false(c->cached);
    }
    assert_int_equal(dups, res->duplicates);
    /* not charged: the budget counts the other kernels only */
    assert_int_equal(res->stats.answered, res->evaluations + res->cached);
    assert_true(res->stats.answered <= 3);
    if (!strcmp(res->stop_reason, "budget"))
        assert_int_equal(res->stats.answered, 3);
    assert_int_equal(res->n_cand, res->stats.answered + refused + dups);
    run_free(&r);
}

/* One real race through the tuning loop, recorded in the database. */
static void test_race_recorded(void **state)
{
    (void)state;
    char dir[] = "/tmp/et_test_race_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.db", dir);
    et_error err;
    assert_int_equal(et_db_open(path, &g_db, &err), ET_OK);
    run r;
    g_race = 2;
    run_tune(&r, "ab,bc->ac", "a=32,b=32,c=32", NULL, ET_SEARCH_BEAM, 6, 0);
    const et_tune_race *R = &r.res.race;
    if (!R->ran)
        fail_msg("no race: %s", R->note);
    assert_true(R->n >= 2 && R->n <= 3);
    assert_true(R->rounds >= ET_RACE_MIN_ROUNDS);
    assert_true(R->e[R->baseline].untransformed);
    assert_true(R->chosen >= 0 && R->e[R->chosen].eligible);
    /* the race's choice and figures are the result's */
    assert_int_equal(r.res.best, R->e[R->chosen].cand);
    assert_true(r.res.baseline.median_s == R->e[R->baseline].timing.median_s);
    assert_true(R->speedup_lo <= R->speedup && R->speedup <= R->speedup_hi);
    for (int i = 0; i < R->n; i++) {
        assert_true(R->e[i].timing.runs == R->rounds);
        for (int k = 0; k < R->rounds; k++)
            assert_true(R->times[k * R->n + i] > 0);
    }
    assert_true(R->db_id > 0);
    et_db_stats st;
    assert_int_equal(et_db_stats_get(g_db, &st, &err), ET_OK);
    assert_int_equal(st.races, 1);
    assert_int_equal(st.schema_version, ET_DB_SCHEMA_VERSION);
    /* every trial carries the load it was measured under */
    assert_true(!isnan(r.res.load_start));
    run_free(&r);
    et_db_close(g_db);
    g_db = NULL;
    unlink(path);
    char side[160];
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    rmdir(dir);
}

/* A slow untransformed kernel's estimate comes from its verification's
 * launches (two or more, each at least ET_TUNE_BASELINE_SLOW_S); a fast
 * one, or a single launch, is timed briefly instead. */
static void test_baseline_estimate_from_verification(void **state)
{
    et_verify_result v = {.n_launch = 2, .launch_s = {0.9, 0.8}};
    et_timing t;
    assert_true(et_tune_baseline_estimate(&v, &t));
    assert_int_equal(t.runs, 2);
    assert_true(fabs(t.median_s - 0.85) < 1e-12);
    assert_true(fabs(t.total_s - 1.7) < 1e-12);
    assert_true(t.low_s == t.median_s && t.high_s == t.median_s);
    assert_false(t.converged);

    et_timing untouched = {.runs = -1};
    t = untouched;
    v.launch_s[1] = ET_TUNE_BASELINE_SLOW_S / 2; /* one fast launch */
    assert_false(et_tune_baseline_estimate(&v, &t));
    assert_int_equal(t.runs, -1);
    v = (et_verify_result){.n_launch = 1, .launch_s = {2.0}};
    assert_false(et_tune_baseline_estimate(&v, &t));
    v = (et_verify_result){.n_launch = 2, .launch_s = {NAN, 2.0}};
    assert_false(et_tune_baseline_estimate(&v, &t));
    /* the batched gradient at P3 f64: 196 ms a launch is slow enough */
    v = (et_verify_result){.n_launch = 2, .launch_s = {0.196, 0.19}};
    assert_true(et_tune_baseline_estimate(&v, &t));
    assert_int_equal(t.runs, 2);
    /* and case 1 f64 of the bench (x=4096, 35^3), 68 ms; a 20 ms kernel
     * is timed */
    v = (et_verify_result){.n_launch = 2, .launch_s = {0.068, 0.07}};
    assert_true(et_tune_baseline_estimate(&v, &t));
    v = (et_verify_result){.n_launch = 2, .launch_s = {0.02, 0.021}};
    assert_false(et_tune_baseline_estimate(&v, &t));
}

/* The final race's plan under a time limit: a slow untransformed kernel
 * that leaves no rounds is left out and the candidates race alone; one
 * that could win (faster than a candidate) is never left out; without a
 * limit it always races; nothing fits: no race. */
static void test_race_fit(void **state)
{
    (void)state;
    et_tune_candidate cand[4];
    memset(cand, 0, sizeof cand);
    for (int i = 0; i < 4; i++)
        cand[i].timing.median_s = 0.010 + 0.001 * i;
    et_tune_result res;
    memset(&res, 0, sizeof res);
    res.cand = cand;
    res.n_cand = 4;
    res.evaluations = 4;
    res.build_s = 0.4; /* 0.1 s a build */
    char note[256];
    et_tune_race_plan p0 = {.pick = {0, 1, 2}, .np = 3, .base_cand = -1,
                            .base_s = 0.200, .limit = 20, .allow = 1.5};

    /* 10 rounds of the untransformed kernel alone take 2 s: out */
    et_tune_race_plan p = p0;
    assert_true(et_tune_race_fit(&res, &p, ET_RACE_ROUNDS, note,
                                 sizeof note));
    assert_false(p.with_base);
    assert_int_equal(p.np, 3);
    assert_true(p.rounds >= ET_RACE_MIN_ROUNDS &&
                p.rounds <= ET_RACE_ROUNDS);
    assert_non_null(strstr(note, "untransformed kernel (200 ms"));

    /* room for everything: it races with all three */
    p = p0;
    p.allow = 10;
    assert_true(et_tune_race_fit(&res, &p, ET_RACE_ROUNDS, note,
                                 sizeof note));
    assert_true(p.with_base);
    assert_int_equal(p.np, 3);
    assert_int_equal(p.rounds, ET_RACE_ROUNDS);
    assert_string_equal(note, "");

    /* no limit: the untransformed kernel races whatever it costs */
    p = p0;
    p.limit = 0;
    assert_true(et_tune_race_fit(&res, &p, ET_RACE_ROUNDS, note,
                                 sizeof note));
    assert_true(p.with_base);
    assert_int_equal(p.np, 3);

    /* an untransformed kernel faster than the slowest candidate could
     * win: it stays, and candidates are left out instead */
    p = p0;
    p.base_s = 0.0115;
    p.allow = 0.64;
    assert_true(et_tune_race_fit(&res, &p, ET_RACE_ROUNDS, note,
                                 sizeof note));
    assert_true(p.with_base);
    assert_true(p.np < 3 && p.np >= 1);
    assert_non_null(strstr(note, "left out of the race"));
    assert_null(strstr(note, "untransformed"));

    /* not even two candidates alone fit */
    p = p0;
    p.allow = 0.3;
    assert_false(et_tune_race_fit(&res, &p, ET_RACE_ROUNDS, note,
                                  sizeof note));
    assert_non_null(strstr(note, "no final race: the time limit leaves "
                                 "0.3 s"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duplicate_not_charged),
        cmocka_unit_test(test_race_recorded),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_grid_records_refused),
        cmocka_unit_test(test_beam_actions),
        cmocka_unit_test(test_limit_spent_by_baseline),
        cmocka_unit_test(test_limit_spent_random),
        cmocka_unit_test(test_split_tuned),
        cmocka_unit_test(test_log_lines),
        cmocka_unit_test(test_worker_recycled),
        cmocka_unit_test(test_baseline_estimate_from_verification),
        cmocka_unit_test(test_race_fit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
