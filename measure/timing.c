/* timing.c - warm-ups, timed runs, the median's order-statistic interval. */
#include "measure/timing.h"

#include "base/clock.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CI_LEVEL 0.95

int et_median_ci_ranks(int n, double conf, int *lo, int *hi)
{
    if (n < 1)
        return -1;
    gsl_set_error_handler_off();
    /* Coverage of [x(l), x(n+1-l)] is P(l <= B <= n-l) = 1 - 2 F(l-1) by
     * symmetry of Binomial(n, 1/2); it falls as l grows. */
    int best = 0;
    for (int l = 1; 2 * l <= n + 1; l++) {
        double cover = 1.0 - 2.0 * gsl_cdf_binomial_P((unsigned)(l - 1), 0.5,
                                                      (unsigned)n);
        if (cover >= conf)
            best = l;
        else
            break;
    }
    if (best == 0)
        return -1;
    *lo = best;
    *hi = n + 1 - best;
    return 0;
}

/* Fills median, interval, mean and cv from the n samples in x. */
static void summarize(const double *x, int n, double *scratch, et_timing *t)
{
    memcpy(scratch, x, (size_t)n * sizeof *x);
    gsl_sort(scratch, 1, (size_t)n);
    t->runs = n;
    t->median_s = gsl_stats_median_from_sorted_data(scratch, 1, (size_t)n);
    t->mean_s = gsl_stats_mean(scratch, 1, (size_t)n);
    t->cv = n > 1 && t->mean_s > 0
                ? gsl_stats_sd(scratch, 1, (size_t)n) / t->mean_s
                : 0.0;
    int lo, hi;
    if (et_median_ci_ranks(n, CI_LEVEL, &lo, &hi) == 0) {
        t->rank_low = lo;
        t->rank_high = hi;
        t->low_s = scratch[lo - 1];
        t->high_s = scratch[hi - 1];
    } else {
        t->rank_low = t->rank_high = 0;
        t->low_s = t->high_s = t->median_s;
    }
}

et_status et_timing_from_runs(const double *x, int n, et_timing *t)
{
    memset(t, 0, sizeof *t);
    double *scratch = malloc((size_t)(n > 0 ? n : 1) * sizeof *scratch);
    if (!scratch)
        return ET_ERR_NOMEM;
    if (n > 0) {
        summarize(x, n, scratch, t);
        for (int i = 0; i < n; i++)
            t->total_s += x[i];
    }
    free(scratch);
    return ET_OK;
}

et_status et_time_kernel(et_device *dev, et_program *p, const et_launch *geom,
                         et_buffer *const *args, const size_t *offsets,
                         int nargs, const et_timing_opts *opts, et_timing *t,
                         et_result *res, et_error *err)
{
    et_timing_opts o = opts ? *opts : (et_timing_opts){0};
    if (o.warmups <= 0)
        o.warmups = 2;
    if (o.min_runs < 6)
        o.min_runs = 6;
    if (o.max_runs <= 0)
        o.max_runs = 50;
    if (o.max_runs < o.min_runs)
        o.max_runs = o.min_runs;
    if (o.max_seconds <= 0)
        o.max_seconds = 2.0;
    if (o.rel_halfwidth <= 0)
        o.rel_halfwidth = 0.02;

    memset(t, 0, sizeof *t);
    et_result_set(res, ET_OUTCOME_OK, NULL);
    et_status st = ET_OK;
    int n = 0;
    double *x = malloc(2 * (size_t)o.max_runs * sizeof *x);
    et_buffer *flush = NULL;
    unsigned char *flush_host = NULL;
    if (!x) {
        st = et_errorf(err, ET_ERR_NOMEM, "timing: out of memory");
        goto done;
    }
    if (o.flush_bytes > 0) {
        flush_host = malloc(o.flush_bytes);
        if (!flush_host) {
            st = et_errorf(err, ET_ERR_NOMEM, "timing: out of memory");
            goto done;
        }
        st = et_buffer_alloc(dev, o.flush_bytes, &flush, err);
        if (st != ET_OK)
            goto done;
    }

    for (int w = 0; w < o.warmups; w++) {
        st = et_launch_kernel(dev, p, geom, args, offsets, nargs, NULL, err);
        if (st != ET_OK)
            goto done;
    }

    double t0 = et_now_s();
    for (;;) {
        if (flush) {
            memset(flush_host, n & 0xff, o.flush_bytes);
            st = et_buffer_write(dev, flush, 0, flush_host, o.flush_bytes,
                                 err);
            if (st != ET_OK)
                goto done;
        }
        double s = 0;
        st = et_launch_kernel(dev, p, geom, args, offsets, nargs, &s, err);
        if (st != ET_OK)
            goto done;
        x[n++] = s;
        t->total_s += s;
        if (n == 1 && o.bound_s > 0 && s > o.bound_s) {
            summarize(x, n, x + o.max_runs, t);
            t->total_s = s;
            et_result_set(res, ET_OUTCOME_SLOWER_THAN_BOUND,
                          "first timed run %.6g s exceeds the bound %.6g s",
                          s, o.bound_s);
            goto done;
        }
        bool spent = t->total_s >= o.max_seconds ||
                     et_now_s() - t0 >= o.max_seconds;
        if (n < o.min_runs && !(o.brief && spent))
            continue;
        double total = t->total_s;
        summarize(x, n, x + o.max_runs, t);
        t->total_s = total;
        if (n < o.min_runs)
            break; /* brief: the time is spent before min_runs */
        if ((t->high_s - t->low_s) / 2 <= o.rel_halfwidth * t->median_s) {
            t->converged = true;
            break;
        }
        double wall = et_now_s() - t0;
        if (n >= o.max_runs || total >= o.max_seconds ||
            wall >= o.max_seconds)
            break;
    }

done:
    if (st != ET_OK) {
        et_result_set(res, et_outcome_from_status(st), "%s", err->msg);
        if (n > 0) {
            double total = t->total_s;
            summarize(x, n, x + o.max_runs, t);
            t->total_s = total;
        }
    }
    if (flush)
        et_buffer_free(dev, flush);
    free(flush_host);
    free(x);
    return st;
}

