/* test_timing.c - the timing protocol against a scripted fake backend, the
 * median's confidence-interval ranks against a brute-force binomial sum,
 * and the outcome names. No test asserts a real duration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "measure/outcome.h"
#include "measure/timing.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a fake backend whose launches report scripted durations ---------- */

typedef struct fake {
    const double *script; /* durations of the timed launches, cycled */
    int script_len;
    int launches;         /* all launches */
    int timed;            /* launches asked for a duration */
    int untimed_after_timed; /* warm-ups must all come first */
    int fail_at;          /* launch number (1-based) that fails, 0: none */
    et_status fail_status;
    int allocs, writes, frees;
} fake;

static et_status fake_alloc(void *ctx, size_t bytes, et_buffer **out,
                            et_error *err)
{
    fake *f = ctx;
    f->allocs++;
    *out = malloc(1);
    return ET_OK;
}

static et_status fake_write(void *ctx, et_buffer *b, size_t off,
                            const void *src, size_t n, et_error *err)
{
    ((fake *)ctx)->writes++;
    return ET_OK;
}

static et_status fake_read(void *ctx, et_buffer *b, size_t off, void *dst,
                           size_t n, et_error *err)
{
    return ET_OK;
}

static void fake_free(void *ctx, et_buffer *b)
{
    ((fake *)ctx)->frees++;
    free(b);
}

static et_status fake_build(void *ctx, const char *source, const char *name,
                            et_program **out, et_error *err)
{
    *out = NULL;
    return ET_OK;
}

static void fake_pfree(void *ctx, et_program *p) {}

static et_status fake_launch(void *ctx, et_program *p, const et_launch *geom,
                             et_buffer *const *args, const size_t *offsets,
                             int nargs, double *seconds, et_error *err)
{
    fake *f = ctx;
    f->launches++;
    if (f->fail_at == f->launches) {
        snprintf(err->msg, sizeof err->msg, "scripted failure");
        return f->fail_status;
    }
    if (seconds) {
        *seconds = f->script[f->timed % f->script_len];
        f->timed++;
    } else if (f->timed > 0) {
        f->untimed_after_timed++;
    }
    return ET_OK;
}

static void fake_close(void *ctx) {}

static const et_backend_ops fake_ops = {
    .name = "fake",
    .buffer_alloc = fake_alloc,
    .buffer_write = fake_write,
    .buffer_read = fake_read,
    .buffer_free = fake_free,
    .program_build = fake_build,
    .program_free = fake_pfree,
    .launch = fake_launch,
    .close = fake_close,
};

static et_status run(fake *f, const et_timing_opts *o, et_timing *t,
                     et_result *r)
{
    et_device dev = {.ops = &fake_ops, .ctx = f};
    et_launch geom = {.ndim = 1, .global = {64, 1, 1}, .local = {1, 1, 1}};
    et_error err = {{0}};
    static int program; /* the fake never looks inside */
    return et_time_kernel(&dev, (et_program *)&program, &geom, NULL, NULL, 0,
                          o, t, r, &err);
}

/* ---- confidence-interval ranks ----------------------------------------- */

/* P(B <= k), B ~ Binomial(n, 1/2), by summing exact binomial coefficients. */
static long double brute_cdf(int k, int n)
{
    long double c = 1, s = 0; /* c = C(n, i) */
    for (int i = 0; i <= k; i++) {
        s += c;
        c = c * (n - i) / (i + 1);
    }
    return s / powl(2.0L, n);
}

