/*
 * peer_stats.h - the timing protocol of docs/measurement.md, for the
 * peer drivers of the benchmark (peer_clblast.c, peer_openblas.c), so that
 * a peer's number is a statistic of the same kind as eintune's:
 *
 *   2 untimed warm-up runs; at least 6 timed runs, then more until the
 *   distribution-free 95 % confidence interval of the median has a
 *   half-width within 2 % of the median, or 50 runs, or 2 s (the larger of
 *   the summed timed durations and the wall time since the first timed
 *   run). Reported: the median, the interval [low, high], the coefficient
 *   of variation and the number of runs.
 *
 * The interval is the one of order statistics: with n sorted durations,
 * [x(l), x(n+1-l)] covers the median with probability
 * 1 - 2 P(B <= l-1), B ~ Binomial(n, 1/2); l is the largest rank with a
 * coverage >= 95 %. Header-only, no dependencies beyond libm.
 */
#ifndef PEER_STATS_H
#define PEER_STATS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PS_WARMUPS 2
#define PS_MIN_RUNS 6
#define PS_MAX_RUNS 50
#define PS_MAX_SECONDS 2.0
#define PS_REL_HALFWIDTH 0.02

typedef struct ps_timing {
    int runs;
    double median_s, low_s, high_s, mean_s, cv, total_s;
    int converged;
} ps_timing;

static inline double ps_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* P(B <= k) for B ~ Binomial(n, 1/2). */
static inline double ps_binom_cdf_half(int k, int n)
{
    double s = 0.0;
    for (int i = 0; i <= k; i++)
        s += exp(lgamma(n + 1.0) - lgamma(i + 1.0) - lgamma(n - i + 1.0) -
                 n * log(2.0));
    return s;
}

/* 1-based ranks of the 95 % interval of the median of n samples; -1 when
 * none reaches 95 % (n < 6). */
static inline int ps_ci_ranks(int n, int *lo, int *hi)
{
    int best = -1;
    for (int l = 1; l <= n / 2; l++)
        if (1.0 - 2.0 * ps_binom_cdf_half(l - 1, n) >= 0.95)
            best = l;
    if (best < 0)
        return -1;
    *lo = best;
    *hi = n + 1 - best;
    return 0;
}

static int ps_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Fills t from the n durations in xs (sorted in place). */
static inline void ps_summarize(double *xs, int n, ps_timing *t)
{
    memset(t, 0, sizeof *t);
    t->runs = n;
    if (n == 0)
        return;
    qsort(xs, (size_t)n, sizeof *xs, ps_cmp);
    t->median_s = n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
    int lo, hi;
    if (ps_ci_ranks(n, &lo, &hi) == 0) {
        t->low_s = xs[lo - 1];
        t->high_s = xs[hi - 1];
    } else {
        t->low_s = t->high_s = t->median_s;
    }
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++)
        s += xs[i];
    t->total_s = s;
    t->mean_s = s / n;
    for (int i = 0; i < n; i++)
        s2 += (xs[i] - t->mean_s) * (xs[i] - t->mean_s);
    t->cv = n > 1 && t->mean_s > 0 ? sqrt(s2 / (n - 1)) / t->mean_s : 0.0;
}

/*
 * Runs the protocol. run(arg) performs one run of the operation and
 * returns its duration in seconds (device timer or host clock), or a
 * negative value on failure (the protocol then stops and returns -1).
 */
static inline int ps_time(double (*run)(void *), void *arg, ps_timing *t)
{
    double xs[PS_MAX_RUNS];
    for (int w = 0; w < PS_WARMUPS; w++)
        if (run(arg) < 0)
            return -1;
    int n = 0;
    double t0 = ps_now(), sum = 0;
    while (n < PS_MAX_RUNS) {
        double d = run(arg);
        if (d < 0)
            return -1;
        xs[n++] = d;
        sum += d;
        if (n >= PS_MIN_RUNS) {
            double tmp[PS_MAX_RUNS];
            memcpy(tmp, xs, sizeof(double) * (size_t)n);
            ps_timing cur;
            ps_summarize(tmp, n, &cur);
            if ((cur.high_s - cur.low_s) / 2 <=
                PS_REL_HALFWIDTH * cur.median_s) {
                *t = cur;
                t->converged = 1;
                return 0;
            }
            double wall = ps_now() - t0;
            if ((sum > wall ? sum : wall) >= PS_MAX_SECONDS)
                break;
        }
    }
    ps_summarize(xs, n, t);
    return 0;
}

/* The timing as JSON members (no braces), for the drivers' output. */
static inline void ps_print_json(FILE *f, const ps_timing *t)
{
    fprintf(f,
            "\"time_s\": %.9g, \"ci95_s\": [%.9g, %.9g], \"runs\": %d, "
            "\"cv\": %.4g, \"converged\": %s",
            t->median_s, t->low_s, t->high_s, t->runs, t->cv,
            t->converged ? "true" : "false");
}

/* Uniform on [-1, 1], a fixed-seed xorshift so every run sees the same
 * inputs. */
static inline double ps_rand(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

#endif
