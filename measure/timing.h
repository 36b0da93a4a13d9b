/*
 * timing.h - the timing protocol of docs/measurement.md.
 *
 * Durations come from the device's own timers (the backend's launch slot
 * with a non-NULL `seconds`: OpenCL profiling events, CUDA events). The
 * protocol:
 *   1. `warmups` untimed launches (default 2). The first launch of a
 *      program is where a driver may compile (PoCL compiles per local size
 *      at the first enqueue), so it is never timed.
 *   2. At least `min_runs` timed launches (default 6), then more until the
 *      distribution-free 95 % confidence interval of the median has a
 *      half-width, (high - low) / 2, within `rel_halfwidth` (default 2 %)
 *      of the median, or `max_runs` (default 50) timed runs, or
 *      `max_seconds` (default 2 s; counted as the larger of the summed
 *      device time and the wall time since the first timed launch).
 *   3. Early cut: with `bound_s` > 0, a candidate whose first timed run
 *      exceeds it stops there with the outcome slower_than_bound.
 *   4. Brief (`brief`): an estimate, not a measurement to rank by. The
 *      timed runs also stop once `max_seconds` of wall time has passed,
 *      even before `min_runs` (at least one run; fewer than 6 give the
 *      interval [median, median] and converged false). The untransformed
 *      kernel's baseline is timed so before the search; the final race
 *      times it again with the candidates.
 *
 * The interval is the one of order statistics: with n sorted durations
 * x(1) <= ... <= x(n), [x(l), x(n+1-l)] covers the median with probability
 * 1 - 2 P(B <= l-1), B ~ Binomial(n, 1/2); l is the largest rank with a
 * coverage >= 95 % (GSL's binomial CDF). No interval exists below n = 6,
 * hence the minimum of 6 runs.
 *
 * Cache flush (the `flush_bytes` knob, default 0 = off): for small problems
 * whose operands stay in cache between runs, a buffer of flush_bytes is
 * allocated once and rewritten from the host before every timed launch, so
 * the launch starts with the operands evicted (on a CPU device the host
 * write passes through the same caches). Choose a size well above the last
 * level cache, e.g. 64 MiB. The write itself is not timed (device timers).
 *
 * Thread safety: none needed; everything lives on the caller's stack.
 */
#ifndef ET_TIMING_H
#define ET_TIMING_H

#include "measure/backend.h"
#include "measure/outcome.h"

#include <stdbool.h>

/* Options; the zero value means the defaults above. */
typedef struct et_timing_opts {
    int warmups;          /* untimed launches first; 0 -> 2; at least 1 */
    int min_runs;         /* 0 -> 6 (a value < 6 is raised to 6) */
    int max_runs;         /* 0 -> 50 (never below min_runs) */
    double max_seconds;   /* 0 -> 2.0 */
    double rel_halfwidth; /* 0 -> 0.02 */
    double bound_s;       /* early-cut bound in seconds; 0 -> none */
    size_t flush_bytes;   /* 0 -> no cache flush between timed runs */
    bool brief;           /* step 4: stop at max_seconds even before
                           * min_runs */
} et_timing_opts;

/* What the protocol measured. Plain value. */
typedef struct et_timing {
    int runs;            /* timed launches */
    double median_s;     /* median of the timed runs */
    double low_s;        /* 95 % CI of the median; [median, median] when */
    double high_s;       /*   fewer than 6 runs were made (early cut) */
    int rank_low;        /* 1-based order statistics of the CI (0 if none) */
    int rank_high;
    double mean_s;
    double cv;           /* coefficient of variation: sd / mean (0 if n<2) */
    double total_s;      /* summed device time of the timed runs */
    bool converged;      /* stopped because the CI was narrow enough */
} et_timing;

/* The summary of n >= 1 durations measured elsewhere (the verification's
 * launches of a slow kernel): median, mean, cv and the interval as the
 * protocol gives them; converged false. ET_ERR_NOMEM or ET_OK. */
et_status et_timing_from_runs(const double *x, int n, et_timing *t);

/*
 * Ranks of the distribution-free confidence interval of the median of n
 * samples at confidence `conf` (e.g. 0.95): the largest l with
 * P(l <= B <= n - l) >= conf for B ~ Binomial(n, 1/2), and u = n + 1 - l.
 * Returns 0 and sets *lo, *hi (1-based), or -1 when no interval reaches
 * conf (n too small).
 */
int et_median_ci_ranks(int n, double conf, int *lo, int *hi);

/*
 * Runs the protocol on program p with its arguments (as et_launch_kernel
 * takes them). Returns ET_OK when the protocol ran to its end: res->outcome
 * is then ok, or slower_than_bound with the bound and the first run in the
 * reason. A failing launch returns its status; res gets the outcome it
 * stands for (launch_error, timeout, crash) and err the device's reason.
 * t is filled in every case with what was measured so far. opts may be
 * NULL (defaults).
 */
et_status et_time_kernel(et_device *dev, et_program *p, const et_launch *geom,
                         et_buffer *const *args, const size_t *offsets,
                         int nargs, const et_timing_opts *opts, et_timing *t,
                         et_result *res, et_error *err);

/*
 * The summary of n >= 1 samples (durations in seconds) as the protocol
 * makes it: median, its interval (when n allows one), mean, cv, total.
 * ET_ERR_NOMEM.
 */
et_status et_timing_from_samples(const double *x, int n, et_timing *t,
                                 et_error *err);

/*
 * The final race's timer: n programs (progs[i] launched with geoms[i]),
 * all on the same arguments, timed round robin on the device timer. First
 * `warmups` (at least 1) untimed launches of each, in turn, so that no
 * first launch (where a driver compiles) is timed; then `rounds` rounds in
 * which every program runs once, round r starting at program r mod n so
 * that no program always follows the same one. times[r * n + i] gets
 * program i's duration in round r. With max_seconds > 0 the rounds stop
 * once that much wall time has passed (at least one round is made);
 * *rounds_done gets the rounds completed. A failing launch returns its
 * status with *failed (may be NULL) the program's index and err saying
 * why.
 */
et_status et_time_round_robin(et_device *dev, et_program *const *progs,
                              const et_launch *geoms, int n,
                              et_buffer *const *args, const size_t *offsets,
                              int nargs, int warmups, int rounds,
                              double max_seconds, double *times,
                              int *rounds_done, int *failed, et_error *err);

/* One line for the log: "median 1.234 ms [1.230, 1.240], cv 0.4 %, 8 runs". */
void et_timing_format(const et_timing *t, char *buf, size_t cap);

#endif
