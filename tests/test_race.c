/*
 * test_race.c - the final race without a device: the round-robin timer
 * against a fake backend whose kernels draw their durations from planted
 * distributions, and the race's decision (measure/race.h) over those
 * times. A ~20 % faster kernel must be named with an interval that
 * excludes 0; identical kernels must come out tied, and over many seeded
 * races not "faster" more often than the stated error rate (5 %). No test
 * asserts a real duration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "measure/race.h"
#include "measure/timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- planted distributions ---------------------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static double uniform(rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(rng *r)
{
    return sqrt(-2 * log(uniform(r))) * cos(2 * M_PI * uniform(r));
}

/* A kernel's law: median time, its own log-normal noise, and a chance of
 * an outlier (a launch slowed 1.5-4x by an interruption). */
typedef struct law {
    double median_s, sigma, outlier_p;
} law;

/* ---- a fake backend: each program is a kernel index --------------------- */

typedef struct fake {
    const law *laws;
    int n;
    rng r;
    double drift_sigma; /* a factor common to every launch of a round */
    double drift;
    int timed, untimed_after_timed;
    int order[64];      /* kernel of the first timed launches */
} fake;

static et_status fake_launch(void *ctx, et_program *p, const et_launch *geom,
                             et_buffer *const *args, const size_t *offsets,
                             int nargs, double *seconds, et_error *err)
{
    fake *f = ctx;
    int k = *(const int *)p;
    if (!seconds) {
        f->untimed_after_timed += f->timed > 0;
        return ET_OK;
    }
    if (f->timed % f->n == 0) /* a new round: the machine's mood changes */
        f->drift = exp(f->drift_sigma * normal(&f->r));
    if (f->timed < 64)
        f->order[f->timed] = k;
    f->timed++;
    const law *l = &f->laws[k];
    double t = l->median_s * f->drift * exp(l->sigma * normal(&f->r));
    if (uniform(&f->r) < l->outlier_p)
        t *= 1.5 + 2.5 * uniform(&f->r);
    *seconds = t;
    return ET_OK;
}

static const et_backend_ops fake_ops = {.name = "fake", .launch = fake_launch};

static const int kernel_ids[ET_RACE_MAX] = {0, 1, 2, 3, 4, 5, 6, 7, 8};

/* Races n kernels of the given laws for `rounds` rounds through the
 * round-robin timer and decides. */
static void race(const law *laws, int n, int rounds, double drift,
                 uint64_t seed, const int *n_opts, et_race_stats *s,
                 fake *out)
{
    fake f;
    memset(&f, 0, sizeof f);
    f.laws = laws;
    f.n = n;
    f.r.s = seed;
    f.drift_sigma = drift;
    et_device dev = {.ops = &fake_ops, .ctx = &f};
    et_program *progs[ET_RACE_MAX];
    et_launch geoms[ET_RACE_MAX];
    memset(geoms, 0, sizeof geoms);
    for (int i = 0; i < n; i++) {
        progs[i] = (et_program *)&kernel_ids[i];
        geoms[i].ndim = 1;
        geoms[i].global[0] = 64;
        geoms[i].global[1] = geoms[i].global[2] = 1;
        geoms[i].local[0] = geoms[i].local[1] = geoms[i].local[2] = 1;
    }
    double *times = calloc((size_t)(n * rounds), sizeof *times);
    assert_non_null(times);
    int done = 0, failed = 0;
    et_error err = {{0}};
    assert_int_equal(et_time_round_robin(&dev, progs, geoms, n, NULL, NULL,
                                         0, 2, rounds, 0, times, &done,
                                         &failed, &err),
                     ET_OK);
    assert_int_equal(done, rounds);
    assert_int_equal(f.timed, n * rounds);
    assert_int_equal(f.untimed_after_timed, 0);
    assert_int_equal(et_race_decide(times, n, rounds, n_opts, NULL, 0.95, s,
                                    &err),
                     ET_OK);
    free(times);
    if (out)
        *out = f;
}