static void test_ci_ranks_match_brute_force(void **state)
{
    for (int n = 6; n <= 50; n++) {
        int lo = 0, hi = 0;
        assert_int_equal(et_median_ci_ranks(n, 0.95, &lo, &hi), 0);
        /* brute force: largest l whose coverage P(l <= B <= n-l) >= 0.95 */
        int want = 0;
        for (int l = 1; 2 * l <= n + 1; l++) {
            long double cover = 0;
            for (int k = l; k <= n - l; k++)
                cover += brute_cdf(k, n) - (k ? brute_cdf(k - 1, n) : 0);
            if (cover >= 0.95L)
                want = l;
        }
        assert_int_equal(lo, want);
        assert_int_equal(hi, n + 1 - want);
    }
    int lo, hi;
    assert_int_equal(et_median_ci_ranks(6, 0.95, &lo, &hi), 0);
    assert_int_equal(lo, 1); /* coverage 1 - 2/64 */
    assert_int_equal(hi, 6);
    assert_int_equal(et_median_ci_ranks(10, 0.95, &lo, &hi), 0);
    assert_int_equal(lo, 2);
    assert_int_equal(hi, 9);
    assert_int_equal(et_median_ci_ranks(5, 0.95, &lo, &hi), -1);
    assert_int_equal(et_median_ci_ranks(1, 0.95, &lo, &hi), -1);
}

/* ---- the protocol ------------------------------------------------------ */

static void test_stable_series_stops_early(void **state)
{
    static const double s[] = {1.000e-3, 1.004e-3, 0.998e-3, 1.002e-3,
                               0.999e-3, 1.001e-3, 1.003e-3, 0.997e-3};
    fake f = {.script = s, .script_len = 8};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, NULL, &t, &r), ET_OK);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_true(t.runs >= 6 && t.runs <= 8);
    assert_true(t.converged);
    assert_int_equal(f.launches, 2 + t.runs); /* two untimed warm-ups */
    assert_int_equal(f.untimed_after_timed, 0);
    assert_true(t.low_s <= t.median_s && t.median_s <= t.high_s);
    assert_true(t.median_s > 0.998e-3 && t.median_s < 1.002e-3);
    assert_true(t.cv > 0 && t.cv < 0.01);
    assert_int_equal(f.allocs, 0); /* no flush by default */
}

static void test_slow_drift_needs_more_runs(void **state)
{
    /* a spread of 3 % around the median: 6 runs are not enough (the CI is
     * [min, max]); with more runs the CI shrinks onto the inner ranks */
    static const double s[] = {1.00, 1.03, 0.97, 1.01, 0.99, 1.00,
                               1.00, 1.00, 1.00, 1.00, 1.00, 1.00,
                               1.00, 1.00, 1.00, 1.00, 1.00, 1.00};
    fake f = {.script = s, .script_len = 18};
    et_timing_opts o = {.max_seconds = 100};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, &o, &t, &r), ET_OK);
    assert_true(t.converged);
    assert_true(t.runs > 6 && t.runs < 18);
    assert_true(fabs(t.median_s - 1.0) < 1e-12);
}

static double noisy[50];

static void test_noisy_series_capped_at_max_runs(void **state)
{
    unsigned x = 12345;
    for (int i = 0; i < 50; i++) {
        x = x * 1103515245u + 12345u;
        noisy[i] = 1e-3 * (1 + 2.0 * ((x >> 16) & 0x7fff) / 32768.0);
    }
    fake f = {.script = noisy, .script_len = 50};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, NULL, &t, &r), ET_OK);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_int_equal(t.runs, 50);
    assert_false(t.converged);
    assert_true(t.rank_low > 1 && t.rank_high == 51 - t.rank_low);
    assert_true(t.cv > 0.1);

    /* a settable cap */
    fake g = {.script = noisy, .script_len = 50};
    et_timing_opts o = {.max_runs = 12};
    assert_int_equal(run(&g, &o, &t, &r), ET_OK);
    assert_int_equal(t.runs, 12);
    assert_int_equal(g.launches, 14);
}

