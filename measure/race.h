/*
 * race.h - the final race's statistics (docs/measurement.md, "The final
 * race"): which of a few kernels timed round robin is faster, by how much,
 * with what confidence.
 *
 * Input: times[r * n + i], the device time of kernel i in round r, for
 * n kernels over `rounds` rounds in which every kernel ran once (the
 * round-robin timer et_time_round_robin in timing.h makes them). Whatever
 * disturbs a whole round (another process, a clock change) scales every
 * kernel of that round alike, so the comparisons are paired: for kernels
 * i and j the per-round log ratios d_r = ln t(r,i) - ln t(r,j) are
 * summarized by their median and the distribution-free interval of that
 * median (the sign test's order statistics, et_median_ci_ranks).
 *
 * Error rate: the intervals of all n(n-1)/2 pairs hold together with
 * probability >= conf (Bonferroni: each pair at 1 - (1 - conf) / pairs),
 * so, with independent rounds and continuous timings, the chance that the
 * race calls any kernel faster than one whose per-round ratio has median
 * 1 (two copies of the same kernel) is at most 1 - conf, whatever pair
 * the data make us look at. Too few rounds for that level: no interval,
 * every pair counts as tied.
 *
 * Decision among the eligible kernels (the ones that may be chosen):
 *   fastest   = smallest median time over the rounds;
 *   runner-up = the next;
 *   tied      = the eligible kernels whose interval against the fastest
 *               contains 0 (the fastest itself is one);
 *   faster    = only the fastest is tied with itself: it is chosen;
 *   tied      = otherwise the tied kernel with the fewest opts is chosen
 *               (then the smaller median): a simpler kernel that is not
 *               shown to be slower is the safer choice.
 * Nothing here touches a device; pure functions, thread-safe.
 */
#ifndef ET_RACE_H
#define ET_RACE_H

#include "base/error.h"
#include "measure/timing.h"

#include <stdbool.h>

/* Most kernels in one race: 8 candidates and the untransformed kernel. */
#define ET_RACE_MAX 9
/* Default rounds and the fewest the race is run with. */
#define ET_RACE_ROUNDS 30
#define ET_RACE_MIN_ROUNDS 10

typedef enum et_race_verdict {
    ET_RACE_FASTER = 0, /* the fastest is faster than every other */
    ET_RACE_TIED,       /* some kernel is not shown slower than it */
    ET_RACE_ALONE,      /* one eligible kernel: nothing to compare */
    ET_RACE_VERDICT_COUNT
} et_race_verdict;

/* "faster", "tied", "alone". */
const char *et_race_verdict_name(et_race_verdict v);

typedef struct et_race_stats {
    int n, rounds;
    double conf;        /* simultaneous confidence of all intervals */
    double pair_conf;   /* each pair's own level */
    int rank_lo, rank_hi; /* order statistics of a pair's interval (1-based;
                           * 0 when too few rounds for pair_conf) */
    et_timing timing[ET_RACE_MAX]; /* each kernel over the rounds */
    /* ln(t_i / t_j) per round: median, interval (-inf, inf without one) */
    double lr[ET_RACE_MAX][ET_RACE_MAX];
    double lr_lo[ET_RACE_MAX][ET_RACE_MAX];
    double lr_hi[ET_RACE_MAX][ET_RACE_MAX];
    int fastest, runner_up, chosen; /* eligible kernels; -1 when none */
    et_race_verdict verdict;
    bool tied[ET_RACE_MAX]; /* eligible and tied with the fastest */
} et_race_stats;

/*
 * Decides a race (see above). n_opts[i] is kernel i's number of opts (the
 * tie rule); eligible may be NULL (all). conf in (0, 1), e.g. 0.95.
 * ET_ERR_INPUT for n outside [1, ET_RACE_MAX], rounds < 1, a time that is
 * not positive and finite, or no eligible kernel; ET_ERR_NOMEM.
 */
et_status et_race_decide(const double *times, int n, int rounds,
                         const int *n_opts, const bool *eligible, double conf,
                         et_race_stats *out, et_error *err);

/*
 * A ratio figure from a log ratio ln(t_a / t_b): how much faster a is than
 * b in percent, 100 (t_b / t_a - 1), with the interval's ends in the same
 * form (lo from lr_hi, hi from lr_lo; +-inf without an interval).
 */
void et_race_faster_pct(const et_race_stats *s, int a, int b, double *pct,
                        double *lo, double *hi);

#endif