/* ---- the timer ----------------------------------------------------------- */

static void test_round_robin_order(void **state)
{
    const law laws[3] = {{1e-3, 0, 0}, {1e-3, 0, 0}, {1e-3, 0, 0}};
    const int n_opts[3] = {0, 1, 2};
    et_race_stats s;
    fake f;
    race(laws, 3, 4, 0, 1, n_opts, &s, &f);
    /* every round has each kernel once, round r starts at kernel r mod n */
    const int want[12] = {0, 1, 2, 1, 2, 0, 2, 0, 1, 0, 1, 2};
    for (int i = 0; i < 12; i++)
        assert_int_equal(f.order[i], want[i]);
}

/* ---- the decision -------------------------------------------------------- */

/* Kernel 2 is 20 % faster (the others take 1.2x its time); each launch
 * has 5 % noise and every round a common slowdown of about 20 %, which an
 * unpaired comparison could not see through. */
static const law laws_20[4] = {{12e-3, 0.05, 0.02},
                               {12.3e-3, 0.05, 0.02},
                               {10e-3, 0.05, 0.02},
                               {13e-3, 0.05, 0.02}};
static const int opts_20[4] = {0, 1, 2, 1};

static void test_faster_named_with_interval(void **state)
{
    et_race_stats s;
    race(laws_20, 4, ET_RACE_ROUNDS, 0.2, 42, opts_20, &s, NULL);
    assert_int_equal(s.fastest, 2);
    assert_int_equal(s.runner_up, 0);
    assert_int_equal(s.verdict, ET_RACE_FASTER);
    assert_int_equal(s.chosen, 2);
    double pct, lo, hi;
    et_race_faster_pct(&s, 2, 0, &pct, &lo, &hi);
    print_message("faster than the runner-up by %.1f %% [%.1f, %.1f]\n", pct,
                  lo, hi);
    assert_true(lo > 0);            /* the interval excludes 0 */
    assert_true(lo <= 20 && hi >= 20); /* and holds the planted 20 % */
    assert_true(pct > 10 && pct < 30);
}

/* The power of the race at this effect and noise, over seeds. */
static void test_faster_over_seeds(void **state)
{
    int named = 0, wrong = 0;
    const int runs = 200;
    for (int seed = 0; seed < runs; seed++) {
        et_race_stats s;
        race(laws_20, 4, ET_RACE_ROUNDS, 0.2, 1000 + (uint64_t)seed, opts_20,
             &s, NULL);
        named += s.verdict == ET_RACE_FASTER && s.chosen == 2;
        wrong += s.verdict == ET_RACE_FASTER && s.chosen != 2;
    }
    print_message("20 %% faster named in %d of %d races\n", named, runs);
    assert_int_equal(wrong, 0);
    assert_true(named >= runs * 95 / 100);
}

static void test_identical_tied(void **state)
{
    const law laws[4] = {{10e-3, 0.05, 0.02}, {10e-3, 0.05, 0.02},
                         {10e-3, 0.05, 0.02}, {10e-3, 0.05, 0.02}};
    const int n_opts[4] = {2, 1, 3, 2};
    et_race_stats s;
    race(laws, 4, ET_RACE_ROUNDS, 0.2, 7, n_opts, &s, NULL);
    assert_int_equal(s.verdict, ET_RACE_TIED);
    assert_true(s.tied[s.fastest]);
    /* the tie rule: fewest opts among the tied */
    assert_true(s.tied[1]);
    assert_int_equal(s.chosen, 1);
}

/* Over many seeded races of identical kernels, "faster" must come no more
 * often than 1 - conf = 5 % (Bonferroni makes it rarer still). */