static void test_time_cap(void **state)
{
    /* 0.25 s per run, noisy: the 2 s cap stops it after 8 runs */
    static const double s[] = {0.20, 0.30, 0.20, 0.30};
    fake f = {.script = s, .script_len = 4};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, NULL, &t, &r), ET_OK);
    assert_int_equal(t.runs, 8);
    assert_false(t.converged);
    /* ... and never below the minimum of 6 runs, even far over the cap */
    static const double big[] = {1.0, 1.5};
    fake g = {.script = big, .script_len = 2};
    assert_int_equal(run(&g, NULL, &t, &r), ET_OK);
    assert_int_equal(t.runs, 6);
}

static void test_early_cut(void **state)
{
    static const double s[] = {5e-3, 1e-3};
    fake f = {.script = s, .script_len = 2};
    et_timing_opts o = {.bound_s = 3e-3};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, &o, &t, &r), ET_OK);
    assert_int_equal(r.outcome, ET_OUTCOME_SLOWER_THAN_BOUND);
    assert_non_null(strstr(r.reason, "bound"));
    assert_int_equal(t.runs, 1);
    assert_int_equal(f.launches, 3);
    assert_true(t.median_s == 5e-3);

    /* under the bound: timed in full */
    static const double fast[] = {1e-3};
    fake g = {.script = fast, .script_len = 1};
    assert_int_equal(run(&g, &o, &t, &r), ET_OK);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_int_equal(t.runs, 6);
    assert_true(t.converged);
}

static void test_launch_failures_map_to_outcomes(void **state)
{
    static const double s[] = {1e-3};
    fake f = {.script = s, .script_len = 1, .fail_at = 5,
              .fail_status = ET_ERR_TIMEOUT};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, NULL, &t, &r), ET_ERR_TIMEOUT);
    assert_int_equal(r.outcome, ET_OUTCOME_TIMEOUT);
    assert_string_equal(r.reason, "scripted failure");
    assert_int_equal(t.runs, 2);

    fake g = {.script = s, .script_len = 1, .fail_at = 1,
              .fail_status = ET_ERR_LAUNCH};
    assert_int_equal(run(&g, NULL, &t, &r), ET_ERR_LAUNCH);
    assert_int_equal(r.outcome, ET_OUTCOME_LAUNCH_ERROR);
    assert_int_equal(t.runs, 0);

    fake h = {.script = s, .script_len = 1, .fail_at = 2,
              .fail_status = ET_ERR_CRASH};
    assert_int_equal(run(&h, NULL, &t, &r), ET_ERR_CRASH);
    assert_int_equal(r.outcome, ET_OUTCOME_CRASH);
}

static void test_cache_flush_knob(void **state)
{
    static const double s[] = {1e-3};
    fake f = {.script = s, .script_len = 1};
    et_timing_opts o = {.flush_bytes = 1 << 20};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, &o, &t, &r), ET_OK);
    assert_int_equal(f.allocs, 1);
    assert_int_equal(f.frees, 1);
    assert_int_equal(f.writes, t.runs); /* one flush before each timed run */
}

static void test_format(void **state)
{
    et_timing t = {.runs = 8, .median_s = 1.5e-3, .low_s = 1.4e-3,
                   .high_s = 1.6e-3, .cv = 0.004};
    char buf[128];
    et_timing_format(&t, buf, sizeof buf);
    assert_string_equal(buf, "median 1.5 ms [1.4, 1.6], cv 0.4 %, 8 runs");
}

