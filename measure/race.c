/* race.c - the final race's statistics: paired log ratios, their
 * sign-test intervals at a Bonferroni-corrected level, the tie rule. */
#include "measure/race.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const verdict_names[] = {"faster", "tied", "alone"};
static_assert(sizeof verdict_names / sizeof verdict_names[0] ==
                  ET_RACE_VERDICT_COUNT,
              "verdict_names must name every et_race_verdict");

const char *et_race_verdict_name(et_race_verdict v)
{
    return (unsigned)v < ET_RACE_VERDICT_COUNT ? verdict_names[v] : "?";
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

et_status et_race_decide(const double *times, int n, int rounds,
                         const int *n_opts, const bool *eligible, double conf,
                         et_race_stats *out, et_error *err)
{
    memset(out, 0, sizeof *out);
    out->fastest = out->runner_up = out->chosen = -1;
    if (n < 1 || n > ET_RACE_MAX || rounds < 1)
        return et_errorf(err, ET_ERR_INPUT, "race: %d kernels over %d rounds "
                         "(1 to %d kernels, at least 1 round)", n, rounds,
                         ET_RACE_MAX);
    if (!(conf > 0 && conf < 1))
        return et_errorf(err, ET_ERR_INPUT, "race: confidence %g is not in "
                         "(0, 1)", conf);
    for (int k = 0; k < n * rounds; k++)
        if (!(times[k] > 0) || !isfinite(times[k]))
            return et_errorf(err, ET_ERR_INPUT, "race: kernel %d's time in "
                             "round %d is %g", k % n, k / n, times[k]);
    out->n = n;
    out->rounds = rounds;
    out->conf = conf;
    int pairs = n * (n - 1) / 2;
    out->pair_conf = pairs > 0 ? 1 - (1 - conf) / pairs : conf;
    int lo = 0, hi = 0;
    if (et_median_ci_ranks(rounds, out->pair_conf, &lo, &hi) == 0) {
        out->rank_lo = lo;
        out->rank_hi = hi;
    }
    double *x = malloc((size_t)rounds * sizeof *x);
    if (!x)
        return et_errorf(err, ET_ERR_NOMEM, "race: out of memory");
    et_status st = ET_OK;
    for (int i = 0; i < n && st == ET_OK; i++) {
        for (int r = 0; r < rounds; r++)
            x[r] = times[r * n + i];
        st = et_timing_from_samples(x, rounds, &out->timing[i], err);
    }
    for (int i = 0; i < n && st == ET_OK; i++)
        for (int j = 0; j < n; j++) {
            for (int r = 0; r < rounds; r++)
                x[r] = log(times[r * n + i]) - log(times[r * n + j]);
            qsort(x, (size_t)rounds, sizeof *x, cmp_double);
            out->lr[i][j] = rounds % 2
                                ? x[rounds / 2]
                                : 0.5 * (x[rounds / 2 - 1] + x[rounds / 2]);
            if (i != j && out->rank_lo > 0) {
                out->lr_lo[i][j] = x[out->rank_lo - 1];
                out->lr_hi[i][j] = x[out->rank_hi - 1];
            } else if (i != j) {
                out->lr_lo[i][j] = -INFINITY;
                out->lr_hi[i][j] = INFINITY;
            }
        }
    free(x);
    if (st != ET_OK)
        return st;

    /* fastest and runner-up by median time among the eligible */
    for (int i = 0; i < n; i++) {
        if (eligible && !eligible[i])
            continue;
        double m = out->timing[i].median_s;
        if (out->fastest < 0 || m < out->timing[out->fastest].median_s) {
            out->runner_up = out->fastest;
            out->fastest = i;
        } else if (out->runner_up < 0 ||
                   m < out->timing[out->runner_up].median_s) {
            out->runner_up = i;
        }
    }
    if (out->fastest < 0)
        return et_errorf(err, ET_ERR_INPUT, "race: no eligible kernel");
    int f = out->fastest, n_tied = 0;
    for (int i = 0; i < n; i++) {
        if (eligible && !eligible[i])
            continue;
        out->tied[i] = i == f || out->lr_hi[f][i] >= 0;
        n_tied += out->tied[i];
    }
    if (out->runner_up < 0) {
        out->verdict = ET_RACE_ALONE;
        out->chosen = f;
    } else if (n_tied == 1) {
        out->verdict = ET_RACE_FASTER;
        out->chosen = f;
    } else {
        out->verdict = ET_RACE_TIED;
        int c = f;
        for (int i = 0; i < n; i++) {
            if (!out->tied[i])
                continue;
            int oi = n_opts ? n_opts[i] : 0, oc = n_opts ? n_opts[c] : 0;
            if (oi < oc || (oi == oc && out->timing[i].median_s <
                                            out->timing[c].median_s))
                c = i;
        }
        out->chosen = c;
    }
    return ET_OK;
}

void et_race_faster_pct(const et_race_stats *s, int a, int b, double *pct,
                        double *lo, double *hi)
{
    /* t_b / t_a = exp(-ln(t_a / t_b)) */
    *pct = 100 * (exp(-s->lr[a][b]) - 1);
    *lo = isfinite(s->lr_hi[a][b]) ? 100 * (exp(-s->lr_hi[a][b]) - 1)
                                   : -INFINITY;
    *hi = isfinite(s->lr_lo[a][b]) ? 100 * (exp(-s->lr_lo[a][b]) - 1)
                                   : INFINITY;
    if (a == b)
        *pct = *lo = *hi = 0;
}