static void test_identical_error_rate(void **state)
{
    const law laws[4] = {{10e-3, 0.08, 0.05}, {10e-3, 0.08, 0.05},
                         {10e-3, 0.08, 0.05}, {10e-3, 0.08, 0.05}};
    const int n_opts[4] = {0, 1, 1, 2};
    const int runs = 1000;
    int faster = 0;
    for (int seed = 0; seed < runs; seed++) {
        et_race_stats s;
        race(laws, 4, ET_RACE_ROUNDS, 0.3, 5000 + (uint64_t)seed, n_opts, &s,
             NULL);
        faster += s.verdict == ET_RACE_FASTER;
    }
    print_message("identical kernels called faster in %d of %d races\n",
                  faster, runs);
    assert_true(faster <= runs * 5 / 100);
    /* and the same for a race of two, where no correction helps */
    const law two[2] = {{5e-3, 0.1, 0.05}, {5e-3, 0.1, 0.05}};
    const int opts2[2] = {0, 1};
    faster = 0;
    for (int seed = 0; seed < runs; seed++) {
        et_race_stats s;
        race(two, 2, ET_RACE_ROUNDS, 0.3, 9000 + (uint64_t)seed, opts2, &s,
             NULL);
        faster += s.verdict == ET_RACE_FASTER;
    }
    print_message("two identical kernels called faster in %d of %d races\n",
                  faster, runs);
    assert_true(faster <= runs * 5 / 100);
}

/* Too few rounds for the corrected level: no interval, so no claim. */
static void test_too_few_rounds_tied(void **state)
{
    et_race_stats s;
    race(laws_20, 4, 5, 0, 3, opts_20, &s, NULL);
    assert_int_equal(s.rank_lo, 0);
    assert_int_equal(s.verdict, ET_RACE_TIED);
    assert_int_equal(s.chosen, 0); /* fewest opts */
    double pct, lo, hi;
    et_race_faster_pct(&s, s.fastest, s.runner_up, &pct, &lo, &hi);
    assert_true(isinf(lo) && isinf(hi));
}

static void test_eligible_and_alone(void **state)
{
    /* kernel 0 (untransformed, not a candidate) is fastest but may not be
     * chosen; with one eligible kernel the verdict is "alone" */
    const double times[2 * 12] = {
        1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2,
        1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2};
    const bool eligible[2] = {false, true};
    et_race_stats s;
    et_error err = {{0}};
    assert_int_equal(et_race_decide(times, 2, 12, NULL, eligible, 0.95, &s,
                                    &err),
                     ET_OK);
    assert_int_equal(s.verdict, ET_RACE_ALONE);
    assert_int_equal(s.chosen, 1);
    /* its speed-up over kernel 0 is 0.5x: -50 % */
    double pct, lo, hi;
    et_race_faster_pct(&s, 1, 0, &pct, &lo, &hi);
    assert_true(fabs(pct + 50) < 1e-9);
}

static void test_bad_input(void **state)
{
    const double times[4] = {1, 2, 0, 1};
    et_race_stats s;
    et_error err = {{0}};
    assert_int_equal(et_race_decide(times, 2, 2, NULL, NULL, 0.95, &s, &err),
                     ET_ERR_INPUT);
    assert_non_null(strstr(err.msg, "round 1"));
    assert_int_equal(et_race_decide(times, ET_RACE_MAX + 1, 1, NULL, NULL,
                                    0.95, &s, &err),
                     ET_ERR_INPUT);
    assert_int_equal(et_race_decide(times, 2, 1, NULL, NULL, 1.0, &s, &err),
                     ET_ERR_INPUT);
    assert_string_equal(et_race_verdict_name(ET_RACE_TIED), "tied");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin_order),
        cmocka_unit_test(test_faster_named_with_interval),
        cmocka_unit_test(test_faster_over_seeds),
        cmocka_unit_test(test_identical_tied),
        cmocka_unit_test(test_identical_error_rate),
        cmocka_unit_test(test_too_few_rounds_tied),
        cmocka_unit_test(test_eligible_and_alone),
        cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