static void test_outcome_names(void **state)
{
    static const char *const want[] = {
        "ok",           "refused", "build_error", "launch_error",
        "wrong_result", "timeout", "crash",       "slower_than_bound"};
    assert_int_equal(ET_OUTCOME_COUNT, 8);
    for (int i = 0; i < ET_OUTCOME_COUNT; i++) {
        assert_string_equal(et_outcome_name((et_outcome)i), want[i]);
        et_outcome o;
        assert_int_equal(et_outcome_parse(want[i], &o), 0);
        assert_int_equal(o, i);
    }
    et_outcome o;
    assert_int_equal(et_outcome_parse("fine", &o), -1);
    assert_string_equal(et_outcome_name(ET_OUTCOME_COUNT), "?");
    assert_int_equal(et_outcome_from_status(ET_OK), ET_OUTCOME_OK);
    assert_int_equal(et_outcome_from_status(ET_ERR_REFUSED),
                     ET_OUTCOME_REFUSED);
    assert_int_equal(et_outcome_from_status(ET_ERR_BUILD),
                     ET_OUTCOME_BUILD_ERROR);
    assert_int_equal(et_outcome_from_status(ET_ERR_LAUNCH),
                     ET_OUTCOME_LAUNCH_ERROR);
    assert_int_equal(et_outcome_from_status(ET_ERR_DEVICE),
                     ET_OUTCOME_LAUNCH_ERROR);
    assert_int_equal(et_outcome_from_status(ET_ERR_TIMEOUT),
                     ET_OUTCOME_TIMEOUT);
    assert_int_equal(et_outcome_from_status(ET_ERR_CRASH), ET_OUTCOME_CRASH);
    assert_string_equal(et_status_str(ET_ERR_TIMEOUT), "timeout");
    assert_string_equal(et_status_str(ET_ERR_CRASH), "crash");
    et_result r;
    et_result_set(&r, ET_OUTCOME_REFUSED, "rule %d", 3);
    assert_int_equal(r.outcome, ET_OUTCOME_REFUSED);
    assert_string_equal(r.reason, "rule 3");
}

/* brief (the baseline's estimate): a slow kernel stops when max_seconds
 * of device time has passed, before min_runs, with no interval and not
 * converged; a fast one still gets the whole protocol; without brief the
 * slow one gets its 6 runs */
static void test_brief(void **state)
{
    static const double slow[] = {0.6};
    fake f = {.script = slow, .script_len = 1};
    et_timing_opts o = {.warmups = 1, .max_seconds = 1.0, .brief = true};
    et_timing t;
    et_result r;
    assert_int_equal(run(&f, &o, &t, &r), ET_OK);
    assert_int_equal(r.outcome, ET_OUTCOME_OK);
    assert_int_equal(t.runs, 2); /* 0.6 + 0.6 >= 1.0 */
    assert_int_equal(f.launches, 1 + 2);
    assert_false(t.converged);
    assert_int_equal(t.rank_low, 0);
    assert_true(t.low_s == t.median_s && t.high_s == t.median_s);
    assert_true(fabs(t.median_s - 0.6) < 1e-12);
    assert_true(fabs(t.total_s - 1.2) < 1e-12);

    static const double big[] = {2.5};
    fake g = {.script = big, .script_len = 1};
    assert_int_equal(run(&g, &o, &t, &r), ET_OK);
    assert_int_equal(t.runs, 1); /* at least one run */
    assert_true(fabs(t.median_s - 2.5) < 1e-12);

    static const double fast[] = {1.000e-3, 1.001e-3, 0.999e-3, 1.000e-3};
    fake h = {.script = fast, .script_len = 4};
    assert_int_equal(run(&h, &o, &t, &r), ET_OK);
    assert_true(t.runs >= 6);
    assert_true(t.converged);

    fake k = {.script = slow, .script_len = 1};
    o.brief = false;
    o.max_seconds = 1.0;
    assert_int_equal(run(&k, &o, &t, &r), ET_OK);
    assert_int_equal(t.runs, 6);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ci_ranks_match_brute_force),
        cmocka_unit_test(test_stable_series_stops_early),
        cmocka_unit_test(test_slow_drift_needs_more_runs),
        cmocka_unit_test(test_noisy_series_capped_at_max_runs),
        cmocka_unit_test(test_time_cap),
        cmocka_unit_test(test_early_cut),
        cmocka_unit_test(test_brief),
        cmocka_unit_test(test_launch_failures_map_to_outcomes),
        cmocka_unit_test(test_cache_flush_knob),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_outcome_names),
    };
    return cmocka_run_group_tests_name("timing", tests, NULL, NULL);
}