et_status et_timing_from_samples(const double *x, int n, et_timing *t,
                                 et_error *err)
{
    memset(t, 0, sizeof *t);
    if (n < 1)
        return ET_OK;
    double *scratch = malloc((size_t)n * sizeof *scratch);
    if (!scratch)
        return et_errorf(err, ET_ERR_NOMEM, "timing: out of memory");
    summarize(x, n, scratch, t);
    for (int i = 0; i < n; i++)
        t->total_s += x[i];
    free(scratch);
    return ET_OK;
}

et_status et_time_round_robin(et_device *dev, et_program *const *progs,
                              const et_launch *geoms, int n,
                              et_buffer *const *args, const size_t *offsets,
                              int nargs, int warmups, int rounds,
                              double max_seconds, double *times,
                              int *rounds_done, int *failed, et_error *err)
{
    *rounds_done = 0;
    if (failed)
        *failed = -1;
    if (warmups < 1)
        warmups = 1;
    for (int w = 0; w < warmups; w++)
        for (int i = 0; i < n; i++) {
            et_status st = et_launch_kernel(dev, progs[i], &geoms[i], args,
                                            offsets, nargs, NULL, err);
            if (st != ET_OK) {
                if (failed)
                    *failed = i;
                return st;
            }
        }
    double t0 = et_now_s();
    for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < n; k++) {
            int i = (r + k) % n;
            double s = 0;
            et_status st = et_launch_kernel(dev, progs[i], &geoms[i], args,
                                            offsets, nargs, &s, err);
            if (st == ET_OK && !(s > 0))
                st = et_errorf(err, ET_ERR_DEVICE, "the device timer gave "
                               "a duration of %g s", s);
            if (st != ET_OK) {
                if (failed)
                    *failed = i;
                return st;
            }
            times[r * n + i] = s;
        }
        *rounds_done = r + 1;
        if (max_seconds > 0 && et_now_s() - t0 >= max_seconds)
            break;
    }
    return ET_OK;
}

void et_timing_format(const et_timing *t, char *buf, size_t cap)
{
    double scale = 1e3;
    const char *unit = "ms";
    if (t->median_s < 1e-3) {
        scale = 1e6;
        unit = "us";
    } else if (t->median_s >= 1.0) {
        scale = 1;
        unit = "s";
    }
    snprintf(buf, cap, "median %.4g %s [%.4g, %.4g], cv %.2g %%, %d run%s",
             t->median_s * scale, unit, t->low_s * scale, t->high_s * scale,
             100 * t->cv, t->runs, t->runs == 1 ? "" : "s");
}
